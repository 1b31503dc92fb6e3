# GENERATED from python/src/sandboxguard/leaks.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Leak audit: what an agent left outside its sandbox on the host.

Seed 002's morning after: three cron jobs nobody wrote in the operator's real crontab,
two scripts in the real ``~/.hermes/scripts/``, and 24 empty ``/tmp/ab-*`` run
directories. This module lists such leftovers, one finding per item with its path and
age, and changes nothing:

- ``cron_job``: each job line of a user's table in the cron spool;
- ``hermes_script``: each file under ``~/.hermes/scripts/``;
- ``user_unit``: each unit file under ``~/.config/systemd/user/``;
- ``enabled_timer`` / ``enabled_unit``: each link in a ``*.wants/`` (or ``*.requires/``)
  directory there, which is what ``systemctl --user enable`` leaves;
- ``tmp_run_dir``: each entry of the temp directory matching a run-directory pattern
  (``ab-*`` by default).

Nothing is followed through a symbolic link and no file other than a crontab in the
spool is opened. Reading other users' spool entries needs root.
"""
import fnmatch
import os
import re
import stat
import time

from .report import new_report

SPOOL_DIR = "/var/spool/cron/crontabs"
TMP_DIR = "/tmp"
DEFAULT_TMP_PATTERNS = ("ab-*",)
HERMES_SCRIPTS = (".hermes", "scripts")
USER_UNITS = (".config", "systemd", "user")
UNIT_SUFFIXES = (".service", ".timer", ".socket", ".path", ".target", ".mount", ".automount", ".slice", ".scope")
WANTS_SUFFIXES = (".wants", ".requires", ".upholds")
KINDS = ("cron_job", "hermes_script", "user_unit", "enabled_timer", "enabled_unit", "tmp_run_dir")
FIRST_REGULAR_UID = 1000
NOBODY_UID = 65534
MAX_WALK_ENTRIES = 10000
NHEADER_LINES = 3

_ENV_LINE = re.compile(r"""^\s*("[^"]*"|'[^']*'|[^\s=#"']+)\s*=""")


def cron_jobs(data):
    """The job lines of a stored crontab (bytes): a list of (line number, text).

    The three header lines crontab writes are skipped the way ``crontab -l`` skips them;
    comments, blank lines and environment assignments are not jobs. Line numbers count
    the lines ``crontab -l`` would print, from 1.
    """
    lines = data.decode("utf-8", "replace").split("\n")
    skipped = 0
    while skipped < NHEADER_LINES and skipped < len(lines) and lines[skipped].startswith("#"):
        skipped += 1
    jobs = []
    for number, line in enumerate(lines[skipped:], start=1):
        text = line.strip()
        if not text or text.startswith("#") or _ENV_LINE.match(line):
            continue
        jobs.append((number, text))
    return jobs


def _age(info, now):
    return max(0, int(now - info.st_mtime))


def _finding(kind, path, info, now, **extra):
    item = {"kind": kind, "path": path, "age": _age(info, now), "mtime": int(info.st_mtime), "uid": info.st_uid}
    item.update(extra)
    return item


def _lstat(path, errors):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        errors.append({"path": path, "op": "lstat", "error": exc.strerror or str(exc)})
        return None


def _walk_files(top, errors, limit=MAX_WALK_ENTRIES):
    """Yield (path, lstat) for every non-directory under *top*, never following links."""
    info = _lstat(top, errors)
    if info is None or not stat.S_ISDIR(info.st_mode):
        return
    stack = [top]
    seen = 0
    while stack:
        directory = stack.pop()
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            errors.append({"path": directory, "op": "listdir", "error": exc.strerror or str(exc)})
            continue
        for name in names:
            seen += 1
            if seen > limit:
                errors.append({"path": top, "op": "walk", "error": "more than %d entries; listing stopped" % limit})
                return
            path = os.path.join(directory, name)
            entry = _lstat(path, errors)
            if entry is None:
                continue
            if stat.S_ISDIR(entry.st_mode):
                stack.append(path)
            else:
                yield path, entry


def audit_cron_spool(user, spool_dir=SPOOL_DIR, now=None, errors=None):
    """``cron_job`` findings for *user*'s table in *spool_dir*."""
    now = time.time() if now is None else now
    errors = [] if errors is None else errors
    path = os.path.join(spool_dir, user)
    info = _lstat(path, errors)
    if info is None or not stat.S_ISREG(info.st_mode):
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(1 << 20)
    except OSError as exc:
        errors.append({"path": path, "op": "read", "error": exc.strerror or str(exc)})
        return []
    return [_finding("cron_job", path, info, now, user=user, line=number, entry=text)
            for number, text in cron_jobs(data)]


