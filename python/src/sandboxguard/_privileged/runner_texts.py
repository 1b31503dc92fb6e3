# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection: runner_hooks writes the hook scripts and the sudoers
drop-in; the runner_cleanup role writes the helper through the filter ``runner_cleanup_helper``.

The texts root installs for a GitHub runner's job hooks, and the names they use (pure).

Each text has this one source. Every path goes into a script or a sudoers rule as it is, so
:func:`check_path_text` refuses what either would read differently.
"""
import posixpath
import re
import shlex

from .._core import defaults
from .._core.text import escape
from ..errors import InputError

PHASES = ("started", "completed")
ENV_VARS = {"started": "ACTIONS_RUNNER_HOOK_JOB_STARTED", "completed": "ACTIONS_RUNNER_HOOK_JOB_COMPLETED"}
DEFAULT_SUDO = "/usr/bin/sudo"
# A runner directory goes into a sudoers argument and the hook scripts as it is: only these
# characters (no space, no sudoers wildcard or special character), a normal absolute path
# (sudo compares the argument as a string).
RUNNER_DIR_PATTERN = re.compile(r"^/[A-Za-z0-9._+@/-]+$")
ABNORMAL_PATH = re.compile(r"(^|/)\.\.?(/|$)|//|/$")


class HooksRefused(InputError):
    """The hooks of a runner cannot be set up or removed as asked; str() names the path,
    why, and the fix."""


def runner_name(runner_dir):
    """The runner's name in file names: its directory without the leading /, every character
    but letters, digits, - and _ made _ (pure)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", runner_dir.lstrip("/"))


def check_path_text(path, what):
    """Refuse (HooksRefused) a path that cannot go into a sudoers argument or a script as it is."""
    if not isinstance(path, str) or not RUNNER_DIR_PATTERN.match(path) or ABNORMAL_PATH.search(path):
        raise HooksRefused("%s %s: give a normal absolute path of letters, digits and . _ + @ / - only, without "
                           ". or .. components, // or a trailing / (it goes into a sudoers rule and the hook scripts "
                           "as it is)" % (what, escape(str(path))))


HELPER_TEMPLATE = '''#!%(python)s -I
# %(helper)s: a GitHub runner's job-completed hook runs this as root through sudo
# (sandboxguard runner-cleanup): exactly one argument, the runner directory; the sudoers
# rule names it. -I (isolated): PYTHONPATH, user site-packages and the current directory
# cannot put other code in front of the library root runs.
import sys

if len(sys.argv) != 2 or not sys.argv[1].startswith("/"):
    sys.stderr.write("usage: %(helper)s RUNNER_DIR (the runner's directory, absolute)\\n")
    sys.exit(2)
sys.path.insert(0, %(install_dir)r)

from sandboxguard_cli.main import main  # noqa: E402

sys.exit(main(["runner-cleanup", "--", sys.argv[1]]))
'''


def helper_script(python=defaults.SYSTEM_PYTHON, install_dir=defaults.INSTALL_DIR,
                  helper=defaults.RUNNER_CLEANUP_HELPER):
    """The text of the root-owned helper the hooks run through sudo (install it root:root
    0755 at ``helper``): ``sandboxguard runner-cleanup -- DIR`` with the library in
    ``install_dir``, under ``python -I``. The one source of that text: the runner_cleanup
    role writes it (filter ``runner_cleanup_helper``), so does anyone else (pure)."""
    for value, what in ((python, "python"), (install_dir, "install_dir"), (helper, "helper")):
        check_path_text(value, what)
    return HELPER_TEMPLATE % {"python": python, "install_dir": install_dir, "helper": helper}


