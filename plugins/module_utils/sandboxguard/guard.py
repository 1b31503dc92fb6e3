# GENERATED from python/src/sandboxguard/guard.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The guard: strip what a container makes privileged under the sandbox roots, as it happens.

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
"""
import errno
import json
import os
import select
import signal
import stat
import time

from . import fanotify
from . import strip as stripmod
from .roots import OpenRoot, RootRefused, open_root
from .text import escape, one_line

_WATCH_FILES = fanotify.FAN_ATTRIB | fanotify.FAN_CREATE | fanotify.FAN_MOVED_TO | fanotify.FAN_CLOSE_WRITE
WATCH_MASK = _WATCH_FILES | fanotify.FAN_ONDIR | fanotify.FAN_EVENT_ON_CHILD
RESCAN_INTERVAL_S = 10.0  # how often roots are re-derived (a new sandbox dir, a remount)
MAX_JOBS = 4  # forked walks (moved-in trees, full sweeps) at once; the rest wait
MAX_WAITING_TREES = 256  # moved-in trees waiting with their directory held open; beyond: a sweep of the root
MAX_CACHED_HANDLES = 200000  # handle -> root decisions kept before the cache starts over
MAX_WALK_UP = 4096  # '..' steps before a directory counts as outside every root
ENGINE_QUERY_TIMEOUT_S = 60.0  # a forked engine query older than this is killed and asked again
MAX_READS_PER_POLL = 16  # reads of events (256 KiB each) handled before the loop looks at anything else
READ_BYTES = 1 << 18
COALESCE_S = 0.002  # wait this long after the fd turns readable, so a burst is read in one go
FALLBACK = ("the sweep timer (sandboxguard-sweep.timer) and the events watcher "
            "(sandboxguard watch) still strip, at lifecycle points and on the timer, not in real time")
SETID_BITS = stat.S_ISUID | stat.S_ISGID
_DIR_READ = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_PATH = getattr(os, "O_PATH", 0o10000000) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Root:
    """A root being guarded: opened once by roots.open_root (component by component, no
    symlink anywhere in its path) and worked on from that descriptor only: its identity
    (st_dev, st_ino) filters events, it is the mount fd for handles, the fanotify mark
    goes through it and full sweeps walk from it. The name is looked up again only at a
    rescan, to see whether it still leads to the same directory."""

    __slots__ = ("dev", "fd", "fsid", "ino", "path", "source", "st")

    def __init__(self, opened, source):
        self.path = opened.path
        self.source = source
        self.fd = opened.fd  # O_RDONLY|O_DIRECTORY: open_by_handle_at refuses an O_PATH mount fd (EBADF)
        self.st = opened.st
        self.dev, self.ino = opened.st.st_dev, opened.st.st_ino
        self.fsid = os.fstatvfs(self.fd).f_fsid

    def opened(self):
        """An OpenRoot for the walker around the held descriptor (which the Root keeps)."""
        return OpenRoot(self.path, self.fd, self.st)

    def __repr__(self):
        return "Root(%r)" % self.path


def _fsid_key(pair):
    """The kernel's two-int fsid as glibc's statvfs f_fsid packs it (val[0] | val[1] << 32)."""
    return (pair[0] & 0xFFFFFFFF) | ((pair[1] & 0xFFFFFFFF) << 32)


def _fd_path(fd):
    try:
        return os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        return "?"


def _where(opened):
    """Where a held directory is now (/proc/self/fd), or the path it was proven at."""
    now = _fd_path(opened.fd)
    return now if now.startswith("/") and not now.endswith(" (deleted)") else opened.path


def file_record(entry, latency_ms, via):
    """One line of output for a fixed file (the --json object): the report entry's names."""
    return {"path": entry["path"], "actions": entry["actions"], "mode_before": entry["mode_before"],
            "mode_after": entry.get("mode_after"), "caps_before": entry.get("caps_before"),
            "latency_ms": latency_ms, "via": via, "error": entry.get("error")}


