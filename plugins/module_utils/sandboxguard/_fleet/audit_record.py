# GENERATED from python/src/sandboxguard/_fleet/audit_record.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The fleet audit's names and one host's record: what runs on every audited host.

Kept apart from ``audit_report`` (the controller's JSON, JUnit and HTML writers) so the
audit module that runs on each host compiles and imports only this much: a module run
pays for every line it imports, on every host (AnsiballZ ships source, never bytecode).
``audit_report`` re-exports every name here.
"""

CHECKS = ("privileged_files", "home_mode", "leaks", "bwrap", "runtime")
FINDINGS, CLEAN, ERROR, SKIPPED, UNREACHABLE = "findings", "clean", "error", "skipped", "unreachable"
CHECK_STATUSES = (FINDINGS, CLEAN, ERROR, SKIPPED)
HOST_STATUSES = (UNREACHABLE, FINDINGS, ERROR, CLEAN)


def host_status(checks):
    """The host's status from its checks' statuses."""
    statuses = [c.get("status") for c in checks.values()]
    if FINDINGS in statuses:
        return FINDINGS
    if ERROR in statuses:
        return ERROR
    return CLEAN


def host_record(checks, **extra):
    """One host's record: every check of CHECKS (missing ones ``error``), and its status."""
    full = {}
    for name in CHECKS:
        check = checks.get(name)
        if not isinstance(check, dict) or check.get("status") not in CHECK_STATUSES:
            check = {"status": ERROR, "findings": [], "reason": "the check returned no result", "errors": []}
        check.setdefault("findings", [])
        check.setdefault("reason", None)
        full[name] = check
    record = {"status": host_status(full), "checks": full}
    record.update(extra)
    return record
