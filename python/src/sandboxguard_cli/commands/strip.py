# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard scan` and `sandboxguard strip`: privileged files under sandbox directories."""
import signal
import sys

from sandboxguard import owners
from sandboxguard import strip as stripmod
from sandboxguard._core import inputs
from sandboxguard._core.text import escape
from sandboxguard._walk.fileops import (
    CAPS_METHODS,
    HARDLINK_POLICIES,
    OPTION_DEFAULTS,
    PROGRESS_INTERVAL_S,
    check_owner,
)
from sandboxguard.roots import RootRefused

from .. import flags, output
from ..main import UsageError


def _owner(text):
    """--chown-to USER[:GROUP] (names or ids, sandboxguard.owners), in the range chown(2) takes."""
    try:
        return check_owner(owners.parse_owner(text))
    except ValueError as exc:
        raise UsageError("--chown-to %s" % str(exc).replace("chown_to ", "%r: " % text)) from None


def _count(option, text):
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise UsageError("%s %r: give a whole number, 0 or more" % (option, text))
    return value


def _common(parser):
    parser.add_argument("paths", nargs="+", metavar="PATH", help="sandbox directories (absolute paths)")
    flags.add_json(parser)
    parser.add_argument("--no-devices", action="store_true",
                        help="leave block and character device nodes out (by default each is found and, by strip, "
                             "made root-owned with mode 0000)")
    parser.add_argument("--budget", default=str(stripmod.DEFAULT_BUDGET_S), metavar="SECONDS",
                        help="stop after this many seconds and report complete: false (default %(default)s; 0 = none)")
    parser.add_argument("--max-listed", default=str(stripmod.DEFAULT_MAX_LISTED), metavar="N",
                        help="list at most N findings (the rest are counted); default %(default)s")
    parser.add_argument("--progress-interval", default=str(PROGRESS_INTERVAL_S), metavar="S",
                        help="seconds between progress lines on a terminal's stderr (default %(default)s)")
    parser.add_argument("--cross-mounts", action="store_true",
                        help="walk into nested mounts (default: stay on the root's mount and prune the rest)")


def register(subparsers):
    scan = subparsers.add_parser(
        "scan", help="report setuid/setgid files and file capabilities under PATHs",
        description="Report setuid/setgid regular files and file capabilities under PATHs. Changes nothing. "
                    "Exit 0 when clean, 1 when something was found or the walk stopped early, 2 on bad input.")
    _common(scan)
    flags.add_walk_actions(scan, leave="out")
    scan.set_defaults(func=run_scan)

    strip = subparsers.add_parser(
        "strip", help="remove setuid/setgid bits and file capabilities under PATHs",
        description="Strip setuid/setgid bits from regular files and clear security.capability under PATHs, "
                    "race-safely, never following symlinks. Exit 0 when everything found was fixed, 1 when "
                    "something remains (per-file errors, a skipped hard link, the budget ran out), 2 on bad input.")
    _common(strip)
    flags.add_walk_actions(strip)
    flags.add_dry_run(strip)
    strip.add_argument("--chown-to", metavar="USER[:GROUP]",
                       help="first give root-owned files and directories to USER (name or uid; its primary group "
                            "unless GROUP is given) (ownership return)")
    strip.add_argument("--caps-method", choices=CAPS_METHODS, default=OPTION_DEFAULTS["caps_method"],
                       help="remove the xattr (default) or re-chown each file to its own owner")
    strip.add_argument("--hardlinks", choices=HARDLINK_POLICIES, default=OPTION_DEFAULTS["hardlinks"],
                       help="files with more than one name: strip them (default) or only report them")
    strip.set_defaults(func=run_strip)


def _progress():
    if not sys.stderr.isatty():
        return None

    def show(counts):
        sys.stderr.write("\r  %d dirs, %d files, %d setid, %d caps ..." % (
            counts["dirs"], counts["files"], counts["setid"], counts["caps"]))
        sys.stderr.flush()
    return show


