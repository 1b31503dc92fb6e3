# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard leaks`: list what agents left outside their sandbox (see sandboxguard/leaks.py).

    sandboxguard leaks --hermes-home DIR [--agent-user NAME] [--json]   the agents' cron and at jobs, units...
    sandboxguard leaks --user NAME... [--json]                          these accounts (root only when named)
    sandboxguard leaks --agent-user NAME --baseline FILE                before a run: write the snapshot
    sandboxguard leaks --agent-user NAME --baseline FILE                after it: only what the run added

Whose leaks: the accounts named with --user, else the accounts that run agents, as the
fleet audit finds them: the owners of the --hermes-home directories, their profiles and
sandbox directories, of --sandbox-dir, and --agent-user (never root). With none of
those it refuses (exit 2) rather than report every account's cron jobs as leaks.
With --baseline, FILE is written when it does not exist and compared with when it does
(--baseline-mode write|compare forces one). Read only otherwise; run as root to read
other users' tables and homes. Exit 0 when nothing is found, 1 for findings, errors,
warnings or an incomplete audit, 2 for bad input (output.emit, as every command).
"""
from sandboxguard import leaks
from sandboxguard._core.text import escape, one_line
from sandboxguard._fleet import audit
from sandboxguard._leaks.baseline import BASELINE_MODES, DEFAULT_BASELINE_MODE
from sandboxguard._leaks.home import DEFAULT_TMP_PATTERNS

from .. import flags, output
from ..main import UsageError


def register(subparsers):
    parser = subparsers.add_parser("leaks", help="list cron/at jobs, scripts, user units and other leftovers of "
                                   "eval runs outside the sandbox", description=__doc__.splitlines()[0])
    parser.add_argument("--user", action="append", default=[], metavar="NAME",
                        help="audit this account (repeat for more; root only when named); default: the accounts "
                        "that run agents (below)")
    parser.add_argument("--hermes-home", action="append", default=[], metavar="DIR",
                        help="a HERMES_HOME whose owner, profiles' and sandbox directories' owners are audited "
                        "(repeat for more)")
    parser.add_argument("--sandbox-dir", metavar="DIR", help="TERMINAL_SANDBOX_DIR: its owners are audited too")
    parser.add_argument("--agent-user", metavar="NAME", help="the user the agent runs as: audited too")
    parser.add_argument("--baseline", metavar="FILE", help="baseline mode: the snapshot file (see above)")
    parser.add_argument("--baseline-mode", choices=BASELINE_MODES, default=DEFAULT_BASELINE_MODE,
                        help="auto (default): write FILE when missing, else compare; write; compare")
    parser.add_argument("--min-age", type=int, default=0, metavar="SECONDS",
                        help="leave out findings younger than this (a run still in progress)")
    parser.add_argument("--tmp-pattern", action="append", metavar="GLOB",
                        help="run directory names in /tmp (default: ab-*)")
    flags.add_json(parser, "print the report as JSON")
    parser.set_defaults(func=run)


def run(args):
    if args.min_age < 0:
        raise UsageError("--min-age %d: use 0 or more seconds" % args.min_age)
    users, scope, reason = audit.leak_scope([u.strip() for u in args.user if u.strip()], args.hermes_home,
                                            args.sandbox_dir, args.agent_user, where="--user",
                                            homes_word="--hermes-home, --sandbox-dir or --agent-user")
    if not users:
        raise UsageError(reason)
    kwargs = {"users": users, "min_age": args.min_age,
              "tmp_patterns": tuple(args.tmp_pattern or DEFAULT_TMP_PATTERNS)}
    try:
        if args.baseline:
            report = leaks.audit_with_baseline_file(args.baseline, args.baseline_mode, **kwargs)
        elif args.baseline_mode != "auto":
            raise UsageError("--baseline-mode needs --baseline FILE")
        else:
            report = leaks.audit(**kwargs)
    except leaks.LeakAuditError as exc:
        raise UsageError(str(exc)) from None
    report["scope"] = scope
    return output.emit(report, args.json, print_human, findings=bool(report["leaks"]))


def print_human(report, out):
    """The findings one per line, the baseline's fate, then the errors (warnings: output.emit)."""
    base = report.get("baseline")
    what = " since the baseline" if base and base["action"] == "compared" else ""
    out.write("%d leak(s) outside the sandbox%s%s\n" % (report["leaks"], what,
              "" if report["complete"] else " (incomplete: see errors)"))
    for line in leaks.finding_lines(report):
        out.write("  %s\n" % one_line(line))  # names escaped by finding_lines
    if base and base["action"] == "written":
        out.write("baseline written to %s (%d items)\n" % (escape(base["path"]), base["entries"]))
    for error in report["errors"]:
        out.write("error: %s: %s: %s\n" % (escape(error["path"] or ""), error["op"], one_line(error["error"])))
