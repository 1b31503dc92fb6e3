# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The container engines (Docker, Podman's Docker-compatible API), through the Docker SDK
for Python (imported only when used).

Everything that decides is in sandboxes.py (pure); this file only finds the engines, asks
them for containers, their inspect documents and their info, and runs the disposable strip
container of the ``container`` sweep method.

``auto`` (no engine URL given) asks every engine socket present, not only the first:
DOCKER_HOST when set, Docker's socket, rootful Podman's socket and rootless Podman's sockets
(connect_engines). Rootless Podman maps container root to the user who runs it, so what its
containers write is that user's, never root's: such an engine is named ``podman-rootless-<uid>``
and reported, and its facts say rootless (no ownership return).
"""
import glob
import os
import posixpath
import sys

from ._core import defaults

# One text for a missing SDK, whichever operation needs it (sweep, mounts_info, the docker
# fetch transport). Library terms only: the roles add their own variable names.
MISSING_SDK = ("the Docker SDK for Python is not installed for %s: install it "
               "(Debian: apt-get install python3-docker; elsewhere: pip install docker, "
               "or pip install 'sandboxguard[docker]')")


DOCKER_SOCKET = defaults.DOCKER_SOCKET
PODMAN_SOCKET = defaults.PODMAN_SOCKET  # rootful Podman (podman.socket, podman system service)
ROOTLESS_PODMAN_SOCKETS = defaults.ROOTLESS_PODMAN_SOCKETS  # one per user running rootless Podman


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


def socket_path(url):
    """The socket path of a ``unix://`` engine URL (pure), or None for another scheme."""
    if url.startswith("unix://"):
        return url[len("unix://"):] or None
    return None


def rootless_uid(url):
    """The uid of a rootless Podman socket (``/run/user/<uid>/podman/...``, pure), or None."""
    path = socket_path(url)
    parts = posixpath.normpath(path).split("/") if path else []
    if len(parts) > 4 and parts[1:3] == ["run", "user"] and parts[3].isdigit() and parts[4] == "podman":
        return int(parts[3])
    return None


def engine_urls(base_url=None, environ=None, exists=os.path.exists, rootless=None):
    """The engine URLs to ask (touches the system: looks which sockets exist).

    ``base_url`` given: that one alone. Otherwise (``auto``) every engine present, in this
    order: DOCKER_HOST when set, Docker's socket, rootful Podman's socket, rootless Podman's
    sockets; a socket reached by two names (DOCKER_HOST naming Docker's socket, a
    podman-docker symlink) is asked once.
    """
    if base_url:
        return [base_url]
    environ = os.environ if environ is None else environ
    rootless = sorted(glob.glob(ROOTLESS_PODMAN_SOCKETS)) if rootless is None else rootless
    urls, seen = [], set()
    candidates = [environ.get("DOCKER_HOST") or None]
    candidates += ["unix://" + p for p in [DOCKER_SOCKET, PODMAN_SOCKET, *rootless]]
    for index, url in enumerate(candidates):
        if not url:
            continue
        path = socket_path(url)
        if index > 0 and not exists(path):
            continue
        key = os.path.realpath(path) if path else url
        if key not in seen:
            seen.add(key)
            urls.append(url)
    return urls


class Engine:
    """One engine of a group: ``name`` (docker, podman, podman-rootless-<uid>; the URL added
    when two have the same), ``url``, ``client``, ``kind`` (docker or podman), ``version``,
    ``rootless_uid`` (the user a rootless Podman socket belongs to, else None)."""

    __slots__ = ("client", "kind", "name", "rootless_uid", "url", "version")

    def __init__(self, name, url, client, kind, version, rootless_uid=None):
        self.name, self.url, self.client, self.kind = name, url, client, kind
        self.version, self.rootless_uid = version, rootless_uid


