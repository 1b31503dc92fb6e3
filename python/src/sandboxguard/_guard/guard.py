# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The guard: strip what a container makes privileged under the sandbox roots, as it happens.

A filesystem-wide fanotify mark (fanotify.py) on each root's filesystem reports every
create, close-after-write, attribute change (chmod, setxattr of security.capability) and
rename into a directory, naming the directory by a file handle and the entry by name.
Mount marks would miss a container's writes: they go through the container's own mount.

Roots are opened once, by the walker's rules (roots.open_root: component by component
from ``/``, no symlink anywhere in the path, system paths refused exactly as ``strip``
refuses them), and the guard works from the descriptor it holds: the fstat identity of
that descriptor is what the handle filter compares, the fanotify mark goes through it,
and full sweeps walk from it. A rescan looks the name up again the same way only to
learn whether it still leads to the same directory; when it does not (gone, replaced,
an ancestor swapped for a symlink) the old root is dropped and the new answer is
refused or guarded on its own merits.

How an event becomes a fix, and why an event is only ever a hint:

1. **Filter by directory handle** before any other work: the mark sees the whole
   filesystem (the engine's own writes under /var/lib/docker arrive by the hundred).
   A handle is decided once: open it (open_by_handle_at, O_PATH) and walk up ``..``
   with O_NOFOLLOW directory fds until a root's (st_dev, st_ino) or the top. Every
   ancestor's handle is cached with the answer (handles carry the inode generation, so
   a reused inode number is a different handle). Any directory rename on the filesystem
   clears the cache: a tree moved in or out changes the answer for all below it.
2. **Fix through a held directory fd**: the directory is opened by handle, the entry
   looked up by name under it without following symlinks, and only a regular file is
   changed, through strip's proven-handle path (O_PATH|O_NOFOLLOW, fstat identity,
   /proc/self/fd/N). A file swapped for a symlink between event and fix is left alone.
3. **A directory moved in** is opened with O_NOFOLLOW under the held directory and
   walked from that descriptor with the race-safe walker (strip.run_opened), in a
   forked job so events keep flowing while it runs.
4. **Queue overflow, a root that appears, changes identity or moves to another
   filesystem (its mark is lost), and the start itself**: a full sweep of the affected
   roots from their held descriptors (a forked job), then back to events; each is
   logged with its reason.

What it does not do: ownership return (a running container is still writing; sweeps do
that), and anything outside the roots. Events our own process causes are skipped.

