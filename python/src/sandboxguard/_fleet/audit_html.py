# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The fleet audit as one self-contained HTML page (boundary-audit.html).

The fleet summary first (a verdict: red for findings or unreachable hosts, amber for hosts
that could not be audited completely or were not audited - a selected check covered
nothing -, green only when every host is clean), then the hosts worst first, each with its
warnings (container engine discovery off or failed) and every check. No script, no
external resource. Names from a host go through text.escape and markup escaping; messages
through text.one_line.
"""
import html

from .._core.text import from_result, one_line
from .audit_record import CHECK_STATUSES, CHECKS, FINDINGS, NOT_AUDITED, UNREACHABLE
from .audit_text import check_title, findings_count, name, worst_first

TITLE = "sandboxguard boundary audit"
HTML_MAX_ROWS = 200
# hosts whose details are open when the page loads (up to 50 findings)
OPEN_STATUSES = (FINDINGS, UNREACHABLE, NOT_AUDITED)

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
.b.not_audited,.b.not_checked{background:var(--warn-bg);color:var(--warn)}
.b.clean{background:var(--ok-bg);color:var(--ok)}.b.skipped{background:var(--off-bg);color:var(--off)}
details.host{background:#fff;border:1px solid var(--line);border-radius:10px;margin:0 0 8px}
details.host>summary{cursor:pointer;padding:10px 14px;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
details.host>summary .name{font-weight:650;min-width:180px}
details.host[open]>summary{border-bottom:1px solid var(--line)}
.checks{display:flex;gap:6px;flex-wrap:wrap}.body{padding:6px 14px 14px}
.check h3{font-size:14px;margin:14px 0 6px;display:flex;gap:8px;align-items:center}
.reason{color:var(--muted);margin:2px 0 6px}.warning{color:var(--warn);margin:2px 0 6px}
code,.mono{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all}
.more{color:var(--muted);font-style:italic}footer{color:var(--muted);margin-top:28px;font-size:12px}
"""


def _e(value):
    """Markup escaped, on one line (a message: text.one_line)."""
    return html.escape(one_line("" if value is None else str(value)), quote=True)


def _n(value):
    """A name from a host, as people see it (text.escape), markup escaped."""
    return html.escape(name(value), quote=True)


def _badge(status, text=None):
    return '<span class="b %s">%s</span>' % (_e(status), _e(text or status))


def _finding_cells(check_name, finding):
    """[(class, HTML text)] of one finding's row: names through _n, messages through _e."""
    if check_name == "privileged_files":
        what = ", ".join(finding.get("reasons") or ())
        if "owner" in (finding.get("reasons") or ()):
            what = "not the runner user's (%s)" % ":".join(str(i) for i in finding.get("owner") or ())
        return [("mono", _n(finding.get("path"))), ("mono", _n(finding.get("mode"))),
                ("mono", _n(finding.get("caps") or "")),
                ("", _e("%s:%s" % (finding.get("uid"), finding.get("gid")))), ("", _e(what))]
    if check_name == "leaks":
        detail = finding.get("entry") or finding.get("unit") or ""
        return [("", _n(finding.get("kind"))), ("mono", _n(finding.get("path"))), ("mono", _n(detail)),
                ("", _n(finding.get("user") or "")), ("num", _e(finding.get("age")))]
    if check_name == "home_mode":
        return [("mono", _n(finding.get("path"))), ("", _n(finding.get("mode") or "unset (auto)")),
                ("", _n(finding.get("wanted"))), ("", _e(finding.get("reason")))]
    if check_name == "bwrap":
        return [("", _e(finding.get("reason"))), ("", _e(finding.get("message"))),
                ("", _e(finding.get("remediation")))]
    if check_name == "runtime":
        return [("", _e(finding.get("severity"))), ("", _e(finding.get("rule"))), ("mono", _n(finding.get("where"))),
                ("", _e(finding.get("detail"))), ("", _e(finding.get("fix"))), ("", _e(finding.get("cis") or ""))]
    return [("mono", _n(finding.get("path") or "")), ("", _e(finding.get("reason") or finding.get("message")))]


_HEADERS = {"privileged_files": ("path", "mode", "capabilities", "uid:gid", "why"),
            "leaks": ("kind", "path", "entry / unit", "user", "age (s)"),
            "home_mode": ("Hermes home", "mode now", "asked for", "what would change"),
            "bwrap": ("problem", "message", "fix"),
            "runtime": ("severity", "rule", "where", "what", "fix", "CIS")}
_GENERIC_HEADERS = ("path", "why")


def _check_html(check_name, result):
    label = result["status"].replace("_", " ")
    out = ['<div class="check"><h3>%s %s</h3>' % (_e(check_title(check_name)), _badge(result["status"], label))]
    if result.get("reason"):
        out.append('<p class="reason">%s</p>' % _e(result["reason"]))
    for path in result.get("absent") or ():
        out.append('<p class="reason">absent on this host: <code>%s</code></p>' % _n(path))
    for warning in result.get("warnings") or ():
        out.append('<p class="reason">warning: %s</p>' % _e(warning))
    findings = result.get("findings") or []
    if findings:
        headers = _HEADERS.get(check_name, _GENERIC_HEADERS)
        out.append("<table><tr>%s</tr>" % "".join("<th>%s</th>" % _e(h) for h in headers))
        for finding in findings[:HTML_MAX_ROWS]:
            cells = _finding_cells(check_name, finding)
            out.append("<tr>%s</tr>" % "".join('<td class="%s">%s</td>' % (cls, v) for cls, v in cells))
        out.append("</table>")
        if len(findings) > HTML_MAX_ROWS:
            out.append('<p class="more">%d more in boundary-audit.json</p>' % (len(findings) - HTML_MAX_ROWS))
    errors = result.get("errors") or []
    if errors and (result["status"] != "error" or len(errors) > 1):
        out.append('<p class="reason">%d error(s): %s</p>' % (len(errors), _e("; ".join(
            "%s: %s" % (name(e.get("path")), one_line(e.get("error"))) for e in errors[:10]))))
    out.append("</div>")
    return "".join(out)