def human_line(record):
    """The line people read for one fixed file: the name through text.escape (a newline or
    an escape sequence a container put in a name never forges a line)."""
    bits = "%s -> %s" % (record["mode_before"], record["mode_after"])
    if record["caps_before"]:
        bits += ", had %s" % escape(record["caps_before"])
    when = "" if record["latency_ms"] is None else " %.0f ms after the change" % record["latency_ms"]
    verb = "FAILED to strip" if record.get("error") else "stripped"
    tail = ": %s" % one_line(record["error"]) if record.get("error") else ""
    return "%s %s (%s; %s)%s [%s]%s" % (verb, escape(record["path"]), ", ".join(record["actions"]), bits, when,
                                        record["via"], tail)


class Guard:
    """Watch roots and strip setuid/setgid bits and file capabilities as files change.

    ``roots_source()`` returns (roots, refused): roots a list of (path, source) the host
    derived or the operator named (already refused paths are dropped by check_root here
    too); it is called at start and every ``rescan_interval`` seconds.
    ``engine_source()``, when given, runs in a forked child at start and every rescan and
    returns {"roots": [(path, source)], "error": str or None}: more roots (bind mounts on
    other filesystems) from an engine, asked without ever blocking the event loop.
    ``emit(record)`` receives one dict per fixed file (see file_record); ``log(text)``
    one line per thing an operator should know (sweeps and why, refused roots, errors).
    Touches the system: fanotify marks, and it changes files unless ``dry_run``.
    """

    def __init__(self, roots_source, emit, log, dry_run=False, setuid=True, setgid=True, caps=True,
                 rescan_interval=RESCAN_INTERVAL_S, sweep_budget=0, engine_source=None, coalesce_s=COALESCE_S):
        self.roots_source = roots_source
        self.emit = emit
        self.log = lambda text: log(one_line(text))  # names are escaped where a line is built
        self.dry_run = dry_run
        self.actions = tuple(a for a, on in (("setid", setuid or setgid), ("caps", caps)) if on)
        self.setid_mask = (stat.S_ISUID if setuid else 0) | (stat.S_ISGID if setgid else 0)
        self.do_caps = caps
        self.rescan_interval = rescan_interval
        self.sweep_budget = sweep_budget
        self.fan_fd = None
        self.roots = {}  # (dev, ino) -> Root
        self.marked = {}  # st_dev -> path the mark was placed through
        self.handle_cache = {}  # (fsid, handle) -> Root or None
        self.jobs = {}  # read fd -> job dict (pid, kind, paths, chunks, started)
        self.waiting = []  # jobs not started yet (MAX_JOBS running); a tree job holds its directory fd
        self.stopping = False
        self.pid = os.getpid()
        self.stats = {"batches": 0, "events": 0, "filtered": 0, "fixed": 0, "sweeps": 0, "overflows": 0,
                      "trees": 0, "errors": 0}
        self.options = None
        self.next_rescan = 0.0
        self.engine_source = engine_source
        self.coalesce_s = coalesce_s
        self.engine_roots = []  # (path, source) the last engine query added
        self.said = {}  # path -> the refusal last logged for it (said again only when it changes)
        self.engine_said = None
        self.handle_errors_said = set()  # errnos of open_by_handle_at already logged

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

    @staticmethod
    def _probe_handles(fd):
        """Open a held directory again by its own file handle; raises OSError when this
        filesystem or this process cannot (EPERM, EOPNOTSUPP...)."""
        os.close(fanotify.open_by_handle(fd, fanotify.handle_of_fd(fd), _DIR_PATH))

    def close(self):
        for job in list(self.jobs.values()):
            self._kill_job(job)
        self.jobs.clear()
        for job in self.waiting:
            for opened in job.get("opened", ()) if job.get("owned") else ():
                opened.close()
        self.waiting.clear()
        for root in self.roots.values():
            os.close(root.fd)
        self.roots.clear()
        if self.fan_fd is not None:
            os.close(self.fan_fd)
            self.fan_fd = None

    def refresh_roots(self, reason):
        """Re-read the roots; mark new filesystems; sweep roots that are new or changed.

        Returns the roots that were queued for a full sweep.
        """
        wanted, refused = self.roots_source()
        wanted = list(wanted) + [tuple(item) for item in self.engine_roots]
        said, self.said = self.said, {}
        for item in refused:
            self._say_refusal(said, item["path"], "refused root %s: %s" % (escape(item["path"]), item["reason"]))
        old, current = self.roots, {}
        for path, source in wanted:
            try:
                opened = open_root(path)  # refused exactly as strip refuses it
            except RootRefused as exc:
                if exc.reason != "does not exist":  # a sandbox dir not made yet: picked up when it is
                    self._say_refusal(said, path, "refused root %s" % exc)
                continue
            except OSError as exc:
                self._say_refusal(said, path, "cannot open root %s: %s" % (escape(path), exc.strerror))
                continue
            key = (opened.st.st_dev, opened.st.st_ino)
            if key in current or key in old:
                opened.close()  # the descriptor held since it was first proven stays the one used
                current.setdefault(key, old.get(key))
                continue
            current[key] = Root(opened, source)
        for key, root in old.items():
            if key not in current:
                self.log("root %s is gone or is another directory now: no longer guarded" % escape(root.path))
                os.close(root.fd)
        new = [root for key, root in current.items() if key not in old]
        self.roots = current
        for root in new:
            # Marked through every new root, even on a filesystem marked before: adding a mark
            # again is a no-op, and a st_dev seen before may be another filesystem now (an
            # anonymous device number is reused once the old tmpfs is gone).
            try:
                self._probe_handles(root.fd)
            except OSError as exc:
                self.log("cannot watch %s (open_by_handle_at: %s): no real-time strip there, only sweeps"
                         % (escape(root.path), os.strerror(exc.errno)))
                continue
            try:
                fanotify.mark_filesystem(self.fan_fd, root.fd, WATCH_MASK)  # through the held fd
            except OSError as exc:
                self.log("cannot watch %s (fanotify_mark: %s): no real-time strip there, only sweeps"
                         % (escape(root.path), exc.strerror))
                continue
            self.marked[root.dev] = root.path
        self.handle_cache.clear()
        if new:
            self.log("guarding %s" % ", ".join(escape(r.path) for r in new))
            self.start_sweep(new, reason)
        return new

    def _say_refusal(self, said, path, line):
        """Log why a root is not guarded the first time, and again only when the reason
        changes (or after the root was accepted in between): not at every rescan."""
        self.said[path] = line
        if said.get(path) != line:
            self.log(line)

    def probe_roots(self):
        """Try a filesystem mark on each existing root (added and removed again).

        Returns (tried, failures): the paths tried and [(path, reason)] where it fails.
        """
        tried, failures = [], []
        for path, _source in self.roots_source()[0]:
            try:
                opened = open_root(path)
            except RootRefused:
                continue
            with opened:
                tried.append(opened.path)
                try:
                    self._probe_handles(opened.fd)
                except OSError as exc:
                    failures.append((opened.path, "open_by_handle_at: %s" % os.strerror(exc.errno)))
                    continue
                try:
                    fanotify.mark_filesystem(self.fan_fd, opened.fd, WATCH_MASK)
                    fanotify.mark_filesystem(self.fan_fd, opened.fd, WATCH_MASK, remove=True)
                except OSError as exc:
                    failures.append((opened.path, exc.strerror or str(exc)))
        return tried, failures

    # -- deciding which directory an event is in ---------------------------------
    def root_of_handle(self, fsid, handle):
        """The Root a directory (by handle) lies in, or None; cached (see module doc)."""
        key = (fsid, handle)
        if key in self.handle_cache:
            return self.handle_cache[key]
        mount = next((r for r in self.roots.values() if r.fsid == fsid), None)
        if mount is None:
            self.handle_cache[key] = None
            return None
        try:
            fd = fanotify.open_by_handle(mount.fd, handle, _DIR_PATH)
        except OSError as exc:
            if exc.errno not in (errno.ESTALE, errno.ENOENT) and exc.errno not in self.handle_errors_said:
                self.handle_errors_said.add(exc.errno)  # once per kind: say it, never drop events silently
                self.stats["errors"] += 1
                self.log("cannot open an event's directory by its handle (open_by_handle_at: %s): events there "
                         "are not decided; the sweeps still strip" % os.strerror(exc.errno))
            return None  # gone already (ESTALE), or not reachable from the root's mount; nothing to fix
        seen = [key]
        found = None
        try:
            for _hop in range(MAX_WALK_UP):
                st = os.fstat(fd)
                root = self.roots.get((st.st_dev, st.st_ino))
                if root is not None:
                    found = root
                    break
                parent = os.open("..", _DIR_PATH, dir_fd=fd)
                pst = os.fstat(parent)
                if (pst.st_dev, pst.st_ino) == (st.st_dev, st.st_ino):
                    os.close(parent)
                    break  # the top
                os.close(fd)
                fd = parent
                try:
                    pkey = (fsid, fanotify.handle_of_fd(fd))
                except OSError:
                    continue
                if pkey in self.handle_cache:
                    found = self.handle_cache[pkey]
                    break
                seen.append(pkey)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(self.handle_cache) > MAX_CACHED_HANDLES:
            self.handle_cache.clear()
        for item in seen:
            self.handle_cache[item] = found
        return found

    # -- events --------------------------------------------------------------------
    def read_batch(self):
        """Read and handle what the fanotify fd holds; returns the number of events."""
        total = 0
        if self.coalesce_s:
            # Let a burst gather: one read of many events costs far less than many reads of
            # a few (measured: ~60 us of Python per batch, 3 events per batch under a build).
            time.sleep(self.coalesce_s)
        for _read in range(MAX_READS_PER_POLL):  # then back to poll: jobs, rescans and a stop get their turn
            if self.stopping:
                break
            events = fanotify.read_events(self.fan_fd, READ_BYTES)
            if not events:
                break
            total += len(events)
            self.handle_events(events, time.time())
        return total

    def handle_events(self, events, read_at):
        """Decide and fix one batch of events (see the module doc for the steps)."""
        self.stats["batches"] += 1
        self.stats["events"] += len(events)
        if any(e.mask & fanotify.FAN_Q_OVERFLOW for e in events):
            self.stats["overflows"] += 1
            self.log("event queue overflow (events were lost): full sweep of every root, then back to events")
            self.handle_cache.clear()
            self.start_sweep(list(self.roots.values()), "queue overflow")
            return
        dirs = {}  # (fsid, handle) -> {name: is_moved_dir}
        for event in events:
            if event.dir_handle is None or event.name is None:
                continue
            moved_dir = bool(event.mask & fanotify.FAN_ONDIR and event.mask & fanotify.FAN_MOVED_TO)
            if moved_dir:
                self.handle_cache.clear()  # a tree moved: the answer may change below it
            if event.mask & fanotify.FAN_ONDIR and not moved_dir:
                continue  # a new empty directory, or a directory's own attributes
            names = dirs.setdefault((_fsid_key(event.fsid), event.dir_handle), {})
            names[event.name] = names.get(event.name, False) or moved_dir
        for (fsid, handle), names in dirs.items():
            root = self.root_of_handle(fsid, handle)
            if root is None:
                self.stats["filtered"] += 1
                continue
            try:
                dfd = fanotify.open_by_handle(root.fd, handle, _DIR_READ)
            except OSError:
                continue  # the directory went away
            try:
                for name, moved_dir in names.items():
                    if moved_dir:
                        self.start_tree(dfd, name, root, read_at)
                    else:
                        self.fix_entry(dfd, name)
            finally:
                os.close(dfd)

    def fix_entry(self, dir_fd, name):
        """Fix one entry of a held directory if it is a privileged regular file.

        Returns the emitted record or None. Never follows a symlink: the entry is looked
        at with lstat semantics and changed only through strip.fix_file_at (the proven
        handle, the same inode as the lstat). The lstat's ctime (when the file last
        changed, e.g. was made setuid) gives latency_ms.
        """
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return None  # gone again
        if not stat.S_ISREG(st.st_mode):
            return None
        try:
            entry = stripmod.fix_file_at(dir_fd, name, self.options, expected=(st.st_dev, st.st_ino))
        except stripmod.ChangedUnderUs:
            return None  # replaced since the lstat: its own event follows
        except OSError as exc:
            self.stats["errors"] += 1
            self.log("did not fix %s: %s" % (escape("%s/%s" % (_fd_path(dir_fd), os.fsdecode(name))), exc.strerror))
            return None
        if entry is None:
            return None
        entry["path"] = "%s/%s" % (_fd_path(dir_fd), os.fsdecode(name))
        record = file_record(entry, round(max(0.0, time.time() - st.st_ctime) * 1000.0, 1), "event")
        self._emit(record)
        return record

    def _emit(self, record):
        if record.get("error"):
            self.stats["errors"] += 1
        else:
            self.stats["fixed"] += 1
        self.emit(record)

    # -- forked walks ----------------------------------------------------------------
    def start_tree(self, dir_fd, name, root, read_at):
        """Walk a directory moved in under a held directory (a forked job) from the
        descriptor opened here (O_NOFOLLOW under dir_fd): the walk never looks the tree up
        by name, so moving it on and leaving a symlink in its place steers nothing."""
        try:
            fd = os.open(name, _DIR_READ, dir_fd=dir_fd)
        except OSError:
            return  # moved on again, or a symlink: never followed
        if sum(1 for job in self.waiting if job["kind"] == "tree") >= MAX_WAITING_TREES:
            os.close(fd)  # descriptors stay bounded: the root's sweep finds the tree's files too
            self.start_sweep([root], "more trees moved in than the guard holds open")
            return
        self.stats["trees"] += 1
        opened = OpenRoot(_fd_path(fd), fd, os.fstat(fd))
        self._queue_job({"kind": "tree", "paths": [opened.path], "opened": [opened], "owned": True,
                         "reason": "directory moved in", "read_at": read_at})

    def start_sweep(self, roots, reason):
        """Queue a full sweep of `roots` (walked from their held descriptors); a root that
        already has a sweep waiting is not queued twice."""
        queued = {id(r) for job in self.waiting if job["kind"] == "sweep" for r in job["roots"]}
        roots = [r for r in roots if id(r) not in queued]
        if not roots:
            return
        self.stats["sweeps"] += 1
        paths = [r.path for r in roots]
        self.log("full sweep of %s (%s)" % (", ".join(escape(p) for p in paths), reason))
        self._queue_job({"kind": "sweep", "paths": paths, "roots": roots, "reason": reason, "read_at": None})

    def start_engine_query(self):
        """Ask the engine (engine_source) in a forked child unless a query is running; one
        stuck longer than ENGINE_QUERY_TIMEOUT_S is killed."""
        if self.engine_source is None:
            return
        for fd, job in list(self.jobs.items()):
            if job["kind"] == "engine":
                if time.monotonic() - job["started"] < ENGINE_QUERY_TIMEOUT_S:
                    return
                self.log("the engine did not answer within %g s: asking again" % ENGINE_QUERY_TIMEOUT_S)
                self._kill_job(job)
                del self.jobs[fd]
                os.close(fd)
        source = self.engine_source

        def ask():
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, signal.SIG_DFL)
            return source()

        pid, read_fd = stripmod._fork_json(ask)
        os.set_blocking(read_fd, False)
        self.jobs[read_fd] = {"kind": "engine", "paths": [], "pid": pid, "chunks": [], "started": time.monotonic(),
                              "read_at": None, "reason": "rescan"}

    def _finish_engine_query(self, answer):
        error = answer.get("error") or answer.get("worker_error")
        if error:
            if self.engine_said != error:
                self.engine_said = error
                self.log("no engine to ask (%s): guarding the host-derived roots only; a bind mount below a root "
                         "that is another filesystem is not guarded in real time" % error)
            return
        self.engine_said = None
        roots = sorted(tuple(item) for item in answer.get("roots") or ())
        if roots != sorted(self.engine_roots):
            self.engine_roots = roots
            self.refresh_roots("a container's bind mount on another filesystem below a root")

    def _running_walks(self):
        return sum(1 for j in self.jobs.values() if j["kind"] != "engine")

    def _queue_job(self, job):
        if self._running_walks() >= MAX_JOBS:
            self.waiting.append(job)
            return
        if job["kind"] == "sweep":
            # The roots still guarded now (one dropped since the sweep was queued has its
            # descriptor closed): the walk starts from their held descriptors, never a name.
            held = {id(r) for r in self.roots.values()}
            roots = [r for r in job["roots"] if id(r) in held]
            for gone in (r for r in job["roots"] if id(r) not in held):
                self.log("full sweep of %s (%s) not run: no longer guarded" % (escape(gone.path), job["reason"]))
            if not roots:
                return
            job["paths"] = [r.path for r in roots]
            opened = [r.opened() for r in roots]
        else:
            opened = job["opened"]
        budget, dry_run, actions, setuid, setgid = (
            self.sweep_budget, self.dry_run, self.actions,
            bool(self.setid_mask & stat.S_ISUID), bool(self.setid_mask & stat.S_ISGID))

        def walk():
            # In the forked child: the parent's stop handlers and wakeup fd are not ours.
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, signal.SIG_DFL)
            # A root or tree moved since it was proven is walked where it is: say where that is.
            held = [OpenRoot(_where(item), item.fd, item.st) for item in opened]
            return stripmod.run_opened(held, actions=actions, dry_run=dry_run, budget=budget, setuid=setuid,
                                       setgid=setgid, fork=False)

        try:
            pid, read_fd = stripmod._fork_json(walk)
        finally:
            if job.get("owned"):  # the child has its own copy of a moved-in tree's descriptor
                for item in opened:
                    item.close()
        os.set_blocking(read_fd, False)
        job.update(pid=pid, chunks=[], started=time.monotonic())
        self.jobs[read_fd] = job

    def start_waiting(self):
        """Start waiting jobs while fewer than MAX_JOBS walks run."""
        while self.waiting and self._running_walks() < MAX_JOBS:
            self._queue_job(self.waiting.pop(0))

    def read_job(self, read_fd):
        """Collect a job's output; when it ends, emit its files and log its outcome."""
        job = self.jobs[read_fd]
        try:
            chunk = os.read(read_fd, 1 << 16)
        except BlockingIOError:
            return
        if chunk:
            job["chunks"].append(chunk)
            return
        del self.jobs[read_fd]
        os.close(read_fd)
        os.waitpid(job["pid"], 0)
        self._finish_job(job)
        self.start_waiting()

    def _finish_job(self, job):
        try:
            report = json.loads(b"".join(job["chunks"]).decode() or "{}")
        except ValueError:
            report = {"worker_error": "unreadable report"}
        if job["kind"] == "engine":
            self._finish_engine_query(report)
            return
        what = "%s of %s" % (job["kind"], ", ".join(escape(p) for p in job["paths"]))
        if "worker_error" in report or "counts" not in report:
            self.stats["errors"] += 1
            self.log("%s failed: %s" % (what, report.get("worker_error", "no report")))
            return
        latency = None
        if job["read_at"] is not None:
            latency = round(max(0.0, time.time() - job["read_at"]) * 1000.0, 1)
        via = "sweep" if job["kind"] == "sweep" else "moved-in tree"
        for entry in report["files"]:
            self._emit(file_record(entry, latency, via))
        for err in report["errors"]:
            self.log("%s: %s: %s" % (what, escape(err["path"]), err["error"]))
        if job["kind"] == "sweep":
            counts = report["counts"]
            self.log("full sweep of %s done (%s): %d files, %d setid, %d caps, %d errors%s in %.1f s" % (
                ", ".join(escape(p) for p in job["paths"]), job["reason"], counts["files"], counts["setid"],
                counts["caps"], counts["errors"], "" if report["complete"] else ", INCOMPLETE (budget)",
                time.monotonic() - job["started"]))

    def _kill_job(self, job):
        try:
            os.kill(job["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(job["pid"], 0)
        except ChildProcessError:
            pass

    # -- the loop --------------------------------------------------------------------
    def stop(self, *_args):
        self.stopping = True

    def start(self):
        """Open fanotify (if not yet), mark the roots' filesystems and sweep them once."""
        if self.fan_fd is None:
            self.open()
        self.refresh_roots("start: events before now were not seen")
        if not self.roots:
            wanted = [path for path, _source in self.roots_source()[0]]
            self.log("nothing to guard yet (%s: none exists); looking again every %g s" % (
                ", ".join(escape(w) for w in wanted) or "no roots given", self.rescan_interval))
        self.start_engine_query()
        self.next_rescan = time.monotonic() + self.rescan_interval

    def poll(self, timeout, wake_fd=None):
        """Wait up to `timeout` seconds for events or finished jobs and handle them; re-read
        the roots when their interval is up. One step of run()."""
        timeout = max(0.0, min(timeout, self.next_rescan - time.monotonic()))
        fds = [self.fan_fd, *self.jobs]
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
            if fd in self.jobs:
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

    def wait_jobs(self, timeout):
        """Collect running jobs for up to `timeout` seconds (tests and a clean stop)."""
        limit = time.monotonic() + timeout
        while (self.jobs or self.waiting) and time.monotonic() < limit:
            ready = select.select(list(self.jobs), [], [], max(0.0, limit - time.monotonic()))[0]
            for fd in ready:
                self.read_job(fd)
        return not self.jobs and not self.waiting
