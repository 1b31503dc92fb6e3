# GENERATED from python/src/sandboxguard/_walk/walk.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The walk: directories, descriptors, the budget and the forked walkers sharing work.

One race-safe walk over a root opened by roots.open_root. Directories are opened
relative to their parent's descriptor with O_NOFOLLOW and identity-checked when
reopened; at most ``held_fd_cap()`` directory descriptors are held (a reopen opens one
at a time); the walk stays on the root's mount; a deadline ends it with ``complete:
False``. Each regular file that carries something to act on goes to fileops.fix_at,
which proves the inode and runs the file actions. Fills one report (strip's shape).

The pieces, in reading order:

* ``Walk`` (walk_root, _drain, _visit, list_dir): one directory at a time, depth first.
  ``list_dir`` is the per-entry loop every file goes through; it stays one function on
  purpose (a call per entry would cost about 3 % of a warm 1M-file walk).
* ``_HeldDirs``: which directory descriptors are held, and reopening along a node's
  ancestors when one was released.
* ``_Findings``: what goes into the report (errors, findings, counts) and the hand-off
  of a flagged file to fileops.
* ``_Sharing``: the forked walkers. Breadth first until SHARE_FRONTIER directories
  wait, then ``workers`` forked walkers take them from a pipe and hand each other
  directories through a handoff.Broker, and the process that forked them merges their
  reports.

Cold cache (issue 13): the walkers hand directories to each other while they walk
(handoff.py): a walker with nothing left gets the shallowest unopened directory of a
busy one, as a descriptor that walker opened and checked. Once the walk reads from the
disk, more walkers are forked (handoff.COLD_WALKERS in all), so that more reads are in
flight. A warm walk keeps ``workers`` walkers.
"""
import collections
import errno
import os
import stat
import struct
import time

from .. import caps as capsmod
from .. import report as envelope
from .._core.forked import free_descriptors
from .._core.mountinfo import mount_id_of_fd, mount_points_under, read_mountinfo
from . import handoff
from .fileops import (
    CAP_XATTR,
    LINKED_OWNER_WARNING,
    LINKED_UNCHANGED,
    LINKED_UNCHANGED_WARNING,
    ChangedUnderUs,
    fix_at,
    owner_after,
)

# Directory descriptors kept open for pending children before falling back to reopen
# (identity-checked) on demand; keeps a 10,000-deep tree under the fd limit. Fewer when
# RLIMIT_NOFILE is low (held_fd_cap).
MAX_HELD_DIR_FDS = 64
# Descriptors a walker opens for a moment beside the held ones (scandir, an O_PATH
# handle, a reopen chain, fdinfo, mountinfo, the walkers' pipes), kept free of the cap.
FD_RESERVE = 16
# Forked walkers share the work once this many directories wait (breadth first before).
SHARE_FRONTIER = 64
SHARE_QUEUE_BYTES = 60000  # below the 64 KiB pipe buffer: the frontier's indices are written at once
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)


class _Dir:
    """A directory in the walk: its name in its parent, and an fd while one is held.

    A directory another walker handed over (handoff.py) has no parent here: its name is
    its whole path below the root, and its descriptor is held until its subtree is done.
    """

    __slots__ = ("depth", "dev", "fd", "ino", "listed", "name", "parent", "pending")

    def __init__(self, name, parent):
        self.name = name
        self.parent = parent
        self.depth = parent.depth + 1 if parent is not None else 0
        self.fd = None
        self.dev = self.ino = None
        self.pending = 0
        self.listed = False

    def names(self):
        names = []
        node = self
        while node is not None and node.name is not None:  # the root's name is None
            names.append(node.name)
            node = node.parent
        return names[::-1]

    def path(self, root_path):
        return "/".join([root_path.rstrip("/") or "", *self.names()]) or "/"


def new_report(roots, dry_run):
    """An empty report in the shared envelope (report.new_report) with strip's keys."""
    return envelope.new_report(roots, dry_run=bool(dry_run), files=[], pruned_mounts=[], counts={
        "dirs": 0, "files": 0, "setid": 0, "caps": 0, "chown": 0, "device": 0,
        "hardlinks": 0, "special": 0, "symlinks": 0, "skipped": 0, "errors": 0, "unlisted": 0,
    })


class _HeldDirs:
    """The directory descriptors one walk holds: at most ``cap`` (held_fd_cap); the
    shallowest are released first (a depth-first walk comes back to them last) and
    ``ensure`` reopens a node along its ancestors, identity-checked, when it needs one."""

    __slots__ = ("cap", "nodes")

    def __init__(self, cap):
        self.cap = cap
        self.nodes = set()

    def hold(self, node, fd):
        node.fd = fd
        self.nodes.add(node)

    def release(self, node):
        if node.fd is not None and node.parent is not None:  # the root's fd belongs to the caller
            # (and a handed-over directory's to _walk_handed)
            os.close(node.fd)
            node.fd = None
            self.nodes.discard(node)

    def release_all(self):
        for node in list(self.nodes):
            self.release(node)

    def trim(self):
        excess = len(self.nodes) - self.cap
        if excess > 0:
            for node in sorted(self.nodes, key=_depth)[:excess]:
                self.release(node)

    def ensure(self, node):
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
        keep_from = len(chain) - max(1, self.cap - len(self.nodes))
        fd, transient = cur.fd, False
        for index, step in enumerate(chain):
            try:
                child = _open_child(fd, step.name)
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


def _open_child(parent_fd, name):
    return os.open(name, DIR_FLAGS, dir_fd=parent_fd)


class _Findings:
    """What a walk records: errors, findings and counts (in ``self.report``), and the
    hand-off of a flagged regular file to fileops.fix_at. A mixin of Walk."""

    def add_error(self, path, exc, op):
        envelope.add_error(self.report, path, op, exc if isinstance(exc, OSError) else str(exc), self.opts.max_listed)

    def add_finding(self, entry):
        if len(self.report["files"]) < self.opts.max_listed:
            self.report["files"].append(entry)
        else:
            self.counts["unlisted"] += 1

    def visit_dir_owner(self, fd, st, path):
        """Ownership return for a directory, through its own open descriptor."""
        if st.st_uid not in self.opts.chown_from and st.st_gid not in self.opts.chown_gids:
            return
        uid, gid = self.opts.chown_to
        entry = {"path": path, "type": "directory", "mode_before": envelope.mode_text(st.st_mode),
                 "mode_after": envelope.mode_text(st.st_mode), "caps_before": None, "uid": st.st_uid,
                 "gid": st.st_gid, "nlink": st.st_nlink, "actions": ["chown"]}
        entry["uid_after"], entry["gid_after"] = owner_after(st, self.opts.chown_to)
        if not self.opts.dry_run:
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
        """Count what the entry's actions did (in a dry run: would do); an action that failed
        (entry["failed"]) is never counted as done: its error is counted instead."""
        counts = self.counts
        done = set(entry["actions"]) - set(entry.get("failed", ()))
        if entry.get("skipped"):  # found and left as it was: a finding that remains, nothing done
            done = set()
            counts["skipped"] += 1
            if entry["skipped"] is LINKED_UNCHANGED:
                envelope.add_warning(self.report, LINKED_UNCHANGED_WARNING)
        if "setuid" in done or "setgid" in done:
            counts["setid"] += 1
        for action in ("caps", "chown", "device"):
            if action in done:
                counts[action] += 1
        if entry.get("owner_kept"):
            envelope.add_warning(self.report, LINKED_OWNER_WARNING)
        if entry["nlink"] > 1 and entry["type"] == "file":
            counts["hardlinks"] += 1


class _Sharing:
    """The forked walkers sharing one root (see the module docstring). A mixin of Walk.

    Breadth first until SHARE_FRONTIER directories wait; then ``workers`` walkers are
    forked and a handoff.Broker hands them the frontier (by index: the walkers inherit
    those directories' parents' descriptors) and the directories they hand each other.
    Only the first walker calls ``progress`` (with its own counts).
    """

    def _walk_shared(self, root):
        work = self._frontier(root)
        if not work:
            return
        # The frontier's indices go on a pipe the walkers read themselves (a 4-byte read is
        # atomic), as many as one write fits; any beyond that the broker hands out.
        in_pipe = min(len(work), SHARE_QUEUE_BYTES // 4)
        queue_r, queue_w = os.pipe()
        try:
            os.write(queue_w, b"".join(struct.pack("<I", i) for i in range(in_pipe)))
        finally:
            os.close(queue_w)
        broker = handoff.Broker(range(in_pipe, len(work)), self.io_start, max(self.cold_walkers, self.workers))

        def walker(index):
            return lambda side: self._walk_handed(side, work, index, queue_r)

        try:
            for index in range(self.workers):
                broker.fork(walker(index))
            self.fds.release_all()  # the walkers hold their own copies now
            reports = broker.run(lambda: broker.fork(walker(-1)))
        except BaseException:
            broker.abort()
            raise
        finally:
            os.close(queue_r)
        for sub in reports:
            if sub is None or "worker_error" in sub:
                raise RuntimeError("walker failed: %s" % (sub or {}).get("worker_error", "no report"))
            envelope.merge(self.report, sub, self.opts.max_listed)
        for relpath in broker.lost:
            self.report["complete"] = False
            self.add_error("/".join([self.root_path.rstrip("/"), relpath]), "not walked: its descriptor was lost "
                           "in the hand-over between walkers (descriptor limit)", "hand over")

    def _frontier(self, root):
        """Breadth first until SHARE_FRONTIER directories wait; those (None: out of time)."""
        self.io_start = handoff.own_read_bytes()
        frontier = collections.deque([root])
        while frontier and len(frontier) < SHARE_FRONTIER:
            if self.out_of_time():
                return None
            self._visit(frontier.popleft(), frontier)
        return list(frontier)

    def _walk_handed(self, side, work, index, queue_r):
        """In a forked walker: walk the frontier directories named on the pipe, then what
        the broker hands over until it says done (or the budget is spent); return this
        walker's report."""
        self.report = new_report(self.report["roots"], self.opts.dry_run)
        self.counts = self.report["counts"]
        self.side = side
        if index:
            self.progress = None
        while self.report["complete"]:
            item = os.read(queue_r, 4) if queue_r is not None else b""
            if len(item) == 4:
                self._drain([work[struct.unpack("<I", item)[0]]])
                continue
            queue_r = None  # empty: from now on work comes from the broker
            got = side.take()
            if got is None:
                return self.report
            if got[0] == "index":
                self._drain([work[got[1]]])
                continue
            node = _Dir(os.fsdecode(got[1]), None)
            node.fd = got[2]
            try:
                st = os.fstat(node.fd)
                node.dev, node.ino, node.depth = st.st_dev, st.st_ino, node.name.count("/") + 1
                self._drain([node])
            finally:
                os.close(node.fd)
                node.fd = None
        side.quit()
        return self.report

    def _hand_over(self, stack):
        """Give the broker the shallowest directory waiting on `stack` (the biggest share,
        usually), opened and checked here as this walker would open it itself."""
        side = self.side
        side.answer()
        node = stack[0]
        relpath = os.fsencode("/".join(node.names()))
        if len(relpath) > handoff.MAX_HANDOFF_PATH:
            return
        del stack[0]
        if not self._open_checked(node):
            return  # reported (an error or a pruned mount), as if visited
        try:
            side.give(relpath, node.fd)
        finally:
            self.fds.release(node)


class Walk(_Findings, _Sharing):
    """One walk over one or more roots; fills a report. Not thread-safe; one use."""

    def __init__(self, report, opts, use_chdir, workers=1):
        self.report = report
        self.counts = report["counts"]
        self.opts = opts
        self.deadline = (time.monotonic() + opts.budget) if opts.budget else None
        self.progress = opts.progress
        self.use_chdir = use_chdir
        self.workers = workers
        self.next_progress = time.monotonic() + opts.progress_interval
        self.fds = _HeldDirs(held_fd_cap())
        self.xattrs_supported = True
        self.cap_bits = capsmod.kernel_cap_bits()
        self.cold_walkers = handoff.COLD_WALKERS
        self.io_start = None
        self.side = None  # a forked walker's handoff.WalkerSide

    def out_of_time(self):
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.report["complete"] = False
            return True
        return False

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
            if self.opts.prune_mounts:
                try:
                    self.check_mounts = bool(mount_points_under(root_path, read_mountinfo()))
                    self.root_mnt = mount_id_of_fd(root_fd) if self.check_mounts else None
                    self.check_mounts = self.root_mnt is not None
                except OSError as exc:
                    self.add_error(root_path, exc, "read /proc/self/mountinfo")
            if self.opts.do_chown:
                self.visit_dir_owner(root_fd, root_st, root_path)
            if self.workers > 1 and self.use_chdir:
                self._walk_shared(root)
            else:
                self._drain([root])
        finally:
            self.fds.release_all()

    def _drain(self, stack):
        """Depth first over `stack` until it is empty or the budget is spent; in a forked
        walker, hand a directory over when the broker asks (one byte read per directory)."""
        side = self.side
        while stack:
            if self.out_of_time():
                return
            if side is not None and len(stack) > 1 and side.asked():
                self._hand_over(stack)
            self._visit(stack.pop(), stack)

    def _visit(self, node, pending):
        """Open (identity- and mount-checked) and list one directory; queue its subdirectories."""
        if node.fd is None and not self._open_checked(node):  # the root and handed-over ones are open
            return
        self.counts["dirs"] += 1
        self.list_dir(node, pending, self.root_path)
        node.listed = True
        if node.pending == 0:
            self.fds.release(node)
        self.fds.trim()
        if self.progress is not None and time.monotonic() >= self.next_progress:
            self.next_progress = time.monotonic() + self.opts.progress_interval
            self.progress(dict(self.counts))

    def _open_checked(self, node):
        """Open node under its parent's descriptor and hold it; False when it cannot be
        opened (an error is reported) or sits on another mount (pruned and reported)."""
        root_path, parent = self.root_path, node.parent
        try:
            pfd = parent.fd if parent.fd is not None else self.fds.ensure(parent)
            fd = _open_child(pfd, node.name)
        except (OSError, ChangedUnderUs) as exc:
            self.add_error(node.path(root_path), exc, "open directory")
            self._child_done(parent)
            return False
        self._child_done(parent)
        self.fds.hold(node, fd)
        st = os.fstat(fd)
        node.dev, node.ino = st.st_dev, st.st_ino
        pruned = False
        if self.opts.one_file_system and st.st_dev != self.root.dev:
            pruned = True
        elif self.check_mounts:
            try:
                pruned = mount_id_of_fd(fd) != self.root_mnt
            except OSError as exc:
                self.add_error(node.path(root_path), exc, "read fdinfo")
                pruned = True
        if pruned:
            self.report["pruned_mounts"].append(node.path(root_path))
            self.fds.release(node)
            return False
        if self.opts.do_chown:
            self.visit_dir_owner(fd, st, node.path(root_path))
        return True

    def _child_done(self, parent):
        parent.pending -= 1
        if parent.pending == 0 and parent.listed:
            self.fds.release(parent)

    def list_dir(self, node, stack, root_path):
        dfd = node.fd
        if self.use_chdir:
            os.fchdir(dfd)
            proc_prefix = ""
        else:
            proc_prefix = "/proc/self/fd/%d/" % dfd
        caps_ok = self.opts.do_caps and self.xattrs_supported
        setid_mask = self.opts.setid_mask if self.opts.do_setid else 0
        do_chown = self.opts.do_chown
        do_device = self.opts.do_device
        chown_from = self.opts.chown_from
        chown_gids = self.opts.chown_gids
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
                            continue
                        counts["special"] += 1
                        if do_device:
                            st = entry.stat(follow_symlinks=False)
                            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                                self.act_on_file(dfd, entry.name, st, node.path(root_path) + "/" + entry.name)
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    self._entry_error(node, entry.name, exc, "stat")
                    continue
                mode = st.st_mode
                if not stat.S_ISREG(mode):
                    counts["special"] += 1
                    if do_device and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
                        self.act_on_file(dfd, entry.name, st, node.path(root_path) + "/" + entry.name)
                    continue
                counts["files"] += 1
                has_caps = False
                if caps_ok:
                    try:
                        has_caps = CAP_XATTR in os.listxattr(proc_prefix + entry.name, follow_symlinks=False)
                    except OSError as exc:
                        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):  # no xattrs here: setid still checked
                            self.xattrs_supported = caps_ok = False
                        else:
                            self._entry_error(node, entry.name, exc, "listxattr")
                            continue
                if mode & setid_mask or has_caps or (do_chown and (st.st_uid in chown_from or st.st_gid in chown_gids)):
                    self.act_on_file(dfd, entry.name, st, node.path(root_path) + "/" + entry.name)

    def _entry_error(self, node, name, exc, op):
        path = node.path(self.root_path) + "/" + name
        self.add_error(path, "vanished during the walk" if exc.errno == errno.ENOENT else exc, op)


def _depth(node):
    return node.depth


def held_fd_cap():
    """How many directory descriptors a walk may hold in this process: MAX_HELD_DIR_FDS,
    or fewer when RLIMIT_NOFILE leaves less room (``ulimit -n 64``) beside the
    descriptors already open and the few a walk opens for a moment (FD_RESERVE)."""
    free = free_descriptors()
    if free is None:
        return MAX_HELD_DIR_FDS
    return max(2, min(MAX_HELD_DIR_FDS, free - FD_RESERVE))
