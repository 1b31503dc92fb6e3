# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The container engines (Docker, Podman's Docker-compatible API), through the library's own
standard-library client (``_core/engine_api``): no Docker SDK on any host.

Everything that decides is in sandboxes.py (pure); this file only finds the engines, asks
them for containers, their inspect documents and their info, and runs the disposable strip
container of the ``container`` sweep method.

``auto`` (no engine URL given) asks every engine socket present, not only the first:
DOCKER_HOST when set, Docker's socket, rootful Podman's socket and rootless Podman's sockets
(connect_engines, survey). Rootless Podman maps container root to the user who runs it, so what its
containers write is that user's, never root's: such an engine is named ``podman-rootless-<uid>``
and reported, and its facts say rootless (no ownership return).

Every engine is untrusted input (issue 26): any logged-in user can serve anything on
``/run/user/<uid>/podman/podman.sock``. Each call has an overall deadline and a size cap
(engine_api); a unix socket is asked only when it and every directory above it belong to
root or to the user whose runtime directory holds it (engine_http.open_socket); and each
engine is asked on its own, in parallel: one engine's error, timeout or garbage is that
engine's entry (``engines: [{name, url, kind, error}]`` in every result), never the others'.
"""
import glob
import os
import posixpath
import threading
import time

from ._core import defaults, engine_api, engine_http
from ._core.engine_api import EngineError, NotFound, SocketRefused
from ._core.engine_docs import checked_info, checked_inspect
from ._core.text import one_line

__all__ = ["EngineError", "SDKMissing", "connect", "connect_engines", "survey"]

DOCKER_SOCKET = defaults.DOCKER_SOCKET
PODMAN_SOCKET = defaults.PODMAN_SOCKET  # rootful Podman (podman.socket, podman system service)
ROOTLESS_PODMAN_SOCKETS = defaults.ROOTLESS_PODMAN_SOCKETS  # one per user running rootless Podman
# Each call to an engine ends within DEFAULT_TIMEOUT_S (a stuck or dribbling engine costs the
# operation this much once: engines are asked in parallel), and everything one engine is asked
# for an operation (ping, version, info, the list and every inspect) within SURVEY_DEADLINE_S,
# room for a busy host's hundreds of containers, and a bound on an engine that lists endless ones.
DEFAULT_TIMEOUT_S = 10.0
SURVEY_DEADLINE_S = 60.0


class SDKMissing(EngineError):
    """Kept importable for API compatibility: nothing raises it any more (the library speaks the
    Engine API itself, no Docker SDK is needed)."""


def connect(base_url=None, timeout=60):
    """An engine_api.Client for ``base_url``, else DOCKER_HOST, else Docker's socket; pinged
    once and its API version negotiated (``/version``).

    ``timeout``: each call's overall deadline, in seconds. Raises EngineError with one line
    saying what to do.
    """
    url = base_url or os.environ.get("DOCKER_HOST") or "unix://" + DOCKER_SOCKET
    try:
        client = engine_api.Client(url, timeout)
        client.ping()
        client.version()
    except SocketRefused:  # its own words say why and what the rule is
        raise
    except EngineError as exc:
        raise EngineError("cannot reach the engine at %s: %s (is dockerd or podman.socket running? check "
                          "DOCKER_HOST)" % (one_line(url), _without_url(exc, url))) from None
    return client


def _without_url(exc, url):
    """An engine error's text without the ``engine URL:`` the caller names already."""
    text = str(exc)
    for prefix in ("engine %s: " % url, "engine %s: " % one_line(url)):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


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
    podman-docker symlink) is asked once. A rootless socket is kept by its own name (a
    user's symlink to another socket is not resolved here: asking it says why it is refused).
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
        key = path if path and engine_http.runtime_uid(path) is not None else (
            os.path.realpath(path) if path else url)
        if key not in seen:
            seen.add(key)
            urls.append(url)
    return urls


def url_name(url, kind=None):
    """An engine's name from where it is, never from what it says (pure): ``docker`` for
    Docker's socket, ``podman`` for rootful Podman's, ``podman-rootless-<uid>`` for a socket
    below /run/user/<uid>/podman, else ``kind`` (what it answered) or ``engine``."""
    uid = rootless_uid(url)
    if uid is not None:
        return "podman-rootless-%d" % uid
    path = socket_path(url)
    if path in (DOCKER_SOCKET, "/run/docker.sock"):
        return kind or "docker"
    if path == PODMAN_SOCKET:
        return kind or "podman"
    return kind or "engine"


class Engine:
    """One engine of a group: ``name`` (docker, podman, podman-rootless-<uid>; the URL added
    when two have the same), ``url``, ``client``, ``kind`` (docker or podman), ``version``,
    ``rootless_uid`` (the user a rootless Podman socket belongs to, else None), ``error``
    (None, or the line saying why it failed after it answered)."""

    __slots__ = ("client", "error", "kind", "name", "rootless_uid", "url", "version")

    def __init__(self, name, url, client, kind, version, rootless_uid=None):
        self.name, self.url, self.client, self.kind = name, url, client, kind
        self.version, self.rootless_uid, self.error = version, rootless_uid, None


class Engines:
    """Every engine that answered (connect_engines): iterating gives (name, client) pairs of
    those still healthy.

    ``members``: the Engine objects; ``skipped``: {url, name, reason} of sockets present that
    did not answer (or were refused); ``warnings``: one line per skipped, failed or rootless
    engine, for the report. :meth:`fail` marks a member whose later answer was an error:
    it leaves the iteration and is reported. :meth:`report` is the results' ``engines``.
    """

    def __init__(self, members, skipped=()):
        self.members, self.skipped = list(members), list(skipped)
        self.warnings = ["engine %s did not answer: %s" % (s["url"], s["reason"]) for s in self.skipped]
        for member in self.members:
            if member.rootless_uid is not None:
                self.warnings.append(ROOTLESS_WARNING % (member.name, member.url, member.rootless_uid))

    def __iter__(self):
        return iter([(m.name, m.client) for m in self.members if m.error is None])

    def __len__(self):
        return len([m for m in self.members if m.error is None])

    def member(self, name):
        return next(m for m in self.members if m.name == name)

    def fail(self, name, error):
        """Record that engine ``name`` failed (``error``: its one line): it is not asked again."""
        member = self.member(name)
        if member.error is None:
            member.error = one_line(error)
            self.warnings.append("engine %s (%s) failed: %s" % (name, member.url, member.error))

    def report(self):
        """[{name, url, kind, error}] of every engine considered: members (error None when
        healthy) then skipped ones."""
        rows = [{"name": m.name, "url": m.url, "kind": m.kind, "error": m.error} for m in self.members]
        rows += [{"name": s.get("name") or url_name(s["url"]), "url": s["url"], "kind": None, "error": s["reason"]}
                 for s in self.skipped]
        return rows

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
    components = version.get("Components") if isinstance(version, dict) else None
    for component in components if isinstance(components, list) else ():
        if isinstance(component, dict) and str(component.get("Name", "")).lower().startswith("podman"):
            return "podman", _text(component.get("Version"))
    return "docker", _text(version.get("Version")) if isinstance(version, dict) else None


def _text(value):
    return one_line(value)[:80] if isinstance(value, str) else None


def in_parallel(function, items, deadline_s):
    """[function(item)] for each item, each in a daemon thread of its own, all given
    ``deadline_s`` seconds (plus a second's grace) together: an item whose thread is not done
    by then (it cannot be, each call has its own deadline, but a deadline is held here
    too) gives an EngineError in its place, as does any exception it raised."""
    results = [None] * len(items)

    def run(index, item):
        try:
            results[index] = function(item)
        except Exception as exc:  # the engine's error is its own result, never the others'
            results[index] = exc if isinstance(exc, EngineError) else EngineError(
                "%s (%s)" % (one_line(str(exc)) or "no message", type(exc).__name__))

    threads = [threading.Thread(target=run, args=(i, item), name="sandboxguard-engine", daemon=True)
               for i, item in enumerate(items)]
    ends = time.monotonic() + (deadline_s or 0) + 1.0
    for thread in threads:
        thread.start()
    for index, thread in enumerate(threads):
        thread.join(None if not deadline_s else max(0.0, ends - time.monotonic()))
        if thread.is_alive():
            results[index] = EngineError("no answer within %g s" % deadline_s)
    return results


def connect_engines(base_url=None, timeout=60, urls=None):
    """Engines: a client for ``base_url``, or (``auto``, no URL) for every engine present.

    ``urls``: the candidates (default engine_urls(base_url)), asked in parallel. With
    ``base_url`` an engine that does not answer raises EngineError; in ``auto`` one that does
    not answer (or whose socket is refused) is listed in ``skipped`` and the others are
    used, and only none answering raises EngineError.
    """
    group = engines_present(base_url, timeout, urls)
    if not len(group):
        if base_url and group.skipped:
            raise EngineError(group.skipped[0]["reason"])
        raise EngineError("; ".join(s["reason"] for s in group.skipped))
    return group


def engines_present(base_url=None, timeout=60, urls=None):
    """connect_engines without raising for the engines: an Engines group whose members are
    those that answered (maybe none) and whose ``skipped`` are the others, each with its
    reason. Raises EngineError only when no engine socket is there at all."""
    urls = engine_urls(base_url) if urls is None else list(urls)
    if not urls:
        raise EngineError("no container engine here: %s and %s do not exist and DOCKER_HOST is unset "
                          "(is dockerd or podman.socket running?)" % (DOCKER_SOCKET, PODMAN_SOCKET))
    members, skipped = [], []
    for url, client in zip(urls, in_parallel(lambda url: connect(url, timeout), urls, timeout)):
        if isinstance(client, EngineError):
            skipped.append({"url": url, "name": url_name(url), "reason": str(client)})
            continue
        kind, version = engine_kind(client)
        # by the socket's path, never by what the engine says: a user's socket under
        # /run/user/<uid> is that user's, whatever it claims to be (its info could claim a
        # userns-remap root and steer the ownership return)
        uid = rootless_uid(url)
        members.append(Engine(url_name(url, kind) if uid is None else url_name(url), url, client, kind, version, uid))
    _unique_names(members)
    return Engines(members, skipped)


def _unique_names(entries, key=lambda e: e.name, rename=lambda e, name: setattr(e, "name", name),
                  url=lambda e: e.url):
    counts = {}
    for entry in entries:
        counts[key(entry)] = counts.get(key(entry), 0) + 1
    for entry in entries:
        if counts[key(entry)] > 1:
            rename(entry, "%s@%s" % (key(entry), url(entry)))


def members(client):
    """[(name, client)] of an Engines group, or of one client (named by engine_kind)."""
    if isinstance(client, Engines):
        return list(client)
    return [(engine_kind(client)[0], client)]


def engines_report(client):
    """The results' ``engines`` ([{name, url, kind, error}]) of a group or of one client."""
    if isinstance(client, Engines):
        return client.report()
    kind = engine_kind(client)[0]
    return [{"name": kind, "url": getattr(client, "url", None), "kind": kind, "error": None}]


def fail_member(client, name, error):
    """Mark engine ``name`` of a group failed (Engines.fail); a lone client has no one to
    fall back on, so its error is raised."""
    if isinstance(client, Engines):
        client.fail(name, error)
        return
    raise error if isinstance(error, EngineError) else EngineError(str(error))


def facts_of(client, name, facts):
    """Engine facts (sandboxes.engine_facts) with the engine's ``name`` and ``url``; a
    rootless Podman socket's engine is rootless whatever its info says."""
    if isinstance(client, Engines):
        member = client.member(name)
        return facts_for(name, member.url, member.rootless_uid, facts)
    return dict(facts, name=name, url=None)


def facts_for(name, url, rootless_uid, facts):
    """Engine facts (sandboxes.engine_facts of its info) with ``name`` and ``url`` (pure); an
    engine on a rootless Podman socket (``rootless_uid``, a survey entry's) is rootless
    whatever its info says: what its containers write is that user's."""
    facts = dict(facts, name=name, url=url)
    if rootless_uid is not None and not facts["rootless"]:
        facts.update(rootless=True, reason=ROOTLESS_WARNING % (name, url, rootless_uid))
    return facts


def event_fields(event):
    """(action, container id, attributes) of a container event, whatever its shape.

    Docker Engine 29 (API 1.52) dropped the top-level ``status``, ``id`` and ``from``:
    ``Action`` and ``Actor.ID`` are read first, the old fields only when those are missing.
    Podman's compat stream says ``die``, its native events ``died``: both are ``die``.
    Anything of the wrong type (an engine's garbage) reads as missing.
    """
    actor = event.get("Actor") if isinstance(event.get("Actor"), dict) else {}
    action = event.get("Action") or event.get("status") or ""
    action = action if isinstance(action, str) else ""
    if action == "died":
        action = "die"
    cid = actor.get("ID") or event.get("id")
    attributes = actor.get("Attributes")
    return action, cid if isinstance(cid, str) else None, attributes if isinstance(attributes, dict) else {}


def engine_info(client):
    """The engine's ``/info`` document (a dict, checked_info); EngineError otherwise."""
    return checked_info(client.info())


def inspect_container(client, name):
    """One container's inspect document; EngineError naming it when it is gone or unknown
    (NotFound, an EngineError, when the engine knows no such container)."""
    try:
        return checked_inspect(client.inspect_container(name))
    except NotFound as exc:
        raise NotFound("container %s: %s" % (one_line(name), exc), 404) from None
    except EngineError as exc:
        raise EngineError("container %s: %s" % (one_line(name), exc)) from None


def container_events(client, since=None):
    """The engine's container events as dicts, from ``since`` (epoch seconds) on; blocks.

    A lost stream raises EngineError from the iteration; the returned stream has
    ``close()`` (and ``abort()`` from another thread).
    """
    return client.events(since=since, filters={"type": ["container"]})


def inspect_containers(client, names=None, include_stopped=True):
    """Inspect documents (dicts) of the engine's containers, optionally only `names`.

    A name or id that is not found raises NotFound (an EngineError) naming it; a container
    removed between the listing and its inspect is left out.
    """
    if names:
        return [inspect_container(client, name) for name in names]
    docs = []
    for summary in client.containers(all=include_stopped):
        try:
            docs.append(checked_inspect(client.inspect_container(summary["Id"])))
        except NotFound:  # removed between the listing and the inspect: nothing left to scope
            continue
    return docs


# --- each engine on its own ----------------------------------------------------------------

def _survey_one(url, names, include_stopped, deadline):
    """One engine's survey entry (see survey); never raises. Each call within DEFAULT_TIMEOUT_S
    (or ``deadline`` when shorter), all of them within ``deadline``."""
    uid = rootless_uid(url)
    entry = {"name": url_name(url), "url": url, "kind": None, "version": None, "rootless_uid": uid,
             "error": None, "info": None, "containers": [], "missing": []}
    try:
        client = engine_api.Client(url, min(DEFAULT_TIMEOUT_S, deadline))
        with client.budget(deadline):
            client.ping()
            entry["kind"], entry["version"] = engine_kind(client)
            if uid is None:
                entry["name"] = url_name(url, entry["kind"])
            entry["info"] = engine_info(client)
            if names:
                for name in names:
                    try:
                        entry["containers"].append(checked_inspect(client.inspect_container(name)))
                    except NotFound:
                        entry["missing"].append(name)
            else:
                entry["containers"] = inspect_containers(client, None, include_stopped)
    except EngineError as exc:
        entry.update(error=one_line(_without_url(exc, url)), info=None, containers=[])
    return entry


def survey(base_url=None, names=None, include_stopped=True, deadline=SURVEY_DEADLINE_S):
    """Ask every engine (``base_url``, or ``auto``: engine_urls) for its info and containers,
    each on its own, in parallel, each within ``deadline`` seconds overall (every call it
    makes together; each call within DEFAULT_TIMEOUT_S). Touches the engines, read-only; never
    raises for an engine.

    Returns one dict per engine socket considered, in engine_urls' order: ``name`` (by where
    it is: docker, podman, podman-rootless-<uid>; ``name@url`` when two share one), ``url``,
    ``kind`` (docker or podman, None when it never said), ``version``, ``rootless_uid`` (the
    user of a /run/user/<uid>/podman socket, whatever the engine claims), ``error`` (None,
    or one line: refused socket, timeout, HTTP error, garbage), ``info`` (its /info dict, None
    on error), ``containers`` (inspect documents; [] on error) and ``missing`` (the
    ``names`` this engine does not know). [] when no engine socket is present at all.
    An entry's engine facts: ``facts_for(e["name"], e["url"], e["rootless_uid"],
    sandboxes.engine_facts(e["info"]))``; a client for the container method: ``connect(e["url"])``.
    """
    urls = engine_urls(base_url)
    names = list(names or ())
    entries = in_parallel(lambda url: _survey_one(url, names, include_stopped, deadline), urls, deadline)
    for index, (url, entry) in enumerate(zip(urls, entries)):
        if isinstance(entry, EngineError):  # its thread outlived the deadline
            entries[index] = {"name": url_name(url), "url": url, "kind": None, "version": None,
                              "rootless_uid": rootless_uid(url), "error": str(entry), "info": None,
                              "containers": [], "missing": []}
    _unique_names(entries, key=lambda e: e["name"], rename=lambda e, name: e.update(name=name),
                  url=lambda e: e["url"])
    return entries


def report_of(entries):
    """The results' ``engines`` ([{name, url, kind, error}]) of survey entries (pure)."""
    return [{key: entry[key] for key in ("name", "url", "kind", "error")} for entry in entries]


# --- the container method's disposable container -------------------------------------------

CONTAINER_CALL_TIMEOUT_S = 60.0  # create, start, logs, kill, remove of the disposable container: a busy engine
HARDENED_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LD_PRELOAD": "", "LD_LIBRARY_PATH": "", "LD_AUDIT": "",
                "ENV": "", "BASH_ENV": "", "IFS": " \t\n"}


