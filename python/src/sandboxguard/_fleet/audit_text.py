# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

How the fleet audit reports read: the order of hosts, titles, one line per finding.

Shared by every writer (``audit_report``'s JSON and the summary line, ``audit_junit``,
``audit_html``, ``audit_sarif``), so the reports agree. Pure: data in, text out. Every
name from a host goes through text.escape (one printable line), every message through
text.one_line. A check that is not in CHECK_TITLES (one added later) reads as its name.
"""
import json

from .._core.text import escape, for_result, one_line
from .audit_record import HOST_STATUSES, NOT_CHECKED, SKIPPED

CHECK_TITLES = {"privileged_files": "Privileged files", "home_mode": "TERMINAL_HOME_MODE",
                "leaks": "Leaks outside the sandbox", "bwrap": "Bubblewrap", "runtime": "Sandbox runtime settings"}
_RANK = {status: rank for rank, status in enumerate(HOST_STATUSES)}


def check_title(check_name):
    return CHECK_TITLES.get(check_name, check_name)


def findings_count(record):
    return sum(len(c.get("findings") or ()) for c in record["checks"].values())


def sort_key(item):
    name, record = item
    return (_RANK.get(record["status"], len(_RANK)), -findings_count(record), name)


def worst_first(hosts):
    """[(name, record)] ordered worst first."""
    return sorted(hosts.items(), key=sort_key)


def name(value):
    """A name from a host (a raw finding: from_result's form) as people see it."""
    return escape("" if value is None else str(value))


def finding_line(check_name, finding):
    """One line for a finding (as from_result gives it), naming its path (text.escape)."""
    path = name(finding.get("path", ""))
    if check_name == "privileged_files":
        parts = ["mode %s" % name(finding.get("mode"))]
        if finding.get("caps"):
            parts.append("caps %s" % name(finding["caps"]))
        parts.append("uid %s" % finding.get("uid"))
        if "owner" in (finding.get("reasons") or ()):
            parts = ["uid %s gid %s, not the runner user's %s" % (
                finding.get("uid"), finding.get("gid"), ":".join(str(i) for i in finding.get("owner") or ()))]
        return "%s (%s)" % (path, ", ".join(parts))
    if check_name == "leaks":
        extra = name(finding.get("entry") or finding.get("unit") or "")
        return "%s %s%s (%s s old)" % (name(finding.get("kind")), path, (": " + extra) if extra else "",
                                       finding.get("age"))
    if check_name == "home_mode":
        return "%s: %s" % (path, one_line(finding.get("reason")))
    if check_name == "bwrap":
        return "%s: %s" % (one_line(finding.get("reason")), one_line(finding.get("message")))
    if check_name == "runtime":
        return "%s [%s%s] %s: %s" % (one_line(finding.get("rule")), one_line(finding.get("severity")),
                                     ", CIS %s" % one_line(finding["cis"]) if finding.get("cis") else "",
                                     name(finding.get("where", "")), one_line(finding.get("detail")))
    return "%s %s" % (path, one_line(json.dumps(for_result(finding), sort_keys=True)))


def problem_lines(report, limit=5):
    """Why each host that could be reached is not clean for want of a check, one line each
    (``host check: reason`` for a check in error, ``host check not checked: reason`` for one
    that covered nothing), worst host first, at most *limit*, then how many more: what the
    operator must fix or give before the audit can say clean (the real path to give for a
    refused one, the variable to set for one not checked)."""
    lines = []
    for host, record in worst_first(report["hosts"]):
        if record["status"] == "unreachable":
            continue
        checks = record["checks"]
        if checks and all(c.get("status") == SKIPPED for c in checks.values()):
            lines.append("%s: %s" % (escape(host), one_line(record.get("reason") or "no check selected")))
            continue
        for check_name, result in checks.items():
            if result.get("status") == "error":
                lines.append("%s %s: %s" % (escape(host), check_name, one_line(result.get("reason") or "error")))
            elif result.get("status") == NOT_CHECKED:
                lines.append("%s %s not checked: %s" % (escape(host), check_name,
                                                        one_line(result.get("reason") or "it covered nothing")))
    if len(lines) > limit:
        lines = [*lines[:limit], "and %d more (see the reports)" % (len(lines) - limit)]
    return lines


def warning_lines(report, limit=5):
    """Each reached host's warnings (container engine discovery off or failed), ``host:
    warning``, worst host first, at most *limit*, then how many more."""
    lines = ["%s: %s" % (escape(host), one_line(w)) for host, record in worst_first(report["hosts"])
             for w in record.get("warnings") or ()]
    if len(lines) > limit:
        lines = [*lines[:limit], "and %d more (see the reports)" % (len(lines) - limit)]
    return lines
