# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard report merge`: one set of fleet audit reports from the reports of AWX job slices."""
from sandboxguard import report as envelope
from sandboxguard._core.text import escape, one_line
from sandboxguard._fleet import audit_report

from .. import output
from ..main import UsageError


def register(subparsers):
    parser = subparsers.add_parser(
        "report", help="fleet audit reports (merge the reports of sliced runs)",
        description="Work with the reports the boundary_audit role writes.")
    actions = parser.add_subparsers(dest="report_command", metavar="ACTION")
    actions.required = True
    merge = actions.add_parser(
        "merge", help="merge the reports of several runs (AWX job slices) into one set",
        description="Read each IN (a report directory with hosts/<host>.json or boundary-audit.json, or one "
                    "such file) and write boundary-audit.json, boundary-audit.xml, boundary-audit.html, "
                    "boundary-audit.sarif and hosts/<host>.json for all of their hosts into DIR. A host in "
                    "several inputs keeps its reachable record over an unreachable one, else the newest. Exit 0 "
                    "when every host is clean, 1 when a host has findings, could not be audited or was not "
                    "audited (a selected check covered nothing: see --allow-not-checked), 2 on bad input.")
    merge.add_argument("--out", required=True, metavar="DIR", help="directory for the merged reports (created)")
    merge.add_argument("--format", action="append", choices=audit_report.FORMATS, metavar="FORMAT",
                       help="write only this report (repeatable; default: %s)" % ", ".join(audit_report.FORMATS))
    merge.add_argument("--no-host-files", action="store_true", help="do not write hosts/<host>.json")
    merge.add_argument("--allow-not-checked", action="store_true",
                       help="exit 0 even when a host was not audited (a selected check covered nothing); such hosts "
                            "stay not_audited in every report")
    merge.add_argument("--json", action="store_true",
                       help="print the report envelope (roots: the inputs; out, files, summary) as JSON, nothing else")
    merge.add_argument("inputs", nargs="+", metavar="IN", help="a report directory or file of one slice")
    merge.set_defaults(func=run_merge)


def run_merge(args):
    try:
        report = audit_report.merge(args.inputs)
    except audit_report.ReportError as exc:
        raise UsageError(str(exc)) from None
    try:
        written = audit_report.write_reports(report, args.out, tuple(args.format or audit_report.FORMATS),
                                             not args.no_host_files)
    except OSError as exc:
        raise UsageError("--out %s: %s; pick a directory you can write" % (escape(args.out), exc.strerror or exc)) \
            from None
    summary = report["summary"]
    gate = audit_report.gate(summary, allow_not_checked=args.allow_not_checked)
    result = envelope.new_report(args.inputs, changed=bool(written), out=args.out, files=written, summary=summary,
                                 counts={"hosts": summary["hosts_total"]}, gate=gate,
                                 host_errors=audit_report.error_lines(report),
                                 host_warnings=audit_report.warning_lines(report))
    return output.emit(result, args.json, _print_merged, findings=gate is not None)


def _print_merged(result, out):
    summary = result["summary"]
    out.write("merged %d report input(s): %d host(s), %d with findings, %d error (%d unreachable), %d not audited, "
              "%d clean -> %s\n" % (len(result["roots"]), summary["hosts_total"], summary["hosts_with_findings"],
                                    summary["hosts_error"], summary["hosts_unreachable"],
                                    summary.get("hosts_not_audited", 0), summary["hosts_clean"],
                                    escape(result["out"])))
    for line in result["host_errors"]:
        out.write("  %s\n" % one_line(line))
    for line in result["host_warnings"]:
        out.write("  warning: %s\n" % one_line(line))
    if result["gate"]:
        out.write("fails: %s\n" % one_line(result["gate"]))