def disposable_config(image, script, args, binds, user="0:0"):
    """The create body of run_disposable's container (pure): see run_disposable."""
    mounts = [{"Type": "bind", "Source": src, "Target": dst, "ReadOnly": False,
               "BindOptions": {"NonRecursive": True}} for src, dst in binds.items()]
    return {
        "Image": image, "Entrypoint": ["/bin/sh"], "Cmd": ["-c", script, "sh", *args], "User": user,
        "Env": ["%s=%s" % item for item in HARDENED_ENV.items()], "Labels": {"sandboxguard": "sweep"},
        "NetworkDisabled": True, "Tty": False, "OpenStdin": False, "AttachStdin": False,
        "AttachStdout": True, "AttachStderr": True,
        "HostConfig": {"NetworkMode": "none", "CapDrop": ["ALL"], "CapAdd": ["CHOWN", "DAC_OVERRIDE", "FOWNER"],
                       "SecurityOpt": ["no-new-privileges"], "ReadonlyRootfs": True, "Mounts": mounts,
                       "AutoRemove": False, "Tmpfs": {"/tmp": "rw,noexec,nosuid,size=16m"}},
    }


def run_disposable(client, image, script, args, binds, timeout, user="0:0"):
    """Run `sh -c script sh args...` in a hardened throwaway container; return a result dict.

    The container: no network, every capability dropped but CHOWN, DAC_OVERRIDE and
    FOWNER, no-new-privileges, read-only root, PATH and loader variables reset, and
    only `binds` ({host realpath: container path}) mounted, as non-recursive binds so
    mounts nested below them are not visible. Killed after `timeout` seconds (None or 0:
    no limit). Returns dict: exit_code (None when killed), output (str: stdout and stderr
    as the engine interleaved them), stdout (bytes, exact: what a script prints for the
    host to parse), stderr (str), timed_out (bool). Raises EngineError when the engine
    cannot create, start or read it.
    """
    calls = CONTAINER_CALL_TIMEOUT_S
    cid = client.create_container(disposable_config(image, script, args, binds, user), timeout=calls)
    timed_out = False
    try:
        client.start(cid, timeout=calls)
        try:
            exit_code = client.wait(cid, timeout or 0)
        except EngineError:  # the step outlived its budget (the wait's deadline), or the engine failed it
            timed_out = True
            exit_code = None
            try:
                client.kill(cid, timeout=calls)
            except EngineError:  # it may have exited meanwhile; removal below is what matters
                pass
        stdout, stderr, both = client.logs(cid, timeout=calls)
    finally:
        client.remove_container(cid, force=True, timeout=calls)
    return {"exit_code": exit_code, "output": both.decode("utf-8", "replace"), "stdout": stdout,
            "stderr": stderr.decode("utf-8", "replace"), "timed_out": timed_out}


