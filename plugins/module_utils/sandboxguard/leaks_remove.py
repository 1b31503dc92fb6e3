# GENERATED from python/src/sandboxguard/leaks_remove.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The remedy for what leaks.audit finds: take each leak out of service, reversibly.

Nothing is deleted outright. Each finding of ``leaks.audit`` is moved into a quarantine
directory (``/var/lib/sandboxguard/quarantine/<UTC time>/`` by default, 0700), under its
own path, so an operator can look at it and put back what was legitimate:

- ``cron_job``: the job line leaves the user's table (through ``crontab -u USER -`` when
  the real crontab is installed, so cron reloads it; else the spool file is rewritten in
  place, keeping its mode and owner, and the spool directory's mtime is bumped, which is
  how cron notices); the removed lines are kept in ``crontab/<user>`` in the quarantine;
- every other kind (``at_job``, ``hermes_script``, ``user_unit``, ``enabled_timer``,
  ``enabled_unit``, ``transient_unit``, ``autostart``, ``tmp_run_dir``, and in baseline mode
  ``ssh_file`` and ``shell_rc``): the file, link or directory is moved (a link is moved as
  a link, never followed). A transient unit that is still loaded keeps running until its
  user manager stops it; moving its file keeps it from coming back.

A finding is removed only if it is still what the audit saw (the same job line at the same
place, the same inode); a changed one is an error naming it. With ``check`` nothing
changes and the report says what would. The report is the envelope of report.py.
"""
import errno
import os
import shutil
import stat
import time

from . import atomicfile, leaks, proc
from . import report as envelope

DEFAULT_QUARANTINE = "/var/lib/sandboxguard/quarantine"
CRONTAB_SEARCH_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
# Everything but a cron job line is a file, link or directory of its own: moved as it is
# (an at job leaves atd's spool, so atd never runs it).
MOVED_KINDS = tuple(kind for kind in leaks.KINDS if kind != "cron_job")


def quarantine_path(base, path):
    """Where *path* goes inside the quarantine directory *base* (pure)."""
    return os.path.join(base, "files", os.path.normpath(path).lstrip("/"))


def without_jobs(data, entries):
    """Split the stored crontab *data* (bytes) around the job lines in *entries* ({line: text}).

    Returns (header, kept, removed): the header lines crontab wrote, the other lines kept,
    and the job lines removed. Line numbers count as ``crontab -l`` prints them
    (leaks.cron_jobs); a line whose text is not the one expected is kept (pure).
    """
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    skipped = 0
    while skipped < leaks.NHEADER_LINES and skipped < len(lines) and lines[skipped].startswith("#"):
        skipped += 1
    kept, removed = [], []
    for number, line in enumerate(lines[skipped:], start=1):
        if entries.get(number) == line.strip():
            removed.append(line)
        else:
            kept.append(line)
    return lines[:skipped], kept, removed


def _ensure_dir(path):
    os.makedirs(path, mode=0o700, exist_ok=True)


def _write_replacing(path, text, like):
    """Replace *path* atomically with *text*, keeping *like*'s (an lstat) mode and owner."""
    atomicfile.write(path, text, mode=stat.S_IMODE(like.st_mode), owner=(like.st_uid, like.st_gid))
    now = time.time()
    os.utime(os.path.dirname(path), (now, now))  # cron rereads tables when the spool directory's mtime moves


def _install_table(user, path, header, kept, info, crontab):
    """Give *user* the table *kept*: the real crontab when there is one, else the spool file."""
    if crontab:
        body = "\n".join(kept)
        if body.strip() and not body.endswith("\n"):
            body += "\n"
        done = proc.run([crontab, "-u", user, "-"], input=body.encode("utf-8", "surrogateescape"),
                        capture_output=True, timeout=30)
        if done.returncode != 0:
            raise OSError(0, "crontab -u %s - failed: %s" % (user, done.stderr.decode(errors="replace").strip()))
        return
    _write_replacing(path, "\n".join(header + kept), info)


