# GENERATED from python/src/sandboxguard/_privileged/scope.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Which directories sandboxguard covers: the one decision, for every consumer.

The sweep and ``mounts_info``, the event watcher, the guard (its roots and the engine
queries below them), the audit's ``privileged_files``, the nosuid mounts and the leak
accounts all call :func:`derive`; none derives a root of its own. Roots come from
*providers*, each a callable with no argument returning candidate roots:

- :func:`hermes` (the Hermes layout): ``<sandbox_dir>/docker`` (TERMINAL_SANDBOX_DIR),
  ``<home>/sandboxes/docker`` for each HERMES_HOME and
  ``<home>/profiles/<name>/sandboxes/docker`` for each of its profiles
  (sandboxes.profile_names_at, the one profile rule, listed through descriptors);
- :func:`operator` (roots the operator names, taken as given);
- more providers later (CI runners), passed in ``providers``.

A candidate is a dict ``{path, source, owner}`` (``owner``: None, or the (uid, gid) a
provider knows the files there belong to, for ownership return), optionally
``accounts``: ``[(directory, why)]``, directories on the candidate's path whose owners are
the accounts that run agents (the leak audit's default scope). A provider may also return
``{path, reason}``: something it refused while listing (a symlinked ``profiles``). A
provider returns a list of those, or a provider result ``{roots, labels, out_of_scope,
errors}`` (the shape of the CI runner providers): ``roots`` are its candidates, the rest is
passed on in derive's result (a label only names which in-scope container a provider's
runner started; it never adds a root).

