# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard bwrap-probe`: can the agent user run the bubblewrap sandbox, and does it isolate?"""
import os

from sandboxguard import bwrap
from sandboxguard._bwrap.argv import DEFAULT_PROFILE, PROFILES
from sandboxguard._bwrap.checks import ISOLATION_CHECKS
from sandboxguard._bwrap.diagnosis import DEFAULT_MIN_VERSION
from sandboxguard._bwrap.host import find_bwrap
from sandboxguard._bwrap.run import DEFAULT_TIMEOUT_S, ProbeUserRefused, resolve_probe_user
from sandboxguard._core.text import escape, one_line

from .. import flags, output
from ..main import EXIT_OK, UsageError


def register(subparsers):
    parser = subparsers.add_parser(
        "bwrap-probe", help="probe bubblewrap as the agent user and run the isolation checks",
        description="Find bwrap, compare its version with the minimum, read the user namespace knobs "
                    "and AppArmor state, then start the real sandbox as the agent user (never as root: root "
                    "passes where the agent user fails) and run the isolation checks inside it. Exit 0 when "
                    "everything passed, 1 when the probe or a check failed (the reason and the fix are "
                    "printed), 2 on bad input.")
    flags.add_json(parser)
    parser.add_argument("--user", metavar="USER",
                        help="the agent user to probe as (required when run as root; root itself is refused)")
    parser.add_argument("--bwrap", metavar="PATH", help="the bwrap to probe (default: the first bwrap on PATH)")
    parser.add_argument("--min-version", default=DEFAULT_MIN_VERSION, metavar="X.Y.Z",
                        help="minimum bwrap version (default %(default)s)")
    parser.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE,
                        help="sandbox profile to probe (default %(default)s)")
    parser.add_argument("--check", action="append", choices=ISOLATION_CHECKS, metavar="CHECK",
                        help="run only this isolation check (repeatable; default: all of %s)"
                             % ", ".join(ISOLATION_CHECKS))
    parser.add_argument("--hermes-home", metavar="DIR",
                        help="the agent's HERMES_HOME when it is not ~/.hermes: checked to be hidden as well")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                        help="give up on the sandbox after this many seconds (default %(default)s)")
    parser.add_argument("--print-apparmor-profile", action="store_true",
                        help="print the AppArmor profile that grants bwrap 'userns' and exit")
    parser.set_defaults(func=run)


# The CLI's own flags for a library remediation (the library names the fix in its own terms).
CLI_HINTS = {"agent_user": " (--user AGENT)"}


def _print_human(report, out):
    def print_(line):
        out.write(line + "\n")

    bw = report["bwrap"]
    status = "PASS" if report["ok"] else "FAIL"
    print_("bwrap probe: %s (%s)" % (status, report["reason"]))
    if bw["path"]:
        print_("  bwrap      %s, version %s (minimum %s)%s" % (
            escape(bw["path"]), one_line(bw["version"] or "unknown"), report["min_version"],
            ", setuid" if bw["setuid"] else ""))
    else:
        print_("  bwrap      not found")
    prlimit = report["prlimit"]["path"]
    print_("  prlimit    %s" % (escape(prlimit) if prlimit else "not found"))
    userns = report["userns"]
    print_("  userns     max_user_namespaces=%s unprivileged_userns_clone=%s apparmor_restrict=%s" % (
        userns["max_user_namespaces"], userns["unprivileged_userns_clone"], userns["apparmor_restrict"]))
    if report["user"]:
        print_("  probed as  %s (uid %d)" % (report["user"]["name"], report["user"]["uid"]))
    for check in report["isolation"]:
        mark = {"pass": "ok  ", "fail": "FAIL", "skipped": "skip", "not_run": "----"}[check["status"]]
        print_("  [%s] %-22s %s" % (mark, check["name"], one_line(check["detail"])))
    for error in report["errors"]:
        print_("  error: %s: %s" % (escape(error["path"] or ""), one_line(error["error"])))
    if not report["ok"]:
        print_("  reason: %s" % one_line(report["message"]))
        hint = CLI_HINTS.get(report["remediation"], "")
        print_("  fix (%s): %s%s" % (report["remediation"], one_line(report["remediation_text"]), hint))


def run(args):
    if args.print_apparmor_profile:
        path = find_bwrap(args.bwrap)
        if path is None:
            raise UsageError("--print-apparmor-profile: no bwrap found; pass --bwrap /path/to/bwrap")
        try:
            print(bwrap.apparmor_profile(os.path.realpath(path)), end="")
        except ValueError as exc:
            raise UsageError("--bwrap: %s" % exc) from None
        return EXIT_OK
    # min_version, bwrap, timeout: the library's one check (an InputError: exit 2, main prints it)
    bwrap.check_request(args.min_version, args.bwrap, timeout=args.timeout, checks=args.check, profile=args.profile)
    try:
        resolve_probe_user(args.user)
    except ProbeUserRefused as exc:
        fix = "pass --user AGENT" if os.geteuid() == 0 else "run as that user"
        raise UsageError("--user %s: %s (%s)" % (args.user or "(unset)", exc, fix)) from None
    report = bwrap.probe(user=args.user, min_version=args.min_version, checks=args.check, profile=args.profile,
                         bwrap=args.bwrap, timeout=args.timeout, hermes_home=args.hermes_home)
    return output.emit(report, args.json, _print_human, findings=not report["ok"])
