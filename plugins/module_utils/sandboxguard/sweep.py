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
import os
import posixpath
import stat
import threading
import time

from . import docker_engine
from . import report as envelope
from . import strip as stripmod
from ._core import safefs
from ._core.text import escape
from ._privileged import engine_events, sandboxes, scope
from ._privileged.sweep_steps import (  # noqa: F401  # pylint: disable=unused-import  # the steps, named here too
    CONTAINER_TARGET,
    PROLOGUE,
    SCRIPT_CAPS,
    SCRIPT_CHOWN,
    SCRIPT_CHOWN_DRY,
    SCRIPT_SETID,
    SCRIPT_SETID_DRY,
    STEPS,
    found_paths,
    sweep_container,
    sweep_native,
)
from ._walk import fileops
from .errors import InputError

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
    files to that user.
    """
    return path_owner(posixpath.dirname(target_root.rstrip("/")))


def derive_roots(hermes_homes=(), sandbox_dir=None, extra_roots=(), providers=()):
    """Host-derived roots on this host: (usable, refused), scope.derive's ``roots`` (dicts
    path, realpath, source, owner) and ``refused`` (dicts path, reason). ``providers``: more
    scope providers (runners.runner_providers: CI runners' roots). Touches the system
    (lists profiles, walks each root's path), changes nothing."""
    found = scope.derive(hermes_homes, sandbox_dir, extra_roots, providers)
    return found["roots"], found["refused"]


def mounts_info(client, hermes_homes=(), sandbox_dir=None, extra_roots=(), names=None, include_stopped=True,
                engine=docker_engine, providers=()):
    """What sandbox_mounts_info returns (the report envelope): engine facts, roots (strings),
    root_sources, refused_roots, containers and targets.

    ``client``: one client, or a docker_engine.Engines group (every engine ``auto`` found):
    each container record and target names its ``engine``/``engines``; ``engine`` (the facts)
    sums the group up and lists each engine's facts in ``engine.engines``.
    ``engine``: what asks the engine (docker_engine; a test passes an object with the same
    engine_info, inspect_containers, inspect_container, container_events, run_disposable).
    ``providers``: more scope providers (derive_roots).
    """
    each, inspects = _ask_engines(client, engine, names, include_stopped)
    facts = _group_facts(each)
    usable, refused = derive_roots(hermes_homes, sandbox_dir, extra_roots, providers)
    # Without a container filter, persistent sandbox directories no container mounts any
    # more (a --rm container that died unseen) are swept too: their scope is host-derived.
    # So is a whole root whose provider knows its owner (a runner's work folder, after the
    # job's container is gone).
    task_dirs = _task_dirs(usable) if not names else ()
    containers, targets = _scope(inspects, usable, task_dirs)
    info = _info(facts, usable, refused, containers, targets)
    _engines_into(info, client)
    return info


def _engines_into(result, client):
    """``engines`` ([{name, url, kind, error}]) into a result, each failed engine an error of
    it (op ``engine``, path its URL) and the result incomplete, the group's warnings too."""
    result["engines"] = docker_engine.engines_report(client)
    for row in result["engines"]:
        if row["error"]:
            text = "engine %s: %s" % (row["name"], row["error"])
            envelope.add_error(result, row["url"] or row["name"], "engine", text)
            result["complete"] = False
    for warning in getattr(client, "warnings", ()):
        if warning not in result["warnings"]:
            envelope.add_warning(result, warning)


def _task_dirs(usable):
    """(realpath, root) pairs swept with no container: the Hermes task directories, and each
    root that carries an owner (sandboxes.mount_scope: such a root is swept whole)."""
    whole = [(r["realpath"], r["realpath"]) for r in usable if r.get("owner") and os.path.isdir(r["realpath"])]
    return whole + list(sandboxes.list_task_dirs(usable))


def _ask_engines(client, engine, names, include_stopped):
    """(facts, inspects) of every engine of ``client`` (a group, or one client), each asked on
    its own and in parallel (_budget: one deadline for all of an engine's calls): ``facts`` one engine_facts
    per engine that answered, ``inspects`` [(engine name, inspect document)] of every
    container of those, or of the ``names`` (each asked of every engine; NotFound naming it
    when none knows it). An engine whose answer fails is marked failed in the group and its
    work dropped (docker_engine.fail_member; a lone client's error is raised): the healthy
    engines' answers stand."""
    group = docker_engine.members(client)

    def ask(pair):
        name, member = pair
        with _budget(member):
            facts = docker_engine.facts_of(client, name, sandboxes.engine_facts(engine.engine_info(member)))
            if not names:
                return facts, [(name, doc) for doc in engine.inspect_containers(member, None, include_stopped)], {}
            found, missing = [], {}
            for wanted in names:
                try:
                    found.append((name, engine.inspect_container(member, wanted)))
                except docker_engine.NotFound as exc:  # this engine does not know it; another may
                    missing[wanted] = "%s: %s" % (name, exc) if len(group) > 1 else str(exc)
            return facts, found, missing

    each, inspects, missing = [], [], []
    for (name, _member), answer in zip(group, docker_engine.in_parallel(ask, group, None)):
        if isinstance(answer, Exception):
            docker_engine.fail_member(client, name, answer)
            continue
        each.append(answer[0])
        inspects += answer[1]
        missing.append(answer[2])
    if not each:
        raise docker_engine.EngineError("no engine answered: %s" % "; ".join(
            "%s: %s" % (row["name"], row["error"]) for row in docker_engine.engines_report(client) if row["error"]))
    lost = [wanted for wanted in names or () if all(wanted in m for m in missing)]
    if lost:  # a named container no engine knows: the request names something that is not there
        raise docker_engine.NotFound("; ".join(m[wanted] for wanted in lost for m in missing), 404)
    return each, inspects


def _budget(member):
    """``with``: every call to one engine's client within docker_engine.SURVEY_DEADLINE_S (or its
    own timeout when longer), together (a fake client of the tests has no budget: nothing)."""
    budget = getattr(member, "budget", None)
    if budget is None:
        return _NoBudget()
    return budget(max(getattr(member, "timeout", None) or 0, docker_engine.SURVEY_DEADLINE_S))


class _NoBudget:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _scope(inspects, usable, task_dirs=()):
    """sandboxes.scope_containers over (engine name, document) pairs: each container record
    says its ``engine``, each target the ``engines`` of the containers mounting it."""
    containers, targets = sandboxes.scope_containers([doc for _name, doc in inspects], usable, os.path.realpath,
                                                     sandboxes.path_kind, task_dirs)
    by_id = {}
    for record, (name, _doc) in zip(containers, inspects):
        record["engine"] = name
        by_id.setdefault(record["id"], name)
    for target in targets:
        target["engines"] = sorted({by_id[cid] for cid in target["containers"] if cid in by_id})
    return containers, targets


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
          chown=True, info=None, engine=docker_engine, providers=()):
    """Find the targets and sweep each one; return the sandbox_sweep result.

    ``owner``: (uid, gid) for ownership return; None means each sandbox's owner, or, below a
    root whose provider names an owner (a runner's work folder), that owner (the runner user).
    ``providers``: more scope providers (derive_roots).
    ``info``: a mounts_info() result to reuse (the watcher passes one per event).
    Returns the report envelope (report.py): ``roots`` the derived roots' realpaths,
    ``changed`` (in a dry run: would change), ``complete`` (every step of every sandbox
    finished), ``errors`` ({path, op, error} of every step), ``warnings`` (one per sandbox
    that could not be swept completely), ``counts`` (summed over the steps' reports, plus
    ``sandboxes``), ``elapsed``; and engine, targets, containers, root_sources,
    refused_roots, sandboxes (one per target: path, owner, method, changed, steps[]).
    """
    _check_method(method, image)
    started = time.monotonic()
    if info is None:
        info = mounts_info(client, hermes_homes, sandbox_dir, extra_roots, names, include_stopped, engine, providers)
    facts = info["engine"]
    result = envelope.new_report(
        info["roots"], dry_run=bool(dry_run), counts={"sandboxes": 0}, engine=facts, targets=info["targets"],
        sandboxes=[], containers=info["containers"], root_sources=info["root_sources"],
        refused_roots=info["refused_roots"], engines=list(info.get("engines") or ()))
    for error in info.get("errors") or ():
        if error["op"] == "engine":  # an engine that could not be asked: what it runs is not swept
            envelope.add_error(result, error["path"], error["op"], error["error"])
            result["complete"] = False
    if not facts["sweepable"]:
        result["complete"] = False
        envelope.add_warning(result, "not sweeping: %s" % facts["reason"])
        return envelope.finish(result, started)
    for warning in info.get("warnings", ()):
        envelope.add_warning(result, warning)
    chown_from = _chown_from(facts) if chown else ()
    for target in info["targets"]:
        entry = _sweep_target(client, target, method, image, owner, chown_from, budget_per_step, dry_run, result,
                              engine)
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
    return envelope.finish(result, started)


def _sweep_target(client, target, method, image, owner, chown_from, budget, dry_run, result, engine):
    """One sandbox entry: its owner, its steps; warnings go to ``result``."""
    path = target["realpath"]
    entry = {"path": path, "root": target["root"], "containers": target["containers"], "method": method,
             "owner": None, "changed": False, "steps": []}
    try:
        known = owner if owner is not None else _root_owner(result, target["root"])
        entry["owner"] = list(known if known is not None else sandbox_owner(target["root"]))
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        envelope.add_warning(result, "sandbox %s: cannot read the owner of its sandbox directory (%s); "
                             "ownership is not returned" % (escape(path), why))
    own = tuple(entry["owner"]) if entry["owner"] else None
    if owner is None and chown_from and _root_owner(result, target["root"]):
        # below a runner's work folder every file not the runner user's goes back (uid or gid:
        # either breaks the next checkout), as runner-cleanup does; the container method's
        # find takes the engine's uids only
        entry["chown_from"] = fileops.CHOWN_FROM_OTHERS if method == "native" else list(chown_from)
        chown_from = fileops.CHOWN_FROM_OTHERS if method == "native" else chown_from
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(0, "not a directory any more")
    except OSError as exc:
        envelope.add_warning(result, "sandbox %s: skipped, %s" % (escape(path), exc.strerror or exc))
        entry["skipped"] = str(exc.strerror or exc)
        return entry
    if method == "native":
        entry["steps"] = sweep_native(path, own, chown_from, budget, dry_run)
    else:
        name, member = _strip_engine(client, target, result["engine"])
        entry["engine"] = name
        entry["steps"] = sweep_container(member, path, own, chown_from, budget, image, dry_run,
                                         run=engine.run_disposable)
    problems = ["%s: %s" % (s["step"], s["error"] or "did not complete within its budget")
                for s in entry["steps"] if s["error"] or not s["complete"]]
    if problems:
        envelope.add_warning(result, "sandbox %s was not swept completely (%s): %s" % (
            escape(path), method, "; ".join(problems)))
    entry["changed"] = any(s["changed"] for s in entry["steps"])
    return entry


def _root_owner(result, root):
    """The owner the provider of ``root`` named (a runner's user), or None (pure)."""
    return next((tuple(r["owner"]) for r in result.get("root_sources") or ()
                 if r["realpath"] == root and r.get("owner")), None)


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
    return next((pair for pair in rootful if pair[0] in target.get("engines", ())), rootful[0])


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
    emit = emit or (lambda event: None)
    stop = stop if stop is not None else threading.Event()
    usable, refused = derive_roots(hermes_homes, sandbox_dir, extra_roots, providers)
    try:
        each, inspects = _ask_engines(client, engine, None, False)
    except docker_engine.EngineError:  # no engine answered yet: each is asked again below
        each, inspects = [], []
    facts_by = {f["name"]: f for f in each}
    # Inspect documents of live containers, so a container started with --rm can still be
    # swept after it died and was removed.
    known = {doc["Id"]: (name, doc) for name, doc in inspects}
    since = int(time.time()) if since is None else since
    emit({"event": "watching", "roots": [r["realpath"] for r in usable], "containers": len(known),
          "refused_roots": refused, "engines": list(facts_by),
          "failed": [row for row in docker_engine.engines_report(client) if row["error"]],
          "warnings": list(getattr(client, "warnings", ()))})
    options = dict(method=method, image=image, owner=owner, budget_per_step=budget_per_step, chown=chown)
    for name, member, event in _events(engine, client, since, facts_by, emit, stop):
        facts = _group_facts(list(facts_by.values()))
        _on_event(client, name, member, event, known, usable, refused, facts, emit, engine, options)


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


def _on_event(client, name, member, event, known, usable, refused, facts, emit, engine, options):
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
    doc, task_dirs = known.get(cid, (name, None))[1], ()
    if doc is None:
        try:
            doc = engine.inspect_container(member, cid)
        except docker_engine.EngineError as exc:  # removed before we saw it start: sweep every task dir
            emit({"event": "unknown-container", "id": cid, "engine": name, "error": str(exc)})
            doc = {"Id": cid, "Mounts": []}
            task_dirs = _task_dirs(usable)
    containers, targets = _scope([(name, doc)], usable, task_dirs)
    if not targets:
        return
    info = _info(facts, usable, refused, containers, targets)
    result = sweep(client, info=info, engine=engine, **options)
    emit({"event": action, "id": cid[:12], "engine": name, "swept": [s["path"] for s in result["sandboxes"]],
          "changed": result["changed"], "warnings": result["warnings"], "report": result})
