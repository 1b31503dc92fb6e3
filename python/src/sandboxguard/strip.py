# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Find and remove what a root container left privileged in a host directory.

One race-safe walk per call does every requested action on each regular file:

* ``chown``: ownership return. Files and directories owned by a uid in ``chown_from``
  (root by default) are given to ``chown_to``. The kernel clears setuid, setgid (when
  group-executable) and ``security.capability`` on a regular file it chowns, which is
  why the seeds run this first.
* ``setid``: clear S_ISUID and S_ISGID on regular files, keeping every other bit.
* ``caps``: remove the ``security.capability`` xattr (method ``xattr``), or re-chown
  the file to its own uid and gid so the kernel drops it (method ``chown``).

How the walk treats a tree written by an untrusted container, possibly while we walk:

* Directories are opened relative to their parent's descriptor with O_NOFOLLOW, so a
  directory swapped for a symlink cannot redirect the walk; names are never joined into
  long paths for a syscall, so paths beyond PATH_MAX work; the walk is iterative.
* It stays on the root's filesystem (st_dev) and prunes nested mount points: when
  /proc/self/mountinfo lists any below a root, every directory's mount id is checked
  (/proc/self/fdinfo), which also catches a bind mount of the same filesystem.
* Only regular files are changed, and only through an O_PATH|O_NOFOLLOW handle whose
  fstat shows the same (st_dev, st_ino) as the scan and a regular file; the change
  goes through /proc/self/fd/N. FIFOs, sockets, devices and directories are never
  opened for I/O and never lose bits (a setgid directory keeps its setgid bit).
* A deadline (``budget`` seconds) ends the walk early with ``complete: False``;
  per-file errors are collected and the walk goes on; listed findings are capped.

The walk runs in a forked worker when the calling process has one thread (a module
or the CLI): the worker may fchdir into each directory, which makes the per-file
xattr check cheaper, and the caller's working directory never moves. In a threaded
caller (an agent harness) it runs in-process and resolves names through
/proc/self/fd/D/NAME instead. Either way the result is the same report.
"""
import collections
import errno
import json
import os
import select
import signal
import stat
import struct
import threading
import time

from . import caps as capsmod
from .mountinfo import mount_id_of_fd, mount_points_under, read_mountinfo
from .report import error_text as _error_text
from .report import mode_text as _mode_text
from .report import new_report as _envelope
from .roots import RootRefused, check_root

DEFAULT_BUDGET_S = 10.0
DEFAULT_MAX_LISTED = 1000
# Directory descriptors kept open for pending children before falling back to reopen
# (identity-checked) on demand; keeps a 10,000-deep tree under the fd limit.
MAX_HELD_DIR_FDS = 64
# How much longer than the budget the parent waits for a forked worker before killing it.
WORKER_GRACE_S = 5.0
PROGRESS_INTERVAL_S = 0.5
# Forked walkers share the work once this many directories wait (breadth first before).
SHARE_FRONTIER = 64
MAX_WORKERS = 2  # measured: a second walker helps on 2 cores; threads make it slower (FACTS.md)
SHARE_QUEUE_BYTES = 60000  # below the 64 KiB pipe buffer: the whole queue is written at once

SETID_BITS = stat.S_ISUID | stat.S_ISGID
CAP_XATTR = capsmod.XATTR_NAME
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_PATH_FLAGS = getattr(os, "O_PATH", 0o10000000) | os.O_NOFOLLOW | os.O_CLOEXEC
ACTIONS = ("setid", "caps", "chown")
CAPS_METHODS = ("xattr", "chown")
HARDLINK_POLICIES = ("strip", "skip")


class ChangedUnderUs(Exception):
    """The inode at a name is no longer the one the scan saw."""


class _Dir:
    """A directory in the walk: its name in its parent, and an fd while one is held."""

    __slots__ = ("dev", "fd", "ino", "listed", "name", "parent", "pending")

    def __init__(self, name, parent):
        self.name = name
        self.parent = parent
        self.fd = None
        self.dev = self.ino = None
        self.pending = 0
        self.listed = False

    def path(self, root_path):
        names = []
        node = self
        while node.parent is not None:
            names.append(node.name)
            node = node.parent
        return "/".join([root_path.rstrip("/") or "", *names[::-1]]) or "/"


def new_report(roots, dry_run):
    """An empty report in the shared envelope (report.new_report) with strip's keys."""
    return _envelope(roots, dry_run=bool(dry_run), files=[], pruned_mounts=[], counts={
        "dirs": 0, "files": 0, "setid": 0, "caps": 0, "chown": 0,
        "hardlinks": 0, "special": 0, "symlinks": 0, "skipped": 0, "errors": 0, "unlisted": 0,
    })


