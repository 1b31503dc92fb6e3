# GENERATED from python/src/sandboxguard/_fleet/audit_report.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Fleet audit reports: per-host records, the fleet aggregate, and its three renderings.

Data in, data out: ``host_record`` and ``fleet_report`` build plain dicts; ``to_json``,
``to_junit`` and ``to_html`` turn a fleet report into text; ``write_reports`` and
``merge`` are the only functions that touch the file system. The shape is documented
by ``docs/schemas/boundary-audit.schema.json`` (a test validates reports against it):

    {"schema_version": 1, "generated": "2026-12-01T10:00:00Z",
     "hosts": {NAME: {"status": "findings" | "clean" | "error" | "unreachable",
                      "checks": {CHECK: {"status": "findings" | "clean" | "error" | "skipped",
                                         "findings": [...], "reason": str | None, ...}}}},
     "summary": {"hosts_total", "hosts_with_findings", "hosts_error", "hosts_unreachable",
                 "hosts_clean", "checks": {CHECK: {"findings", "clean", "error", "skipped",
                                                   "items"}},
                 "counts": {CHECK: findings across the fleet}}}

``hosts_error`` counts the hosts in ``error`` and the ``unreachable`` ones (both could not
be audited); ``hosts_unreachable`` the latter alone.

Records arrive as results carry them (text.for_result: a name that is not UTF-8 escaped,
its bytes in a ``<key>_b64`` sibling), and the JSON reports keep that form (for_result
again: valid UTF-8 whatever the input). JUnit and HTML show every name from a host as
text.escape shows it (one printable line; XML 1.0 and HTML get no control character,
markup is escaped) and every message through text.one_line.

