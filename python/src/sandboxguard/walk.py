# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The walk: directories, descriptors, the budget and the forked walkers sharing work.

One race-safe walk over a root opened by roots.open_root. Directories are opened
relative to their parent's descriptor with O_NOFOLLOW and identity-checked when
reopened; at most ``held_fd_cap()`` directory descriptors are held (a reopen opens one
at a time); the walk stays on the root's mount; a deadline ends it with ``complete:
False``. Each regular file that carries something to act on goes to fileops.fix_at,
which proves the inode and runs the file actions. Fills one report (strip's shape).
"""
import collections
import errno
import os
import resource
import stat
import struct
import time

from . import caps as capsmod
from .fileops import CAP_XATTR, ChangedUnderUs, fix_at
from .forked import fork_json, read_all
from .mountinfo import mount_id_of_fd, mount_points_under, read_mountinfo
from .report import error_text as _error_text
from .report import mode_text as _mode_text
from .report import new_report as _envelope

# Directory descriptors kept open for pending children before falling back to reopen
# (identity-checked) on demand; keeps a 10,000-deep tree under the fd limit. Fewer when
# RLIMIT_NOFILE is low (held_fd_cap).
MAX_HELD_DIR_FDS = 64
# Descriptors a walker opens for a moment beside the held ones (scandir, an O_PATH
# handle, a reopen chain, fdinfo, mountinfo, the walkers' pipes), kept free of the cap.
FD_RESERVE = 16
# Forked walkers share the work once this many directories wait (breadth first before).
SHARE_FRONTIER = 64
SHARE_QUEUE_BYTES = 60000  # below the 64 KiB pipe buffer: the whole queue is written at once
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)


class _Dir:
    """A directory in the walk: its name in its parent, and an fd while one is held."""

    __slots__ = ("depth", "dev", "fd", "ino", "listed", "name", "parent", "pending")

    def __init__(self, name, parent):
        self.name = name
        self.parent = parent
        self.depth = parent.depth + 1 if parent is not None else 0
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


class Walk:
    """One walk over one or more roots; fills a report. Not thread-safe; one use."""

    def __init__(self, report, opts, use_chdir, workers=1):
        self.report = report
        self.counts = report["counts"]
        self.opts = opts
        self.do_setid = opts.do_setid
        self.setid_mask = opts.setid_mask
        self.do_caps = opts.do_caps
        self.do_chown = opts.do_chown
        self.dry_run = opts.dry_run
        self.deadline = (time.monotonic() + opts.budget) if opts.budget else None
        self.chown_to = opts.chown_to
        self.chown_from = opts.chown_from
        self.one_file_system = opts.one_file_system
        self.prune_mounts = opts.prune_mounts
        self.max_listed = opts.max_listed
        self.progress = opts.progress
        self.use_chdir = use_chdir
        self.progress_interval = opts.progress_interval
        self.workers = workers
        self.next_progress = time.monotonic() + opts.progress_interval
        self.open_nodes = set()
        self.max_held = held_fd_cap()
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
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)

    def ensure_fd(self, node):
        """Return an fd for node, reopening along its ancestors (identity-checked).

        One descriptor at a time is open along the way (a chain can be thousands of
        directories long); the deepest ancestors that still have children to visit are
        held again while there is room, so the next re-hold is short.
        """
        chain = []
        cur = node
        while cur.fd is None:
            chain.append(cur)
            cur = cur.parent  # the root node always holds its fd
        chain.reverse()
        keep_from = len(chain) - max(1, self.max_held - len(self.open_nodes))
        fd, transient = cur.fd, False
        for index, step in enumerate(chain):
            try:
                child = self._open_child(fd, step.name)
            finally:
                if transient:
                    os.close(fd)
            fd, transient = child, True
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (step.dev, step.ino):
                os.close(fd)
                raise ChangedUnderUs("directory was replaced during the walk")
            if step is node or (index >= keep_from and step.pending > 0):
                self.hold(step, fd)
                transient = False
        return node.fd

    def hold(self, node, fd):
        node.fd = fd
        self.open_nodes.add(node)

    def release(self, node):
        if node.fd is not None and node.parent is not None:
            os.close(node.fd)
            node.fd = None
            self.open_nodes.discard(node)

    def trim(self):
        """Keep at most max_held directory descriptors: release the shallowest (a depth-
        first walk comes back to them last; ensure_fd reopens them when it does)."""
        excess = len(self.open_nodes) - self.max_held
        if excess > 0:
            for node in sorted(self.open_nodes, key=_depth)[:excess]:
                self.release(node)

    def walk_root(self, opened):
        """Walk one root from the descriptor roots.open_root proved (an OpenRoot of a
        directory); the caller keeps and closes that descriptor."""
        root_fd, root_st, root_path = opened.fd, opened.st, opened.path
        try:
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
        if node.pending == 0:
            self.release(node)
        self.trim()
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
                walkers.append(fork_json(lambda index=index: self._walk_queue(queue_r, work, index)))
        finally:
            os.close(queue_r)
        for sub in read_all(walkers):
            self._merge(sub)

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
                    self.act_on_file(dfd, entry.name, st, node.path(root_path) + "/" + entry.name)

    # -- files ---------------------------------------------------------------------
    def act_on_file(self, dfd, name, st, path):
        """Report and (unless dry-run) fix one regular file the scan flagged, through a
        handle proven to be the inode scanned (see fileops.fix_at)."""
        try:
            entry, changed = fix_at(dfd, name, self.opts, path, (st.st_dev, st.st_ino), self.cap_bits)
        except ChangedUnderUs as exc:
            self.add_error(path, str(exc), "verify")
            return
        except OSError as exc:
            self.add_error(path, "vanished during the walk" if exc.errno == errno.ENOENT else exc, "open O_PATH")
            return
        if entry is None:
            return
        self.count_finding(entry)
        self.report["changed"] = self.report["changed"] or changed
        self.add_finding(entry)
        if entry.get("error"):
            self.add_error(path, entry["error"], "change")

    def count_finding(self, entry):
        actions = entry["actions"]
        counts = self.counts
        if "setuid" in actions or "setgid" in actions:
            counts["setid"] += 1
        if "caps" in actions:
            counts["caps"] += 1
        if "chown" in actions:
            counts["chown"] += 1
        if entry.get("skipped"):
            counts["skipped"] += 1
        if entry["nlink"] > 1:
            counts["hardlinks"] += 1


def _depth(node):
    return node.depth


def held_fd_cap():
    """How many directory descriptors a walk may hold in this process: MAX_HELD_DIR_FDS,
    or fewer when RLIMIT_NOFILE leaves less room (``ulimit -n 64``) beside the
    descriptors already open and the few a walk opens for a moment (FD_RESERVE)."""
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        in_use = len(os.listdir("/proc/self/fd"))
    except (OSError, ValueError):
        return MAX_HELD_DIR_FDS
    if soft == resource.RLIM_INFINITY:
        return MAX_HELD_DIR_FDS
    return max(2, min(MAX_HELD_DIR_FDS, soft - in_use - FD_RESERVE))