HOOK_TEMPLATE = '''#!/bin/bash
# Managed by sandboxguard (module runner_hooks): local changes are overwritten.
# %(var)s of the GitHub runner in %(runner_dir)s (set in its .env).
# The runner runs this as %(user)s, outside any container, with `bash -e`, when
# a job %(when)s; a non-zero exit fails the job.
#
# 1. The root helper gives the runner's work folder back to %(user)s (files owned by
#    anyone else), strips setuid/setgid bits and clears file capabilities. The directory is
#    fixed here: nothing comes from the job's environment (GITHUB_WORKSPACE and friends are
#    the job's), and sudo allows this user the helper with exactly this directory.
# 2. The hook the operator had set before ("chained" below, empty for none) runs next, the way
#    the runner runs hooks (bash -e for .sh, pwsh or powershell for .ps1); its failure fails the job.
# 3. A cleanup that leaves findings %(findings)s.
set -u
runner_dir=%(runner_dir_q)s
chained=%(chained_q)s

cleanup_status=0
%(sudo_q)s -n %(helper_q)s "$runner_dir" || cleanup_status=$?

chained_status=0
if [ -n "$chained" ]; then
  case "$chained" in
    *.ps1)
      if command -v pwsh >/dev/null 2>&1; then
        pwsh -command ". '$chained'" || chained_status=$?
      else
        powershell -command ". '$chained'" || chained_status=$?
      fi
      ;;
    *)
      if command -v bash >/dev/null 2>&1; then
        bash -e "$chained" || chained_status=$?
      else
        sh -e "$chained" || chained_status=$?
      fi
      ;;
  esac
fi

if [ "$cleanup_status" -ne 0 ]; then
  echo "::%(level)s::sandboxguard: the work folder of the runner in $runner_dir is not clean" \\
    "(runner-cleanup exit $cleanup_status); the next checkout may fail"
fi
if [ "$chained_status" -ne 0 ]; then
  exit "$chained_status"
fi
exit %(exit)s
'''


def hook_script(runner_dir, user, phase, chained="", fail_job=True, sudo=DEFAULT_SUDO,
                helper=defaults.RUNNER_CLEANUP_HELPER):
    """The text of the hook script for ``phase`` (started or completed) of the runner in
    ``runner_dir`` run by ``user``: the helper through sudo, then ``chained`` (the operator's
    hook, "" for none; any bytes of a path, quoted as data), exiting as the runner needs
    (the operator's failure fails the job; a cleanup that leaves findings fails it only with
    ``fail_job``) (pure)."""
    if phase not in PHASES:
        raise InputError("phase must be one of %s, not %r" % (", ".join(PHASES), phase))
    return HOOK_TEMPLATE % {
        "var": ENV_VARS[phase], "runner_dir": runner_dir, "user": user,
        "when": "starts" if phase == "started" else "has completed",
        "findings": "fails the job" if fail_job else "prints a warning (fail_job false)",
        "runner_dir_q": shlex.quote(runner_dir), "chained_q": shlex.quote(chained),
        "sudo_q": shlex.quote(sudo), "helper_q": shlex.quote(helper),
        "level": "error" if fail_job else "warning", "exit": '"$cleanup_status"' if fail_job else "0",
    }


def sudoers_text(runner_dir, user, hook_dir, helper=defaults.RUNNER_CLEANUP_HELPER):
    """The drop-in allowing ``user`` exactly ``helper runner_dir`` as root (pure)."""
    return ("# Managed by sandboxguard (module runner_hooks): local changes are overwritten.\n"
            "# The GitHub runner in %(dir)s runs as %(user)s. Its job hooks\n"
            "# (%(scripts)s) may run the cleanup helper as root for that directory only.\n"
            "# sudoers(5): a command followed by arguments matches only those exact arguments, so no other\n"
            "# directory, no extra argument and no option is allowed; no SETENV, so sudo resets the environment.\n"
            "%(user)s ALL=(root) NOPASSWD: %(helper)s %(dir)s\n"
            % {"dir": runner_dir, "user": user, "helper": helper,
               "scripts": posixpath.join(hook_dir, runner_name(runner_dir))})
