# GENERATED from python/src/sandboxguard/_leaks/home.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The per-kind auditors of a home, a user's runtime directory and the temp directory:
scripts, systemd user units and their enabled links, transient units, autostart entries,
the ``ssh_file``/``shell_rc`` inventory a baseline compares, and run directories in /tmp.
"""
import errno
import fnmatch
import os
import stat
import time

from .. import report as envelope
from .._core import defaults, safefs
from .._core.text import escape
from .reading import MAX_WALK_ENTRIES, entries, finding, lstat_at, open_dir, walk_under

RUNTIME_ROOT = "/run/user"
TMP_DIR = defaults.TMP_DIR
DEFAULT_TMP_PATTERNS = defaults.TMP_PATTERNS
HERMES_SCRIPTS = (".hermes", "scripts")
USER_UNIT_DIRS = ((".config", "systemd", "user"), (".local", "share", "systemd", "user"))
RUNTIME_UNITS = ("systemd", "user")
TRANSIENT_UNITS = ("systemd", "transient")
AUTOSTART = (".config", "autostart")
SSH_DIR = (".ssh",)
# login and interactive start-up files of bash, sh, zsh, ksh, csh/tcsh and fish
SHELL_RC_FILES = (
    (".profile",), (".bashrc",), (".bash_profile",), (".bash_login",), (".bash_logout",), (".zshenv",),
    (".zprofile",), (".zshrc",), (".zlogin",), (".zlogout",), (".kshrc",), (".mkshrc",), (".cshrc",),
    (".tcshrc",), (".login",), (".logout",), (".config", "fish", "config.fish"),
)
SHELL_RC_DIRS = ((".bashrc.d",), (".config", "fish", "conf.d"))
UNIT_SUFFIXES = (".service", ".timer", ".socket", ".path", ".target", ".mount", ".automount", ".slice", ".scope")
WANTS_SUFFIXES = (".wants", ".requires", ".upholds")


def _unit_findings(user, base, parts, scope, report, now, budget):
    """``user_unit`` and ``enabled_*`` findings in one systemd user unit directory."""
    top = os.path.join(base, *parts)
    findings = []
    for path, info, dir_fd, name in walk_under(base, parts, report, budget):
        parent = os.path.basename(os.path.dirname(path))
        if parent.endswith(WANTS_SUFFIXES) and os.path.dirname(os.path.dirname(path)) == top:
            kind = "enabled_timer" if name.endswith(".timer") else "enabled_unit"
            target = None
            if stat.S_ISLNK(info.st_mode):
                try:
                    target = os.readlink(name, dir_fd=dir_fd)
                except OSError:
                    target = None
            wanted_by = parent.rsplit(".", 1)[0]
            findings.append(finding(kind, path, info, now, "%s enabled for %s (systemctl --user enable), wanted "
                                    "by %s" % (escape(name), user, escape(wanted_by)), user=user, unit=name,
                                    wanted_by=wanted_by, target=target, scope=scope))
        elif name.endswith(UNIT_SUFFIXES):
            findings.append(finding("user_unit", path, info, now,
                                    "systemd user unit of %s in %s" % (user, escape(top)),
                                    user=user, unit=name, scope=scope))
    return findings


def audit_home(user, home, now=None, report=None, budget=None):
    """Findings in *home*: scripts, user units and enabled links, autostart entries, and the
    ``ssh_file``/``shell_rc`` inventory a baseline compares."""
    now = time.time() if now is None else now
    report = envelope.new_report([]) if report is None else report
    budget = [MAX_WALK_ENTRIES] if budget is None else budget
    findings = []
    for path, info, _fd, _name in walk_under(home, HERMES_SCRIPTS, report, budget):
        findings.append(finding("hermes_script", path, info, now, "script in %s's real ~/.hermes/scripts" % user,
                                user=user))
    for parts in USER_UNIT_DIRS:
        findings += _unit_findings(user, home, parts, "persistent", report, now, budget)
    for path, info, _fd, name in walk_under(home, AUTOSTART, report, budget):
        findings.append(finding("autostart", path, info, now, "desktop autostart entry of %s (runs at the next "
                                "login)" % user, user=user, entry=name))
    for path, info, _fd, _name in walk_under(home, SSH_DIR, report, budget):
        findings.append(finding("ssh_file", path, info, now, "file in %s's real ~/.ssh" % user, user=user))
    for parts in SHELL_RC_FILES:
        fd = open_dir(home, parts[:-1], report)
        if fd is None:
            continue
        path = os.path.join(home, *parts)
        try:
            info = lstat_at(fd, parts[-1], path, report)
        finally:
            os.close(fd)
        if info is None:
            continue
        findings.append(finding("shell_rc", path, info, now, "shell start-up file of %s" % user, user=user))
    for parts in SHELL_RC_DIRS:
        for path, info, _fd, _name in walk_under(home, parts, report, budget):
            findings.append(finding("shell_rc", path, info, now, "shell start-up file of %s" % user, user=user))
    return findings


def audit_runtime(user, uid, runtime_root=RUNTIME_ROOT, now=None, report=None, budget=None):
    """``transient_unit`` findings (``systemd-run --user`` leftovers) and runtime user units
    under ``{runtime_root}/{uid}`` (the user's XDG_RUNTIME_DIR)."""
    now = time.time() if now is None else now
    report = envelope.new_report([]) if report is None else report
    budget = [MAX_WALK_ENTRIES] if budget is None else budget
    base = os.path.join(runtime_root, str(uid))
    findings = []
    for path, info, _fd, name in walk_under(base, TRANSIENT_UNITS, report, budget):
        if name.endswith(UNIT_SUFFIXES):
            findings.append(finding("transient_unit", path, info, now, "transient systemd user unit of %s "
                                    "(systemd-run --user) still loaded" % user, user=user, unit=name))
    findings += _unit_findings(user, base, RUNTIME_UNITS, "runtime", report, now, budget)
    return findings


def audit_tmp(tmp_dir=TMP_DIR, patterns=DEFAULT_TMP_PATTERNS, now=None, report=None, uid_names=None):
    """``tmp_run_dir`` findings: entries of *tmp_dir* whose name matches one of *patterns*."""
    now = time.time() if now is None else now
    report = envelope.new_report([]) if report is None else report
    uid_names = uid_names or {}
    if not os.path.lexists(tmp_dir):
        # an error as it always was (audit.check_leaks reports a missing one as absent)
        missing = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), tmp_dir)
        envelope.add_error(report, tmp_dir, "listdir", missing)
        return []
    findings = []
    for fd, name, path in entries(tmp_dir, report):
        if not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            continue
        info = lstat_at(fd, name, path, report)
        if info is None:
            continue
        empty = None
        if stat.S_ISDIR(info.st_mode):
            try:
                sub = safefs.open_dir_at(fd, name, path)
                try:
                    empty = not safefs.list_dir_at(sub)
                finally:
                    os.close(sub)
            except (OSError, safefs.PathRefused):
                empty = None
        item = finding("tmp_run_dir", path, info, now, "run directory left in %s" % escape(tmp_dir),
                       user=uid_names.get(info.st_uid), empty=empty)
        item["_sig"] = [info.st_ino, info.st_mtime_ns]
        findings.append(item)
    return findings