def audit_home(user, home, now=None, errors=None):
    """``hermes_script``, ``user_unit``, ``enabled_timer`` and ``enabled_unit`` findings in *home*."""
    now = time.time() if now is None else now
    errors = [] if errors is None else errors
    findings = []
    for path, info in _walk_files(os.path.join(home, *HERMES_SCRIPTS), errors):
        findings.append(_finding("hermes_script", path, info, now, user=user))
    units = os.path.join(home, *USER_UNITS)
    for path, info in _walk_files(units, errors):
        parent = os.path.basename(os.path.dirname(path))
        name = os.path.basename(path)
        if parent.endswith(WANTS_SUFFIXES) and os.path.dirname(os.path.dirname(path)) == units:
            kind = "enabled_timer" if name.endswith(".timer") else "enabled_unit"
            target = None
            if stat.S_ISLNK(info.st_mode):
                try:
                    target = os.readlink(path)
                except OSError:
                    target = None
            findings.append(_finding(kind, path, info, now, user=user, unit=name, wanted_by=parent.rsplit(".", 1)[0],
                                     target=target))
        elif name.endswith(UNIT_SUFFIXES):
            findings.append(_finding("user_unit", path, info, now, user=user, unit=name))
    return findings


def audit_tmp(tmp_dir=TMP_DIR, patterns=DEFAULT_TMP_PATTERNS, now=None, errors=None, uid_names=None):
    """``tmp_run_dir`` findings: entries of *tmp_dir* whose name matches one of *patterns*."""
    now = time.time() if now is None else now
    errors = [] if errors is None else errors
    uid_names = uid_names or {}
    try:
        names = sorted(os.listdir(tmp_dir))
    except OSError as exc:
        errors.append({"path": tmp_dir, "op": "listdir", "error": exc.strerror or str(exc)})
        return []
    findings = []
    for name in names:
        if not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            continue
        path = os.path.join(tmp_dir, name)
        info = _lstat(path, errors)
        if info is None:
            continue
        empty = None
        if stat.S_ISDIR(info.st_mode):
            try:
                empty = not os.listdir(path)
            except OSError:
                empty = None
        findings.append(_finding("tmp_run_dir", path, info, now, user=uid_names.get(info.st_uid), empty=empty))
    return findings


def local_accounts(min_uid=FIRST_REGULAR_UID):
    """(name, uid, home) for root and every regular account (uid >= *min_uid*, not nobody)."""
    import pwd  # noqa: PLC0415 - POSIX only

    accounts = []
    for entry in pwd.getpwall():
        if entry.pw_uid == 0 or min_uid <= entry.pw_uid < NOBODY_UID:
            accounts.append((entry.pw_name, entry.pw_uid, entry.pw_dir))
    return accounts


def audit(accounts=None, users=None, tmp_dir=TMP_DIR, tmp_patterns=DEFAULT_TMP_PATTERNS, spool_dir=SPOOL_DIR,
          min_age=0, now=None):
    """Audit the host; return the report dict.

    *accounts* is a list of (name, uid, home), by default root and the regular accounts
    of the password database; *users* (names) narrows it. Tables in the spool whose user
    is not in *accounts* are audited too unless *users* is given. Findings younger than
    *min_age* seconds are left out (an agent still running is not a leak yet).

    Report: ``findings`` (each with ``kind``, ``path``, ``age`` in seconds, ``mtime``,
    ``uid``, ``user`` and kind-specific fields), ``counts`` per kind, ``leaks`` (the
    total), ``users`` audited, ``errors`` ({path, op, error}) and ``complete`` (False when
    an error hid something): the report envelope (report.new_report), ``roots`` the spool,
    the homes and the temp directory looked at.
    """
    started = time.monotonic()
    now = time.time() if now is None else now
    accounts = list(local_accounts() if accounts is None else accounts)
    if users:
        wanted = set(users)
        accounts = [a for a in accounts if a[0] in wanted]
    errors = []
    findings = []
    names = [a[0] for a in accounts]
    spool_users = list(names)
    if not users:
        try:
            spool_users += [n for n in sorted(os.listdir(spool_dir)) if n not in names and not n.startswith("tmp.")]
        except FileNotFoundError:
            pass
        except OSError as exc:
            errors.append({"path": spool_dir, "op": "listdir", "error": exc.strerror or str(exc)})
    for user in spool_users:
        findings += audit_cron_spool(user, spool_dir, now, errors)
    seen_homes = set()
    for name, _uid, home in accounts:
        if not home or home == "/" or home in seen_homes:
            continue
        seen_homes.add(home)
        findings += audit_home(name, home, now, errors)
    findings += audit_tmp(tmp_dir, tmp_patterns, now, errors, {uid: name for name, uid, _home in accounts})
    findings = [f for f in findings if f["age"] >= min_age]
    counts = dict.fromkeys(KINDS, 0)
    for item in findings:
        counts[item["kind"]] += 1
    roots = [spool_dir, *sorted(seen_homes), tmp_dir]
    return new_report(roots, findings=findings, counts=counts, leaks=len(findings), users=sorted(set(spool_users)),
                      errors=errors, complete=not errors, elapsed=round(time.monotonic() - started, 3))