def _verdict(summary):
    bad, total = summary["hosts_with_findings"], summary["hosts_total"]
    unreachable = summary["hosts_unreachable"]
    errors = summary["hosts_error"] - unreachable
    not_audited = summary.get("hosts_not_audited", 0)
    if bad or unreachable:
        parts = ["%d of %d host(s) have findings" % (bad, total)] if bad else []
        if unreachable:
            parts.append("%d unreachable" % unreachable)
        if not_audited:
            parts.append("%d not audited" % not_audited)
        return "bad", "; ".join(parts)
    if errors or not_audited or summary.get("hosts_not_checked"):
        parts = []
        if not_audited:
            parts.append("%d of %d host(s) not audited: a selected check covered nothing (see each host)"
                         % (not_audited, total))
        if errors:
            parts.append("%d host(s) could not be audited completely" % errors)
        return "warn", "no findings, but " + "; ".join(parts or ["a selected check covered nothing on %d host(s)"
                                                                 % summary.get("hosts_not_checked", 0)])
    return "ok", "all %d host(s) clean" % total


def _checks_of(report):
    extra = [c for record in report["hosts"].values() for c in record["checks"] if c not in CHECKS]
    return list(CHECKS) + sorted(set(extra))


def to_html(report, title=TITLE):
    """One self-contained page: the fleet summary first, then the hosts worst first."""
    report = from_result(report)
    summary = report["summary"]
    bad = summary["hosts_with_findings"]
    errors_only = summary["hosts_error"] - summary["hosts_unreachable"]
    not_audited = summary.get("hosts_not_audited", 0)
    cards = [("bad" if bad else "ok", bad, "with findings"),
             ("warn" if errors_only else "ok", errors_only, "with errors"),
             ("warn" if not_audited else "ok", not_audited, "not audited"),
             ("bad" if summary["hosts_unreachable"] else "ok", summary["hosts_unreachable"], "unreachable"),
             ("ok", summary["hosts_clean"], "clean"), ("", summary["hosts_total"], "hosts")]
    statuses = [s for s in CHECK_STATUSES if s != FINDINGS]
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width,initial-scale=1">',
           "<title>%s</title><style>%s</style></head><body><main>" % (_e(title), _CSS),
           "<h1>%s</h1>" % _e(title),
           '<p class="meta">generated %s &middot; schema %s</p>' % (_e(report["generated"]),
                                                                    _e(report["schema_version"])),
           '<div class="verdict %s">%s</div>' % tuple(_e(v) for v in _verdict(summary)),
           '<div class="cards">%s</div>' % "".join(
               '<div class="card %s"><div class="n">%s</div><div class="l">%s</div></div>' % (cls, n, _e(label))
               for cls, n, label in cards),
           "<h2>Checks across the fleet</h2><table><tr><th>check</th><th>hosts with findings</th><th>findings</th>%s"
           "</tr>" % "".join("<th>%s</th>" % _e(s.replace("_", " ")) for s in statuses)]
    for check_name in _checks_of(report):
        c = summary["checks"].get(check_name) or {}
        out.append('<tr><td>%s</td><td class="num">%s</td><td class="num">%s</td>%s</tr>' % (
            _e(check_title(check_name)), c.get("findings", 0), c.get("items", 0),
            "".join('<td class="num">%s</td>' % c.get(s, 0) for s in statuses)))
    out.append("</table><h2>Hosts, worst first</h2>")
    for host, record in worst_first(report["hosts"]):
        out.append(_host_html(host, record))
    out.append("<footer>sandboxguard.boundary boundary_audit &middot; the same data: boundary-audit.json, "
               "boundary-audit.xml (JUnit), boundary-audit.sarif (SARIF), hosts/&lt;host&gt;.json</footer>"
               "</main></body></html>\n")
    return "".join(out)


def _host_html(host, record):
    count = findings_count(record)
    label = record["status"].replace("_", " ") + (" (%d)" % count if count else "")
    badges = "".join(_badge(c["status"], "%s: %s" % (check_name, c["status"].replace("_", " ")))
                     for check_name, c in record["checks"].items())
    opened = " open" if record["status"] in OPEN_STATUSES and count <= 50 else ""
    out = ['<details class="host"%s><summary><span class="name">%s</span>%s<span class="checks">%s</span>'
           '</summary><div class="body">' % (opened, _n(host), _badge(record["status"], label), badges)]
    for warning in record.get("warnings") or ():
        out.append('<p class="warning">warning: %s</p>' % _e(warning))
    if record["status"] == UNREACHABLE:
        out.append('<p class="reason">%s</p>' % _e(record.get("reason")))
    else:
        if record["status"] == NOT_AUDITED:
            out.append('<p class="warning">not audited: %s</p>' % _e(record.get("reason") or "a check was not checked"))
        ordered = list(CHECKS) + [c for c in record["checks"] if c not in CHECKS]
        out.extend(_check_html(c, record["checks"][c]) for c in ordered if c in record["checks"])
    out.append("</div></details>")
    return "".join(out)
