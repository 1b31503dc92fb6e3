# GENERATED from python/src/sandboxguard/sweep.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Sweep Docker sandboxes: the seeds' teardown pass, for every in-scope bind mount.

For each target directory (see sandboxes.scope_containers), three steps run in the
order the seeds give, each with its own budget so a huge tree in one step cannot
starve the next:

1. ``chown``: ownership return. Files and directories owned by root (or by the
   engine's remapped root) go back to the sandbox directory's owner. The kernel
   clears setuid, setgid and file capabilities on what it chowns, so this goes first.
2. ``setid``: clear setuid/setgid on every regular file.
3. ``caps``: clear file capabilities.

Two methods: ``native`` walks the tree on the host with strip.run (needs root on the
host); ``container`` runs each step in a disposable hardened container that mounts only
the target. The engine resolves a bind's source by path, so it is never handed the
agent's path: it gets a root-owned staging bind of the proven directory (staging.staged;
that needs root too, unless only root and the caller can change the target's path).
A step that cannot run produces one warning naming the sandbox path.

The owner ownership return gives files back to comes from the fstat of ``<sandbox>``
opened component by component (safefs.open_dir, no symlink followed), never from a
lookup by path.
"""
import posixpath
import threading
import time

from . import docker_engine
from . import report as envelope
from . import strip as stripmod
from ._core import inputs, safefs
from ._core.text import escape
from ._privileged import engine_events, sandboxes
from ._privileged import scope as _scopemod
from ._privileged import targets as _targets
from ._privileged.sweep_steps import (
    STEPS,
    sweep_container,
    sweep_native,
)
from ._walk import fileops
from .errors import InputError

__all__ = ["METHODS", "STEPS", "derive_roots", "mounts_info", "sweep", "watch"]

METHODS = ("native", "container")
DEFAULT_METHOD = "native"
DEFAULT_BUDGET_PER_STEP_S = stripmod.DEFAULT_BUDGET_S  # each step is one walk (strip.run)


def path_owner(path):
    """(uid, gid) of a directory from the fstat of its descriptor, opened component by
    component with no symlink followed anywhere (safefs.open_dir). Raises PathRefused
    (a ValueError) for a path through a symlink, OSError when it cannot be opened."""
    with safefs.open_dir(path, follow_trusted_links=False) as held:
        return held.st.st_uid, held.st.st_gid


def sandbox_owner(target_root):
    """The owner ownership return gives files back to: the owner of ``<sandbox>``.

    ``target_root`` is the realpath of ``<sandbox>/docker``; Hermes creates ``<sandbox>``
    as the agent's user, while the engine may create the task directories as root. The
    owner comes from a proven descriptor (path_owner): a symlink the agent swaps in on the
    way (``~/.hermes`` made a link to another user's tree) refuses it instead of giving the
    files to that user. (A Scope carries it from its own proof: scope.Root.parent_owner.)
    """
    return path_owner(posixpath.dirname(target_root.rstrip("/")))


def request_of(hermes_homes=(), sandbox_dir=None, extra_roots=(), names=None, include_stopped=True, providers=(),
               docker="always", **more):
    """The scope.Request of the sweep's keyword arguments (the public signatures build it)."""
    return _scopemod.Request(hermes_homes, sandbox_dir, extra_roots, docker=docker, names=names,
                             include_stopped=include_stopped, providers=providers, **more)


def derive_roots(hermes_homes=(), sandbox_dir=None, extra_roots=(), providers=()):
    """Host-derived roots on this host: (usable, refused), scope.derive's ``roots`` (dicts
    path, realpath, source, owner) and ``refused`` (dicts path, reason). ``providers``: more
    scope providers (runners.runner_providers: CI runners' roots). Touches the system
    (lists profiles, walks each root's path), changes nothing."""
    request = request_of(hermes_homes, sandbox_dir, extra_roots, providers=providers, docker="never")
    with _scopemod.derive(request) as found:
        return found["roots"], found["refused"]


def mounts_info(client, hermes_homes=(), sandbox_dir=None, extra_roots=(), names=None, include_stopped=True,
                engine=docker_engine, providers=(), scope=None):
    """What sandbox_mounts_info returns (the report envelope): engine facts, roots (strings),
    root_sources, refused_roots, containers, targets and ``engines`` ({name, url, kind,
    error} of every engine asked: one engine's error is its own, the others' containers are
    still there).

    ``scope``: a scope.Scope already derived (with the engines' answers) to report; without
    one, one is derived here from the keywords, asking ``client`` (one client, or a
    docker_engine.Engines group: every engine ``auto`` found): each container record and
    target names its ``engine``/``engines``; ``engine`` (the facts) sums the group up and
    lists each engine's facts in ``engine.engines``. ``engine``: what asks the engine
    (docker_engine; a test passes an object with the same functions). ``providers``: more
    scope providers (derive_roots).
    """
    own = scope is None
    if own:
        scope = _scopemod.derive(request_of(hermes_homes, sandbox_dir, extra_roots, names, include_stopped,
                                            providers), client=client, engine=engine)
    try:
        return info_of(scope, getattr(client, "warnings", ()))
    finally:
        if own:
            scope.close()


def info_of(found, warnings=()):
    """The mounts_info envelope of a Scope with the engines' answers (pure)."""
    _check_names(found)
    info = _info(engine_facts(found), found.root_dicts(), list(found["refused"]), list(found.containers),
                 [target.as_dict() for target in found.targets])
    engines_into(info, found)
    for warning in warnings:
        if warning not in info["warnings"]:
            envelope.add_warning(info, warning)
    for target in found.targets:
        if target.held is None:
            envelope.add_warning(info, "sandbox %s: skipped, %s" % (escape(target.realpath), target.reason))
    return info


def _check_names(found):
    """EngineError when containers were named and no engine that answered knows one of them."""
    names = found.request.names
    healthy = [a for a in found.engines if not a.get("error")]
    if not names or not found.engines:
        return
    missing = [n for n in names if all(n in a.get("not_found", {}) for a in healthy)]
    if missing or not healthy:
        why = ["%s: %s" % (a["name"], a["not_found"][n]) for n in missing for a in healthy]
        why += ["%s: %s" % (a["name"], a["error"]) for a in found.engines if a.get("error")]
        raise docker_engine.EngineError("container %s: not found on any engine (%s)" % (
            ", ".join(missing or names), "; ".join(why) or "no such container"))


def engine_facts(found):
    """The engines' facts summed up (_group_facts), or, when none answered, facts that say
    the sweep cannot run and why (pure)."""
    each = [a["facts"] for a in found.engines if a.get("facts") and not a.get("error")]
    if each:
        return _group_facts(each)
    reason = found.engine_note or "; ".join("%s: %s" % (a["name"], a["error"]) for a in found.engines
                                            if a.get("error")) or "no engine was asked"
    return {"os": None, "rootless": False, "userns_remap": False, "remap_root": None, "sweepable": False,
            "name": None, "url": None, "reason": "no container engine answered: %s" % reason, "engines": []}


def engines_into(result, found):
    """``engines`` ([{name, url, kind, error}] of every engine the Scope ``found`` asked) into a
    result; each engine that could not be asked is an error of it (op ``engine``, path its URL)
    and the result incomplete: what that engine runs was not seen."""
    result["engines"] = found.engine_summary()
    for row in found.engine_errors():
        text = "engine %s: %s" % (row["name"], row["error"])
        envelope.add_error(result, row.get("url") or row["name"], "engine", text)
        result["complete"] = False


def _group_facts(each):
    """One engine's facts as they are; several engines' summed up (sweepable when one is,
    rootless when all are), each engine's own facts in ``engines``."""
    if len(each) == 1:
        return dict(each[0], engines=[dict(each[0])])
    sweepable = [f for f in each if f["sweepable"]]
    first = (sweepable or each)[0]
    return {"os": first["os"], "rootless": all(f["rootless"] for f in each),
            "userns_remap": any(f["userns_remap"] for f in each),
            "remap_root": next((f["remap_root"] for f in each if f["remap_root"]), None),
            "sweepable": bool(sweepable), "name": ", ".join(f["name"] for f in each),
            "url": None, "reason": "; ".join("%s: %s" % (f["name"], f["reason"]) for f in each if f["reason"]),
            "engines": each}


def _chown_from(facts):
    """The uids ownership return takes files from: those of every sweepable engine."""
    uids = []
    for each in facts.get("engines") or [facts]:
        if each["sweepable"]:
            uids += [uid for uid in sandboxes.chown_from_uids(each) if uid not in uids]
    return tuple(uids)


def _info(facts, usable, refused, containers, targets):
    """The mounts_info envelope: ``roots`` the derived roots' realpaths, ``root_sources``
    the {path, realpath, source} dicts, ``refused_roots``, ``containers``, ``targets``."""
    return envelope.new_report([r["realpath"] for r in usable], engine=facts, root_sources=usable,
                               refused_roots=refused, containers=containers, targets=targets,
                               counts={"containers": len(containers), "targets": len(targets)})


def _check_method(method, image):
    if method not in METHODS:
        raise InputError("method must be one of %s, not %r" % (", ".join(METHODS), method))
    if method == "container" and not image:
        raise InputError("the container method needs an image with find, chown, chmod, ls, sort and od "
                         "(busybox or a Debian slim image): set image")


def sweep(client, hermes_homes=(), sandbox_dir=None, extra_roots=(), names=None, include_stopped=True,
          method="native", image=None, owner=None, budget_per_step=DEFAULT_BUDGET_PER_STEP_S, dry_run=False,
          chown=True, info=None, engine=docker_engine, providers=(), scope=None):
    """Find the targets and sweep each one; return the sandbox_sweep result.

    ``scope``: the scope.Scope of this operation (derived once, with the engines' answers:
    remediate and the watcher pass theirs); without one, one is derived here from the
    keywords, asking ``client``. Every step walks from the target's held descriptor, opened
    from its root's (scope.Target.held): nothing is opened by path again.
    ``owner``: (uid, gid) for ownership return; None means each sandbox's owner (the owner of
    the directory above its root, from the scope's own proof), or, below a root whose
    provider names an owner (a runner's work folder), that owner (the runner user).
    ``providers``: more scope providers (derive_roots). ``info``: deprecated (a mounts_info()
    result: only its targets' paths are used, each opened from the scope's held roots).
    Returns the report envelope (report.py): ``roots`` the derived roots' realpaths,
    ``changed`` (in a dry run: would change), ``complete`` (every step of every sandbox
    finished), ``errors`` ({path, op, error} of every step), ``warnings`` (one per sandbox
    that could not be swept completely, one per engine that did not answer), ``counts``
    (summed over the steps' reports, plus ``sandboxes``), ``elapsed``; and engine, engines,
    targets, containers, root_sources, refused_roots, sandboxes (one per target: path,
    owner, method, changed, steps[]).
    """
    _check_method(method, image)
    budget_per_step = inputs.budget(budget_per_step, "budget_per_step")
    started = time.monotonic()
    own = scope is None
    if own:
        request = request_of(hermes_homes, sandbox_dir, extra_roots, names, include_stopped, providers,
                             docker="never" if info is not None else "always")
        scope = _scopemod.derive(request, client=client if info is None else None, engine=engine)
    try:
        if info is not None and own:
            targets = _targets_of_info(scope, info)
            info = dict(info, targets=[t.as_dict() for t in targets])
        else:
            info, targets = info_of(scope, getattr(client, "warnings", ())), list(scope.targets)
        client = scope.client if scope.client is not None else client
        options = dict(method=method, image=image, owner=owner, budget_per_step=budget_per_step, dry_run=dry_run,
                       chown=chown, engine=engine)
        return _sweep_all(client, scope, info, targets, options, started)
    finally:
        if own:
            scope.close()


def _targets_of_info(found, info):
    """scope.Target of each target path in a mounts_info() result, opened from ``found``'s held roots."""
    by_real = {root.realpath: root for root in found.roots}
    targets = []
    for target in info.get("targets") or ():
        root = by_real.get(target["root"])
        held, reason = _targets.open_target(root, target["realpath"])
        if root is None:
            continue  # not a root of this host's scope: never swept on a result's word
        targets.append(_targets.Target(target["realpath"], root, target.get("containers", ()),
                                       target.get("engines", ()), held, reason))
    return targets


def _sweep_all(client, found, info, targets, options, started):
    """Sweep ``targets`` (scope.Target, held) of the scope ``found``; ``options``: method,
    image, owner, budget_per_step, dry_run, chown and engine (sweep()'s keywords)."""
    method, image, owner, engine = options["method"], options["image"], options["owner"], options["engine"]
    budget_per_step, dry_run, chown = options["budget_per_step"], options.get("dry_run", False), options["chown"]
    facts = info["engine"]
    result = envelope.new_report(
        info["roots"], dry_run=bool(dry_run), counts={"sandboxes": 0}, engine=facts, targets=info["targets"],
        sandboxes=[], containers=info["containers"], root_sources=info["root_sources"],
        refused_roots=info["refused_roots"], engines=list(info.get("engines") or ()))
    for warning in info.get("warnings", ()):
        envelope.add_warning(result, warning)
    for error in info.get("errors") or ():
        if error["op"] == "engine":  # an engine that could not be asked: what it runs is not swept
            envelope.add_error(result, error["path"], error["op"], error["error"])
            result["complete"] = False
    if not facts["sweepable"] and not any(t.root.owner or not t.containers for t in targets):
        result["complete"] = False
        envelope.add_warning(result, "not sweeping: %s" % facts["reason"])
        return envelope.finish(result, started)
    chown_from = _chown_from(facts) if chown and facts["sweepable"] else ((0,) if chown else ())
    try:
        for target in targets:
            _add_sandbox(result, _sweep_target(client, target, method, image, owner, chown_from, budget_per_step,
                                               dry_run, result, engine))
    finally:
        for target in targets:  # opened from the info's paths here: the scope closes its own
            if target not in found.targets and target.held is not None:
                target.held.close()
    return envelope.finish(result, started)


def _add_sandbox(result, entry):
    result["sandboxes"].append(entry)
    result["counts"]["sandboxes"] += 1
    for step in entry["steps"]:
        if step["report"] is not None:
            for warning in step["report"].get("warnings", ()):
                envelope.add_warning(result, "sandbox %s: %s" % (escape(entry["path"]), warning))
        # a step that could not run has no report: its errors are all it counts
        counts = step["report"]["counts"] if step["report"] is not None else {"errors": len(step["errors"])}
        envelope.merge(result, {"counts": counts, "errors": step["errors"]}, stripmod.DEFAULT_MAX_LISTED)
        result["complete"] = result["complete"] and step["complete"]
    result["changed"] = result["changed"] or entry["changed"]


def _sweep_target(client, target, method, image, owner, chown_from, budget, dry_run, result, engine):
    """One sandbox entry: its owner, its steps; warnings go to ``result``."""
    path = target.realpath
    entry = {"path": path, "root": target.root.realpath, "containers": target.containers, "method": method,
             "owner": None, "changed": False, "steps": []}
    runner_owner = target.root.owner
    known = owner if owner is not None else (runner_owner or target.root.parent_owner)
    if known is not None:
        entry["owner"] = list(known)
    else:
        envelope.add_warning(result, "sandbox %s: the owner of its sandbox directory is unknown (the scope could "
                             "not prove it); ownership is not returned" % escape(path))
    own = tuple(entry["owner"]) if entry["owner"] else None
    if owner is None and chown_from and runner_owner:
        # below a runner's work folder every file not the runner user's goes back (uid or gid:
        # either breaks the next checkout), as runner-cleanup does; the container method's
        # find takes the engine's uids only
        entry["chown_from"] = fileops.CHOWN_FROM_OTHERS if method == "native" else list(chown_from)
        chown_from = fileops.CHOWN_FROM_OTHERS if method == "native" else chown_from
    if target.held is None:
        envelope.add_warning(result, "sandbox %s: skipped, %s" % (escape(path), target.reason))
        entry["skipped"] = target.reason
        result["complete"] = False
        return entry
    if method == "native":
        entry["steps"] = sweep_native(target.held, own, chown_from, budget, dry_run)
    else:
        name, member = _strip_engine(client, target, result["engine"])
        entry["engine"] = name
        entry["steps"] = sweep_container(member, target.held, own, chown_from, budget, image, dry_run,
                                         run=engine.run_disposable)
    problems = ["%s: %s" % (s["step"], s["error"] or "did not complete within its budget")
                for s in entry["steps"] if s["error"] or not s["complete"]]
    if problems:
        envelope.add_warning(result, "sandbox %s was not swept completely (%s): %s" % (
            escape(path), method, "; ".join(problems)))
    entry["changed"] = any(s["changed"] for s in entry["steps"])
    return entry


def _strip_engine(client, target, facts):
    """(name, client) the container method's strip container runs on: the first rootful
    engine among those whose containers mount the target, else the first rootful engine
    (a rootless engine's root cannot give files to another user)."""
    if isinstance(client, docker_engine.Engines):
        group = docker_engine.members(client)
    else:
        group = [(facts.get("name"), client)]
    rootless = {f["name"] for f in facts.get("engines") or () if f["rootless"]}
    rootful = [(name, member) for name, member in group if name not in rootless] or group
    return next((pair for pair in rootful if pair[0] in target.engines), rootful[0])


# Container event actions the watcher acts on (docker_engine.event_fields makes Podman's
# native "died" a "die").
_SWEEP_ACTIONS = ("die", "stop")


def watch(client, hermes_homes=(), sandbox_dir=None, extra_roots=(), method="native", image=None, owner=None,
          budget_per_step=DEFAULT_BUDGET_PER_STEP_S, chown=True, emit=None, engine=docker_engine, since=None,
          providers=(), stop=None):
    """Follow the engines' container events; sweep a container's in-scope mounts when it stops or dies.

    ``client``: one client or a docker_engine.Engines group (every engine's events are
    followed, each in a thread of its own; the sweeps run here, one at a time).
    ``emit(event)`` gets one dict per thing worth telling (``event``: ``watching``,
    ``engine-lost`` (``engine``, ``url``, ``error``, ``retry_in``), ``engine-back``,
    ``inspect-failed``, ``unknown-container``, or the action that caused a sweep, with
    ``id``, ``engine``, ``swept``, ``changed``, ``warnings`` and the sweep's ``report``).
    Runs until ``stop`` (a threading.Event) is set: an engine whose stream ends or fails
    is asked again with a backoff, and the events it replays since the last one seen sweep
    what stopped while it was away (_privileged/engine_events); the other engines' streams
    go on meanwhile, and an engine that did not answer at the start is asked the same way.
    Roots are derived once, here, from host configuration: nothing an event carries widens them.
    ``providers``: more scope providers (derive_roots).
    """
    _check_method(method, image)
    budget_per_step = inputs.budget(budget_per_step, "budget_per_step")
    emit = emit or (lambda event: None)
    stop = stop if stop is not None else threading.Event()
    request = request_of(hermes_homes, sandbox_dir, extra_roots, None, False, providers, task_dirs=False)
    with _scopemod.derive(request, client=client, engine=engine) as first:
        facts_by = {a["name"]: a["facts"] for a in first.engines if a.get("facts") and not a.get("error")}
        # Inspect documents of live containers, so a container started with --rm can still be
        # swept after it died and was removed.
        known = {doc["Id"]: (a["name"], doc) for a in first.engines if not a.get("error")
                 for doc in a["containers"]}
        watching = {"event": "watching", "roots": [r.realpath for r in first.roots], "containers": len(known),
                    "refused_roots": first["refused"], "engines": list(facts_by),
                    "failed": [a for a in first.engine_summary() if a["error"]],
                    "warnings": list(getattr(client, "warnings", ()))}
    since = int(time.time()) if since is None else since
    emit(watching)
    options = dict(method=method, image=image, owner=owner, budget_per_step=budget_per_step, chown=chown)
    context = (client, request.replace(docker="never"), facts_by, emit, engine, options)
    for name, member, event in _events(engine, client, since, facts_by, emit, stop):
        _on_event(context, name, member, event, known)


def _events(engine, client, since, facts_by, emit, stop):
    """(engine name, client, event) from every engine's stream until ``stop`` is set
    (engine_events.follow: one thread per engine, each reconnected with a backoff when its
    stream ends or fails, asked ``since`` its last event). ``facts_by`` ({name: facts} of the
    engines answering) follows each engine's state; a lost one and its return are emitted."""
    def ask_info(name, member):
        return docker_engine.facts_of(client, name, sandboxes.engine_facts(engine.engine_info(member)))

    if isinstance(client, docker_engine.Engines):
        entries = [(m.name, m.url, m.client, m.name in facts_by) for m in client.members]
        entries += [(s.get("name") or docker_engine.url_name(s["url"]), s["url"], engine_events.UNCONNECTED, False)
                    for s in client.skipped]
    else:
        entries = [(name, getattr(member, "url", None), member, name in facts_by)
                   for name, member in docker_engine.members(client)]
    said = {}
    for name, member, item in engine_events.follow(entries, engine, since, ask_info, stop):
        if not isinstance(item, engine_events.Status):
            yield name, member, item
        elif item.kind == "ready":
            facts_by[name] = item.facts
            if said.pop(name, None) is not None:
                emit({"event": "engine-back", "engine": name, "url": item.url})
        else:
            facts_by.pop(name, None)
            if said.get(name) != item.error:  # once per new error, not at every retry
                said[name] = item.error
                emit({"event": "engine-lost", "engine": name, "url": item.url, "error": item.error,
                      "retry_in": item.retry_in})


def _on_event(context, name, member, event, known):
    """Sweep what one container event calls for: the in-scope mounts of a container that
    stopped or died, under a fresh scope (its roots proven and held again for this sweep:
    nothing an event carries widens them)."""
    client, request, facts_by, emit, engine, options = context
    action, cid, attributes = docker_engine.event_fields(event)
    if not cid or attributes.get("sandboxguard") == "sweep":
        # our own disposable strip containers (method container): sweeping when they die
        # would start more of them, for ever
        return
    if action == "start":
        try:
            known[cid] = (name, engine.inspect_container(member, cid))
        except docker_engine.EngineError as exc:  # it may be gone already
            emit({"event": "inspect-failed", "id": cid, "engine": name, "error": str(exc)})
        return
    if action == "destroy":
        known.pop(cid, None)
        return
    if action not in _SWEEP_ACTIONS:
        return
    doc, whole = known.get(cid, (name, None))[1], False
    if doc is None:
        try:
            doc = engine.inspect_container(member, cid)
        except docker_engine.EngineError as exc:  # removed before we saw it start: sweep every task dir
            emit({"event": "unknown-container", "id": cid, "engine": name, "error": str(exc)})
            doc, whole = {"Id": cid, "Mounts": []}, True
    with _scopemod.derive(request) as fresh:
        task_dirs = _targets.task_dirs_of(fresh.roots) if whole else ()
        containers, targets = _targets.targets_for([(name, doc)], fresh.roots, task_dirs=task_dirs)
        try:
            if not targets:
                return
            facts = _group_facts(list(facts_by.values())) if facts_by else engine_facts(fresh)
            info = _info(facts, fresh.root_dicts(), fresh["refused"], containers, [t.as_dict() for t in targets])
            result = _sweep_all(client, fresh, info, targets, dict(options, engine=engine), time.monotonic())
        finally:
            for target in targets:
                if target.held is not None:
                    target.held.close()
    emit({"event": action, "id": cid[:12], "engine": name, "swept": [s["path"] for s in result["sandboxes"]],
          "changed": result["changed"], "warnings": result["warnings"], "report": result})