A host's status is ``findings`` when any check found something, else ``error`` when any
check could not run, else ``clean``; ``unreachable`` when no result came back from it.
Hosts are ordered worst first: unreachable, findings, error, clean; then by the number
of findings (most first) and by name.
"""
import datetime
import hashlib
import html
import json
import os
import re
import xml.etree.ElementTree as ET

from .._core import atomicfile
from .._core.text import escape, for_result, from_result, one_line
from ..errors import InputError
from .audit_record import (  # noqa: F401  # pylint: disable=unused-import
    CHECK_STATUSES,
    CHECKS,
    CLEAN,
    ERROR,
    FINDINGS,
    HOST_STATUSES,
    SKIPPED,
    UNREACHABLE,
    host_record,
    host_status,
)  # the host side of the report (what the audit module imports), re-exported here

SCHEMA_VERSION = 1
CHECK_TITLES = {"privileged_files": "Privileged files", "home_mode": "TERMINAL_HOME_MODE",
                "leaks": "Leaks outside the sandbox", "bwrap": "Bubblewrap", "runtime": "Sandbox runtime settings"}
_RANK = {status: rank for rank, status in enumerate(HOST_STATUSES)}
JSON_NAME, JUNIT_NAME, HTML_NAME = "boundary-audit.json", "boundary-audit.xml", "boundary-audit.html"
HOSTS_DIR = "hosts"
TITLE = "sandboxguard boundary audit"
# where the audit role and the audit_report action write the reports (relative: the directory
# ansible-playbook runs in, in AWX the job's)
DEFAULT_REPORT_DIR = "boundary-audit"
FORMATS = ("json", "junit", "html")
HTML_MAX_ROWS = 200
FAILURE_MAX_PATHS = 20


class ReportError(InputError):
    """An input that is not a boundary audit report; str() names the file."""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def unreachable_record(reason=None):
    """The record of a host that returned nothing (unreachable, or failed before the audit)."""
    why = reason or "no result from this host (unreachable, or it failed before the audit ran)"
    checks = {name: {"status": ERROR, "findings": [], "reason": "host unreachable: " + why, "errors": []}
              for name in CHECKS}
    return {"status": UNREACHABLE, "reason": why, "checks": checks}


def failed_record(reason):
    """The record of a host where the audit module itself failed (no Python, a crash)."""
    checks = {name: {"status": ERROR, "findings": [], "reason": "the audit did not run: " + reason, "errors": []}
              for name in CHECKS}
    return {"status": ERROR, "reason": reason, "checks": checks}


def _findings_count(record):
    return sum(len(c.get("findings") or ()) for c in record["checks"].values())


def sort_key(item):
    name, record = item
    return (_RANK.get(record["status"], len(_RANK)), -_findings_count(record), name)


def worst_first(hosts):
    """[(name, record)] ordered worst first."""
    return sorted(hosts.items(), key=sort_key)


def error_lines(report, limit=5):
    """Why each host that could be reached has a check in error, one line each (``host check:
    reason``, worst host first, at most *limit*, then how many more): what the operator must
    fix before the audit can say clean, e.g. the real path to give for a refused one."""
    lines = []
    for name, record in worst_first(report["hosts"]):
        if record["status"] == UNREACHABLE:
            continue
        for check, result in record["checks"].items():
            if result.get("status") == ERROR:
                lines.append("%s %s: %s" % (escape(name), check, one_line(result.get("reason") or "error")))
    if len(lines) > limit:
        lines = [*lines[:limit], "and %d more (see the reports)" % (len(lines) - limit)]
    return lines


def summarize(hosts):
    """The fleet summary of {name: record}."""
    summary = {"hosts_total": len(hosts), "hosts_with_findings": 0, "hosts_error": 0, "hosts_unreachable": 0,
               "hosts_clean": 0, "checks": {name: dict.fromkeys((*CHECK_STATUSES, "items"), 0) for name in CHECKS}}
    for record in hosts.values():
        status = record["status"]
        if status == FINDINGS:
            summary["hosts_with_findings"] += 1
        elif status == CLEAN:
            summary["hosts_clean"] += 1
        else:
            summary["hosts_error"] += 1
            if status == UNREACHABLE:
                summary["hosts_unreachable"] += 1
        for name in CHECKS:
            check = record["checks"].get(name) or {"status": ERROR, "findings": []}
            summary["checks"][name][check["status"]] += 1
            summary["checks"][name]["items"] += len(check.get("findings") or ())
    summary["counts"] = {name: summary["checks"][name]["items"] for name in CHECKS}
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


# --- JUnit --------------------------------------------------------------------------------

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text):
    """Text XML 1.0 can carry: control characters become \\xNN (the last guard: names are
    text.escape-d and messages text.one_line-d before they get here)."""
    return _XML_BAD.sub(lambda m: "\\x%02x" % ord(m.group()) if ord(m.group()) < 0x100 else "\\u%04x" % ord(m.group()),
                        str(text))


def _name(value):
    """A name from a host (a raw finding: from_result's form) as people see it."""
    return escape("" if value is None else str(value))


def finding_line(check, finding):
    """One line for a finding (as from_result gives it), naming its path (text.escape)."""
    path = _name(finding.get("path", ""))
    if check == "privileged_files":
        parts = ["mode %s" % _name(finding.get("mode"))]
        if finding.get("caps"):
            parts.append("caps %s" % _name(finding["caps"]))
        parts.append("uid %s" % finding.get("uid"))
        if "owner" in (finding.get("reasons") or ()):
            parts = ["uid %s gid %s, not the runner user's %s" % (
                finding.get("uid"), finding.get("gid"), ":".join(str(i) for i in finding.get("owner") or ()))]
        return "%s (%s)" % (path, ", ".join(parts))
    if check == "leaks":
        extra = _name(finding.get("entry") or finding.get("unit") or "")
        return "%s %s%s (%s s old)" % (_name(finding.get("kind")), path, (": " + extra) if extra else "",
                                       finding.get("age"))
    if check == "home_mode":
        return "%s: %s" % (path, one_line(finding.get("reason")))
    if check == "bwrap":
        return "%s: %s" % (one_line(finding.get("reason")), one_line(finding.get("message")))
    if check == "runtime":
        return "%s [%s%s] %s: %s" % (one_line(finding.get("rule")), one_line(finding.get("severity")),
                                     ", CIS %s" % one_line(finding["cis"]) if finding.get("cis") else "",
                                     _name(finding.get("where", "")), one_line(finding.get("detail")))
    return "%s %s" % (path, one_line(json.dumps(for_result(finding), sort_keys=True)))


def to_junit(report):
    """JUnit XML: a testsuite per host, a testcase per check."""
    report = from_result(report)
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    root = ET.Element("testsuites", name=TITLE)
    for name, record in report["hosts"].items():
        suite = ET.SubElement(root, "testsuite", name=_xml_text(_name(name)), timestamp=report["generated"])
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="status", value=record["status"])
        for check in CHECKS:
            result = record["checks"].get(check) or {"status": ERROR, "findings": [], "reason": "no result"}
            case = ET.SubElement(suite, "testcase", name=check, classname=_xml_text("boundary_audit.%s" % _name(name)),
                                 time="%.3f" % float(result.get("elapsed") or 0))
            counts["tests"] += 1
            status = result["status"]
            if status == FINDINGS:
                findings = result.get("findings") or []
                paths = [_name(f.get("path", "")) for f in findings[:FAILURE_MAX_PATHS]]
                more = len(findings) - len(paths)
                message = "%d finding(s): %s%s" % (len(findings), ", ".join(paths),
                                                   " and %d more" % more if more else "")
                failure = ET.SubElement(case, "failure", message=_xml_text(message), type=check)
                failure.text = _xml_text("\n".join(finding_line(check, f) for f in findings))
                counts["failures"] += 1
            elif status == ERROR:
                reason = one_line(result.get("reason") or "the check could not run")
                if record["status"] == UNREACHABLE:
                    kind = "unreachable"
                else:
                    kind = "error"
                error = ET.SubElement(case, "error", message=_xml_text(reason), type=kind)
                error.text = _xml_text("\n".join("%s: %s: %s" % (_name(e.get("path")), one_line(e.get("op")),
                                                                 one_line(e.get("error")))
                                                 for e in result.get("errors") or ()) or reason)
                counts["errors"] += 1
            elif status == SKIPPED:
                ET.SubElement(case, "skipped", message=_xml_text(one_line(result.get("reason") or "skipped")))
                counts["skipped"] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
            total[key] += value
    for key, value in total.items():
        root.set(key, str(value))
    if hasattr(ET, "indent"):  # Python 3.9+
        ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --- HTML ---------------------------------------------------------------------------------

