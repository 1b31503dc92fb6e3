# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The Docker engine, through the Docker SDK for Python (imported only when used).

Everything that decides is in sandboxes.py (pure); this file only asks the engine
for containers, their inspect documents and its info, and runs the disposable strip
container of the ``container`` sweep method.
"""

# One text for a missing SDK, whichever operation needs it (sweep, mounts_info, the docker
# fetch transport). Library terms only: the roles add their own variable names.
MISSING_SDK = ("the Docker SDK for Python is not installed for %s: install it "
               "(Debian: apt-get install python3-docker; elsewhere: pip install docker, "
               "or pip install 'sandboxguard[docker]')")


class EngineError(RuntimeError):
    """The engine cannot be reached or answered with an error; str() says which."""


class SDKMissing(EngineError):
    """The ``docker`` package cannot be imported; str() says how to install it."""


def import_sdk():
    """The ``docker`` module (imported on first use: the library core stays stdlib-only)."""
    try:
        import docker  # noqa: PLC0415 - optional edge dependency, imported when used
    except ImportError:
        import sys  # noqa: PLC0415
        raise SDKMissing(MISSING_SDK % sys.executable) from None
    return docker


def connect(base_url=None, timeout=60):
    """A docker.DockerClient, from the environment (DOCKER_HOST) or base_url; pinged once.

    The one Docker client helper of the library (sweep, mounts_info, the docker fetch
    transport). Raises SDKMissing or EngineError with one line saying what to do.
    """
    docker = import_sdk()
    try:
        if base_url:
            client = docker.DockerClient(base_url=base_url, timeout=timeout)
        else:
            client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # the SDK raises several types for an unreachable engine
        where = " at " + base_url if base_url else ""
        raise EngineError("cannot reach the Docker engine%s: %s (is dockerd running? check DOCKER_HOST)"
                          % (where, exc)) from None
    return client


def engine_info(client):
    return client.info()


def inspect_container(client, name):
    """One container's inspect document; EngineError naming it when it is gone or unknown."""
    try:
        return client.api.inspect_container(name)
    except Exception as exc:  # docker.errors.NotFound, APIError, requests errors
        raise EngineError("container %s: %s" % (name, exc)) from None


def container_events(client, since=None):
    """The engine's container events as dicts, from ``since`` (epoch seconds) on; blocks.

    A lost stream raises from the iteration (the caller reports it).
    """
    return client.events(decode=True, since=since, filters={"type": "container"})


def inspect_containers(client, names=None, include_stopped=True):
    """Inspect documents (dicts) of the engine's containers, optionally only `names`.

    A name or id that is not found raises EngineError naming it.
    """
    if names:
        return [inspect_container(client, name) for name in names]
    docs = []
    for summary in client.api.containers(all=include_stopped):
        try:
            docs.append(client.api.inspect_container(summary["Id"]))
        except Exception as exc:  # removed between the listing and the inspect: nothing left to scope
            if getattr(getattr(exc, "response", None), "status_code", None) != 404:
                raise
    return docs


def run_disposable(client, image, script, args, binds, timeout, user="0:0"):
    """Run `sh -c script sh args...` in a hardened throwaway container; return a result dict.

    The container: no network, every capability dropped but CHOWN, DAC_OVERRIDE and
    FOWNER, no-new-privileges, read-only root, PATH and loader variables reset, and
    only `binds` ({host realpath: container path}) mounted, as non-recursive binds so
    mounts nested below them are not visible. Killed after `timeout` seconds.
    Returns dict: exit_code (None when killed), output (str: stdout and stderr as the
    engine interleaved them), stdout (bytes, exact: what a script prints for the host to
    parse), stderr (str), timed_out (bool).
    """
    mounts = [{"Type": "bind", "Source": src, "Target": dst, "ReadOnly": False,
               "BindOptions": {"NonRecursive": True}} for src, dst in binds.items()]
    host_config = client.api.create_host_config(
        network_mode="none", cap_drop=["ALL"], cap_add=["CHOWN", "DAC_OVERRIDE", "FOWNER"],
        security_opt=["no-new-privileges"], read_only=True, mounts=mounts, auto_remove=False,
        tmpfs={"/tmp": "rw,noexec,nosuid,size=16m"})
    container = client.api.create_container(
        image, command=["-c", script, "sh", *args], entrypoint=["/bin/sh"], user=user,
        environment={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LD_PRELOAD": "", "LD_LIBRARY_PATH": "",
                     "LD_AUDIT": "", "ENV": "", "BASH_ENV": "", "IFS": " \t\n"},
        host_config=host_config, network_disabled=True, labels={"sandboxguard": "sweep"})
    cid = container["Id"]
    timed_out = False
    try:
        client.api.start(cid)
        try:
            status = client.api.wait(cid, timeout=timeout)
            exit_code = status.get("StatusCode")
        except Exception:  # requests' ReadTimeout (or ConnectionError) when the step outlives its budget
            timed_out = True
            exit_code = None
            try:
                client.api.kill(cid)
            except Exception:  # noqa: S110 - it may have exited meanwhile; removal below is what matters
                pass
        output = client.api.logs(cid, stdout=True, stderr=True).decode("utf-8", "replace")
        stdout = client.api.logs(cid, stdout=True, stderr=False)
        stderr = client.api.logs(cid, stdout=False, stderr=True).decode("utf-8", "replace")
    finally:
        client.api.remove_container(cid, force=True)
    return {"exit_code": exit_code, "output": output, "stdout": stdout, "stderr": stderr, "timed_out": timed_out}
