# GENERATED from python/src/sandboxguard/_fleet/remediate.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Every fix of the remediate playbook on one host, in one call (one module round trip per host).

``remediate_host`` decides the scope exactly as the audit does (audit.py) and runs each fix
through the library call its single-step module makes, never a second implementation:

- ``ownership``, ``setid``, ``caps``: one race-safe walk (strip.run with the chown, setid and
  caps actions, as M(setid_strip) with ``caps`` and ``owner``) of the roots the audit's
  privileged-files check walks (audit.privileged_scope). The walk's report is split into one
  section per fix: a file is listed in each section whose action it needed, a per-file error
  in the sections of that file, an error of the walk itself (a directory it could not open)
  in all three. ``ownership`` runs only with an owner: ownership is never given to a guess.
- ``sandboxes``: sweep.sweep of the Docker sandboxes (as M(sandbox_sweep)): ownership back to
  the owner given or to each sandbox directory's owner, when an engine answers.
- ``home_mode``: home_mode.configure_terminal_home of each Hermes home present on the host
  (as M(terminal_home)), when a mode is asked for.
- ``leaks``: audit.check_leaks (the audit's own leak check and scope), then
  leaks_remove.remove of what it found into the quarantine (as M(leaks_remove)).

Each fix's section is a report envelope (report.new_report) with ``status`` (``changed``,
``ok``, ``failed``, ``skipped``), ``reason``, ``dry_run``, ``module`` (the single-step module
that does the same) and the keys of its library call. A fix that raises (bad input of its
own, an engine error) or reports errors, or does not complete, is ``failed``; the other fixes
run all the same. The host's envelope lists the sections under ``fixes`` and the failed ones
under ``failed``. *dry_run* changes nothing and reports what each fix would change.
"""
import time

from .. import report as envelope
from .. import strip as stripmod
from .._core.text import escape
from .._privileged import scope as _scopemod
from .._walk.fileops import CHOWN_FROM_OTHERS, OPTION_DEFAULTS, check_owner
from .._walk.walk import new_report
from ..errors import InputError
from . import audit, audit_record

FIXES = ("ownership", "setid", "caps", "sandboxes", "home_mode", "leaks")
WALK_FIXES = ("ownership", "setid", "caps")
# The single-step module of each fix (what a user who wants one step runs instead).
MODULE_OF = {"ownership": "setid_strip", "setid": "setid_strip", "caps": "setid_strip",
             "sandboxes": "sandbox_sweep", "home_mode": "terminal_home", "leaks": "leaks_remove"}
CHANGED, OK, FAILED, SKIPPED = audit_record.FIX_CHANGED, audit_record.FIX_OK, audit_record.FIX_FAILED, "skipped"
STATUSES = (CHANGED, OK, FAILED, SKIPPED)
# The walk's actions, and the file actions (an entry's ``actions``) of each walk fix: the setid
# fix also makes device nodes harmless (root-owned, mode 0000), as the sweep's setid step does.
_WALK_ACTIONS = {"ownership": ("chown",), "setid": ("setid", "device"), "caps": ("caps",)}
_FILE_ACTIONS = {"ownership": ("chown",), "setid": ("setuid", "setgid", "device"), "caps": ("caps",)}


def _section(fix, dry_run, roots=(), **extra):
    keys = dict({"status": OK, "reason": None}, dry_run=bool(dry_run), module=MODULE_OF[fix])
    keys.update(extra)
    return envelope.new_report(list(roots), **keys)


def _skipped(fix, dry_run, reason):
    return _section(fix, dry_run, status=SKIPPED, reason=reason)


def _verdict(section, reason=None):
    """Set the section's status from its envelope by the one verdict (audit_record.verdict):
    failed (errors, or not complete), changed, ok."""
    section["status"], reason, section["complete"] = audit_record.verdict(
        section["changed"], section["errors"], section["complete"], reason, kind="fix")
    if reason is not None:
        section["reason"] = reason
    return section


def _raised(section, exc):
    """A fix whose library call raised: failed, with the one line (InputError) or the exception."""
    text = str(exc) if isinstance(exc, InputError) else "%s: %s" % (type(exc).__name__, exc)
    envelope.add_error(section, getattr(exc, "path", None) or "", "remediate", text)
    return _verdict(section, reason=text)


# --- ownership, setid, caps: one walk -------------------------------------------------------

def _walk_fixes(wanted, view, settings):
    """(sections, warnings): the sections of the walk fixes in *wanted* (one walk over the held
    roots of the audit's view, privileged_scope, and one per CI runner work folder, see
    _runner_walks) and the warnings of the scope and the walks, which concern them all."""
    owner, dry_run = settings.owner, settings.dry_run
    returns = owner is not None and owner[0] not in OPTION_DEFAULTS["chown_from"]
    runners = list(view["owned"]) if view is not None and "ownership" in wanted else []
    walk_fixes = [f for f in WALK_FIXES if f in wanted and (f != "ownership" or returns or runners)]
    sections = {}
    if "ownership" in wanted and owner is None and not runners:
        sections["ownership"] = _skipped("ownership", dry_run, "no owner given: ownership is returned only to "
                                         "the owner you name (the owner option, sandboxguard_owner)")
    elif "ownership" in wanted and not returns and not runners:
        # as the sweep does: root's files given to root would be a change every run
        sections["ownership"] = _skipped("ownership", dry_run, "the owner is root: the files ownership would "
                                         "go back from already belong to it")
    if not walk_fixes:
        return sections, []
    if view is None:
        for fix in walk_fixes:
            sections[fix] = _skipped(fix, dry_run, audit.NOTHING_GIVEN)
        return sections, []
    theirs = {id(root) for root in runners}
    main_walk = [root for root in view["walk"] if id(root) not in theirs]
    main_fixes = [f for f in walk_fixes if f != "ownership" or returns]
    reports = []
    try:
        if main_walk and main_fixes:
            reports.append(stripmod.run_opened([root.held for root in main_walk],
                                               actions=[a for f in main_fixes for a in _WALK_ACTIONS[f]],
                                               dry_run=dry_run, chown_to=owner, budget=settings.budget,
                                               max_listed=settings.max_listed))
        reports += _runner_walks(runners, walk_fixes, settings)
    except Exception as exc:  # a walker that failed: these fixes fail, the others run
        for fix in walk_fixes:
            sections[fix] = _raised(_section(fix, dry_run, view["paths"], absent=view["absent"]), exc)
        return sections, list(view["warnings"])
    report = _merged(reports, view["paths"], dry_run, settings.max_listed) if reports else None
    for fix in walk_fixes:
        sections[fix] = _walk_section(fix, view, report, settings.budget, dry_run)
    return sections, list(view["warnings"]) + list(report["warnings"] if report else ())


def _runner_walks(runners, walk_fixes, settings):
    """One walk per runner work folder, from its held descriptor: every file whose uid or gid
    is not the runner user's goes back to the runner user (chown_from "others", as
    runner-cleanup), whatever owner was given for the other roots; setid bits, caps and device
    nodes as selected."""
    actions = ["chown"] + [a for f in walk_fixes if f != "ownership" for a in _WALK_ACTIONS[f]]
    return [stripmod.run_opened([root.held], actions=actions, dry_run=settings.dry_run, chown_to=tuple(root.owner),
                                chown_from=CHOWN_FROM_OTHERS, budget=settings.budget,
                                max_listed=settings.max_listed) for root in runners]


def _merged(reports, roots, dry_run, max_listed):
    """One walk report of several (report.merge: files, errors and warnings in order, counts summed)."""
    if len(reports) == 1:
        return reports[0]
    merged = new_report(list(roots), dry_run)
    merged["elapsed"] = 0.0
    for report in reports:
        envelope.merge(merged, report, max_listed)
        merged["elapsed"] += report.get("elapsed") or 0.0
    return merged


def _walk_section(fix, view, report, budget, dry_run):
    """One walk fix's section: the files that needed its action, their errors and the walk's own."""
    section = _section(fix, dry_run, view["paths"], absent=list(view["absent"]), files=[],
                       counts={"files": 0, "dirs": 0, "unlisted": 0, "errors": 0})
    for error in view["errors"]:
        envelope.add_error(section, error["path"], error["op"], error["error"])
    if report is None:
        reason = "none of the paths exist on this host" if view["absent"] else "nothing to look under"
        return _verdict(section, reason=None if section["errors"] else reason)
    actions = _FILE_ACTIONS[fix]
    mine = [e for e in report["files"] if any(a in e["actions"] for a in actions)]
    others = {e["path"] for e in report["files"]} - {e["path"] for e in mine}
    section["files"] = mine
    section["counts"].update({k: report["counts"][k] for k in ("files", "dirs", "unlisted")})
    for action in _WALK_ACTIONS[fix]:
        section["counts"][action] = report["counts"].get(action, 0)
    for error in report["errors"]:
        if error["path"] not in others:  # another fix's file: its own section lists it
            envelope.add_error(section, error["path"], error["op"], error["error"])
    section["counts"]["errors"] = len(section["errors"])
    section["changed"] = bool(report["changed"] and (mine or any(
        section["counts"][a] for a in _WALK_ACTIONS[fix])))
    section["complete"] = bool(report["complete"])
    reason = None
    if not report["complete"]:
        reason = "the walk of %s stopped after %.1fs (budget %.1fs): raise the budget" % (
            ", ".join(escape(w) for w in view["paths"]), report["elapsed"], budget or 0)
        envelope.add_warning(section, reason)
    section["elapsed"] = report["elapsed"]
    return _verdict(section, reason)


# --- sandboxes ------------------------------------------------------------------------------

def _sandboxes_fix(found, request, settings):
    """The Docker sandboxes swept (sweep.sweep, native method) under the one scope: its engine
    connection, its engines' answers and its held targets (no second derivation, no second
    connection). One engine's error fails this fix, after the healthy engines' sandboxes were
    swept."""
    dry_run = settings.dry_run
    if found is None:
        return _skipped("sandboxes", dry_run, audit.NOTHING_GIVEN)
    if not request.hermes_homes and not request.sandbox_dir:
        return _skipped("sandboxes", dry_run, "no Hermes home or sandbox directory given")
    if request.docker == "never":
        return _skipped("sandboxes", dry_run, "not asked (docker: never)")
    if not found.engines and not found.targets:
        return _skipped("sandboxes", dry_run, "no Docker engine answered: %s" % (found.engine_note or "none asked"))
    from .. import sweep  # noqa: PLC0415 - compiled on the host only when there is something to sweep

    section = _section("sandboxes", dry_run)
    try:
        result = sweep.sweep(found.client, owner=settings.owner, budget_per_step=settings.budget, dry_run=dry_run,
                             scope=found)
    except Exception as exc:  # the engine's own errors, as sandbox_sweep reports them
        return _raised(section, exc)
    result.update(status=OK, reason=None, module=MODULE_OF["sandboxes"])  # engine errors are the sweep's own
    incomplete = None if result["complete"] else ("; ".join(result["warnings"]) or None)
    return _verdict(result, incomplete)


# --- home_mode ------------------------------------------------------------------------------

def _home_fix(hermes_homes, mode, where, profiles, create_profile_home, dry_run):
    """TERMINAL_HOME_MODE in every Hermes home present (configure_terminal_homes: a refused home
    is an error of this fix after the other homes were configured)."""
    from .. import home_mode as hm  # noqa: PLC0415
    from .._terminal.configure import configure_terminal_homes  # noqa: PLC0415

    if not mode:
        return _skipped("home_mode", dry_run, "no mode asked for (home_mode, sandboxguard_home_mode)")
    if not hermes_homes:
        return _skipped("home_mode", dry_run, "no Hermes home given")
    section = _section("home_mode", dry_run, hermes_homes, mode=hm.normalize_mode(mode), homes=[], absent=[],
                       diff=[])
    done = configure_terminal_homes(hermes_homes, mode, where=where, include_profiles=profiles,
                                    create_profile_home=create_profile_home, dry_run=dry_run, skip_absent=True)
    section["absent"] = done["absent"]
    for entry in done["errors"]:
        envelope.add_error(section, entry["path"], entry["op"], entry["error"])
    for report in done["reports"]:
        keys = ("changed", "complete", "errors", "warnings", "homes", "diff")
        envelope.merge(section, {key: report[key] for key in keys})
    return _verdict(section)


# --- leaks ----------------------------------------------------------------------------------

def _leaks_fix(request, settings, found):
    """What the audit's leak check finds (audit.check_leaks, with the scope's accounts), moved
    into the quarantine (leaks_remove.remove)."""
    from .. import leaks  # noqa: PLC0415
    from . import audit_record, leaks_remove  # noqa: PLC0415

    s, dry_run = settings, settings.dry_run
    check = audit.check_leaks(s.leak_users, s.leak_tmp_patterns, s.leak_min_age, s.leak_tmp_dir, s.leak_spool_dir,
                              request.hermes_homes, request.sandbox_dir, s.agent_user, scope=found)
    if check["status"] in (audit_record.SKIPPED, audit_record.NOT_CHECKED):
        return _skipped("leaks", dry_run, check["reason"])
    found_leaks = check["findings"]
    quarantine_dir = s.quarantine_dir or leaks_remove.DEFAULT_QUARANTINE
    report = leaks_remove.remove(found_leaks, quarantine_dir, dry_run=dry_run) if found_leaks else None
    section = _section("leaks", dry_run, [quarantine_dir], users=check["users"], scope=check["scope"],
                       absent=check["absent"], removed=[], quarantine=None, counts={"found": len(found_leaks)})
    for error in check["errors"]:
        envelope.add_error(section, error["path"], error["op"], error["error"])
    for line in check["warnings"]:
        envelope.add_warning(section, line)
    if report is not None:
        section.update(removed=report["removed"], quarantine=report["quarantine"])
        envelope.merge(section, {key: report[key] for key in ("changed", "complete", "errors", "warnings", "counts")})
        section["diff"] = [{"before_header": "leaks", "before": "".join(
            line + "\n" for line in leaks.finding_lines({"findings": found_leaks})),
            "after_header": "leaks (moved to %s)" % escape(report["quarantine"]), "after": ""}]
    return _verdict(section)


# --- the host -------------------------------------------------------------------------------

# remediate's own settings beside the audit's (audit.SETTING_DEFAULTS): whom ownership goes
# back to, where leaks go, and check mode. Its walks list more than the audit's findings.
SETTING_DEFAULTS = {"owner": None, "quarantine_dir": None, "dry_run": False,
                    "max_listed": stripmod.DEFAULT_MAX_LISTED}


def remediate_host(fixes=FIXES, request=None, settings=None, **given):
    """Run the selected *fixes* on this host; return the host's envelope with one section per fix.

    *request*: the scope.Request (the audit's: audit.host_inputs), derived once here into
    one scope.Scope (one engine connection) that every fix uses: the walk fixes walk its held
    roots, the sandboxes fix sweeps its held targets with its engines' answers, the leaks fix
    takes its accounts. *settings*: an audit.Settings with SETTING_DEFAULTS' names too
    (*owner*: (uid, gid) ownership goes back to: the ownership fix runs only with one, the
    sandboxes fix then uses it too, else each sandbox directory's owner; *budget*: seconds
    for the walk, and for each step of each sandbox sweep; *quarantine_dir*: where leaks go;
    *dry_run*). Or the old keywords (*given*), which build both. Each GitHub runner's work
    folder is walked on its own, every file whose uid or gid is not the runner user's given
    back to the runner user (the ownership fix runs for them without an owner given). Fixes
    not in *fixes* are ``skipped``. Bad input that concerns every fix (an unknown fix, a bad
    owner or docker mode) raises InputError before anything changes. Touches the system
    unless dry run.
    """
    unknown = [f for f in fixes if f not in FIXES]
    if unknown:
        raise InputError("unknown fix(es) %s: choose from %s" % (", ".join(unknown), ", ".join(FIXES)))
    if request is None or settings is None:
        built_request, built_settings = audit.host_inputs(given, SETTING_DEFAULTS, task_dirs=True)
        request, settings = request or built_request, settings or built_settings
    elif given:
        raise TypeError("give request and settings, or keywords, not both")
    if settings.owner is not None:
        settings.owner = check_owner(tuple(settings.owner))
    started = time.monotonic()
    wanted = set(fixes)
    found = None
    if not request.empty and wanted & {"ownership", "setid", "caps", "sandboxes", "leaks"}:
        found = _scopemod.derive(request if wanted & {"ownership", "setid", "caps", "sandboxes"}
                                 else request.replace(docker="never"))
    try:
        return _fix_host(wanted, request, settings, found, started)
    finally:
        if found is not None:
            found.close()


def _fix_host(wanted, request, settings, found, started):
    view = audit.privileged_scope(found) if found is not None else None
    sections, walk_warnings = _walk_fixes(wanted, view, settings)
    s = settings
    runners = {
        "sandboxes": lambda: _sandboxes_fix(found, request, settings),
        "home_mode": lambda: _home_fix(request.hermes_homes, s.home_mode, s.home_where, s.profiles,
                                       s.create_profile_home, s.dry_run),
        "leaks": lambda: _leaks_fix(request, settings, found),
    }
    for fix, run in runners.items():
        if fix not in wanted:
            continue
        began = time.monotonic()
        try:
            sections[fix] = run()
        except Exception as exc:  # one broken fix must not stop the others
            sections[fix] = _raised(_section(fix, s.dry_run), exc)
        sections[fix]["elapsed"] = round(time.monotonic() - began, 3)
    return _host_report(sections, view, walk_warnings, s.dry_run, started)


def _host_report(sections, view, walk_warnings, dry_run, started):
    """The host's envelope: every fix's section (skipped when not selected), errors and warnings
    of all of them (each warning naming its fix; the walk's once), ``failed`` and ``status``."""
    fixes = {fix: sections.get(fix) or _skipped(fix, dry_run, "not selected (fixes or tags)") for fix in FIXES}
    host = envelope.new_report(view["paths"] if view else [], dry_run=bool(dry_run), fixes=fixes, failed=[],
                               counts=dict.fromkeys(STATUSES, 0))
    for line in walk_warnings:
        envelope.add_warning(host, "walk: %s" % line)
    for fix, section in fixes.items():
        host["counts"][section["status"]] += 1
        host["changed"] = host["changed"] or section["status"] == CHANGED or bool(section["changed"])
        if section["status"] == FAILED:
            host["failed"].append(fix)
            host["complete"] = False
        seen = {(e["path"], e["op"], e["error"]) for e in host["errors"]}
        for error in section["errors"]:
            if (error["path"], error["op"], error["error"]) not in seen:  # a walk error is in three sections
                host["errors"].append(error)
        for line in section["warnings"]:
            envelope.add_warning(host, "%s: %s" % (fix, line))
    host["counts"]["errors"] = len(host["errors"])
    host["status"] = FAILED if host["failed"] else CHANGED if host["changed"] else OK
    return envelope.finish(host, started)


def failure_text(host):
    """One line naming every failed fix with its reason and the single-step module that does it alone."""
    parts = ["%s (%s): %s" % (fix, host["fixes"][fix]["module"], host["fixes"][fix]["reason"] or "failed")
             for fix in host["failed"]]
    return "remediate: %d fix(es) failed on this host: %s" % (len(parts), " | ".join(parts))