Every candidate goes through the same check (:func:`prove`): an absolute path, walked
component by component from ``/`` with O_NOFOLLOW descriptors, refused when any component
is a symlink (whoever controls the link would choose what root changes), then refused when
it is a system path (roots.refusal_reason). A component that does not exist ends the walk:
the root is kept (the guard waits for it, the sweep finds nothing there) and proven again
when it is opened (roots.open_root). The owners of ``accounts`` come from the fstat of the
descriptors of that same walk, never from a lookup by path. Nothing a container controls
(labels, mount destinations, image metadata) reaches a provider: the engine only tells
which in-scope directories are mounted (sandboxes.scope_containers).
"""
import os
import posixpath

from .._core import safefs
from .._core.mountinfo import read_mountinfo
from .._core.pathnames import is_within
from .._core.text import escape
from ..roots import OpenRoot, RootRefused, refusal_reason, refuse_system
from . import sandboxes
from . import targets as targetsmod

SOURCE_SANDBOX_DIR = "TERMINAL_SANDBOX_DIR"
SOURCE_OPERATOR = "operator"
REASON_RELATIVE = "relative path; sandbox roots must be absolute"
DOCKER_MODES = ("auto", "always", "never")
DEFAULT_ENGINE_TIMEOUT_S = 10  # each call to an engine (docker_engine.DEFAULT_TIMEOUT_S)
DEFAULT_ENGINE_DEADLINE_S = 60  # all of one engine's answers for one scope (docker_engine.SURVEY_DEADLINE_S)


class _Frozen:
    """Attributes set once, in __init__; assigning one afterwards raises AttributeError."""

    __slots__ = ()

    def _set(self, **values):
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key, value):
        raise AttributeError("%s is frozen: %s is set once" % (type(self).__name__, key))


class Request(_Frozen):
    """What one operation asks to be in scope, built once at its entry point (a module's
    options, the CLI's) and handed to :func:`derive`: the Hermes homes and
    TERMINAL_SANDBOX_DIR, the operator's ``paths`` (may be regular files: a file is a root
    only when the operator names one), the CI runners (runners.runner_providers), and whether
    and how to ask the container engines (``docker``: auto, always or never; ``docker_host``;
    ``names``: only these containers; ``include_stopped``; ``task_dirs``: the persistent task
    directories no container mounts are targets too; ``engine_timeout``: each engine call's
    deadline, ``engine_deadline``: all of one engine's answers together). Immutable; pure."""

    __slots__ = (
        "docker",
        "docker_host",
        "engine_deadline",
        "engine_timeout",
        "find_github_runners",
        "github_runners",
        "gitlab_config",
        "hermes_homes",
        "include_stopped",
        "names",
        "paths",
        "providers",
        "sandbox_dir",
        "task_dirs",
    )

    def __init__(self, hermes_homes=(), sandbox_dir=None, paths=(), github_runners=(), gitlab_config=None,
                 docker="never", docker_host=None, names=None, include_stopped=True, **more):
        if docker not in DOCKER_MODES:
            from ..errors import InputError  # noqa: PLC0415

            raise InputError("docker must be one of %s, not %r" % (", ".join(DOCKER_MODES), docker))
        if isinstance(hermes_homes, (str, bytes)):
            hermes_homes = [hermes_homes]
        if isinstance(paths, (str, bytes)):
            paths = [paths]
        if isinstance(github_runners, (str, bytes)):
            github_runners = [github_runners]
        known = {"providers", "find_github_runners", "task_dirs", "engine_timeout", "engine_deadline"}
        unknown = sorted(set(more) - known)
        if unknown:
            raise TypeError("unknown scope request option(s): %s" % ", ".join(unknown))
        self._set(hermes_homes=tuple(h for h in hermes_homes or () if h), sandbox_dir=sandbox_dir or None,
                  paths=tuple(p for p in paths or () if p), github_runners=tuple(d for d in github_runners or () if d),
                  gitlab_config=gitlab_config or None, docker=docker, docker_host=docker_host or None,
                  names=tuple(names) if names else None, include_stopped=bool(include_stopped),
                  providers=tuple(more.get("providers") or ()),
                  find_github_runners=bool(more.get("find_github_runners")),
                  task_dirs=more.get("task_dirs", not names), engine_timeout=more.get(
                      "engine_timeout", DEFAULT_ENGINE_TIMEOUT_S),
                  engine_deadline=more.get("engine_deadline") or DEFAULT_ENGINE_DEADLINE_S)

    @property
    def empty(self):
        """Nothing named at all: no Hermes home, sandbox directory, path or runner."""
        return not any((self.hermes_homes, self.sandbox_dir, self.paths, self.github_runners, self.gitlab_config,
                        self.providers, self.find_github_runners))

    def replace(self, **changes):
        """A new Request with ``changes`` (this one is immutable)."""
        values = {key: getattr(self, key) for key in self.__slots__}
        values.update(changes)
        return Request(**values)


class Root(_Frozen):
    """One root of a Scope: ``path`` (as named), ``realpath`` (as the chain of opens proves it),
    ``source`` (which provider named it), ``owner`` ((uid, gid) the files there belong to,
    when the provider knows: a CI runner's user; else None), ``parent_owner`` ((uid, gid) of
    the directory above it, from the same walk: whom a sandbox's files go back to), and
    ``held``: the proven descriptor (a roots.OpenRoot of the directory, or of a regular file
    the operator named), or None when the root does not exist (yet). Walks start from
    ``held``; nothing re-opens ``realpath``."""

    __slots__ = ("held", "owner", "parent_owner", "path", "realpath", "source")

    def __init__(self, path, realpath, source, owner, held, parent_owner=None):
        self._set(path=path, realpath=realpath, source=source, owner=tuple(owner) if owner else None, held=held,
                  parent_owner=tuple(parent_owner) if parent_owner else None)

    @property
    def exists(self):
        return self.held is not None

    @property
    def is_dir(self):
        return self.held is not None and self.held.is_dir

    def as_dict(self):
        """The root as reports show it: {path, realpath, source, owner}."""
        return {"path": self.path, "realpath": self.realpath, "source": self.source, "owner": self.owner}


class Scope(_Frozen):
    """The scope of one operation on this host (:func:`derive`), passed down as one value.

    ``roots`` (Root, in the providers' order), ``refused`` ([{path, reason}]), ``accounts``
    ({name: [why]}: the owners of the Hermes homes, profiles and sandbox directories), ``labels``,
    ``out_of_scope`` and ``errors`` (what CI runner providers said), ``engines``: the engines'
    answers when they were asked (docker_engine.ask: [{name, url, kind, error, facts,
    containers}], [] when none was, ``engine_note`` saying why not), ``containers`` and
    ``targets`` (Target) derived from those answers and the held roots. Close it when done (or
    ``with``): that closes every held descriptor and the engine connection it made.
    Indexing (``scope["roots"]``) gives the plain-data view reports use."""

    __slots__ = ("_closers", "accounts", "client", "containers", "engine_note", "engines", "errors", "labels",
                 "out_of_scope", "refused", "request", "roots", "targets")

    def __init__(self, request, roots, refused, accounts, said, engines=(), engine_note=None, client=None,
                 containers=(), targets=(), closers=()):
        self._set(request=request, roots=tuple(roots), refused=tuple(refused), accounts=dict(accounts),
                  labels=dict(said.get("labels") or {}), out_of_scope=tuple(said.get("out_of_scope") or ()),
                  errors=tuple(said.get("errors") or ()), engines=tuple(engines), engine_note=engine_note,
                  client=client, containers=tuple(containers), targets=tuple(targets), _closers=list(closers))

    @property
    def owned(self):
        """The roots whose provider names their owner (a CI runner's work folder)."""
        return tuple(root for root in self.roots if root.owner)

    @property
    def existing(self):
        """The roots that exist (held), nested ones included."""
        return tuple(root for root in self.roots if root.held is not None)

    @property
    def absent(self):
        return tuple(root.path for root in self.roots if root.held is None)

    def walk_roots(self):
        """The held roots to walk once each: a root below another directory root is left out
        (one walk covers both)."""
        kept = []
        for root in sorted(self.existing, key=lambda r: (r.realpath.count("/"), r.realpath)):
            if not any(k.is_dir and is_within(root.realpath, k.realpath) for k in kept):
                kept.append(root)
        return kept

    def engine_errors(self):
        return [e for e in self.engines if e.get("error")]

    def engine_summary(self):
        """{name, url, kind, error} of every engine asked."""
        return [{key: e.get(key) for key in ("name", "url", "kind", "error")} for e in self.engines]

    def root_dicts(self):
        return [root.as_dict() for root in self.roots]

    def __getitem__(self, key):
        views = {"roots": self.root_dicts, "refused": lambda: [dict(r) for r in self.refused],
                 "accounts": lambda: {k: list(v) for k, v in self.accounts.items()},
                 "labels": lambda: dict(self.labels), "out_of_scope": lambda: list(self.out_of_scope),
                 "errors": lambda: list(self.errors)}
        if key not in views:
            raise KeyError(key)
        return views[key]()

    def close(self):
        seen = set()
        for item in [root.held for root in self.roots] + [t.held for t in self.targets] + self._closers:
            if item is not None and id(item) not in seen:
                seen.add(id(item))
                item.close()
        del self._closers[:]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def derive(request=None, client=None, engine=None, **legacy):
    """The scope of one operation (a :class:`Scope`), decided once from ``request`` (a
    :class:`Request`; keywords build one: ``scope.derive(hermes_homes=[...])``).

    Roots: the Hermes provider's (TERMINAL_SANDBOX_DIR's ``docker``, each home's and each of
    its profiles' ``sandboxes/docker``), the CI runners' (``request.github_runners``,
    ``gitlab_config``: runners.runner_providers, and ``request.providers``), then the
    operator's ``paths``; one per realpath (the first provider to name it wins). Each is proven
    by the one walk from ``/`` (safefs.walk_path: no symlink anywhere, system paths refused by
    path, identity and mount source) and held open; a provider that proved its root itself
    (a runner's work folder, held) hands the descriptor over, and it is not walked again.

    Engines (``request.docker`` auto or always): ``client`` (a docker_engine group already
    connected) or one docker_engine.engines_present call; each engine asked once, on its own
    (docker_engine.ask: one engine's error is its own entry); their containers' in-scope bind
    mounts become ``targets``, opened from the held roots. ``engine``: the module that asks
    engines (docker_engine; tests pass a stand-in). Touches the system (opens, lists, asks the
    engines), changes nothing.
    """
    if request is None:
        request = Request(**_legacy_request(legacy))
    elif legacy:
        raise TypeError("give a Request or keywords, not both")
    from .runners import runner_providers  # noqa: PLC0415 - runners builds on this module

    candidates = hermes(request.hermes_homes, request.sandbox_dir)()
    said = {"labels": {}, "out_of_scope": [], "errors": []}
    providers = list(runner_providers(request.github_runners, request.gitlab_config, request.find_github_runners))
    for provider in providers + list(request.providers):
        given = provider()
        if isinstance(given, dict):
            said["labels"].update(given.get("labels") or {})
            said["out_of_scope"] += list(given.get("out_of_scope") or ())
            said["errors"] += list(given.get("errors") or ())
            given = given.get("roots") or ()
        candidates += list(given)
    candidates += operator(request.paths)()
    found = _Found()
    try:
        for item in candidates:
            found.add(item)
    except BaseException:
        found.close_all()
        raise
    found.close()
    scope = Scope(request, found.roots, found.refused, found.accounts, said)
    if request.docker == "never":
        return scope
    try:
        return _with_engines(scope, request, client, engine)
    except BaseException:
        scope.close()
        raise


def _legacy_request(legacy):
    """derive()'s keywords (the names of 1.1's derive: hermes_homes, sandbox_dir, extra_roots,
    providers) as Request keywords."""
    if "extra_roots" in legacy:
        legacy = dict(legacy)
        legacy["paths"] = legacy.pop("extra_roots")
    return legacy


def _with_engines(scope, request, client, engine):
    """The scope with the engines' answers, containers and targets (a new frozen Scope).

    ``engine``: None or the docker_engine module (connects when no ``client`` is given: one
    engines_present call), or a stand-in with docker_engine's per-call functions (tests:
    ``client`` is used as given, never connected)."""
    from .. import docker_engine  # noqa: PLC0415 - compiled only when an engine is asked

    connects = engine is None or engine is docker_engine
    engine = docker_engine if engine is None else engine
    owned = None
    if client is None and connects:
        if not request.docker_host and not docker_engine.engine_urls():
            note = "no container engine here: no engine socket exists and DOCKER_HOST is unset"
            return _rescoped(scope, [], note, None, None)
        try:  # every socket present, each on its own: one that does not answer is its own entry
            client = owned = docker_engine.engines_present(request.docker_host, timeout=request.engine_timeout)
        except docker_engine.EngineError as exc:
            answer = {"name": "docker", "url": request.docker_host or "auto", "kind": None, "error": str(exc),
                      "facts": None, "containers": [], "not_found": {}}
            return _rescoped(scope, [answer], str(exc), None, None)
    answers = docker_engine.ask(client, request.names, request.include_stopped, engine=engine,
                                deadline=request.engine_deadline)
    for answer in answers:
        answer["facts"] = None
        if not answer.get("error"):
            try:  # a rootless Podman socket's engine is rootless whatever its info says (facts_of)
                answer["facts"] = docker_engine.facts_of(client, answer["name"],
                                                         sandboxes.engine_facts(answer.get("info") or {}))
            except (AttributeError, TypeError, ValueError) as exc:  # an info that is not what an engine says
                answer.update(error="malformed info: %s" % exc, containers=[])
    return _rescoped(scope, answers, None, client, owned)


def _rescoped(scope, answers, note, client, owned):
    """A Scope like ``scope`` with the engines' ``answers`` and the targets they give."""
    roots = scope.roots
    usable = [root.as_dict() for root in roots]
    inspects = [(a["name"], doc) for a in answers if not a.get("error") for doc in a.get("containers") or ()]
    task_dirs = targetsmod.task_dirs_of(roots) if scope.request.task_dirs else ()
    containers, targets = targetsmod.targets_for(inspects, roots, usable, task_dirs)
    closers = [owned] if owned is not None else []
    new = Scope(scope.request, roots, scope.refused, scope.accounts,
                {"labels": scope.labels, "out_of_scope": scope.out_of_scope, "errors": scope.errors},
                answers, note, client, containers, targets, closers)
    return new


class _Found:
    """What derive() finds, one candidate at a time. The walks share ``held``, the proven
    descriptors of the directories already walked (walk_path's cache), closed at the end;
    each root keeps a descriptor of its own."""

    def __init__(self):
        self.roots, self.refused, self.accounts = [], [], {}
        self.paths, self.reals, self.names, self.held = set(), set(), {}, {}
        self.mounts = None

    def close(self):
        for fd, _ids, _trusted in self.held.values():
            os.close(fd)
        self.held = {}

    def close_all(self):
        self.close()
        for root in self.roots:
            if root.held is not None:
                root.held.close()

    def add(self, item):
        path = item["path"]
        if "reason" in item:
            self.refused.append({"path": path, "reason": item["reason"]})
            return
        if path in self.paths:
            _close(item.get("held"))
            return
        self.paths.add(path)
        if item.get("held") is not None:
            self._add_held(item)
            return
        if not posixpath.isabs(path):
            self.refused.append({"path": path, "reason": REASON_RELATIVE})
            return
        owners = {}
        try:
            walked = safefs.walk_path(path, missing=safefs.MISSING_TAIL, owners=owners, held=self.held,
                                      refused=RootRefused, allow_file=item["source"] == SOURCE_OPERATOR)
        except RootRefused as exc:
            self._add_accounts(item.get("accounts", ()), owners)
            self.refused.append({"path": path, "reason": exc.reason})
            return
        self._add_accounts(item.get("accounts", ()), owners)
        held = None
        if walked.fd is not None:
            held = OpenRoot(walked.path, walked.fd, walked.st,
                            os.fsencode(walked.name) if walked.name is not None else None)
            walked.fd = None
        self._keep(item, path, walked.path, held, owners.get(posixpath.dirname(walked.path.rstrip("/")) or "/"))

    def _add_held(self, item):
        """A candidate its provider proved and holds (a runner's work folder): kept as held."""
        held = item["held"]
        self._keep(item, item["path"], held.path, held, None)

    def _keep(self, item, path, real, held, parent_owner):
        reason = refusal_reason(real)
        if reason is None and held is not None:
            try:
                if self.mounts is None:
                    self.mounts = read_mountinfo()
                refuse_system(path, real, held.fd, held.st, self.mounts)
            except RootRefused as exc:
                reason = exc.reason
        if reason or real in self.reals:
            _close(held)
            if reason:
                self.refused.append({"path": path, "reason": reason})
            return
        self.reals.add(real)
        self.roots.append(Root(path, real, item["source"], item.get("owner"), held, parent_owner))

    def _add_accounts(self, wanted, owners):
        for directory, why in wanted:
            ids = owners.get(_normal(directory))
            if ids is None:
                continue
            uid = ids[0]
            if uid not in self.names:
                self.names[uid] = "root" if uid == 0 else _user_name(uid)
            if self.names[uid]:
                self.accounts.setdefault(self.names[uid], []).append(why)


def _close(held):
    if held is not None:
        held.close()


def _user_name(uid):
    import pwd  # noqa: PLC0415 - POSIX only

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _normal(path):
    return "/" + posixpath.normpath(path).lstrip("/")


# -- the one check ------------------------------------------------------------------------

def prove(path, owners=None):
    """``path`` made absolute and normal, provided no component of it is a symlink; raises
    RootRefused naming the link otherwise.

    The one walk from ``/`` (safefs.walk_path, MISSING_TAIL): a component that does not
    exist, or is not a directory, ends what can be checked: the rest is kept as spelled (a
    later ``..`` may climb back into what exists, and that is checked again). ``owners``: a
    dict filled with {proven directory: (uid, gid)}. Changes nothing.
    """
    return safefs.walk_path(path, missing=safefs.MISSING_TAIL, owners=owners, refused=RootRefused, hold=False).path


# -- providers ----------------------------------------------------------------------------

def hermes(hermes_homes=(), sandbox_dir=None):
    """The Hermes provider: TERMINAL_SANDBOX_DIR's ``docker``, each home's and each of its
    profiles' ``sandboxes/docker``."""
    def provide():
        found = []
        if sandbox_dir:
            root = posixpath.join(sandbox_dir, sandboxes.DOCKER_SUBDIR)
            found.append({"path": root, "source": SOURCE_SANDBOX_DIR, "owner": None,
                          "accounts": [(sandbox_dir, "owner of TERMINAL_SANDBOX_DIR %s" % escape(sandbox_dir)),
                                       (root, "owner of the sandbox directory %s" % escape(root))]})
        for home in hermes_homes or ():
            root = posixpath.join(home, "sandboxes", sandboxes.DOCKER_SUBDIR)
            found.append({"path": root, "source": "HERMES_HOME %s" % escape(home), "owner": None,
                          "accounts": [(home, "owner of the Hermes home %s" % escape(home)),
                                       (root, "owner of the sandbox directory %s" % escape(root))]})
            names, refusal = profile_names(home)
            if refusal:
                found.append(refusal)
            for name in names:
                profile = posixpath.join(home, "profiles", name)
                root = posixpath.join(profile, "sandboxes", sandboxes.DOCKER_SUBDIR)
                found.append({"path": root, "source": "profile %s of %s" % (escape(name), escape(home)),
                              "owner": None,
                              "accounts": [(profile, "owner of the profile %s" % escape(profile)),
                                           (root, "owner of the sandbox directory %s" % escape(root))]})
        return found
    return provide


def operator(extra_roots=()):
    """The operator's provider: the roots named, as given."""
    def provide():
        return [{"path": path, "source": SOURCE_OPERATOR, "owner": None} for path in extra_roots or ()]
    return provide


def profile_names(home):
    """(names, refusal) of the profiles under ``<home>/profiles`` (sandboxes.profile_names_at,
    the one rule), the directory reached by the same walk as a root (:func:`prove`'s: no
    symlink anywhere). ``refusal``: a ``{path, reason}`` when ``profiles`` goes through a
    symlink (no profile counts then), else None. Missing or unreadable: no names."""
    profiles = posixpath.join(home, "profiles")
    if not posixpath.isabs(profiles):
        return [], None
    try:
        held = safefs.walk_path(profiles, missing=safefs.MISSING_TAIL, refused=RootRefused)
    except RootRefused as exc:
        return [], {"path": profiles, "reason": exc.reason}
    except OSError:  # the directory itself cannot be opened for listing
        return [], None
    if held.fd is None:
        return [], None
    with held:
        try:
            return sandboxes.profile_names_at(held.fd), None
        except OSError:
            return [], None
