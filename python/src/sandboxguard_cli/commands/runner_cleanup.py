# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard runner-cleanup DIR`: a GitHub runner's work folder, the runner user's again.

The contract a role (runner_cleanup) and a sudoers rule build on:

* ``sandboxguard runner-cleanup DIR [--budget SECONDS] [--dry-run] [--json]``, as root.
  DIR is the directory the GitHub runner is installed in (the one holding ``.runner``);
  the work folder is ``.runner``'s ``workFolder`` (default ``_work``), read by root through
  descriptors. Exactly one argument besides the options; nothing is read from the
  environment (``GITHUB_WORKSPACE`` and the rest are the job's to set).
* Exit 0: clean or everything fixed (also: no work folder yet); 1: something remains (a
  per-file error, a kept hard link, the budget ran out: run it again); 2: bad usage or a
  refused runner (not root, no ``.runner``, a work folder through a symlink or outside what
  the runner user owns), one line on stderr naming the fix.
* The job-completed hook runs as the runner user, so it calls a root-owned helper through
  sudo: ``/usr/local/sbin/sandboxguard-runner-cleanup DIR`` (defaults.RUNNER_CLEANUP_HELPER;
  its text has one source, ``sandboxguard._privileged.runner_texts.helper_script``, which the
  runner_cleanup role writes through the filter ``runner_cleanup_helper``), which runs exactly
  ``runner-cleanup -- DIR`` with the installed library (``/usr/local/lib/sandboxguard``, the
  roles' install directory) under ``python3 -I``. The sudoers rule names the helper and DIR and nothing else:
  ``gh ALL=(root) NOPASSWD: /usr/local/sbin/sandboxguard-runner-cleanup /home/gh/actions-runner``.
"""
import os

from sandboxguard import strip as stripmod
from sandboxguard._core import defaults, inputs
from sandboxguard._core.text import escape
from sandboxguard._privileged import runners as runnersmod

from .. import flags, output
from ..main import UsageError

HELP = ("As root, give everything under the work folder of the GitHub runner installed in DIR back to the "
        "runner user (the owner of DIR): files and directories owned by another uid or gid, setuid/setgid bits "
        "and file capabilities, never following a link, within --budget seconds. Reads the work folder from "
        "DIR/.runner (workFolder, default _work) and nothing from the environment. A job-completed hook runs it "
        "through sudo and the root-owned helper %s DIR (exactly that argument). Exit 0 when clean or fixed, 1 "
        "when something remains or the walk is partial, 2 on bad usage or a refused runner."
        % defaults.RUNNER_CLEANUP_HELPER)


def register(subparsers):
    parser = subparsers.add_parser(
        "runner-cleanup", help="give a GitHub runner's work folder back to the runner user (root)",
        description=HELP)
    parser.add_argument("runner_dir", metavar="DIR", help="the directory the GitHub runner is installed in (absolute)")
    parser.add_argument("--budget", default=str(runnersmod.RUNNER_CLEANUP_BUDGET_S), metavar="SECONDS",
                        help="stop after this many seconds and exit 1 (default %(default)s; 0 = no limit)")
    flags.add_dry_run(parser)
    flags.add_json(parser)
    parser.set_defaults(func=run_cleanup)


def run_cleanup(args):
    budget = inputs.budget(args.budget, "--budget")
    if os.geteuid() != 0:
        raise UsageError("runs as root: a job-completed hook calls it through sudo and %s %s"
                         % (defaults.RUNNER_CLEANUP_HELPER, escape(args.runner_dir)))
    if not args.runner_dir.startswith("/"):
        raise UsageError("%s: give the runner directory as an absolute path" % escape(args.runner_dir))
    report = runnersmod.cleanup_github_runner(args.runner_dir, budget=budget, dry_run=args.dry_run)
    return output.emit(report, args.json, print_human, findings=stripmod.findings_remain(report))


def print_human(report, out):
    """One line: the work folder, what was given back or cleared, and whether the walk ended."""
    if hasattr(out, "reconfigure"):  # an ASCII locale: escape, never raise, after the changes
        out.reconfigure(errors="backslashreplace")
    runner = report["runner"]
    if runner.get("missing"):
        out.write("runner-cleanup %s: no work folder yet (%s); nothing to do\n"
                  % (escape(runner["dir"]), escape(runner["work_folder"])))
        return
    c = report["counts"]
    verb = "would give back" if report["dry_run"] else "gave back"
    state = "complete" if report["complete"] else "INCOMPLETE (budget ran out; run again or raise --budget)"
    errors = "; %d errors (first: %s: %s)" % (c["errors"], escape(report["errors"][0]["path"]),
                                              escape(report["errors"][0]["error"])) if report["errors"] else ""
    out.write("runner-cleanup %s: %s %d to %d:%d, %d setid, %d with capabilities, %d device nodes made root 0000; "
              "walked %d dirs, %d files in %.2fs; %s%s\n" % (
                  escape(runner["work_folder"]), verb, c["chown"], runner["owner"][0], runner["owner"][1], c["setid"],
                  c["caps"], c.get("device", 0), c["dirs"], c["files"], report["elapsed"], state, errors))