_CSS = """
:root{--bad:#b42318;--bad-bg:#fef3f2;--warn:#b54708;--warn-bg:#fffaeb;--ok:#067647;--ok-bg:#ecfdf3;
--off:#475467;--off-bg:#f2f4f7;--line:#eaecf0;--ink:#101828;--muted:#475467}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);
margin:0;background:#f9fafb}main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 10px}.meta{color:var(--muted);margin:0 0 18px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:14px 16px}
.card .n{font-size:28px;font-weight:650}.card .l{color:var(--muted)}
.card.bad .n{color:var(--bad)}.card.warn .n{color:var(--warn)}.card.ok .n{color:var(--ok)}
.verdict{border-radius:10px;padding:12px 16px;margin:0 0 16px;font-weight:600}
.verdict.bad{background:var(--bad-bg);color:var(--bad)}.verdict.ok{background:var(--ok-bg);color:var(--ok)}
.verdict.warn{background:var(--warn-bg);color:var(--warn)}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line);border-radius:10px;
overflow:hidden}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#f2f4f7;font-weight:600;font-size:13px}td.num{text-align:right;font-variant-numeric:tabular-nums}
.b{display:inline-block;border-radius:999px;padding:1px 9px;font-size:12px;font-weight:600;white-space:nowrap}
.b.findings,.b.unreachable{background:var(--bad-bg);color:var(--bad)}.b.error{background:var(--warn-bg);color:var(--warn)}
.b.clean{background:var(--ok-bg);color:var(--ok)}.b.skipped{background:var(--off-bg);color:var(--off)}
details.host{background:#fff;border:1px solid var(--line);border-radius:10px;margin:0 0 8px}
details.host>summary{cursor:pointer;padding:10px 14px;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
details.host>summary .name{font-weight:650;min-width:180px}
details.host[open]>summary{border-bottom:1px solid var(--line)}
.checks{display:flex;gap:6px;flex-wrap:wrap}.body{padding:6px 14px 14px}
.check h3{font-size:14px;margin:14px 0 6px;display:flex;gap:8px;align-items:center}
.reason{color:var(--muted);margin:2px 0 6px}
code,.mono{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all}
.more{color:var(--muted);font-style:italic}footer{color:var(--muted);margin-top:28px;font-size:12px}
"""


def _e(value):
    """Markup escaped, on one line (a message: text.one_line)."""
    return html.escape(one_line("" if value is None else str(value)), quote=True)


def _n(value):
    """A name from a host, as people see it (text.escape), markup escaped."""
    return html.escape(_name(value), quote=True)


