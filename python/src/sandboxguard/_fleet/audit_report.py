# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Fleet audit reports: per-host records, the fleet aggregate, and its four renderings.

Data in, data out: ``host_record`` and ``fleet_report`` build plain dicts; ``to_json``,
``to_junit`` (audit_junit), ``to_html`` (audit_html) and ``to_sarif`` (audit_sarif) turn a
fleet report into text; ``write_reports`` and ``merge`` are the only functions that touch
the file system. The shape is documented by ``docs/schemas/boundary-audit.schema.json``
(a test validates reports against it):

    {"schema_version": 2, "generated": "2026-12-01T10:00:00Z",
     "hosts": {NAME: {"status": "findings" | "clean" | "error" | "not_audited" | "unreachable",
                      "not_checked": [CHECK], "warnings": [str],
                      "checks": {CHECK: {"status": "findings" | "clean" | "error" | "not_checked"
                                                   | "skipped",
                                         "findings": [...], "reason": str | None, ...}}}},
     "summary": {"hosts_total", "hosts_with_findings", "hosts_error", "hosts_unreachable",
                 "hosts_not_audited", "hosts_not_checked", "hosts_with_warnings",
                 "hosts_clean", "checks": {CHECK: {"findings", "clean", "error", "not_checked",
                                                   "skipped", "items"}},
                 "counts": {CHECK: findings across the fleet}}}

``hosts_error`` counts the hosts in ``error`` and the ``unreachable`` ones (both could not
be audited); ``hosts_unreachable`` the latter alone. ``hosts_not_audited`` counts the hosts
in ``not_audited`` (a selected check covered nothing, nothing worse); ``hosts_not_checked``
every host with a selected check not checked, whatever else it has (the gate fails on it
unless told to allow it). Schema version 1 reports (before ``not_checked``) are read too.

Records arrive as results carry them (text.for_result: a name that is not UTF-8 escaped,
its bytes in a ``<key>_b64`` sibling), and the JSON reports keep that form (for_result
again: valid UTF-8 whatever the input). JUnit, HTML and SARIF messages show every name
from a host as text.escape shows it (one printable line; XML 1.0 and HTML get no control
character, markup is escaped) and every message through text.one_line; a SARIF location
carries the exact bytes of a path, percent-encoded in its file URI.

