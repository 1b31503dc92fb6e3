# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The fleet audit's names and one host's record: what runs on every audited host.

Kept apart from ``audit_report`` (the controller's JSON, JUnit and HTML writers) so the
audit module that runs on each host compiles and imports only this much: a module run
pays for every line it imports, on every host (AnsiballZ ships source, never bytecode).
``audit_report`` re-exports every name here.

A check's status is ``findings``, ``clean``, ``error`` (it could not look at everything),
``not_checked`` (it was selected and covered nothing: no root in scope, no Hermes home
found, a required input missing; ``reason`` names the variable to set) or ``skipped``
(the operator did not select it: tags, ``checks``). Nothing checked is never clean: a host
where a selected check was ``not_checked`` (or where no check was selected) is
``not_audited``, unless a check found something or could not run.
"""

from .._core.text import escape

CHECKS = ("privileged_files", "home_mode", "leaks", "bwrap", "runtime")
FINDINGS, CLEAN, ERROR, SKIPPED, UNREACHABLE = "findings", "clean", "error", "skipped", "unreachable"
NOT_CHECKED, NOT_AUDITED = "not_checked", "not_audited"
CHECK_STATUSES = (FINDINGS, CLEAN, ERROR, NOT_CHECKED, SKIPPED)
# worst first: the order of the reports
HOST_STATUSES = (UNREACHABLE, FINDINGS, ERROR, NOT_AUDITED, CLEAN)
NOTHING_SELECTED = "no check selected (boundary_audit_checks, tags): nothing was audited"
# a fix's status (remediate): the check's verdict turned into what was done
FIX_CHANGED, FIX_OK, FIX_FAILED = "changed", "ok", "failed"


def verdict(found, errors, complete=True, reason=None, kind="check"):
    """(status, reason, complete): the one verdict of a check (*kind* ``check``: ``findings``,
    ``error``, ``clean``) or of a fix (``fix``: ``failed``, ``changed``, ``ok``) from what
    it found (or changed), its *errors* (envelope entries) and whether it saw everything.

    Fail closed: anything not seen (errors, not *complete*) is never clean nor ok, and the
    returned *complete* is False. A check that found something is ``findings`` even so (the
    finding stands; the report carries the errors); a fix with an error is ``failed`` even
    where it changed something. A failure without a *reason* gets the first error's path
    and message (and how many more), or that it did not complete. ``not_checked`` and
    ``skipped`` are decided before anything runs (audit._not_checked, the selection)."""
    failed = bool(errors) or not complete
    if kind == "check":
        status = FINDINGS if found else ERROR if failed else CLEAN
    else:
        status = FIX_FAILED if failed else FIX_CHANGED if found else FIX_OK
    if status in (ERROR, FIX_FAILED) and reason is None:
        first = errors[0] if errors else None
        reason = ("%s: %s" % (escape(first["path"] or ""), first["error"]) if first
                  else "the %s did not complete" % kind)
        if len(errors) > 1:
            reason += " (and %d more error(s))" % (len(errors) - 1)
    return status, reason, complete and not errors


def set_hint(*names):
    """Words naming the playbook inputs that give what a not-checked check lacked, and the
    role's variables of the same names: ``set sandboxguard_a or sandboxguard_b
    (boundary_audit_a, boundary_audit_b in the boundary_audit role)``."""
    inputs = ["sandboxguard_" + n for n in names]
    shown = ", ".join(inputs[:-1]) + " or " + inputs[-1] if len(inputs) > 1 else inputs[0]
    return "set %s (%s in the boundary_audit role)" % (shown, ", ".join("boundary_audit_" + n for n in names))


def host_status(checks):
    """The host's status from its checks' statuses: ``findings`` over ``error`` over
    ``not_audited`` (a check not checked, or none selected) over ``clean``."""
    statuses = [c.get("status") for c in checks.values()]
    if FINDINGS in statuses:
        return FINDINGS
    if ERROR in statuses:
        return ERROR
    if NOT_CHECKED in statuses or all(s == SKIPPED for s in statuses):
        return NOT_AUDITED
    return CLEAN


def not_checked(checks):
    """The checks that were selected and covered nothing (all of them when none was selected)."""
    statuses = {name: c.get("status") for name, c in checks.items()}
    if statuses and all(s == SKIPPED for s in statuses.values()):
        return list(statuses)
    return [name for name, status in statuses.items() if status == NOT_CHECKED]


def host_warnings(checks):
    """Per-host warnings every report shows: container engine discovery that was off or failed
    (the Docker sandboxes' bind mounts were not asked for), from privileged_files' ``engine``."""
    check = checks.get("privileged_files") or {}
    engine = check.get("engine") if check.get("status") != SKIPPED else None
    if not isinstance(engine, dict):
        return []
    out = []
    if not engine.get("answered"):
        out.append("container engine discovery off or failed (Docker sandboxes not asked for): %s"
                   % (engine.get("reason") or "no engine answered"))
    for item in engine.get("engines") or ():
        if isinstance(item, dict) and item.get("error"):
            out.append("container engine %s did not answer: %s" % (item.get("name") or item.get("url"), item["error"]))
    return out


def host_record(checks, **extra):
    """One host's record: every check of CHECKS (missing ones ``error``) and any other the
    host returned (a newer audit's), its status, the checks not checked and the host's warnings."""
    full = {}
    for name in [*CHECKS, *(c for c in checks if c not in CHECKS)]:
        check = checks.get(name)
        if not isinstance(check, dict) or check.get("status") not in CHECK_STATUSES:
            check = {"status": ERROR, "findings": [], "reason": "the check returned no result", "errors": []}
        check.setdefault("findings", [])
        check.setdefault("reason", None)
        full[name] = check
    record = {"status": host_status(full), "checks": full}
    record.update(extra)
    record["not_checked"] = not_checked(full)
    record["warnings"] = host_warnings(full)
    if record["status"] == NOT_AUDITED and not record.get("reason"):
        missing = record["not_checked"]
        record["reason"] = NOTHING_SELECTED if all(full[c]["status"] == SKIPPED for c in full) else (
            "not checked: %s" % "; ".join("%s (%s)" % (c, full[c].get("reason") or "no reason given")
                                          for c in missing))
    return record