class Engines:
    """Every engine that answered (connect_engines): iterating gives (name, client) pairs.

    ``members``: the Engine objects; ``skipped``: {url, reason} of sockets present that did
    not answer; ``warnings``: one line per skipped or rootless engine, for the report.
    """

    def __init__(self, members, skipped=()):
        self.members, self.skipped = list(members), list(skipped)
        self.warnings = ["engine %s did not answer: %s" % (s["url"], s["reason"]) for s in self.skipped]
        for member in self.members:
            if member.rootless_uid is not None:
                self.warnings.append(ROOTLESS_WARNING % (member.name, member.url, member.rootless_uid))

    def __iter__(self):
        return iter([(m.name, m.client) for m in self.members])

    def __len__(self):
        return len(self.members)

    def member(self, name):
        return next(m for m in self.members if m.name == name)

    def close(self):
        for member in self.members:
            close = getattr(member.client, "close", None)
            if close:
                close()


ROOTLESS_WARNING = ("engine %s (%s) is rootless Podman of uid %d: container root is that user there, so what its "
                    "containers write is that user's, not root's (setid bits are stripped, no ownership is returned)")


def engine_kind(client):
    """(kind, version) of a client's engine: ``podman`` when its version names a Podman
    Engine component, else ``docker``; an engine that does not say is ``docker``."""
    try:
        version = client.version()
    except Exception:  # a client without version() (tests), an engine that does not answer it
        return "docker", None
    for component in version.get("Components") or ():
        if str(component.get("Name", "")).lower().startswith("podman"):
            return "podman", component.get("Version")
    return "docker", version.get("Version")


def connect_engines(base_url=None, timeout=60, urls=None):
    """Engines: a client for ``base_url``, or (``auto``, no URL) for every engine present.

    ``urls``: the candidates (default engine_urls(base_url)). With ``base_url`` an engine
    that does not answer raises EngineError; in ``auto`` one that does not answer is listed
    in ``skipped`` and the others are used, and only none answering raises EngineError.
    SDKMissing is raised before any engine is asked.
    """
    urls = engine_urls(base_url) if urls is None else list(urls)
    import_sdk()
    if not urls:
        raise EngineError("no container engine here: %s and %s do not exist and DOCKER_HOST is unset "
                          "(is dockerd or podman.socket running?)" % (DOCKER_SOCKET, PODMAN_SOCKET))
    members, skipped, errors = [], [], []
    for url in urls:
        try:
            client = connect(url, timeout)
        except EngineError as exc:
            if base_url:
                raise
            skipped.append({"url": url, "reason": str(exc)})
            errors.append(str(exc))
            continue
        kind, version = engine_kind(client)
        # by the socket's path, never by what the engine says: a user's socket under
        # /run/user/<uid> is that user's, whatever it claims to be (its info could claim a
        # userns-remap root and steer the ownership return)
        uid = rootless_uid(url)
        name = "podman-rootless-%d" % uid if uid is not None else kind
        members.append(Engine(name, url, client, kind, version, uid))
    if not members:
        raise EngineError("; ".join(errors))
    counts = {}
    for member in members:
        counts[member.name] = counts.get(member.name, 0) + 1
    for member in members:
        if counts[member.name] > 1:
            member.name = "%s@%s" % (member.name, member.url)
    return Engines(members, skipped)


def members(client):
    """[(name, client)] of an Engines group, or of one client (named by engine_kind)."""
    if isinstance(client, Engines):
        return list(client)
    return [(engine_kind(client)[0], client)]


def facts_of(client, name, facts):
    """Engine facts (sandboxes.engine_facts) with the engine's ``name`` and ``url``; a
    rootless Podman socket's engine is rootless whatever its info says."""
    facts = dict(facts, name=name, url=None)
    if isinstance(client, Engines):
        member = client.member(name)
        facts["url"] = member.url
        if member.rootless_uid is not None and not facts["rootless"]:
            facts.update(rootless=True, reason=ROOTLESS_WARNING % (name, member.url, member.rootless_uid))
    return facts


def event_fields(event):
    """(action, container id, attributes) of a container event, whatever its shape.

    Docker Engine 29 (API 1.52) dropped the top-level ``status``, ``id`` and ``from``:
    ``Action`` and ``Actor.ID`` are read first, the old fields only when those are missing.
    Podman's compat stream says ``die``, its native events ``died``: both are ``die``.
    """
    actor = event.get("Actor") or {}
    action = event.get("Action") or event.get("status") or ""
    if action == "died":
        action = "die"
    return action, actor.get("ID") or event.get("id"), actor.get("Attributes") or {}


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