class _Walk:
    """One walk over one or more roots; fills a report. Not thread-safe; one use."""

    def __init__(self, report, actions, dry_run, budget, chown_to, chown_from, caps_method,
                 hardlinks, one_file_system, prune_mounts, max_listed, progress, use_chdir, setid_mask,
                 progress_interval=PROGRESS_INTERVAL_S, workers=1):
        self.report = report
        self.counts = report["counts"]
        self.do_setid = "setid" in actions
        self.setid_mask = setid_mask
        self.do_caps = "caps" in actions
        self.do_chown = "chown" in actions
        self.dry_run = dry_run
        self.deadline = (time.monotonic() + budget) if budget else None
        self.chown_to = chown_to
        self.chown_from = frozenset(chown_from)
        self.caps_method = caps_method
        self.skip_hardlinks = hardlinks == "skip"
        self.one_file_system = one_file_system
        self.prune_mounts = prune_mounts
        self.max_listed = max_listed
        self.progress = progress
        self.use_chdir = use_chdir
        self.progress_interval = progress_interval
        self.workers = workers
        self.next_progress = time.monotonic() + progress_interval
        self.open_nodes = set()
        self.xattrs_supported = True
        self.cap_bits = capsmod.kernel_cap_bits()

    # -- results ---------------------------------------------------------------
    def add_error(self, path, exc, op):
        self.counts["errors"] += 1
        if len(self.report["errors"]) < self.max_listed:
            text = _error_text(exc) if isinstance(exc, OSError) else str(exc)
            self.report["errors"].append({"path": path, "op": op, "error": text})

    def add_finding(self, entry):
        if len(self.report["files"]) < self.max_listed:
            self.report["files"].append(entry)
        else:
            self.counts["unlisted"] += 1

    def out_of_time(self):
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.report["complete"] = False
            return True
        return False

    # -- directories -------------------------------------------------------------
    def _open_child(self, parent_fd, name):
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)

    def ensure_fd(self, node):
        """Return an fd for node, reopening along its ancestors (identity-checked)."""
        chain = []
        cur = node
        while cur.fd is None:
            chain.append(cur)
            cur = cur.parent  # the root node always holds its fd
        fd = cur.fd
        opened = []
        try:
            for step in reversed(chain):
                fd = self._open_child(fd, step.name)
                opened.append(fd)
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != (step.dev, step.ino):
                    raise ChangedUnderUs("directory was replaced during the walk")
        except BaseException:
            for f in opened:
                os.close(f)
            raise
        for f in opened[:-1]:
            os.close(f)
        self.hold(node, fd)
        return fd

    def hold(self, node, fd):
        node.fd = fd
        self.open_nodes.add(node)

    def release(self, node):
        if node.fd is not None and node.parent is not None:
            os.close(node.fd)
            node.fd = None
            self.open_nodes.discard(node)

    def walk_root(self, root_path):
        """Walk one validated root (a real absolute path)."""
        try:
            root_fd = os.open(root_path, _DIR_FLAGS)
        except OSError as exc:
            self.add_error(root_path, exc, "open")
            return
        try:
            root_st = os.fstat(root_fd)
            root = _Dir(None, None)
            root.fd, root.dev, root.ino = root_fd, root_st.st_dev, root_st.st_ino
            self.root, self.root_path = root, root_path
            self.check_mounts = False
            self.root_mnt = None
            if self.prune_mounts:
                try:
                    self.check_mounts = bool(mount_points_under(root_path, read_mountinfo()))
                    self.root_mnt = mount_id_of_fd(root_fd) if self.check_mounts else None
                    self.check_mounts = self.root_mnt is not None
                except OSError as exc:
                    self.add_error(root_path, exc, "read /proc/self/mountinfo")
            if self.do_chown:
                self.visit_dir_owner(root_fd, root_st, root_path)
            if self.workers > 1 and self.use_chdir:
                self._walk_shared(root)
            else:
                self._drain([root])
        finally:
            for node in list(self.open_nodes):
                self.release(node)
            os.close(root_fd)

    def _drain(self, stack):
        """Depth first over `stack` until it is empty or the budget is spent."""
        while stack:
            if self.out_of_time():
                return
            self._visit(stack.pop(), stack)

    def _visit(self, node, pending):
        """Open (identity- and mount-checked) and list one directory; queue its subdirectories."""
        root, root_path = self.root, self.root_path
        if node is not root:
            parent = node.parent
            try:
                pfd = parent.fd if parent.fd is not None else self.ensure_fd(parent)
                fd = self._open_child(pfd, node.name)
            except (OSError, ChangedUnderUs) as exc:
                self.add_error(node.path(root_path), exc, "open directory")
                self._child_done(parent)
                return
            self._child_done(parent)
            self.hold(node, fd)
            st = os.fstat(fd)
            node.dev, node.ino = st.st_dev, st.st_ino
            pruned = False
            if self.one_file_system and st.st_dev != root.dev:
                pruned = True
            elif self.check_mounts:
                try:
                    pruned = mount_id_of_fd(fd) != self.root_mnt
                except OSError as exc:
                    self.add_error(node.path(root_path), exc, "read fdinfo")
                    pruned = True
            if pruned:
                self.report["pruned_mounts"].append(node.path(root_path))
                self.release(node)
                return
            if self.do_chown:
                self.visit_dir_owner(fd, st, node.path(root_path))
        self.counts["dirs"] += 1
        self.list_dir(node, pending, root_path)
        node.listed = True
        if node.pending == 0 or len(self.open_nodes) > MAX_HELD_DIR_FDS:
            self.release(node)
        if self.progress is not None and time.monotonic() >= self.next_progress:
            self.next_progress = time.monotonic() + self.progress_interval
            self.progress(dict(self.counts))

    def _walk_shared(self, root):
        """Breadth first until SHARE_FRONTIER directories wait, then `workers` forked walkers
        take whole subtrees from a shared queue and this process merges their reports.

        The queue is a pipe of 4-byte indices into the frontier, written in full before
        the fork (so every read gets a whole index); the walkers inherit the directory
        descriptors, so nothing is looked up again by path. Only the first walker calls
        `progress` (with its own counts).
        """
        frontier = collections.deque([root])
        while frontier and len(frontier) < SHARE_FRONTIER:
            if self.out_of_time():
                return
            self._visit(frontier.popleft(), frontier)
        work = list(frontier)
        if len(work) * 4 > SHARE_QUEUE_BYTES:  # a frontier too wide for one pipe write: walk it here
            self._drain(work[::-1])
            return
        if not work:
            return
        queue_r, queue_w = os.pipe()
        os.write(queue_w, b"".join(struct.pack("<I", i) for i in range(len(work))))
        os.close(queue_w)
        walkers = []
        try:
            for index in range(self.workers):
                walkers.append(_fork_json(lambda index=index: self._walk_queue(queue_r, work, index)))
        finally:
            os.close(queue_r)
        for pid, read_fd in walkers:
            self._merge(_read_json(pid, read_fd, None))

    def _walk_queue(self, queue_r, work, index):
        """In a forked walker: drain whole subtrees named on the queue; return a report."""
        self.report = new_report(self.report["roots"], self.dry_run)
        self.counts = self.report["counts"]
        if index:
            self.progress = None
        while True:
            item = os.read(queue_r, 4)
            if len(item) < 4:
                break
            self._drain([work[struct.unpack("<I", item)[0]]])
            if not self.report["complete"]:
                break
        return self.report

    def _merge(self, sub):
        if sub is None or "worker_error" in sub:
            raise RuntimeError("walker failed: %s" % (sub or {}).get("worker_error", "no report"))
        report = self.report
        for key, value in sub["counts"].items():
            report["counts"][key] += value
        room = max(0, self.max_listed - len(report["files"]))
        report["files"].extend(sub["files"][:room])
        report["counts"]["unlisted"] += max(0, len(sub["files"]) - room)
        report["errors"].extend(sub["errors"][:max(0, self.max_listed - len(report["errors"]))])
        report["pruned_mounts"].extend(sub["pruned_mounts"])
        report["changed"] = report["changed"] or sub["changed"]
        report["complete"] = report["complete"] and sub["complete"]

    def _child_done(self, parent):
        parent.pending -= 1
        if parent.pending == 0 and parent.listed:
            self.release(parent)

    def visit_dir_owner(self, fd, st, path):
        """Ownership return for a directory, through its own open descriptor."""
        if st.st_uid not in self.chown_from:
            return
        uid, gid = self.chown_to
        entry = {"path": path, "type": "directory", "mode_before": _mode_text(st.st_mode),
                 "mode_after": _mode_text(st.st_mode), "caps_before": None, "uid": st.st_uid,
                 "gid": st.st_gid, "nlink": st.st_nlink, "actions": ["chown"]}
        if not self.dry_run:
            try:
                os.fchown(fd, uid, gid)
                self.report["changed"] = True
            except OSError as exc:
                self.add_error(path, exc, "chown")
                return
        else:
            self.report["changed"] = True
        self.counts["chown"] += 1
        self.add_finding(entry)

    def list_dir(self, node, stack, root_path):
        dfd = node.fd
        if self.use_chdir:
            os.fchdir(dfd)
            proc_prefix = ""
        else:
            proc_prefix = "/proc/self/fd/%d/" % dfd
        do_caps = self.do_caps
        setid_mask = self.setid_mask if self.do_setid else 0
        do_chown = self.do_chown
        chown_from = self.chown_from
        counts = self.counts
        try:
            # After fchdir, "." is the directory dfd holds, whatever is renamed meanwhile;
            # this saves scandir(fd)'s dup, F_GETFL and F_SETFD (2 syscalls a directory).
            scan = os.scandir("." if self.use_chdir else dfd)
        except OSError as exc:
            self.add_error(node.path(root_path), exc, "list directory")
            return
        with scan:
            tick = 0
            for entry in scan:
                tick += 1
                if not tick & 1023 and self.out_of_time():
                    return
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(_Dir(entry.name, node))
                        node.pending += 1
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        if entry.is_symlink():
                            counts["symlinks"] += 1
                        else:
                            counts["special"] += 1
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    if exc.errno == errno.ENOENT:
                        self.add_error(node.path(root_path) + "/" + entry.name, "vanished during the walk", "stat")
                    else:
                        self.add_error(node.path(root_path) + "/" + entry.name, exc, "stat")
                    continue
                mode = st.st_mode
                if not stat.S_ISREG(mode):
                    counts["special"] += 1
                    continue
                counts["files"] += 1
                has_setid = mode & setid_mask
                needs_chown = do_chown and st.st_uid in chown_from
                has_caps = False
                if do_caps and self.xattrs_supported:
                    try:
                        has_caps = CAP_XATTR in os.listxattr(proc_prefix + entry.name, follow_symlinks=False)
                    except OSError as exc:
                        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
                            self.xattrs_supported = False
                        elif exc.errno == errno.ENOENT:
                            self.add_error(node.path(root_path) + "/" + entry.name, "vanished during the walk",
                                           "listxattr")
                        else:
                            self.add_error(node.path(root_path) + "/" + entry.name, exc, "listxattr")
                        continue
                if has_setid or has_caps or needs_chown:
                    self.act_on_file(dfd, entry.name, st, has_setid, has_caps, needs_chown, node, root_path)

    # -- files ---------------------------------------------------------------------
    def act_on_file(self, dfd, name, st, has_setid, has_caps, needs_chown, node, root_path):
        """Report and (unless dry-run) fix one regular file, through a proven handle."""
        path = node.path(root_path) + "/" + name
        entry = {"path": path, "type": "file", "mode_before": _mode_text(st.st_mode),
                 "mode_after": _mode_text(st.st_mode), "caps_before": None, "uid": st.st_uid,
                 "gid": st.st_gid, "nlink": st.st_nlink, "actions": []}
        if st.st_nlink > 1:
            self.counts["hardlinks"] += 1
        if needs_chown:
            entry["actions"].append("chown")
        if has_setid:
            if st.st_mode & self.setid_mask & stat.S_ISUID:
                entry["actions"].append("setuid")
            if st.st_mode & self.setid_mask & stat.S_ISGID:
                entry["actions"].append("setgid")
        if has_caps:
            entry["actions"].append("caps")
        skip = self.skip_hardlinks and st.st_nlink > 1
        if skip:
            self.counts["skipped"] += 1
            entry["skipped"] = "hard link (nlink %d): left unchanged by policy hardlinks=skip" % st.st_nlink
        try:
            fd = os.open(name, _PATH_FLAGS, dir_fd=dfd)
        except OSError as exc:
            self.add_error(path, "vanished during the walk" if exc.errno == errno.ENOENT else exc, "open O_PATH")
            return
        try:
            fst = os.fstat(fd)
            if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
                raise ChangedUnderUs("replaced during the walk (not the inode scanned); left alone")
            handle = "/proc/self/fd/%d" % fd
            if has_caps:
                try:
                    raw = os.getxattr(handle, CAP_XATTR)
                    try:
                        entry["caps_before"] = capsmod.describe(raw, self.cap_bits)
                    except capsmod.CapabilityDecodeError as exc:
                        entry["caps_before"] = "undecodable (%s): %s" % (exc, raw.hex())
                except OSError as exc:
                    if exc.errno != errno.ENODATA:
                        raise
                    has_caps = False
                    entry["actions"].remove("caps")
            if not entry["actions"]:
                return
            self.count_finding(has_setid, has_caps, needs_chown)
            if self.dry_run or skip:
                mode_after = fst.st_mode
                if not skip:
                    if has_setid:
                        mode_after &= ~self.setid_mask
                    if needs_chown or (has_caps and self.caps_method == "chown"):
                        mode_after = _mode_after_chown(mode_after)
                    self.report["changed"] = True
                entry["mode_after"] = _mode_text(mode_after)
                self.add_finding(entry)
                return
            if needs_chown:
                uid, gid = self.chown_to
                os.chown(handle, uid, gid)  # chown clears setid and security.capability (capabilities(7))
                self.report["changed"] = True
                entry["uid_after"], entry["gid_after"] = uid, (fst.st_gid if gid == -1 else gid)
            if has_caps:
                if self.caps_method == "chown":
                    cur = os.fstat(fd)
                    os.chown(handle, cur.st_uid, cur.st_gid)
                else:
                    try:
                        os.removexattr(handle, CAP_XATTR)
                    except OSError as exc:
                        if exc.errno != errno.ENODATA:  # the chown above may have removed it
                            raise
                self.report["changed"] = True
            if has_setid:
                cur = os.fstat(fd)
                if cur.st_mode & self.setid_mask:
                    os.chmod(handle, stat.S_IMODE(cur.st_mode) & ~self.setid_mask)
                self.report["changed"] = True
            entry["mode_after"] = _mode_text(os.fstat(fd).st_mode)
            self.add_finding(entry)
        except ChangedUnderUs as exc:
            self.add_error(path, str(exc), "verify")
        except OSError as exc:
            entry["error"] = _error_text(exc)
            self.add_finding(entry)
            self.add_error(path, exc, "change")
        finally:
            os.close(fd)

    def count_finding(self, has_setid, has_caps, needs_chown):
        if has_setid:
            self.counts["setid"] += 1
        if has_caps:
            self.counts["caps"] += 1
        if needs_chown:
            self.counts["chown"] += 1