def _badge(status, text=None):
    return '<span class="b %s">%s</span>' % (_e(status), _e(text or status))


def _finding_cells(check, finding):
    """[(class, HTML text)] of one finding's row: names through _n, messages through _e."""
    if check == "privileged_files":
        what = ", ".join(finding.get("reasons") or ())
        if "owner" in (finding.get("reasons") or ()):
            what = "not the runner user's (%s)" % ":".join(str(i) for i in finding.get("owner") or ())
        return [("mono", _n(finding.get("path"))), ("mono", _n(finding.get("mode"))),
                ("mono", _n(finding.get("caps") or "")),
                ("", _e("%s:%s" % (finding.get("uid"), finding.get("gid")))), ("", _e(what))]
    if check == "leaks":
        detail = finding.get("entry") or finding.get("unit") or ""
        return [("", _n(finding.get("kind"))), ("mono", _n(finding.get("path"))), ("mono", _n(detail)),
                ("", _n(finding.get("user") or "")), ("num", _e(finding.get("age")))]
    if check == "home_mode":
        return [("mono", _n(finding.get("path"))), ("", _n(finding.get("mode") or "unset (auto)")),
                ("", _n(finding.get("wanted"))), ("", _e(finding.get("reason")))]
    if check == "runtime":
        return [("", _e(finding.get("severity"))), ("", _e(finding.get("rule"))), ("mono", _n(finding.get("where"))),
                ("", _e(finding.get("detail"))), ("", _e(finding.get("fix"))), ("", _e(finding.get("cis") or ""))]
    return [("", _e(finding.get("reason"))), ("", _e(finding.get("message"))), ("", _e(finding.get("remediation")))]


_HEADERS = {"privileged_files": ("path", "mode", "capabilities", "uid:gid", "why"),
            "leaks": ("kind", "path", "entry / unit", "user", "age (s)"),
            "home_mode": ("Hermes home", "mode now", "asked for", "what would change"),
            "bwrap": ("problem", "message", "fix"),
            "runtime": ("severity", "rule", "where", "what", "fix", "CIS")}


def _check_html(check, result):
    out = ['<div class="check"><h3>%s %s</h3>' % (_e(CHECK_TITLES[check]), _badge(result["status"]))]
    if result.get("reason"):
        out.append('<p class="reason">%s</p>' % _e(result["reason"]))
    for path in result.get("absent") or ():
        out.append('<p class="reason">absent on this host: <code>%s</code></p>' % _n(path))
    for warning in result.get("warnings") or ():
        out.append('<p class="reason">warning: %s</p>' % _e(warning))
    findings = result.get("findings") or []
    if findings:
        out.append("<table><tr>%s</tr>" % "".join("<th>%s</th>" % _e(h) for h in _HEADERS[check]))
        for finding in findings[:HTML_MAX_ROWS]:
            cells = _finding_cells(check, finding)
            out.append("<tr>%s</tr>" % "".join('<td class="%s">%s</td>' % (cls, v) for cls, v in cells))
        out.append("</table>")
        if len(findings) > HTML_MAX_ROWS:
            out.append('<p class="more">%d more in boundary-audit.json</p>' % (len(findings) - HTML_MAX_ROWS))
    errors = result.get("errors") or []
    if errors and (result["status"] != ERROR or len(errors) > 1):
        out.append('<p class="reason">%d error(s): %s</p>' % (len(errors), _e("; ".join(
            "%s: %s" % (_name(e.get("path")), one_line(e.get("error"))) for e in errors[:10]))))
    out.append("</div>")
    return "".join(out)