Where the pieces live (the private package ``_guard``): ``rootset`` (the roots, opened and
marked), ``handles`` (the handle filter), ``events`` (event intake and the fix of one entry),
``jobs`` (the forked walks and engine queries), ``lines`` (the records and lines people read).
This module is the public face: ``Guard`` wires them together and runs the loop.
"""
import errno
import os
import select
import stat
import time

from .. import strip as stripmod
from . import fanotify
from .events import MAX_READS_PER_POLL, READ_BYTES, EventIntake
from .handles import MAX_CACHED_HANDLES, MAX_WALK_UP, HandleFilter
from .jobs import ENGINE_QUERY_TIMEOUT_S, MAX_JOBS, MAX_WAITING_TREES, JobPool
from .lines import file_record, human_line, names, say
from .rootset import WATCH_MASK, Root, RootSet

__all__ = [
    "COALESCE_S", "ENGINE_QUERY_TIMEOUT_S", "FALLBACK", "MAX_CACHED_HANDLES", "MAX_JOBS", "MAX_READS_PER_POLL",
    "MAX_WAITING_TREES", "MAX_WALK_UP", "READ_BYTES", "RESCAN_INTERVAL_S", "SETID_BITS", "WATCH_MASK", "Guard",
    "Root", "file_record", "human_line",
]

RESCAN_INTERVAL_S = 10.0  # how often roots are re-derived (a new sandbox dir, a remount)
COALESCE_S = 0.002  # wait this long after the fd turns readable, so a burst is read in one go
FALLBACK = ("the sweep timer (sandboxguard-sweep.timer) and the events watcher "
            "(sandboxguard watch) still strip, at lifecycle points and on the timer, not in real time")
SETID_BITS = stat.S_ISUID | stat.S_ISGID


class Guard:
    """Watch roots and strip setuid/setgid bits and file capabilities as files change.

    ``roots_source()`` returns (roots, refused[, absent]): roots a list of (roots.OpenRoot,
    source), the descriptors the scope proved (guard_scope.roots_source; the Guard owns and
    closes them), refused [{path, reason}], absent the paths of roots that do not exist yet;
    it is called at start and every ``rescan_interval`` seconds.
    ``engine_source()``, when given, runs in a forked child at start and every rescan and
    returns {"roots": [(path, source)], "error": str or None}: more roots (bind mounts on
    other filesystems) from an engine, asked without ever blocking the event loop.
    ``emit(record)`` receives one dict per fixed file (see file_record); ``log(text)``
    one line per thing an operator should know (sweeps and why, refused roots, errors),
    always one printable line, every container-written name in it through text.escape.
    Touches the system: fanotify marks, and it changes files unless ``dry_run``.
    """

    def __init__(self, roots_source, emit, log, dry_run=False, setuid=True, setgid=True, caps=True,
                 rescan_interval=RESCAN_INTERVAL_S, sweep_budget=0, engine_source=None, coalesce_s=COALESCE_S,
                 devices=True):
        self.roots_source = roots_source
        self.emit = emit
        self.log = say(log)  # names are escaped where a line is built
        self.dry_run = dry_run
        self.actions = tuple(a for a, on in (("setid", setuid or setgid), ("caps", caps), ("device", devices)) if on)
        self.setid_mask = (stat.S_ISUID if setuid else 0) | (stat.S_ISGID if setgid else 0)
        self.do_caps = caps
        self.rescan_interval = rescan_interval
        self.sweep_budget = sweep_budget
        self.fan_fd = None
        self.stopping = False
        self.pid = os.getpid()
        self.stats = {"batches": 0, "events": 0, "filtered": 0, "fixed": 0, "sweeps": 0, "overflows": 0,
                      "trees": 0, "errors": 0}
        self.options = None
        self.next_rescan = 0.0
        self.engine_source = engine_source
        self.coalesce_s = coalesce_s
        self.engine_said = None
        self.engines_failed = []
        self.rootset = RootSet(roots_source, self.log)
        self.handles = HandleFilter(self.rootset, self.stats, self.log)
        walk_options = {"budget": sweep_budget, "dry_run": dry_run, "actions": self.actions,
                        "setuid": bool(self.setid_mask & stat.S_ISUID), "setgid": bool(self.setid_mask & stat.S_ISGID)}
        self.pool = JobPool(walk_options, self.rootset, self.emit_file, self.log, self.stats, self._engine_answered)
        self.intake = EventIntake(self, self.handles, self.pool)

    # -- setup ---------------------------------------------------------------------
    def open(self):
        """fanotify_init; raises fanotify.FanotifyUnavailable with the reason."""
        self.fan_fd = fanotify.init()
        # Since Linux 5.13 an unprivileged fanotify_init succeeds with FID reports, but a
        # filesystem mark still needs CAP_SYS_ADMIN (fanotify_mark(2)): probe one now. Other
        # errors belong to that filesystem (an overlayfs root without decodable handles says
        # EXDEV) and are reported per root when it is marked.
        try:
            fanotify.mark_filesystem(self.fan_fd, "/", WATCH_MASK)
            fanotify.mark_filesystem(self.fan_fd, "/", WATCH_MASK, remove=True)
        except OSError as exc:
            self._refuse_on_eperm(exc, "fanotify filesystem marks need root (CAP_SYS_ADMIN)")
        # Every event names its directory by a file handle, and open_by_handle_at needs
        # CAP_DAC_READ_SEARCH: without it every event would be dropped as "gone" and only the
        # start sweep would ever strip. Docker's default capabilities lack it (a guard in a
        # container), so do systemd units whose bounding set leaves it out: refuse to start.
        try:
            fanotify.check_handle_permission()
        except OSError as exc:
            self._refuse_on_eperm(exc, "open_by_handle_at needs CAP_DAC_READ_SEARCH (events name their directory "
                                       "by a file handle)")
        self.options = stripmod.StripOptions(actions=self.actions, dry_run=self.dry_run,
                                             setuid=bool(self.setid_mask & stat.S_ISUID),
                                             setgid=bool(self.setid_mask & stat.S_ISGID))

    def _refuse_on_eperm(self, exc, text):
        """EPERM from a start-up check: close the fanotify fd and refuse to start, naming what is
        missing; any other error is left to the per-root checks."""
        if exc.errno == errno.EPERM:
            os.close(self.fan_fd)
            self.fan_fd = None
            raise fanotify.FanotifyUnavailable(exc.errno, text) from None

    def close(self):
        self.pool.close()
        self.rootset.close()
        if self.fan_fd is not None:
            os.close(self.fan_fd)
            self.fan_fd = None

    def refresh_roots(self, reason):
        """Re-read the roots; mark new filesystems; sweep roots that are new or changed.

        Returns the roots that were queued for a full sweep.
        """
        new = self.rootset.refresh(self.fan_fd)
        self.handles.clear()
        if new:
            self.log("guarding %s" % names(r.path for r in new))
            self.start_sweep(new, reason)
        return new

    def probe_roots(self):
        """Try a filesystem mark on each existing root (added and removed again).

        Returns (tried, failures): the paths tried and [(path, reason)] where it fails.
        """
        return self.rootset.probe(self.fan_fd)

    # -- events and jobs (the collaborators do the work) -----------------------------
    def root_of_handle(self, fsid, handle):
        return self.handles.root_of(fsid, handle)

    def read_batch(self):
        return self.intake.read_batch()

    def handle_events(self, events, read_at):
        self.intake.handle_events(events, read_at)

    def fix_entry(self, dir_fd, name):
        return self.intake.fix_entry(dir_fd, name)

    def emit_file(self, record):
        """Count one fixed (or failed) file and hand its record to emit."""
        if record.get("error"):
            self.stats["errors"] += 1
        else:
            self.stats["fixed"] += 1
        self.emit(record)

    def start_sweep(self, roots, reason):
        self.pool.start_sweep(roots, reason)

    def start_waiting(self):
        self.pool.start_waiting()

    def read_job(self, read_fd):
        self.pool.read(read_fd)

    def start_engine_query(self):
        if self.engine_source is not None:
            self.pool.start_engine_query(self.engine_source)

    def _engine_answered(self, answer):
        failed = sorted("%s (%s): %s" % (row.get("name"), row.get("url"), row.get("error"))
                        for row in answer.get("engines") or () if isinstance(row, dict) and row.get("error"))
        if failed != self.engines_failed:  # each engine on its own: say which failed, once per change
            self.engines_failed = failed
            for line in failed:
                self.log("engine %s: not asked; its containers' bind mounts on another filesystem are not guarded "
                         "in real time (asked again at every rescan)" % line)
        error = answer.get("error") or answer.get("worker_error")
        if error:
            if self.engine_said != error:
                self.engine_said = error
                self.log("no engine to ask (%s): guarding the host-derived roots only; a bind mount below a root "
                         "that is another filesystem is not guarded in real time" % error)
            return
        self.engine_said = None
        roots = sorted(tuple(item) for item in answer.get("roots") or ())
        if roots != sorted(self.rootset.extra):
            self.rootset.extra = roots
            self.refresh_roots("a container's bind mount on another filesystem below a root")

    def wait_jobs(self, timeout):
        """Collect running jobs for up to `timeout` seconds (tests and a clean stop)."""
        return self.pool.wait(timeout)

    # -- the loop --------------------------------------------------------------------
    def stop(self, *_args):
        self.stopping = True

    def start(self):
        """Open fanotify (if not yet), mark the roots' filesystems and sweep them once."""
        if self.fan_fd is None:
            self.open()
        self.refresh_roots("start: events before now were not seen")
        if not self.rootset.roots:
            answer = self.roots_source()
            for opened, _source in answer[0]:
                opened.close()
            wanted = list(answer[2]) if len(answer) > 2 else []
            self.log("nothing to guard yet (%s: none exists); looking again every %g s" % (
                names(wanted) or "no roots given", self.rescan_interval))
        self.start_engine_query()
        self.next_rescan = time.monotonic() + self.rescan_interval

    def poll(self, timeout, wake_fd=None):
        """Wait up to `timeout` seconds for events or finished jobs and handle them; re-read
        the roots when their interval is up. One step of run()."""
        timeout = max(0.0, min(timeout, self.next_rescan - time.monotonic()))
        fds = [self.fan_fd, *self.pool.jobs]
        if wake_fd is not None:
            fds.append(wake_fd)
        ready = select.select(fds, [], [], timeout)[0]
        if wake_fd is not None and wake_fd in ready:
            try:
                os.read(wake_fd, 512)
            except BlockingIOError:
                pass
        if self.stopping:
            return
        if self.fan_fd in ready:
            self.read_batch()
        for fd in ready:
            if fd in self.pool.jobs:
                self.read_job(fd)
        self.start_waiting()
        if time.monotonic() >= self.next_rescan:
            self.refresh_roots("root new or changed since the last look")
            self.start_engine_query()
            self.next_rescan = time.monotonic() + self.rescan_interval

    def run(self, wake_fd=None):
        """start(), then poll() until stop() is called (a signal handler may call it).

        ``wake_fd``: a readable fd that ends a wait early (signal.set_wakeup_fd's pipe),
        so a stop takes effect at once, not at the next event.
        """
        self.start()
        while not self.stopping:
            self.poll(self.rescan_interval, wake_fd)