A host's status is ``findings`` when any check found something, else ``error`` when any
check could not run, else ``not_audited`` when a selected check was not checked (or none
was selected), else ``clean``; ``unreachable`` when no result came back from it. Hosts are
ordered worst first: unreachable, findings, error, not_audited, clean; then by the number
of findings (most first) and by name.
"""
import datetime
import hashlib
import json
import os
import re

from .._core import atomicfile
from .._core.text import for_result
from ..errors import InputError
from .audit_html import TITLE, to_html  # noqa: F401  # pylint: disable=unused-import
from .audit_junit import to_junit  # pylint: disable=unused-import
from .audit_record import (  # noqa: F401  # pylint: disable=unused-import
    CHECK_STATUSES,
    CHECKS,
    CLEAN,
    ERROR,
    FINDINGS,
    HOST_STATUSES,
    NOT_AUDITED,
    NOT_CHECKED,
    SKIPPED,
    UNREACHABLE,
    host_record,
    host_status,
    not_checked,
)  # the host side of the report (what the audit module imports), re-exported here
from .audit_sarif import to_sarif  # pylint: disable=unused-import
from .audit_text import (  # noqa: F401  # pylint: disable=unused-import
    CHECK_TITLES,
    finding_line,
    problem_lines,
    sort_key,
    warning_lines,
    worst_first,
)

SCHEMA_VERSION = 2
# what merge reads: version 1 had no not_checked and no not_audited (a subset of version 2)
READABLE_SCHEMA_VERSIONS = (1, 2)
JSON_NAME, JUNIT_NAME, HTML_NAME = "boundary-audit.json", "boundary-audit.xml", "boundary-audit.html"
SARIF_NAME = "boundary-audit.sarif"
HOSTS_DIR = "hosts"
# where the audit role and the audit_report action write the reports (relative: the directory
# ansible-playbook runs in, in AWX the job's)
DEFAULT_REPORT_DIR = "boundary-audit"
FORMATS = ("json", "junit", "html", "sarif")


class ReportError(InputError):
    """An input that is not a boundary audit report; str() names the file."""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def unreachable_record(reason=None):
    """The record of a host that returned nothing (unreachable, or failed before the audit)."""
    why = reason or "no result from this host (unreachable, or it failed before the audit ran)"
    checks = {name: {"status": ERROR, "findings": [], "reason": "host unreachable: " + why, "errors": []}
              for name in CHECKS}
    return {"status": UNREACHABLE, "reason": why, "checks": checks, "not_checked": [], "warnings": []}


def failed_record(reason):
    """The record of a host where the audit module itself failed (no Python, a crash)."""
    checks = {name: {"status": ERROR, "findings": [], "reason": "the audit did not run: " + reason, "errors": []}
              for name in CHECKS}
    return {"status": ERROR, "reason": reason, "checks": checks, "not_checked": [], "warnings": []}


# Why each reached host is not clean for want of a check (in error, or not checked), one line each.
error_lines = problem_lines


def summarize(hosts):
    """The fleet summary of {name: record}: hosts per status, checks per status (every check
    of CHECKS, and any other a record carries), findings per check."""
    names = list(CHECKS) + sorted({c for r in hosts.values() for c in r["checks"] if c not in CHECKS})
    summary = {"hosts_total": len(hosts), "hosts_with_findings": 0, "hosts_error": 0, "hosts_unreachable": 0,
               "hosts_not_audited": 0, "hosts_not_checked": 0, "hosts_with_warnings": 0, "hosts_clean": 0,
               "checks": {name: dict.fromkeys((*CHECK_STATUSES, "items"), 0) for name in names}}
    for record in hosts.values():
        status = record["status"]
        if status == FINDINGS:
            summary["hosts_with_findings"] += 1
        elif status == CLEAN:
            summary["hosts_clean"] += 1
        elif status == NOT_AUDITED:
            summary["hosts_not_audited"] += 1
        else:
            summary["hosts_error"] += 1
            if status == UNREACHABLE:
                summary["hosts_unreachable"] += 1
        if status != UNREACHABLE and not_checked(record["checks"]):
            summary["hosts_not_checked"] += 1
        if record.get("warnings"):
            summary["hosts_with_warnings"] += 1
        for name in names:
            check = record["checks"].get(name) or {"status": ERROR, "findings": []}
            state = check.get("status") if check.get("status") in CHECK_STATUSES else ERROR
            summary["checks"][name][state] += 1
            summary["checks"][name]["items"] += len(check.get("findings") or ())
    summary["counts"] = {name: summary["checks"][name]["items"] for name in names}
    summary["runner_not_owned"] = _runner_not_owned(hosts)
    return summary


def _runner_not_owned(hosts):
    """{files, hosts}: privileged_files findings of files in a CI runner's work folder that
    the runner user does not own (reasons ``owner``: the next checkout fails), and the
    hosts that have one."""
    files, names = 0, []
    for name, record in hosts.items():
        check = record["checks"].get("privileged_files") or {}
        found = sum(1 for f in check.get("findings") or () if "owner" in (f.get("reasons") or ()))
        if found:
            files += found
            names.append(name)
    return {"files": files, "hosts": sorted(names)}


def fleet_report(hosts, generated=None, **extra):
    """The fleet report of {name: record}; hosts are stored worst first."""
    ordered = dict(worst_first(hosts))
    report = {"schema_version": SCHEMA_VERSION, "generated": generated or utc_now(), "hosts": ordered,
              "summary": summarize(ordered)}
    report.update(extra)
    return report


def collect(results, play_hosts_all, unreachable_reasons=None):
    """{name: record} for every host of the play from the audit results that came back.

    *results*: {name: an audit module result, or None}. A missing or None result is an
    unreachable host; a failed one (``failed`` without a ``record``) is an error host.
    """
    reasons = unreachable_reasons or {}
    hosts = {}
    for name in list(play_hosts_all) + [n for n in results if n not in play_hosts_all]:
        result = results.get(name)
        if not isinstance(result, dict):
            hosts[name] = unreachable_record(reasons.get(name))
        elif result.get("unreachable"):
            hosts[name] = unreachable_record(result.get("msg") or reasons.get(name))
        elif isinstance(result.get("record"), dict):
            record = result["record"]
            hosts[name] = host_record(dict(record.get("checks") or {}),
                                      **{k: v for k, v in record.items() if k not in ("checks", "status")})
        elif result.get("skipped"):
            hosts[name] = failed_record("the audit task was skipped on this host (%s)"
                                        % (result.get("skip_reason") or "a condition was false"))
        else:
            hosts[name] = failed_record(str(result.get("msg") or "the audit module failed without a message"))
    return hosts


# --- JSON ---------------------------------------------------------------------------------

def to_json(report):
    return json.dumps(for_result(report), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def host_document(name, record, generated):
    """What hosts/<name>.json holds: one host's record with its name, mergeable."""
    doc = {"schema_version": SCHEMA_VERSION, "generated": generated, "host": name}
    doc.update(record)
    return doc


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._@+-]")