def to_html(report, title=TITLE):
    """One self-contained page: the fleet summary first, then the hosts worst first."""
    report = from_result(report)
    summary = report["summary"]
    bad = summary["hosts_with_findings"]
    errors = summary["hosts_error"]
    if bad:
        verdict = ("bad", "%d of %d host(s) have findings" % (bad, summary["hosts_total"]))
    elif errors:
        verdict = ("warn", "no findings, but %d host(s) could not be audited completely" % errors)
    else:
        verdict = ("ok", "all %d host(s) clean" % summary["hosts_total"])
    cards = [("bad" if bad else "ok", bad, "with findings"),
             ("warn" if summary["hosts_error"] - summary["hosts_unreachable"] else "ok",
              summary["hosts_error"] - summary["hosts_unreachable"], "with errors"),
             ("bad" if summary["hosts_unreachable"] else "ok", summary["hosts_unreachable"], "unreachable"),
             ("ok", summary["hosts_clean"], "clean"), ("", summary["hosts_total"], "hosts audited")]
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width,initial-scale=1">',
           "<title>%s</title><style>%s</style></head><body><main>" % (_e(title), _CSS),
           "<h1>%s</h1>" % _e(title),
           '<p class="meta">generated %s &middot; schema %s</p>' % (_e(report["generated"]),
                                                                    _e(report["schema_version"])),
           '<div class="verdict %s">%s</div>' % verdict,
           '<div class="cards">%s</div>' % "".join(
               '<div class="card %s"><div class="n">%s</div><div class="l">%s</div></div>' % (cls, n, _e(label))
               for cls, n, label in cards),
           "<h2>Checks across the fleet</h2><table><tr><th>check</th><th>hosts with findings</th><th>findings</th>"
           "<th>error</th><th>clean</th><th>skipped</th></tr>"]
    for check in CHECKS:
        c = summary["checks"][check]
        out.append('<tr><td>%s</td><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td>'
                   '<td class="num">%s</td><td class="num">%s</td></tr>' % (
                       _e(CHECK_TITLES[check]), c[FINDINGS], c["items"], c[ERROR], c[CLEAN], c[SKIPPED]))
    out.append("</table><h2>Hosts, worst first</h2>")
    for name, record in worst_first(report["hosts"]):
        count = _findings_count(record)
        label = record["status"] + (" (%d)" % count if count else "")
        badges = "".join(_badge(record["checks"][c]["status"], "%s: %s" % (c, record["checks"][c]["status"]))
                         for c in CHECKS if c in record["checks"])
        opened = " open" if record["status"] in (FINDINGS, UNREACHABLE) and count <= 50 else ""
        out.append('<details class="host"%s><summary><span class="name">%s</span>%s<span class="checks">%s</span>'
                   "</summary><div class=\"body\">" % (opened, _n(name), _badge(record["status"], label), badges))
        if record["status"] == UNREACHABLE:
            out.append('<p class="reason">%s</p>' % _e(record.get("reason")))
        else:
            out.extend(_check_html(check, record["checks"][check]) for check in CHECKS if check in record["checks"])
        out.append("</div></details>")
    out.append("<footer>sandboxguard.boundary boundary_audit &middot; the same data: boundary-audit.json, "
               "boundary-audit.xml (JUnit), hosts/&lt;host&gt;.json</footer></main></body></html>\n")
    return "".join(out)


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
    renders = {"json": (JSON_NAME, to_json), "junit": (JUNIT_NAME, to_junit), "html": (HTML_NAME, to_html)}
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
    if doc["schema_version"] != SCHEMA_VERSION:
        raise ReportError("%s: schema_version %r, this sandboxguard reads %d" % (path, doc["schema_version"],
                                                                                 SCHEMA_VERSION))


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
    return fleet_report({name: record for name, (record, _stamp) in chosen.items()}, generated,
                        merged_from=[str(p) for p in inputs])


def gate(summary, fail_on_findings=True, fail_on_errors=True):
    """The message the play fails with, or None when it passes."""
    problems = []
    if fail_on_findings and summary["hosts_with_findings"]:
        per_check = ", ".join("%s on %d" % (c, summary["checks"][c][FINDINGS]) for c in CHECKS
                              if summary["checks"][c][FINDINGS])
        problems.append("%d of %d host(s) have findings (%s)" % (summary["hosts_with_findings"],
                                                                 summary["hosts_total"], per_check))
    if fail_on_errors and summary["hosts_error"]:
        problems.append("%d host(s) could not be audited completely (%d unreachable)" % (
            summary["hosts_error"], summary["hosts_unreachable"]))
    return "; ".join(problems) or None


def stats(summary):
    """The set_stats aggregate (``sandboxguard_audit``) for AWX workflow nodes."""
    out = {k: summary[k] for k in ("hosts_total", "hosts_with_findings", "hosts_error", "hosts_unreachable",
                                   "hosts_clean")}
    out["checks"] = {c: dict(summary["checks"][c]) for c in CHECKS}
    out["counts"] = dict(summary["counts"])
    if "runner_not_owned" in summary:
        out["runner_not_owned"] = dict(summary["runner_not_owned"])
    return out
