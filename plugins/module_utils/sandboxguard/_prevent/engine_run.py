# GENERATED from python/src/sandboxguard/_prevent/engine_run.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection. The containers the seccomp tools run
(sandbox_prevent: the engine's default profile read from a throwaway container, the probe's
attempts), through the library's Engine API client: create and start, wait with a deadline,
read the output, remove."""
from .._core.engine_api import NotFound
from ..docker_engine import CONTAINER_CALL_TIMEOUT_S, EngineError


def start_container(client, image, command, host_config, labels, entrypoint=None, user=None, environment=None):
    """Create and start a container; return its id (the caller removes it: remove_container).

    ``host_config``: the Engine API's HostConfig as a plain dict (``NetworkMode``, ``CapDrop``,
    ``CapAdd``, ``SecurityOpt``, ``Tmpfs``, ``Binds``, ...), passed to the engine as it is.
    A container that was created but failed to start is removed before EngineError is raised.
    """
    config = {"Image": image, "Cmd": list(command), "Labels": dict(labels), "HostConfig": dict(host_config),
              "NetworkDisabled": host_config.get("NetworkMode") == "none"}
    if entrypoint is not None:
        config["Entrypoint"] = list(entrypoint) if isinstance(entrypoint, (list, tuple)) else [entrypoint]
    if user is not None:
        config["User"] = user
    if environment:
        config["Env"] = (["%s=%s" % item for item in environment.items()] if isinstance(environment, dict)
                         else list(environment))
    try:
        cid = client.create_container(config, timeout=CONTAINER_CALL_TIMEOUT_S)
    except EngineError as exc:
        raise EngineError("cannot create a container from %s: %s" % (image, exc)) from None
    try:
        client.start(cid, timeout=CONTAINER_CALL_TIMEOUT_S)
    except EngineError as exc:
        remove_container(client, cid)
        raise EngineError("cannot start a container from %s: %s" % (image, exc)) from None
    return cid


def wait_container(client, cid, timeout):
    """The exit code of a started container, or None when it outlived ``timeout`` (then killed)."""
    try:
        return client.wait(cid, timeout or 0)
    except EngineError:  # past its time (the wait's deadline), or the engine failed it
        try:
            client.kill(cid, timeout=CONTAINER_CALL_TIMEOUT_S)
        except EngineError:  # it may have exited meanwhile; removal is what matters
            pass
        return None


def container_output(client, cid):
    """(stdout bytes, stderr bytes) of a container, exactly as it wrote them."""
    stdout, stderr, _both = client.logs(cid, timeout=CONTAINER_CALL_TIMEOUT_S)
    return stdout, stderr


def remove_container(client, cid):
    """Remove a container, running or not; one that is already gone is fine."""
    try:
        client.remove_container(cid, force=True, timeout=CONTAINER_CALL_TIMEOUT_S)
    except NotFound:
        pass
    except EngineError as exc:
        raise EngineError("cannot remove container %s: %s" % (cid[:12], exc)) from None


def engine_version(client):
    """The engine's version document (``Version``, ``Components``, ...)."""
    return client.version()
