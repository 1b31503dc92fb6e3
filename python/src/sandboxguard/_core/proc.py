# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The library's one door to child processes: every ``subprocess`` call goes through here.

Ansible asks module code to run commands with ``AnsibleModule.run_command``; ansible-core
2.20+ sanity (pylint ``ansible-bad-function``) flags ``subprocess.*`` in module_utils. This
library also runs where there is no AnsibleModule at all (the ``sandboxguard`` CLI, its
systemd units, the crontab shim and the eval-run wrapper), and what it runs needs what
run_command does not give: dropping to another user with its supplementary groups
(``user``/``group``/``extra_groups``), passing a descriptor (``pass_fds``), reading a bounded
amount of a child's output and killing it beyond that, and handing the terminal to an
editor. So the calls stay ``subprocess`` and live in this one small module; each call says
so to pylint at the call site (``disable=ansible-bad-function``) rather than in an ignore file,
because Automation Hub's import (ansible-lint ``sanity[cannot-ignore]``) refuses that ignore
and galaxy-importer warns on any ignore file. Nothing else in the library imports
``subprocess``; tests/unit/test_proc.py checks that.
"""
import subprocess

DEVNULL = subprocess.DEVNULL
PIPE = subprocess.PIPE
TimeoutExpired = subprocess.TimeoutExpired


def run(argv, check=False, **kwargs):
    """``subprocess.run(argv, check=check, **kwargs)``; argv is a list (never a shell string)."""
    return subprocess.run(list(argv), check=check, **kwargs)  # pylint: disable=ansible-bad-function


def call(argv, **kwargs):
    """``subprocess.call(argv, **kwargs)``: wait for the child, return its status."""
    return subprocess.call(list(argv), **kwargs)  # pylint: disable=ansible-bad-function


def popen(argv, **kwargs):
    """``subprocess.Popen(argv, **kwargs)``, for callers that read a bounded stream."""
    return subprocess.Popen(list(argv), **kwargs)  # pylint: disable=ansible-bad-function