def _mode_after_chown(mode):
    """The mode the kernel leaves after chown of a regular file (fs/attr.c)."""
    mode &= ~stat.S_ISUID
    if mode & stat.S_ISGID and mode & stat.S_IXGRP:
        mode &= ~stat.S_ISGID
    return mode


def _default_workers():
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus))


def _fork_is_safe():
    return hasattr(os, "fork") and threading.active_count() == 1


def _fork_json(run):
    """Fork a child that runs `run()` (a JSON-able dict) and writes it to a pipe.

    Returns (pid, read_fd). Read it with _read_json. A child that raises reports
    {"worker_error": ...}; it never returns into the caller's code.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        status = 0
        try:
            os.close(read_fd)
            data = json.dumps(run()).encode()
        except BaseException as exc:  # report, never raise out of a forked child
            data = json.dumps({"worker_error": "%s: %s" % (type(exc).__name__, exc)}).encode()
            status = 1
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view):]
        finally:
            os._exit(status)
    os.close(write_fd)
    return pid, read_fd


def _read_json(pid, read_fd, limit):
    """Collect a forked child's JSON; kill it at monotonic time `limit` (None: wait).

    Returns the dict, or None when the child was killed.
    """
    chunks = []
    killed = False
    try:
        while True:
            timeout = None if limit is None else max(0.0, limit - time.monotonic())
            if not select.select([read_fd], [], [], timeout)[0]:
                os.kill(pid, signal.SIGKILL)
                killed = True
                break
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    if killed:
        return None
    return json.loads(b"".join(chunks).decode() or "{}")


def _run_in_worker(run, budget):
    """Run `run()` in a forked child; the parent's working directory never moves.

    If the child outlives budget + WORKER_GRACE_S it is killed and None is returned.
    """
    pid, read_fd = _fork_json(run)
    limit = (time.monotonic() + budget + WORKER_GRACE_S) if budget else None
    return _read_json(pid, read_fd, limit)


def run(paths, actions=("setid", "caps"), dry_run=False, budget=DEFAULT_BUDGET_S, chown_to=None,
        chown_from=(0,), caps_method="xattr", hardlinks="strip", one_file_system=True,
        prune_mounts=True, max_listed=DEFAULT_MAX_LISTED, progress=None, fork=None,
        allow_files=True, setuid=True, setgid=True, progress_interval=PROGRESS_INTERVAL_S, workers=None):
    """Walk `paths` once and apply `actions` (subset of ACTIONS); return the report.

    Roots are validated first (see roots.check_root); a refused root raises RootRefused
    before anything is walked. ``budget`` is seconds for the whole walk (0 or None:
    no limit). ``chown_to`` is (uid, gid) and required with the chown action.
    ``fork``: None decides by itself (forked worker when the process has one thread).
    ``setuid``/``setgid`` choose which bits the setid action clears. ``progress(counts)``
    is called at most every ``progress_interval`` seconds, between directories.
    ``workers``: forked walkers sharing subtrees (forked mode only); None uses up to
    MAX_WORKERS of the CPUs this process may run on.
    Touches the system: it changes files unless ``dry_run``.
    """
    actions = tuple(actions)
    unknown = [a for a in actions if a not in ACTIONS]
    if unknown:
        raise ValueError("unknown action(s) %s; choose from %s" % (", ".join(unknown), ", ".join(ACTIONS)))
    if caps_method not in CAPS_METHODS:
        raise ValueError("caps_method must be one of %s, not %r" % (", ".join(CAPS_METHODS), caps_method))
    if hardlinks not in HARDLINK_POLICIES:
        raise ValueError("hardlinks must be one of %s, not %r" % (", ".join(HARDLINK_POLICIES), hardlinks))
    if "chown" in actions:
        if chown_to is None:
            raise ValueError("the chown action needs chown_to=(uid, gid)")
        chown_to = (int(chown_to[0]), int(chown_to[1]))
    if isinstance(paths, (str, bytes)):
        paths = [paths]
    if not paths:
        raise RootRefused("", "no paths given")
    roots = [check_root(p, allow_file=allow_files) for p in paths]
    started = time.monotonic()
    report = new_report(roots, dry_run)

    def walk_all(use_chdir):
        walker = _Walk(report, actions, dry_run, budget, chown_to, chown_from, caps_method, hardlinks,
                       one_file_system, prune_mounts, max_listed, progress, use_chdir,
                       (stat.S_ISUID if setuid else 0) | (stat.S_ISGID if setgid else 0), progress_interval,
                       n_workers if use_chdir else 1)
        for root in roots:
            if walker.out_of_time():
                break
            if os.path.isdir(root):
                walker.walk_root(root)
            else:
                _walk_single_file(walker, root)
        return report

    use_fork = _fork_is_safe() if fork is None else bool(fork)
    n_workers = _default_workers() if workers is None else max(1, int(workers))
    if use_fork:
        result = _run_in_worker(lambda: walk_all(True), budget)
        if result is None:
            report["complete"] = False
            report["errors"].append({"path": roots[0], "op": "walk",
                                     "error": "the walker did not stop within its budget and was killed"})
            report["counts"]["errors"] += 1
        elif "worker_error" in result:
            raise RuntimeError("walker failed: %s" % result["worker_error"])
        else:
            report = result
    else:
        walk_all(False)
    report["elapsed"] = round(time.monotonic() - started, 3)
    return report


def _walk_single_file(walker, path):
    """Apply the actions to a single regular file given as a root."""
    parent, name = os.path.split(path)
    try:
        pfd = os.open(parent, _DIR_FLAGS)
    except OSError as exc:
        walker.add_error(path, exc, "open parent")
        return
    try:
        st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            walker.add_error(path, "not a regular file", "stat")
            return
        walker.counts["files"] += 1
        has_setid = st.st_mode & walker.setid_mask if walker.do_setid else 0
        needs_chown = walker.do_chown and st.st_uid in walker.chown_from
        has_caps = False
        if walker.do_caps:
            try:
                has_caps = CAP_XATTR in os.listxattr("/proc/self/fd/%d/%s" % (pfd, name), follow_symlinks=False)
            except OSError as exc:
                if exc.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
                    walker.add_error(path, exc, "listxattr")
        if has_setid or has_caps or needs_chown:
            walker.act_on_file(pfd, name, st, has_setid, has_caps, needs_chown, _FileParent(parent), path)
    except OSError as exc:
        walker.add_error(path, exc, "stat")
    finally:
        os.close(pfd)


class _FileParent:
    """Stands in for a _Dir when the root is a single file: path() is its directory."""

    def __init__(self, parent):
        self.parent_path = parent

    def path(self, _root):
        return self.parent_path.rstrip("/") or ""


def scan(paths, caps=True, setid=True, **kwargs):
    """Report setuid/setgid files and file capabilities under `paths`; change nothing."""
    actions = tuple(a for a, on in (("setid", setid), ("caps", caps)) if on)
    return run(paths, actions=actions, dry_run=True, **kwargs)


def strip(paths, setid=True, caps=True, chown_to=None, dry_run=False, **kwargs):
    """Return ownership (when chown_to is given), strip setid bits and clear capabilities."""
    actions = tuple(a for a, on in (("chown", chown_to is not None), ("setid", setid), ("caps", caps)) if on)
    return run(paths, actions=actions, dry_run=dry_run, chown_to=chown_to, **kwargs)


def findings_remain(report):
    """True when a report leaves something for the operator: findings in a scan, or an
    incomplete walk or per-file errors in a strip (the CLI's exit code 1)."""
    if not report["complete"] or report["counts"]["errors"] or report["counts"]["skipped"]:
        return True
    if report.get("dry_run"):
        counts = report["counts"]
        return bool(counts["setid"] or counts["caps"] or counts["chown"])
    return False