def ask(client, names=None, include_stopped=True, engine=None, deadline=SURVEY_DEADLINE_S):
    """Ask every engine of ``client`` (a connect_engines group, or one client) once, each on its
    own and in parallel, all of one engine's calls within ``deadline`` seconds together: a list
    of one dict per engine, ``{name, url, kind, version, rootless_uid, error, info, containers,
    not_found}`` (survey's entries, for engines already connected). The group's sockets that
    did not answer come last, each with its ``error``.

    ``containers``: inspect documents (only ``names`` when given: each asked of every engine,
    ``not_found`` maps those this engine does not know to its answer). One engine's error,
    timeout or garbage is its own entry's ``error`` (one line; ``containers`` []): the others'
    answers stand; nothing is raised for an engine. ``engine``: what makes the calls (this
    module; tests pass a stand-in with engine_info, inspect_container and
    inspect_containers). Touches the engines (reads only).
    """
    calls = engine if engine is not None else _this_module()
    group = client if isinstance(client, Engines) else None
    pairs = members(client)

    def one(pair):
        member = pair[1]
        answer = {"info": None, "containers": [], "not_found": {}}
        with _budget(member, deadline):
            answer["info"] = calls.engine_info(member)
            if names:
                for wanted in names:
                    try:
                        answer["containers"].append(calls.inspect_container(member, wanted))
                    except NotFound as exc:  # this engine does not know it; another may
                        answer["not_found"][wanted] = str(exc)
            else:
                answer["containers"] = list(calls.inspect_containers(member, None, include_stopped))
        return answer

    answers = []
    for (name, member), got in zip(pairs, in_parallel(one, pairs, deadline)):
        known = group.member(name) if group is not None else None
        entry = {"name": name, "url": known.url if known else getattr(member, "url", None),
                 "kind": known.kind if known else name, "version": known.version if known else None,
                 "rootless_uid": known.rootless_uid if known else None,
                 "error": None, "info": None, "containers": [], "not_found": {}}
        if isinstance(got, Exception):
            entry["error"] = one_line(str(got)) or type(got).__name__
            if group is not None:
                group.fail(name, entry["error"])
        else:
            entry.update(got)
        answers.append(entry)
    for skipped in group.skipped if group is not None else ():
        answers.append({"name": skipped.get("name") or url_name(skipped["url"]), "url": skipped["url"], "kind": None,
                        "version": None, "rootless_uid": rootless_uid(skipped["url"]), "error": skipped["reason"],
                        "info": None, "containers": [], "not_found": {}})
    return answers


def _this_module():
    import sys  # noqa: PLC0415 - only to name this module as the default caller

    return sys.modules[__name__]


def _budget(member, deadline):
    """``with``: every call to one engine's client within ``deadline`` seconds together (a
    stand-in client of the tests has no budget: nothing)."""
    budget = getattr(member, "budget", None)
    if budget is None:
        return _NoBudget()
    return budget(deadline)


class _NoBudget:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