def _remove_cron_jobs(table, jobs, base, check, report, crontab):
    user = jobs[0]["user"]
    try:
        info = os.lstat(table)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file any more")
        fd = os.open(table, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(1 << 20)
    except OSError as exc:
        envelope.add_error(report, table, "read", exc.strerror or str(exc))
        return
    header, kept, removed = without_jobs(data, {j["line"]: j["entry"] for j in jobs})
    missing = len(jobs) - len(removed)
    if missing:
        envelope.add_warning(report, "%s: %d job line(s) changed since the audit and were kept" % (table, missing))
    if not removed:
        return
    report["changed"] = True
    report["removed"].extend({"kind": "cron_job", "path": table, "user": user, "entry": line.strip()}
                             for line in removed)
    report["counts"]["cron_job"] += len(removed)
    if check:
        return
    saved = os.path.join(base, "crontab", user)
    try:
        _ensure_dir(os.path.dirname(saved))
        with open(saved, "a", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write("\n".join(removed) + "\n")
        _install_table(user, table, header, kept, info, crontab)
    except (OSError, proc.subprocess.SubprocessError) as exc:
        envelope.add_error(report, table, "crontab", exc.strerror if isinstance(exc, OSError) and exc.strerror
                           else str(exc))


def _move(finding, base, check, report):
    path = finding["path"]
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        envelope.add_error(report, path, "lstat", exc.strerror or str(exc))
        return
    if info.st_uid != finding.get("uid", info.st_uid) or int(info.st_mtime) != finding.get("mtime", int(info.st_mtime)):
        envelope.add_error(report, path, "check", "changed since the audit (owner or mtime): audit again")
        return
    report["changed"] = True
    report["removed"].append({"kind": finding["kind"], "path": path, "user": finding.get("user"),
                              "quarantine": quarantine_path(base, path)})
    report["counts"][finding["kind"]] += 1
    if check:
        return
    dest = quarantine_path(base, path)
    try:
        _ensure_dir(os.path.dirname(dest))
        try:
            os.rename(path, dest)  # the name itself: a link is moved as a link
        except OSError as exc:
            if exc.errno != errno.EXDEV:  # another filesystem: copy, then remove (links kept as links)
                raise
            shutil.move(path, dest)
    except OSError as exc:
        envelope.add_error(report, path, "move", exc.strerror or str(exc))


def remove(findings, quarantine_dir=DEFAULT_QUARANTINE, check=False, now=None, crontab=None):
    """Move each leaks.audit finding out of service into a quarantine directory; return the report.

    *crontab*: the crontab program to install tables of the system spool with; None finds
    Debian's (``/usr/bin/crontab``), ``""`` rewrites the spool file directly (always done for
    a table outside the system spool).
    """
    started = time.monotonic()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    base = os.path.join(quarantine_dir, stamp)
    report = envelope.new_report([quarantine_dir], removed=[], quarantine=base, check=bool(check),
                                 counts=dict.fromkeys(leaks.KINDS, 0))
    if crontab is None:
        crontab = shutil.which("crontab", path=CRONTAB_SEARCH_PATH) or ""
    tables = {}
    for finding in findings:
        if finding["kind"] == "cron_job":
            tables.setdefault(finding["path"], []).append(finding)
    for table, jobs in sorted(tables.items()):
        # The crontab program writes the system spool only: another spool is edited in place.
        system = os.path.dirname(table) == leaks.SPOOL_DIR
        _remove_cron_jobs(table, jobs, base, check, report, crontab if system else "")
    # Children before parents, links before what they may point at.
    for finding in sorted((f for f in findings if f["kind"] in MOVED_KINDS), key=lambda f: -f["path"].count("/")):
        _move(finding, base, check, report)
    report["complete"] = not report["errors"]
    return envelope.finish(report, started)
