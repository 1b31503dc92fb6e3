# GENERATED from python/src/sandboxguard/_fleet/leaks_remove.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The remedy for what leaks.audit finds: take each leak out of service, reversibly.

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
place, the same inode); a changed one is an error naming it. With ``dry_run`` nothing
changes and the report says what would. The report is the envelope of report.py.

Nothing is done by path below a directory the agent can write (docs/architecture.md):
the directory holding a finding is opened component by component (safefs.open_dir: no
symlink followed below a directory another user can change), the name is checked by
``fstat`` to be the inode the audit saw, and it moves with ``renameat`` between that held
directory and the quarantine's (safemove.move_at; across file systems, a copy through
descriptors and the source removed under its held parent). A crontab is read through its
spool's descriptor (a regular file with one link, never a FIFO) and written back with
atomicfile.write_at under it; the spool's mtime is bumped through the same descriptor.
The quarantine is root's: every directory in it made by safefs.make_dir_at, 0700.
"""
import os
import shutil
import time

from .. import leaks
from .. import report as envelope
from .._core import atomicfile, proc, safefs, safemove
from .._core.crontab_header import is_header_line
from .._core.text import escape
from .._leaks import cron

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
    while skipped < len(lines) and is_header_line(skipped, lines[skipped]):
        skipped += 1
    kept, removed = [], []
    for number, line in enumerate(lines[skipped:], start=1):
        if entries.get(number) == line.strip():
            removed.append(line)
        else:
            kept.append(line)
    return lines[:skipped], kept, removed


def _name_in(path):
    """(parent path, last component) of an absolute finding path; PathRefused for anything else."""
    head, name = os.path.split(path)
    if not os.path.isabs(path) or name in ("", ".", "..") or ".." in path.split("/"):
        raise safefs.PathRefused(path, "is not an absolute path to a file; audit again")
    return head or "/", name


class _Quarantine:
    """This run's quarantine directory ``<quarantine_dir>/<stamp>``, made on first use.

    ``quarantine_dir`` is opened (and made, 0700) by safefs.open_dir and must be a
    directory only root can change; below it every directory is made by safefs.make_dir_at
    (mkdirat, reopened O_NOFOLLOW, fstat identity), root-owned 0700. Nobody else can write
    there, so free names are chosen by lstat under its descriptors.
    """

    def __init__(self, quarantine_dir, stamp):
        self.top = quarantine_dir
        self.base = os.path.join(quarantine_dir, stamp)
        self.stamp = stamp
        self.fd = None

    def _base_fd(self):
        if self.fd is None:
            with safefs.open_dir(self.top, create=True, mode=0o700) as top:
                if not safefs.trusted_dir(top.st):
                    raise safefs.PathRefused(self.top, "the quarantine directory can be changed by %s: give a "
                                             "directory only root can write (chown root; chmod 0700)"
                                             % safefs.writer_of(top.st))
                self.fd, _created = safefs.make_dir_at(top.fd, self.stamp, 0o700, path_for_errors=self.base)
        return self.fd

    def dir_at(self, parts):
        """A new descriptor of ``<base>/<parts...>``, each directory made 0700 when missing."""
        fd = os.dup(self._base_fd())
        shown = self.base
        try:
            for part in parts:
                shown = os.path.join(shown, part)
                child, _created = safefs.make_dir_at(fd, part, 0o700, path_for_errors=shown)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _free_name(dir_fd, name):
    """``name``, or ``name.1``, ``name.2``... : the first that does not exist in our own directory."""
    candidate, number = name, 0
    while safefs.lstat_at(dir_fd, candidate) is not None:
        number += 1
        candidate = "%s.%d" % (name, number)
    return candidate


def _read_table(table):
    """(bytes, fstat, spool Dir) of a crontab in its spool, read through descriptors (a regular
    file with one link, never a FIFO or a link); (None, None, None) when it is gone."""
    head, name = _name_in(table)
    spool = safefs.open_dir(head)
    try:
        data, info = safefs.read_at(spool.fd, name, single_link=True, path_for_errors=table)
    except BaseException:
        spool.close()
        raise
    if data is None:
        spool.close()
        return None, None, None
    return data, info, spool


def _write_replacing(spool, name, text, like):
    """Replace the table ``name`` in the held spool with ``text``, keeping *like*'s (its fstat)
    plain mode and owner; then bump the spool directory's mtime through its descriptor
    (cron rereads tables when it moves)."""
    atomicfile.write_at(spool.fd, name, text, mode=safefs.plain_mode(like.st_mode), owner=(like.st_uid, like.st_gid))
    now = time.time()
    os.utime(spool.fd, (now, now))


def _install_table(user, spool, name, header, kept, info, crontab):
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
    _write_replacing(spool, name, "\n".join(header + kept), info)


def _save_removed(quarantine, user, removed):
    """Append the removed job lines to ``crontab/<user>`` in the quarantine (0600, O_NOFOLLOW)."""
    if not user or "/" in user or user in (".", ".."):
        raise safefs.PathRefused(str(user), "is not a user name the removed lines can be kept under")
    dir_fd = quarantine.dir_at(("crontab",))
    try:
        fd = os.open(user, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write("\n".join(removed) + "\n")


def _remove_cron_jobs(table, jobs, quarantine, dry_run, report, crontab):
    user = jobs[0]["user"]
    try:
        data, info, spool = _read_table(table)
    except (OSError, ValueError) as exc:
        envelope.add_error(report, table, "read", _why(exc))
        return
    if data is None:
        return
    with spool:
        header, kept, removed = without_jobs(data, {j["line"]: j["entry"] for j in jobs})
        missing = len(jobs) - len(removed)
        if missing:
            envelope.add_warning(report, "%s: %d job line(s) changed since the audit and were kept"
                                 % (escape(table), missing))
        if not removed:
            return
        report["changed"] = True
        report["removed"].extend({"kind": "cron_job", "path": table, "user": user, "entry": line.strip()}
                                 for line in removed)
        report["counts"]["cron_job"] += len(removed)
        if dry_run:
            return
        try:
            _save_removed(quarantine, user, removed)
            _install_table(user, spool, os.path.basename(table), header, kept, info, crontab)
        except (OSError, ValueError, proc.subprocess.SubprocessError) as exc:
            envelope.add_error(report, table, "crontab", _why(exc))


def _why(exc):
    if isinstance(exc, safefs.PathRefused):
        return exc.reason
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _the_one_seen(finding, st):
    """Whether the lstat ``st`` is the inode the audit reported in ``finding`` (pure)."""
    if "ino" in finding and (st.st_dev, st.st_ino) != (finding.get("dev"), finding["ino"]):
        return False
    return st.st_uid == finding.get("uid", st.st_uid) and int(st.st_mtime) == finding.get("mtime", int(st.st_mtime))


def _move(finding, quarantine, dry_run, report):
    """Move one finding into the quarantine: its parent proven by safefs.open_dir, the name
    checked by fstat to be the inode the audit saw, then safemove.move_at (renameat between
    the held directories, or a copy through descriptors across file systems)."""
    path = finding["path"]
    op = "open"
    try:
        head, name = _name_in(path)
        with safefs.open_dir(head) as parent:
            op = "check"
            handle, st = safefs.open_handle_at(parent.fd, name)
            os.close(handle)
            if not _the_one_seen(finding, st):
                envelope.add_error(report, path, "check", "not what the audit saw (replaced, or its owner or mtime "
                                   "changed since): left where it is; audit again")
                return
            entry = {"kind": finding["kind"], "path": path, "user": finding.get("user"),
                     "quarantine": quarantine_path(quarantine.base, path)}
            if dry_run:
                _count(report, entry)
                return
            op = "move"
            dst_fd = quarantine.dir_at(["files"] + [p for p in head.split("/") if p not in ("", ".")])
            try:
                dst_name = _free_name(dst_fd, name)
                moved = safemove.move_at(parent.fd, name, dst_fd, dst_name, (st.st_dev, st.st_ino), path)
            finally:
                os.close(dst_fd)
    except FileNotFoundError:
        return  # gone since the audit (or its directory is): nothing to take out of service
    except (OSError, ValueError) as exc:
        envelope.add_error(report, path, op, _why(exc))
        return
    entry["quarantine"] = os.path.join(os.path.dirname(entry["quarantine"]), dst_name)
    if moved.how == "copied":
        entry["copied"] = moved.entries
    _count(report, entry)
    for where, reason in moved.left:
        envelope.add_error(report, where, "move", "%s (the rest of %s was moved)" % (reason, escape(path)))


def _count(report, entry):
    report["changed"] = True
    report["removed"].append(entry)
    report["counts"][entry["kind"]] += 1


def remove(findings, quarantine_dir=DEFAULT_QUARANTINE, dry_run=False, now=None, crontab=None, check=None):
    """Move each leaks.audit finding out of service into a quarantine directory; return the report.

    *dry_run*: change nothing, report what would be removed (``check`` is its deprecated
    alias). *crontab*: the crontab program to install tables of the system spool with; None
    finds Debian's (``/usr/bin/crontab``), ``""`` rewrites the spool file directly (always
    done for a table outside the system spool).
    """
    dry_run = envelope.dry_run_arg(dry_run, check, "leaks_remove.remove")
    started = time.monotonic()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    quarantine = _Quarantine(quarantine_dir, stamp)
    # "check": the 1.x name of the "dry_run" key, kept beside it until 2.0.0.
    report = envelope.new_report([quarantine_dir], removed=[], quarantine=quarantine.base, dry_run=dry_run,
                                 check=dry_run, counts=dict.fromkeys(leaks.KINDS, 0))
    try:
        _remove_all(findings, quarantine, dry_run, report, crontab)
    finally:
        quarantine.close()
    report["complete"] = not report["errors"]
    return envelope.finish(report, started)


def _remove_all(findings, quarantine, dry_run, report, crontab):
    if crontab is None:
        crontab = shutil.which("crontab", path=CRONTAB_SEARCH_PATH) or ""
    tables = {}
    for finding in findings:
        if finding["kind"] == "cron_job":
            tables.setdefault(finding["path"], []).append(finding)
    for table, jobs in sorted(tables.items()):
        # The crontab program writes the system spool only: another spool is edited in place.
        system = os.path.dirname(table) == cron.SPOOL_DIR
        _remove_cron_jobs(table, jobs, quarantine, dry_run, report, crontab if system else "")
    # Children before parents, links before what they may point at.
    for finding in sorted((f for f in findings if f["kind"] in MOVED_KINDS), key=lambda f: -f["path"].count("/")):
        _move(finding, quarantine, dry_run, report)