class _Signalled(BaseException):
    """SIGTERM arrived: unwind through the library, which stops and reaps its walkers."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_signalled(signum, _frame):
    raise _Signalled(signum)


def _run(args, walk, **kwargs):
    previous = signal.signal(signal.SIGTERM, _raise_signalled)
    try:
        return _run_walk(args, walk, **kwargs)
    except _Signalled as exc:
        sys.stderr.write("sandboxguard %s: stopped by %s; its walkers were stopped with it and the walk is "
                         "incomplete: run it again\n" % (args.command, signal.Signals(exc.signum).name))
        return 128 + exc.signum
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_walk(args, walk, **kwargs):
    """``walk``: stripmod.scan (read-only) or stripmod.strip, with the walk options of args."""
    progress = None if args.json else _progress()
    try:
        report = walk(
            args.paths, budget=inputs.budget(args.budget, "--budget"),
            max_listed=_count("--max-listed", args.max_listed),
            prune_mounts=not args.cross_mounts, one_file_system=not args.cross_mounts,
            progress=progress,
            progress_interval=inputs.seconds(args.progress_interval, "--progress-interval"), **kwargs)
    except RootRefused as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if progress is not None:
            sys.stderr.write("\r\033[K")
    read_only = walk is stripmod.scan
    return output.emit(report, args.json, lambda rep, out: print_human(rep, out, read_only),
                       findings=stripmod.findings_remain(report))


def run_scan(args):
    return _run(args, stripmod.scan, setid=not args.no_setid, caps=not args.no_caps, devices=not args.no_devices)


def run_strip(args):
    chown_to = _owner(args.chown_to) if args.chown_to else None
    return _run(args, stripmod.strip, dry_run=args.dry_run, setid=not args.no_setid, caps=not args.no_caps,
                devices=not args.no_devices, chown_to=chown_to, caps_method=args.caps_method,
                hardlinks=args.hardlinks)


def _owner_after(entry):
    """``uid:gid`` the file has after ownership return (would have, in a dry run); ``?`` when
    the change failed before the owner was known."""
    if "uid_after" not in entry:
        return "?"
    return "%d:%d" % (entry["uid_after"], entry["gid_after"])


def print_human(report, out, read_only=False):
    """The people's view of a report: findings, then pruned mounts and errors, then a summary
    (``read_only``: the report of a scan, which never changes anything).

    Every name from the tree goes through text.escape: one printable line per finding,
    whatever bytes a file name holds (a newline cannot forge a line, a byte that is not
    UTF-8 cannot crash the output after the changes are made).
    """
    if hasattr(out, "reconfigure"):  # an ASCII locale: escape, never raise, after the changes
        out.reconfigure(errors="backslashreplace")
    c = report["counts"]
    for entry in report["files"]:
        what = []
        if "chown" in entry["actions"]:  # the state after the change, as for the mode
            what.append("owner %d:%d -> %s" % (entry["uid"], entry["gid"], _owner_after(entry)))
        if entry["mode_before"] != entry["mode_after"] or {"setuid", "setgid"} & set(entry["actions"]):
            what.append("mode %s -> %s" % (entry["mode_before"], entry["mode_after"]))
        if entry["caps_before"]:
            what.append("caps %s" % escape(entry["caps_before"]))
        if "device" in entry["actions"]:
            what.append("%s, owner %d:%d -> %s:%s" % (entry["type"], entry["uid"], entry["gid"],
                                                      entry.get("uid_after", "?"), entry.get("gid_after", "?")))
        if entry.get("owner_kept"):
            what.append("owner kept: %d links" % entry["nlink"])
        if entry["nlink"] > 1 and entry["type"] == "file":
            what.append("%d links" % entry["nlink"])
        if entry.get("skipped"):
            what.append("SKIPPED: " + escape(entry["skipped"]))
        if entry.get("error"):
            what.append("ERROR: " + escape(entry["error"]))
        out.write("%s  %s\n" % (escape(entry["path"]), ", ".join(what)))
    if c["unlisted"]:
        out.write("... and %d more not listed (raise --max-listed)\n" % c["unlisted"])
    for path in report["pruned_mounts"]:
        out.write("pruned mount point (not walked): %s\n" % escape(path))
    for err in report["errors"]:
        out.write("error: %s: %s: %s\n" % (escape(err["path"]), err["op"], escape(err["error"])))
    state = "complete" if report["complete"] else "INCOMPLETE (budget ran out; run again or raise --budget)"
    found = "%d setid, %d with capabilities" % (c["setid"], c["caps"])
    if c.get("device"):
        found += ", %d device nodes" % c["device"]
    if c["chown"]:
        found += ", %d root-owned" % c["chown"]
    if read_only:
        outcome = "read-only scan, nothing changed"
    elif report["dry_run"]:
        outcome = "changes needed, nothing changed (dry run)" if report["changed"] else "nothing to fix (dry run)"
    else:
        outcome = "fixed" if report["changed"] else "nothing to fix"
    out.write("%s: walked %d dirs, %d files in %.2fs; found %s; %s; %d errors; walk %s\n" % (
        ", ".join(escape(root) for root in report["roots"]), c["dirs"], c["files"], report["elapsed"], found,
        outcome, c["errors"], state))