def host_file_name(name):
    """A file name for a host (the real name is inside the file).

    A name that is not safe as it is gets a hash of itself, so two such names never share
    a file (``a/b`` and ``a_b``).
    """
    safe = _UNSAFE_NAME.sub("_", name).lstrip(".")[:200]
    if safe != name:
        safe = "%s-%s" % (safe or "_", hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:10])
    return safe + ".json"


# --- files --------------------------------------------------------------------------------

def _write_atomic(path, text):
    atomicfile.write(path, text, mode=0o644)


def write_reports(report, out_dir, formats=FORMATS, host_files=True):
    """Write the reports into *out_dir* (created); return the paths written (effectful)."""
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise InputError("unknown report format(s) %s: choose from %s" % (", ".join(unknown), ", ".join(FORMATS)))
    os.makedirs(out_dir, exist_ok=True)
    written = []
    renders = {"json": (JSON_NAME, to_json), "junit": (JUNIT_NAME, to_junit), "html": (HTML_NAME, to_html),
               "sarif": (SARIF_NAME, to_sarif)}
    for fmt in FORMATS:
        if fmt in formats:
            name, render = renders[fmt]
            path = os.path.join(out_dir, name)
            _write_atomic(path, render(report))
            written.append(path)
    if host_files:
        hosts_dir = os.path.join(out_dir, HOSTS_DIR)
        os.makedirs(hosts_dir, exist_ok=True)
        for name, record in report["hosts"].items():
            path = os.path.join(hosts_dir, host_file_name(name))
            _write_atomic(path, to_json(host_document(name, record, report["generated"])))
            written.append(path)
    return written


def _load(path):
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ReportError("%s: cannot read a report: %s" % (path, exc)) from None


def _check_version(doc, path):
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise ReportError("%s: not a boundary audit report (no schema_version)" % path)
    if doc["schema_version"] not in READABLE_SCHEMA_VERSIONS:
        raise ReportError("%s: schema_version %r, this sandboxguard reads %s" % (
            path, doc["schema_version"], " and ".join(str(v) for v in READABLE_SCHEMA_VERSIONS)))


def read_hosts(path):
    """[(name, record, generated)] from a report directory, a fleet report or a host file."""
    if os.path.isdir(path):
        hosts_dir = os.path.join(path, HOSTS_DIR)
        files = []
        if os.path.isdir(hosts_dir):
            files = [os.path.join(hosts_dir, n) for n in sorted(os.listdir(hosts_dir)) if n.endswith(".json")]
        if not files and os.path.isfile(os.path.join(path, JSON_NAME)):
            files = [os.path.join(path, JSON_NAME)]
        if not files:
            raise ReportError("%s: no %s and no %s/*.json in this directory" % (path, JSON_NAME, HOSTS_DIR))
        out = []
        for name in files:
            out.extend(read_hosts(name))
        return out
    doc = _load(path)
    _check_version(doc, path)
    if "host" in doc:
        record = {k: v for k, v in doc.items() if k not in ("schema_version", "generated", "host")}
        if "checks" not in record or "status" not in record:
            raise ReportError("%s: a host file without status and checks" % path)
        return [(doc["host"], record, doc.get("generated") or "")]
    if not isinstance(doc.get("hosts"), dict):
        raise ReportError("%s: not a boundary audit report (no hosts)" % path)
    return [(name, record, doc.get("generated") or "") for name, record in doc["hosts"].items()]