def survey(client, names=None, include_stopped=True, engine=None):
    """Ask every engine of ``client`` (a connect_engines group, or one client) once: a list of
    one dict per engine, ``{name, url, kind, version, rootless_uid, error, info, containers,
    not_found}``. ``info``: the engine's /info answer (what the scope makes its facts of);
    ``containers``: inspect documents (only
    ``names`` when given: each asked of every engine, ``not_found`` maps those this engine
    does not know to its answer). One engine's error is its own (``error``: one line, ``containers`` []):
    the others are still asked. ``engine``: what makes the calls (this module; tests pass a
    stand-in with engine_info, inspect_container and inspect_containers). Touches the
    engines (reads only)."""
    calls = engine if engine is not None else sys.modules[__name__]
    answers = []
    group = client if isinstance(client, Engines) else None
    for name, member in members(client):
        one = group.member(name) if group is not None else None
        answer = {"name": name, "url": one.url if one else None, "kind": one.kind if one else engine_kind(member)[0],
                  "version": one.version if one else None, "rootless_uid": one.rootless_uid if one else None,
                  "error": None, "info": None, "containers": [], "not_found": {}}
        try:
            answer["info"] = calls.engine_info(member)
            if names and len(names) and isinstance(client, Engines) and len(client) > 1:
                for wanted in names:
                    try:
                        answer["containers"].append(calls.inspect_container(member, wanted))
                    except EngineError as exc:
                        answer["not_found"][wanted] = str(exc)
            else:
                answer["containers"] = calls.inspect_containers(member, names, include_stopped)
        except Exception as exc:  # this engine's own failure: reported, the others still asked
            answer.update(error="%s: %s" % (type(exc).__name__, exc) if not isinstance(exc, EngineError)
                          else str(exc), containers=[])
        answers.append(answer)
    return answers


def start_container(client, image, command, host_config, labels, entrypoint=None, user=None, environment=None):
    """Create and start a container; return its id (the caller removes it: remove_container).

    ``host_config``: the Engine API's HostConfig as a plain dict (``NetworkMode``, ``CapDrop``,
    ``CapAdd``, ``SecurityOpt``, ``Tmpfs``, ``Binds``, ...), passed to the engine as it is.
    A container that was created but failed to start is removed before EngineError is raised.
    """
    try:
        no_network = host_config.get("NetworkMode") == "none"
        cid = client.api.create_container(image, command=list(command), entrypoint=entrypoint, user=user,
                                          environment=environment, host_config=dict(host_config),
                                          labels=dict(labels), network_disabled=no_network)["Id"]
    except Exception as exc:  # docker.errors.ImageNotFound, APIError
        raise EngineError("cannot create a container from %s: %s" % (image, exc)) from None
    try:
        client.api.start(cid)
    except Exception as exc:
        remove_container(client, cid)
        raise EngineError("cannot start a container from %s: %s" % (image, exc)) from None
    return cid


def wait_container(client, cid, timeout):
    """The exit code of a started container, or None when it outlived ``timeout`` (then killed)."""
    try:
        return client.api.wait(cid, timeout=timeout).get("StatusCode")
    except Exception:  # requests' ReadTimeout (or ConnectionError): past its time
        try:
            client.api.kill(cid)
        except Exception:  # noqa: S110 - it may have exited meanwhile; removal is what matters
            pass
        return None


def container_output(client, cid):
    """(stdout bytes, stderr bytes) of a container, exactly as it wrote them."""
    return (client.api.logs(cid, stdout=True, stderr=False), client.api.logs(cid, stdout=False, stderr=True))


def remove_container(client, cid):
    """Remove a container, running or not; one that is already gone is fine."""
    try:
        client.api.remove_container(cid, force=True)
    except Exception as exc:
        if getattr(getattr(exc, "response", None), "status_code", None) != 404:
            raise EngineError("cannot remove container %s: %s" % (cid[:12], exc)) from None


def engine_version(client):
    """The engine's version document (``Version``, ``Components``, ...)."""
    return client.version()
