# GENERATED from python/src/sandboxguard/leaks.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Leak audit: what an agent left outside its sandbox on the host.

Seed 002's morning after: three cron jobs nobody wrote in the operator's real crontab,
two scripts in the real ``~/.hermes/scripts/``, and 24 empty ``/tmp/ab-*`` run
directories. This module lists such leftovers, one finding per item with its ``kind``,
``path``, a one-line ``reason`` and its age, and changes nothing:

- ``cron_job``: each job of a user's table in the cron spool, read whole and streamed
  (a job after a 2 MiB comment line is found; a NUL splits a line as cron's reader does);
- ``at_job``: each job queued with ``at``/``batch`` in the atd spool;
- ``hermes_script``: each file under ``~/.hermes/scripts/``;
- ``user_unit``: each unit file under ``~/.config/systemd/user/``,
  ``~/.local/share/systemd/user/`` or the runtime ``/run/user/UID/systemd/user/``;
- ``enabled_timer`` / ``enabled_unit``: each link in a ``*.wants/`` (``*.requires/``,
  ``*.upholds/``) directory there, which is what ``systemctl --user enable`` leaves;
- ``transient_unit``: each unit under ``/run/user/UID/systemd/transient/`` (what
  ``systemd-run --user`` leaves while its unit or timer is loaded);
- ``autostart``: each entry of ``~/.config/autostart/`` (started at the next desktop login);
- ``tmp_run_dir``: each entry of the temp directory matching a run-directory pattern
  (``ab-*`` by default);
- ``ssh_file`` and ``shell_rc``: files in the real ``~/.ssh/`` and shell start-up files
  (``~/.bashrc``, ``~/.profile``, ...). Every host has some, so these are reported only
  against a baseline, when a run added or changed one (``ssh-keygen`` ignores ``HOME``).

**Baseline mode**: :func:`snapshot` records everything above before an eval run;
``audit(baseline=snap)`` afterwards reports only what was added or changed since
(``change``: ``added`` or ``modified``). :func:`audit_with_baseline_file` keeps the
snapshot in a JSON file for the CLI and the module.

Nothing below a home, the spool or the temp directory is followed through a symbolic
link: each directory is opened with O_NOFOLLOW relative to its parent's descriptor. No
file other than a crontab or an at job in its spool is opened. Reading other users'
spool entries and homes needs root. ``complete`` is False whenever something could not
be read whole.
"""
import errno
import fnmatch
import json
import os
import re
import stat
import time

from . import atomicfile, defaults
from . import report as envelope
from .errors import InputError
from .text import escape, one_line

SPOOL_DIR = defaults.CRON_SPOOL_DIR
# Debian and Ubuntu; Fedora, RHEL and Arch keep at jobs in /var/spool/at
AT_SPOOL_DIRS = ("/var/spool/cron/atjobs", "/var/spool/at")
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
KINDS = ("cron_job", "at_job", "hermes_script", "user_unit", "enabled_timer", "enabled_unit", "transient_unit",
         "autostart", "ssh_file", "shell_rc", "tmp_run_dir")
# every host has these: a finding only when a run added or changed one since a baseline
BASELINE_ONLY_KINDS = ("ssh_file", "shell_rc")
FIRST_REGULAR_UID = 1000
NOBODY_UID = 65534
MAX_WALK_ENTRIES = 10000
MAX_WALK_DEPTH = 64
NHEADER_LINES = 3
READ_CHUNK = 1 << 16
# a cron line is kept up to this length; a longer job line (cron itself refuses commands
# over 1000 bytes) is reported from its start and makes the report incomplete
MAX_LINE_BYTES = 1 << 16
MAX_ENTRY_CHARS = 2048
BASELINE_SCHEMA = "sandboxguard.leaks.baseline/1"
BASELINE_MODES = ("auto", "write", "compare")
DEFAULT_BASELINE_MODE = "auto"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_ENV_LINE = re.compile(r"""^\s*("[^"]*"|'[^']*'|[^\s=#"']+)\s*=""")
# at(1) job files: queue letter, job number (5 hex digits), minutes since the epoch (8 hex)
_AT_NAME = re.compile(r"^([A-Za-z=])([0-9a-f]{5})([0-9a-f]{8})$")
_AT_UID = re.compile(rb"^# atrun uid=(\d+) gid=(\d+)")
_AT_HEREDOC = re.compile(rb"^\$\{SHELL:-/bin/sh\} << '?(marcinDELIMITER[0-9a-f]+)'?$")


class LeakAuditError(InputError):
    """Bad input (a baseline file that cannot be used, a bad mode); the message names the fix."""


# --- reading a cron table -----------------------------------------------------------------

def _iter_lines(chunks, cap=MAX_LINE_BYTES):
    """Split byte *chunks* into lines: yield (first *cap* bytes of the line, its full length).

    Memory stays at one chunk plus *cap* whatever the line lengths (a 2 MiB comment
    line costs nothing). A last line without a newline is yielded too.
    """
    head = bytearray()
    length = 0
    pending = False
    for data in chunks:
        start = 0
        while start <= len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            room = cap - len(head)
            if room > 0:
                head += data[start:min(end, start + room)]
            length += end - start
            pending = pending or end > start
            if newline < 0:
                break
            yield bytes(head), length
            head, length, pending = bytearray(), 0, False
            start = newline + 1
    if pending:
        yield bytes(head), length


def _read_chunks(fd):
    while True:
        data = os.read(fd, READ_CHUNK)
        if not data:
            return
        yield data


def iter_cron_jobs(chunks, cap=MAX_LINE_BYTES):
    """The jobs of a stored crontab given as byte chunks: yield (line number, text, truncated).

    The three header lines crontab writes are skipped the way ``crontab -l`` skips them;
    comments, blank lines and environment assignments are not jobs. Line numbers count
    the lines ``crontab -l`` would print, from 1. A NUL ends cron's string (misc.c
    get_string), so what follows it on the line is read as another entry, as cron does.
    *truncated* is True for a job on a line longer than *cap* (only its start was kept).
    """
    number = 0
    header = 0
    in_header = True
    for head, length in _iter_lines(chunks, cap):
        if in_header and header < NHEADER_LINES and head.startswith(b"#"):
            header += 1
            continue
        in_header = False
        number += 1
        if head.lstrip(b" \t").startswith(b"#"):
            continue  # cron skips a comment byte by byte to the newline, NULs included
        for segment in head.split(b"\0"):
            line = segment.decode("utf-8", "surrogateescape")  # the bytes cron runs: leaks_remove matches them
            text = line.strip()
            if not text or text.startswith("#") or _ENV_LINE.match(line):
                continue
            yield number, text, length > cap


def cron_jobs(data):
    """The job lines of a stored crontab (bytes): a list of (line number, text)."""
    return [(number, text) for number, text, _cut in iter_cron_jobs([data])]


# --- findings --------------------------------------------------------------------------

def _finding(kind, path, info, now, reason, **extra):
    item = {"kind": kind, "path": path, "reason": reason, "age": max(0, int(now - info.st_mtime)),
            "mtime": int(info.st_mtime), "uid": info.st_uid, "dev": info.st_dev, "ino": info.st_ino}
    item.update(extra)
    # what a baseline compares: the same key is the same item; the same inode, size and
    # mtime is the same content
    item["_key"] = "\0".join((kind, path))
    item["_sig"] = [info.st_ino, info.st_size, info.st_mtime_ns]
    return item


def _open_dir(base, parts, report, follow_base=True):
    """A descriptor of ``base/parts...`` opened component by component with O_NOFOLLOW, or None.

    *base* itself (a home from the password database, a spool) is host-derived and may be
    reached through symlinks when *follow_base*; nothing under it is. A missing path, a
    symlink or a non-directory is None without an error; anything else is an error.
    """
    path = base
    try:
        fd = os.open(base, _DIR_FLAGS if not follow_base else _DIR_FLAGS & ~os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            envelope.add_error(report, base, "open", exc)
        return None
    for part in parts:
        path = os.path.join(path, part)
        try:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                envelope.add_error(report, path, "open", exc)
            return None
        finally:
            os.close(fd)
        fd = child
    return fd


def _list_dir(path, report):
    """(descriptor, sorted names) of the directory *path*, or (None, []) when it cannot be listed."""
    fd = _open_dir(path, (), report)
    if fd is None:
        return None, []
    try:
        return fd, sorted(os.listdir(fd))
    except OSError as exc:
        os.close(fd)
        envelope.add_error(report, path, "listdir", exc)
        return None, []


def _lstat_at(dir_fd, name, path, report):
    """lstat of *name* in the open directory *dir_fd*, or None: vanished is skipped (not a leak,
    not an error), any other failure is an ``lstat`` error on *path*."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        envelope.add_error(report, path, "lstat", exc)
        return None


def _walk(fd, top, report, budget):
    """Yield (path, lstat, dir_fd, name) for every non-directory below the open directory *fd*.

    Takes ownership of *fd*. Directories are entered by descriptor with O_NOFOLLOW, so a
    symlink is listed, never followed. *budget* is a one-item list of entries left for
    the whole audit; running out, or a tree deeper than MAX_WALK_DEPTH, is an error.
    """
    stack = [(fd, top, None)]
    try:
        while stack:
            dir_fd, path, names = stack[-1]
            if names is None:
                try:
                    names = iter(sorted(os.listdir(dir_fd)))
                except OSError as exc:
                    envelope.add_error(report, path, "listdir", exc)
                    os.close(stack.pop()[0])
                    continue
                stack[-1] = (dir_fd, path, names)
            name = next(names, None)
            if name is None:
                os.close(stack.pop()[0])
                continue
            budget[0] -= 1
            if budget[0] < 0:
                envelope.add_error(report, top, "walk", "more than %d entries; listing stopped" % MAX_WALK_ENTRIES)
                return
            child = os.path.join(path, name)
            info = _lstat_at(dir_fd, name, child, report)
            if info is None:
                continue
            if not stat.S_ISDIR(info.st_mode):
                yield child, info, dir_fd, name
                continue
            if len(stack) >= MAX_WALK_DEPTH:
                envelope.add_error(report, child, "walk", "deeper than %d levels; not listed" % MAX_WALK_DEPTH)
                continue
            try:
                sub = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    envelope.add_error(report, child, "open", exc)
                continue
            stack.append((sub, child, None))
    finally:
        for dir_fd, _path, _names in stack:
            os.close(dir_fd)


def _walk_under(base, parts, report, budget):
    fd = _open_dir(base, parts, report)
    if fd is None:
        return iter(())
    return _walk(fd, os.path.join(base, *parts), report, budget)


def _read_regular(dir_fd, name, path, report):
    """Open *name* under *dir_fd* for reading if it is a regular file (never a FIFO or link)."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP):
            envelope.add_error(report, path, "open", exc)
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return fd, info


def audit_cron_spool(user, spool_dir=SPOOL_DIR, now=None, report=None):
    """``cron_job`` findings for *user*'s table in *spool_dir*, the whole table streamed."""
    now = time.time() if now is None else now
    report = envelope.new_report([]) if report is None else report
    spool_fd = _open_dir(spool_dir, (), report)
    if spool_fd is None:
        return []
    path = os.path.join(spool_dir, user)
    try:
        opened = _read_regular(spool_fd, user, path, report)
    finally:
        os.close(spool_fd)
    if opened is None:
        return []
    fd, info = opened
    findings = []
    seen = {}
    try:
        for number, text, cut in iter_cron_jobs(_read_chunks(fd)):
            if cut:
                envelope.add_error(report, path, "read", "line %d is longer than %d bytes: only its start was read"
                                   % (number, MAX_LINE_BYTES))
            entry = text[:MAX_ENTRY_CHARS]
            occurrence = seen[entry] = seen.get(entry, 0) + 1
            item = _finding("cron_job", path, info, now, "job in %s's crontab: %s" % (user, escape(entry[:200])),
                            user=user, line=number, entry=entry)
            # a job is the same job wherever its line moved; the table's mtime does not matter
            item["_key"] = "\0".join(("cron_job", path, entry, str(occurrence)))
            item["_sig"] = None
            findings.append(item)
    except OSError as exc:
        envelope.add_error(report, path, "read", exc)
    finally:
        os.close(fd)
    return findings


def _at_job_details(fd):
    """(uid from the ``# atrun`` line or None, the job's commands) of an at(1) job file.

    at writes a header (``#!/bin/sh``, ``# atrun uid=N gid=M``, ``# mail``, umask and the
    exported environment), then ``cd DIR || { ... }``, then the commands as given
    (Debian's at 3.2.5); some versions wrap them in a here-document, which is unwrapped.
    """
    uid = None
    state = "header"  # header -> cd (inside the cd block) -> body
    delimiter = None
    command = []
    size = 0
    for head, _length in _iter_lines(_read_chunks(fd), MAX_ENTRY_CHARS):
        if state == "header":
            match = _AT_UID.match(head)
            if match and uid is None:
                uid = int(match.group(1))
            elif head.startswith(b"cd ") and head.endswith(b"|| {"):
                state = "cd"
            continue
        if state == "cd":
            state = "body" if head == b"}" else "cd"
            continue
        if delimiter is None and not command:
            match = _AT_HEREDOC.match(head)
            if match:
                delimiter = match.group(1)
                continue
        if delimiter is not None and head == delimiter:
            break
        if size < MAX_ENTRY_CHARS:
            command.append(head.decode("utf-8", "surrogateescape"))
            size += len(head) + 1
    text = "\n".join(command).strip()[:MAX_ENTRY_CHARS]
    return uid, (text or None)


def audit_at_spool(spool_dir, now=None, report=None, uid_names=None):
    """``at_job`` findings: each job file in an atd spool (``at``, ``batch``)."""
    now = time.time() if now is None else now
    report = envelope.new_report([]) if report is None else report
    uid_names = uid_names or {}
    spool_fd, names = _list_dir(spool_dir, report)
    if spool_fd is None:
        return []
    findings = []
    try:
        for name in names:
            if name.startswith("."):  # .SEQ, the job counter
                continue
            path = os.path.join(spool_dir, name)
            opened = _read_regular(spool_fd, name, path, report)
            if opened is None:
                continue
            fd, info = opened
            try:
                uid, command = _at_job_details(fd)
            except OSError as exc:
                envelope.add_error(report, path, "read", exc)
                uid, command = None, None
            finally:
                os.close(fd)
            uid = info.st_uid if uid is None else uid
            match = _AT_NAME.match(name)
            queue = match.group(1) if match else None
            job = int(match.group(2), 16) if match else None
            run_at = int(match.group(3), 16) * 60 if match else None
            user = uid_names.get(uid)
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(run_at)) if run_at is not None else "?"
            findings.append(_finding(
                "at_job", path, info, now, "at job %s for %s, runs at %s: %s" % (
                    job, user or "uid %d" % uid, when, escape((command or "?").splitlines()[0][:200])),
                user=user, job=job, queue=queue, run_at=run_at, running=queue == "=", entry=command,
                job_uid=uid))
    finally:
        os.close(spool_fd)
    return findings


def _unit_findings(user, base, parts, scope, report, now, budget):
    """``user_unit`` and ``enabled_*`` findings in one systemd user unit directory."""
    top = os.path.join(base, *parts)
    findings = []
    for path, info, dir_fd, name in _walk_under(base, parts, report, budget):
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
            findings.append(_finding(kind, path, info, now, "%s enabled for %s (systemctl --user enable), wanted "
                                     "by %s" % (escape(name), user, escape(wanted_by)), user=user, unit=name,
                                     wanted_by=wanted_by, target=target, scope=scope))
        elif name.endswith(UNIT_SUFFIXES):
            findings.append(_finding("user_unit", path, info, now,
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
    for path, info, _fd, _name in _walk_under(home, HERMES_SCRIPTS, report, budget):
        findings.append(_finding("hermes_script", path, info, now, "script in %s's real ~/.hermes/scripts" % user,
                                 user=user))
    for parts in USER_UNIT_DIRS:
        findings += _unit_findings(user, home, parts, "persistent", report, now, budget)
    for path, info, _fd, name in _walk_under(home, AUTOSTART, report, budget):
        findings.append(_finding("autostart", path, info, now, "desktop autostart entry of %s (runs at the next "
                                 "login)" % user, user=user, entry=name))
    for path, info, _fd, _name in _walk_under(home, SSH_DIR, report, budget):
        findings.append(_finding("ssh_file", path, info, now, "file in %s's real ~/.ssh" % user, user=user))
    for parts in SHELL_RC_FILES:
        fd = _open_dir(home, parts[:-1], report)
        if fd is None:
            continue
        path = os.path.join(home, *parts)
        try:
            info = _lstat_at(fd, parts[-1], path, report)
        finally:
            os.close(fd)
        if info is None:
            continue
        findings.append(_finding("shell_rc", path, info, now, "shell start-up file of %s" % user, user=user))
    for parts in SHELL_RC_DIRS:
        for path, info, _fd, _name in _walk_under(home, parts, report, budget):
            findings.append(_finding("shell_rc", path, info, now, "shell start-up file of %s" % user, user=user))
    return findings


def audit_runtime(user, uid, runtime_root=RUNTIME_ROOT, now=None, report=None, budget=None):
    """``transient_unit`` findings (``systemd-run --user`` leftovers) and runtime user units
    under ``{runtime_root}/{uid}`` (the user's XDG_RUNTIME_DIR)."""
    now = time.time() if now is None else now
    report = envelope.new_report([]) if report is None else report
    budget = [MAX_WALK_ENTRIES] if budget is None else budget
    base = os.path.join(runtime_root, str(uid))
    findings = []
    for path, info, _fd, name in _walk_under(base, TRANSIENT_UNITS, report, budget):
        if name.endswith(UNIT_SUFFIXES):
            findings.append(_finding("transient_unit", path, info, now, "transient systemd user unit of %s "
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
    fd, names = _list_dir(tmp_dir, report)
    if fd is None:
        return []
    findings = []
    try:
        for name in names:
            if not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
                continue
            path = os.path.join(tmp_dir, name)
            info = _lstat_at(fd, name, path, report)
            if info is None:
                continue
            empty = None
            if stat.S_ISDIR(info.st_mode):
                try:
                    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    try:
                        empty = not os.listdir(sub)
                    finally:
                        os.close(sub)
                except OSError:
                    empty = None
            item = _finding("tmp_run_dir", path, info, now, "run directory left in %s" % escape(tmp_dir),
                            user=uid_names.get(info.st_uid), empty=empty)
            item["_sig"] = [info.st_ino, info.st_mtime_ns]
            findings.append(item)
    finally:
        os.close(fd)
    return findings


def local_accounts(min_uid=FIRST_REGULAR_UID):
    """(name, uid, home) for root and every regular account (uid >= *min_uid*, not nobody)."""
    import pwd  # noqa: PLC0415 - POSIX only

    accounts = []
    for entry in pwd.getpwall():
        if entry.pw_uid == 0 or min_uid <= entry.pw_uid < NOBODY_UID:
            accounts.append((entry.pw_name, entry.pw_uid, entry.pw_dir))
    return accounts


def named_accounts(users):
    """(name, uid, home) of each account named in *users* that the password database knows,
    whatever its uid (an agent's service account is often a system user below 1000)."""
    import pwd  # noqa: PLC0415 - POSIX only

    accounts = []
    for name in dict.fromkeys(users):
        try:
            entry = pwd.getpwnam(name)
        except (KeyError, TypeError, ValueError):
            continue
        accounts.append((entry.pw_name, entry.pw_uid, entry.pw_dir))
    return accounts


def _accounts(accounts, users):
    """The accounts an audit looks at: *accounts* (default: root and the regular accounts,
    or with *users* the named accounts, any uid), narrowed to *users* when given."""
    if accounts is None:
        accounts = named_accounts(users) if users else local_accounts()
    accounts = list(accounts)
    if users:
        wanted = set(users)
        accounts = [a for a in accounts if a[0] in wanted]
    return accounts


# --- the audit -------------------------------------------------------------------------

def _sort_key(item):
    return KINDS.index(item["kind"]), item["path"], item.get("line") or 0


def _spool_users(spool_dir, names, report):
    try:
        listed = sorted(os.listdir(spool_dir))
    except FileNotFoundError:
        return []
    except OSError as exc:
        envelope.add_error(report, spool_dir, "listdir", exc)
        return []
    return [n for n in listed if n not in names and not n.startswith("tmp.")]


def _collect(accounts, users, tmp_dir, tmp_patterns, spool_dir, at_spool_dirs, runtime_root, now, report):
    """Every finding of the host, the baseline-only kinds included."""
    names = [a[0] for a in accounts]
    spool_users = list(names)
    if not users:
        spool_users += _spool_users(spool_dir, names, report)
    uid_names = {uid: name for name, uid, _home in accounts}
    findings = []
    for user in spool_users:
        findings += audit_cron_spool(user, spool_dir, now, report)
    for at_dir in at_spool_dirs:
        jobs = audit_at_spool(at_dir, now, report, uid_names)
        if users:
            wanted = {a[1] for a in accounts}
            jobs = [j for j in jobs if j["job_uid"] in wanted]
        findings += jobs
    budget = [MAX_WALK_ENTRIES * max(1, len(accounts))]
    seen_homes = set()
    for name, uid, home in accounts:
        if runtime_root:
            findings += audit_runtime(name, uid, runtime_root, now, report, budget)
        if not home or home == "/" or home in seen_homes:
            continue
        seen_homes.add(home)
        findings += audit_home(name, home, now, report, budget)
    findings += audit_tmp(tmp_dir, tmp_patterns, now, report, uid_names)
    report["users"] = sorted(set(spool_users))
    return findings


def _compare(findings, baseline):
    """The findings added or changed since *baseline* (a :func:`snapshot`), with ``change``."""
    before = {item["key"]: item.get("sig") for item in baseline["items"]}
    out = []
    for item in findings:
        key = item["_key"]
        if key not in before:
            item["change"] = "added"
        elif before[key] != item["_sig"]:
            item["change"] = "modified"
        else:
            continue
        out.append(item)
    return out


def audit(accounts=None, users=None, tmp_dir=TMP_DIR, tmp_patterns=DEFAULT_TMP_PATTERNS, spool_dir=SPOOL_DIR,
          min_age=0, now=None, at_spool_dirs=AT_SPOOL_DIRS, runtime_root=RUNTIME_ROOT, baseline=None):
    """Audit the host; return the report dict.

    *accounts* is a list of (name, uid, home), by default root and the regular accounts
    of the password database; *users* (names) narrows it (without *accounts*, each named
    account is looked up, whatever its uid). Tables in the spool whose user is not in
    *accounts* are audited too unless *users* is given. Every job of an audited table is a
    finding, so a caller that removes what is found (leaks_remove) should name the accounts
    that run agents (audit.agent_accounts), never rely on this default. Findings younger than
    *min_age* seconds are left out (an agent still running is not a leak yet). With
    *baseline* (a :func:`snapshot` taken before the run), only what was added or changed
    since is reported, each with ``change`` (``added``/``modified``), the ``ssh_file`` and
    ``shell_rc`` kinds included; without one those two kinds are not reported.

    Report (the envelope of :mod:`report`): ``findings`` (each with ``kind``, ``path``,
    ``reason``, ``age`` in seconds, ``mtime``, ``uid``, ``user`` and kind-specific fields),
    ``counts`` per kind (and ``errors``), ``leaks`` (the total), ``users`` audited,
    ``errors`` (``{path, op, error}``), ``warnings``, ``complete`` (False when an error may
    have hidden something), ``changed`` (always False), ``roots`` and ``elapsed``.
    """
    started = time.monotonic()
    now = time.time() if now is None else now
    accounts = _accounts(accounts, users)
    roots = [spool_dir, *at_spool_dirs, tmp_dir, *sorted({a[2] for a in accounts if a[2]})]
    report = envelope.new_report(roots, findings=[], leaks=0, users=[])
    findings = _collect(accounts, users, tmp_dir, tmp_patterns, spool_dir, at_spool_dirs, runtime_root, now, report)
    findings = [f for f in findings if f["age"] >= min_age]
    if baseline is None:
        findings = [f for f in findings if f["kind"] not in BASELINE_ONLY_KINDS]
    else:
        findings = _compare(findings, baseline)
    findings.sort(key=_sort_key)
    for item in findings:
        item.pop("_sig", None)
        item.pop("_key", None)
    counts = dict.fromkeys(KINDS, 0)
    for item in findings:
        counts[item["kind"]] += 1
    counts.update({k: v for k, v in report["counts"].items() if k not in counts})
    report.update(findings=findings, counts=counts, leaks=len(findings), complete=not report["errors"])
    return envelope.finish(report, started)


def finding_lines(report):
    """One line per finding, ``kind path: reason`` (``[added]`` in baseline mode), for people and logs:
    the path through text.escape, the reason one line (text.one_line)."""
    lines = []
    for item in report.get("findings", ()):
        change = " [%s]" % item["change"] if item.get("change") else ""
        lines.append("%s %s%s: %s" % (item["kind"], escape(item["path"]), change, one_line(item.get("reason", ""))))
    return lines


# --- baseline --------------------------------------------------------------------------

def snapshot(accounts=None, users=None, tmp_dir=TMP_DIR, tmp_patterns=DEFAULT_TMP_PATTERNS, spool_dir=SPOOL_DIR,
             now=None, at_spool_dirs=AT_SPOOL_DIRS, runtime_root=RUNTIME_ROOT):
    """What the host holds now, for a later ``audit(baseline=...)``: a JSON-ready dict.

    ``{"schema", "created", "items": [{"key", "sig"}], "errors", "complete"}``; every kind is
    recorded, ``ssh_file`` and ``shell_rc`` included. A snapshot that is not complete (an
    unreadable table) would make the later audit report what it missed as added.
    """
    now = time.time() if now is None else now
    accounts = _accounts(accounts, users)
    report = envelope.new_report([])
    findings = _collect(accounts, users, tmp_dir, tmp_patterns, spool_dir, at_spool_dirs, runtime_root, now, report)
    items = sorted(({"key": f["_key"], "sig": f["_sig"]} for f in findings), key=lambda i: i["key"])
    return {"schema": BASELINE_SCHEMA, "created": int(now), "items": items, "errors": report["errors"],
            "complete": not report["errors"]}


def write_baseline(path, snap):
    """Write *snap* to *path* as JSON, atomically, mode 0600. Touches the disk."""
    atomicfile.write(path, json.dumps(snap, sort_keys=True) + "\n", mode=0o600)


def read_baseline(path):
    """Load a baseline written by :func:`write_baseline`; LeakAuditError names what is wrong."""
    try:
        fd = os.open(path, _FILE_FLAGS)
    except OSError as exc:
        raise LeakAuditError("baseline %s: %s" % (path, exc.strerror or exc)) from None
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise LeakAuditError("baseline %s is not a regular file" % path)
        try:
            snap = json.load(handle)
        except ValueError as exc:
            raise LeakAuditError("baseline %s is not JSON (%s): write it again with baseline_mode write"
                                 % (path, exc)) from None
    if not isinstance(snap, dict) or snap.get("schema") != BASELINE_SCHEMA or not isinstance(snap.get("items"), list):
        raise LeakAuditError("baseline %s is not a sandboxguard leak baseline (%s): write it again with "
                             "baseline_mode write" % (path, BASELINE_SCHEMA))
    return snap


def audit_with_baseline_file(path, mode="auto", **kwargs):
    """Baseline mode with the snapshot in a file, for the CLI and the module.

    *mode* ``write`` records a snapshot at *path* (replacing one) and returns the plain
    audit; ``compare`` reads it and returns only what was added or changed since;
    ``auto`` writes when *path* does not exist and compares when it does. The report's
    ``baseline`` says what happened: ``{path, action: written|compared, created, entries}``.
    """
    if mode not in BASELINE_MODES:
        raise LeakAuditError("baseline mode %r: use one of %s" % (mode, ", ".join(BASELINE_MODES)))
    if mode == "auto":
        mode = "compare" if os.path.lexists(path) else "write"
    audit_args = {k: v for k, v in kwargs.items() if k != "min_age"}
    if mode == "write":
        snap = snapshot(**audit_args)
        try:
            write_baseline(path, snap)
        except OSError as exc:
            raise LeakAuditError("baseline %s: cannot write it: %s" % (path, exc.strerror or exc)) from None
        report = audit(**kwargs)
        report["baseline"] = {"path": path, "action": "written", "created": snap["created"],
                              "entries": len(snap["items"])}
        return report
    snap = read_baseline(path)
    report = audit(baseline=snap, **kwargs)
    report["baseline"] = {"path": path, "action": "compared", "created": snap.get("created"),
                          "entries": len(snap["items"])}
    if not snap.get("complete", True):
        report["warnings"].append("baseline %s was incomplete when written (%d errors): what it missed is "
                                  "reported as added" % (path, len(snap.get("errors") or ())))
    return report