def merge(inputs, generated=None):
    """One fleet report from the reports of several slices (reads files).

    A host seen twice keeps its reachable record over an unreachable one, else the
    newer one (by ``generated``).
    """
    if not inputs:
        raise ReportError("no reports to merge: name report directories or files")
    chosen = {}
    for path in inputs:
        for name, record, stamp in read_hosts(path):
            old = chosen.get(name)
            if old is not None:
                old_reachable = old[0]["status"] != UNREACHABLE
                new_reachable = record["status"] != UNREACHABLE
                if (old_reachable and not new_reachable) or (old_reachable == new_reachable and old[1] > stamp):
                    continue
            chosen[name] = (record, stamp)
    return fleet_report({name: _restated(record) for name, (record, _stamp) in chosen.items()}, generated,
                        merged_from=[str(p) for p in inputs])


def _restated(record):
    """A record read from a file, its status, not_checked and warnings worked out again from its
    checks (a version 1 report has none of the latter; a hand-edited one cannot say clean for a
    host whose checks say otherwise). An unreachable host stays so."""
    if record.get("status") == UNREACHABLE or not isinstance(record.get("checks"), dict):
        record.setdefault("not_checked", [])
        record.setdefault("warnings", [])
        return record
    extra = {k: v for k, v in record.items() if k not in ("checks", "status", "not_checked", "warnings")}
    return host_record(dict(record["checks"]), **extra)


def gate(summary, fail_on_findings=True, fail_on_errors=True, allow_not_checked=False):
    """The message the play fails with, or None when it passes: hosts with findings
    (*fail_on_findings*), hosts in error or unreachable (*fail_on_errors*), and hosts where a
    selected check covered nothing (unless *allow_not_checked*): nothing checked is never clean."""
    problems = []
    if fail_on_findings and summary["hosts_with_findings"]:
        per_check = ", ".join("%s on %d" % (c, n[FINDINGS]) for c, n in summary["checks"].items() if n[FINDINGS])
        problems.append("%d of %d host(s) have findings (%s)" % (summary["hosts_with_findings"],
                                                                 summary["hosts_total"], per_check))
    if fail_on_errors and summary["hosts_error"]:
        problems.append("%d host(s) could not be audited completely (%d unreachable)" % (
            summary["hosts_error"], summary["hosts_unreachable"]))
    not_audited = summary.get("hosts_not_checked", 0)
    if not allow_not_checked and not_audited:
        per_check = ", ".join("%s on %d" % (c, n[NOT_CHECKED]) for c, n in summary["checks"].items()
                              if n.get(NOT_CHECKED))
        problems.append("%d host(s) not audited: a selected check covered nothing (%s); give the inputs each "
                        "report's reason names, narrow the checks (tags, boundary_audit_checks), or set "
                        "sandboxguard_allow_not_checked=true" % (not_audited, per_check or "no check selected"))
    return "; ".join(problems) or None


def stats(summary):
    """The set_stats aggregate (``sandboxguard_audit``) for AWX workflow nodes."""
    out = {k: summary.get(k, 0) for k in ("hosts_total", "hosts_with_findings", "hosts_error", "hosts_unreachable",
                                          "hosts_not_audited", "hosts_not_checked", "hosts_with_warnings",
                                          "hosts_clean")}
    out["checks"] = {c: dict(n) for c, n in summary["checks"].items()}
    out["counts"] = dict(summary["counts"])
    if "runner_not_owned" in summary:
        out["runner_not_owned"] = dict(summary["runner_not_owned"])
    return out
