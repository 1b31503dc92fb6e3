# GENERATED from python/src/sandboxguard/strip.py by tools/sync_module_utils.py: edit the source, not this copy.
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
import ctypes
import errno
import json
import math
import os
import resource
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
from .roots import RootRefused, open_root

DEFAULT_BUDGET_S = 10.0
DEFAULT_MAX_LISTED = 1000
# Directory descriptors kept open for pending children before falling back to reopen
# (identity-checked) on demand; keeps a 10,000-deep tree under the fd limit. Fewer when
# RLIMIT_NOFILE is low (held_fd_cap).
MAX_HELD_DIR_FDS = 64
# Descriptors a walker opens for a moment beside the held ones (scandir, an O_PATH
# handle, a reopen chain, fdinfo, mountinfo, the walkers' pipes), kept free of the cap.
FD_RESERVE = 16
# How much longer than the budget the parent waits for a forked worker before killing it.
WORKER_GRACE_S = 5.0
# How long a stopped walker has to stop its own walkers before it is SIGKILLed.
WORKER_STOP_S = 2.0
PROGRESS_INTERVAL_S = 0.5
# Forked walkers share the work once this many directories wait (breadth first before).
SHARE_FRONTIER = 64
MAX_WORKERS = 2  # measured: a second walker helps on 2 cores; threads make it slower (FACTS.md)
SHARE_QUEUE_BYTES = 60000  # below the 64 KiB pipe buffer: the whole queue is written at once

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


_UID_MAX = (1 << 32) - 2  # (uid_t)-1 means "leave unchanged" to chown(2)

OPTION_DEFAULTS = {
    "actions": ("setid", "caps"), "dry_run": False, "budget": DEFAULT_BUDGET_S, "chown_to": None,
    "chown_from": (0,), "caps_method": "xattr", "hardlinks": "strip", "one_file_system": True,
    "prune_mounts": True, "max_listed": DEFAULT_MAX_LISTED, "progress": None,
    "progress_interval": PROGRESS_INTERVAL_S, "fork": None, "allow_files": True, "setuid": True,
    "setgid": True, "workers": None,
}


class StripOptions:
    """The one parameters object of a strip: which actions, how to walk, what to report.

    Keyword names and defaults: OPTION_DEFAULTS (run()'s keywords). Built once per call
    and validated here, so a bad value fails with ValueError naming the option before
    anything is opened.
    Derived, read-only: ``setid_mask``, ``do_setid``, ``do_caps``, ``do_chown``,
    ``skip_hardlinks``.
    """

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(OPTION_DEFAULTS))
        if unknown:
            raise TypeError("unknown strip option(s): %s" % ", ".join(unknown))
        values = dict(OPTION_DEFAULTS, **kwargs)
        for key, value in values.items():
            setattr(self, key, value)
        self._validate()

    def _validate(self):
        self.actions = tuple(self.actions)
        unknown = [a for a in self.actions if a not in ACTIONS]
        if unknown:
            raise ValueError("unknown action(s) %s; choose from %s" % (", ".join(unknown), ", ".join(ACTIONS)))
        if self.caps_method not in CAPS_METHODS:
            raise ValueError("caps_method must be one of %s, not %r" % (", ".join(CAPS_METHODS), self.caps_method))
        if self.hardlinks not in HARDLINK_POLICIES:
            raise ValueError("hardlinks must be one of %s, not %r" % (", ".join(HARDLINK_POLICIES), self.hardlinks))
        self.budget = _seconds("budget", self.budget, allow_zero=True)
        self.progress_interval = _seconds("progress_interval", self.progress_interval, allow_zero=True)
        if isinstance(self.max_listed, bool) or not isinstance(self.max_listed, int) or self.max_listed < 0:
            raise ValueError("max_listed must be a whole number 0 or more, not %r" % (self.max_listed,))
        if "chown" in self.actions:
            if self.chown_to is None:
                raise ValueError("the chown action needs chown_to=(uid, gid)")
            self.chown_to = check_owner(self.chown_to)
        self.chown_from = frozenset(self.chown_from)
        if self.workers is not None:
            self.workers = max(1, int(self.workers))
        self.setid_mask = (stat.S_ISUID if self.setuid else 0) | (stat.S_ISGID if self.setgid else 0)
        self.do_setid = "setid" in self.actions and bool(self.setid_mask)
        self.do_caps = "caps" in self.actions
        self.do_chown = "chown" in self.actions
        self.skip_hardlinks = self.hardlinks == "skip"


def _seconds(name, value, allow_zero):
    """A finite number of seconds (None: 0 where 0 means no limit); ValueError names `name`."""
    if value is None and allow_zero:
        return 0.0
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        least = "0 or more" if allow_zero else "more than 0"
        raise ValueError("%s must be a finite number of seconds, %s; not %r" % (name, least, value))
    return number


def check_owner(chown_to):
    """(uid, gid) as ints a chown(2) can take (gid -1: keep the group); ValueError otherwise."""
    try:
        uid, gid = chown_to
        if isinstance(uid, bool) or isinstance(gid, bool):
            raise TypeError
        uid, gid = int(uid), int(gid)
    except (TypeError, ValueError):
        raise ValueError("chown_to must be (uid, gid) numbers, not %r" % (chown_to,)) from None
    if not 0 <= uid <= _UID_MAX:
        raise ValueError("chown_to uid %d is out of range (0 to %d)" % (uid, _UID_MAX))
    if not (gid == -1 or 0 <= gid <= _UID_MAX):
        raise ValueError("chown_to gid %d is out of range (0 to %d, or -1 to keep the group)" % (gid, _UID_MAX))
    return uid, gid


def options_from(options=None, **kwargs):
    """A StripOptions from a StripOptions, a dict of run()'s keywords, or keywords."""
    if isinstance(options, StripOptions):
        if kwargs:
            raise TypeError("give a StripOptions or keywords, not both")
        return options
    return StripOptions(**dict(options or {}, **kwargs))


# -- the file actions: each takes a proven handle (an O_PATH fd of the very inode the
# scan saw) and acts through /proc/self/fd/N, so nothing is opened for I/O and a name
# swapped for a symlink after the check is never followed.

def _new_entry(path, st, kind="file"):
    return {"path": path, "type": kind, "mode_before": _mode_text(st.st_mode), "mode_after": _mode_text(st.st_mode),
            "caps_before": None, "uid": st.st_uid, "gid": st.st_gid, "nlink": st.st_nlink, "actions": []}


def return_owner(fd, fst, opts, entry):
    """Give the file to opts.chown_to; the kernel clears setid bits and caps (capabilities(7))."""
    uid, gid = opts.chown_to
    os.chown("/proc/self/fd/%d" % fd, uid, gid)
    entry["uid_after"], entry["gid_after"] = uid, (fst.st_gid if gid == -1 else gid)


def clear_caps(fd, opts):
    """Remove security.capability: the xattr itself, or (method chown) re-chown to the same owner."""
    handle = "/proc/self/fd/%d" % fd
    if opts.caps_method == "chown":
        cur = os.fstat(fd)
        os.chown(handle, cur.st_uid, cur.st_gid)
        return
    try:
        os.removexattr(handle, CAP_XATTR)
    except OSError as exc:
        if exc.errno != errno.ENODATA:  # an ownership return just before may have removed it
            raise


def strip_setid(fd, opts):
    """Clear the setuid/setgid bits opts asks for, keeping every other bit."""
    cur = os.fstat(fd)
    if cur.st_mode & opts.setid_mask:
        os.chmod("/proc/self/fd/%d" % fd, stat.S_IMODE(cur.st_mode) & ~opts.setid_mask)


def _caps_text(fd, cap_bits):
    """getcap-style text of the file's capabilities, or None when it carries none."""
    try:
        raw = os.getxattr("/proc/self/fd/%d" % fd, CAP_XATTR)
    except OSError as exc:
        if exc.errno == errno.ENODATA:
            return None
        raise
    try:
        return capsmod.describe(raw, cap_bits)
    except capsmod.CapabilityDecodeError as exc:
        return "undecodable (%s): %s" % (exc, raw.hex())


def fix_proven_file(fd, fst, entry, opts, has_setid, has_caps, needs_chown, cap_bits):
    """Report and (unless dry run or a skipped hard link) fix one regular file.

    ``fd`` is an O_PATH handle whose fstat ``fst`` the caller has proven (regular file,
    the inode it means). Fills ``entry``; returns (found, changed): found is False when
    nothing needs doing after all (the caps were gone). OSError from a change is left
    in entry["error"] (and changed says what had already happened).
    """
    caps_text = _caps_text(fd, cap_bits) if has_caps else None
    has_caps = caps_text is not None
    entry["caps_before"] = caps_text
    actions = entry["actions"]
    if needs_chown:
        actions.append("chown")
    if has_setid:
        actions.extend(bit for flag, bit in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid"))
                       if fst.st_mode & opts.setid_mask & flag)
    if has_caps:
        actions.append("caps")
    if not actions:
        return False, False
    if opts.skip_hardlinks and fst.st_nlink > 1:
        entry["skipped"] = "hard link (nlink %d): left unchanged by policy hardlinks=skip" % fst.st_nlink
        return True, False
    if opts.dry_run:
        mode_after = fst.st_mode & ~opts.setid_mask if has_setid else fst.st_mode
        if needs_chown or (has_caps and opts.caps_method == "chown"):
            mode_after = _mode_after_chown(mode_after)
        entry["mode_after"] = _mode_text(mode_after)
        return True, True
    changed = False
    try:
        for wanted, action in ((needs_chown, lambda: return_owner(fd, fst, opts, entry)),
                               (has_caps, lambda: clear_caps(fd, opts)),
                               (has_setid, lambda: strip_setid(fd, opts))):
            if wanted:
                action()
                changed = True
        entry["mode_after"] = _mode_text(os.fstat(fd).st_mode)
    except OSError as exc:
        entry["error"] = _error_text(exc)
    return True, changed


def fix_file_at(dir_fd, name, options=None, display_path=None, expected=None):
    """Fix ONE file named ``name`` in the directory held open as ``dir_fd`` (public API).

    The single-file path of a strip, for callers that hold a directory descriptor they
    have proven themselves (the real-time guard): ``name`` (str or bytes, one path
    component) is opened O_PATH|O_NOFOLLOW relative to ``dir_fd``, fstat'ed, and acted
    on only when it is a regular file (and, when ``expected`` is given, the inode
    ``(st_dev, st_ino)``); every change goes through /proc/self/fd/N, so a name swapped
    for a symlink is never followed and nothing is opened for I/O.

    ``options``: a StripOptions, or a dict of run()'s keywords (actions, dry_run,
    chown_to, chown_from, caps_method, hardlinks, setuid, setgid; walk options are
    accepted and ignored); None means run()'s defaults (setid and caps).
    ``display_path``: the path to report (default: ``name``).

    Returns the per-file entry of a strip report (path, type, mode_before, mode_after,
    caps_before, uid, gid, nlink, actions, and uid_after/gid_after, skipped or error
    where they apply), or None when there is nothing to do: the name is gone, is not a
    regular file, or the file carries nothing the options act on. Raises ChangedUnderUs
    when ``expected`` is given and the name now holds another inode; OSError when the
    name cannot be opened for another reason than ENOENT; ValueError for bad options.
    Threads: safe (no fchdir). Touches the system unless options say dry_run.
    """
    opts = options_from(options)
    path = os.fsdecode(name) if display_path is None else os.fsdecode(display_path)
    try:
        return _fix_at(dir_fd, name, opts, path, expected, capsmod.kernel_cap_bits())[0]
    except FileNotFoundError:
        return None


def _fix_at(dir_fd, name, opts, path, expected, cap_bits):
    """fix_file_at's work; returns (entry or None, changed). The walk calls it with the
    scan's (st_dev, st_ino) as ``expected``; FileNotFoundError is the caller's to word."""
    fd = os.open(name, _PATH_FLAGS, dir_fd=dir_fd)
    try:
        fst = os.fstat(fd)
        replaced = expected is not None and (fst.st_dev, fst.st_ino) != tuple(expected)
        if (expected is not None and not stat.S_ISREG(fst.st_mode)) or replaced:
            raise ChangedUnderUs("replaced (not the inode scanned); left alone")
        if not stat.S_ISREG(fst.st_mode):
            return None, False
        has_setid = fst.st_mode & opts.setid_mask if opts.do_setid else 0
        needs_chown = opts.do_chown and fst.st_uid in opts.chown_from
        # The magic link /proc/self/fd/N is followed to the inode fd holds, never re-resolved by name.
        has_caps = opts.do_caps and _has_caps_xattr("/proc/self/fd/%d" % fd, follow=True)
        if not (has_setid or has_caps or needs_chown):
            return None, False
        entry = _new_entry(path, fst)
        found, changed = fix_proven_file(fd, fst, entry, opts, has_setid, has_caps, needs_chown, cap_bits)
        return (entry if found else None), changed
    finally:
        os.close(fd)


def _has_caps_xattr(name, follow=False):
    """Whether `name` carries security.capability; False where the filesystem has no xattrs."""
    try:
        return CAP_XATTR in os.listxattr(name, follow_symlinks=follow)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return False
        raise


class _Walk:
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
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)

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
                walkers.append(_fork_json(lambda index=index: self._walk_queue(queue_r, work, index)))
        finally:
            os.close(queue_r)
        for sub in _read_all(walkers):
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
        handle proven to be the inode scanned (see _fix_at)."""
        try:
            entry, changed = _fix_at(dfd, name, self.opts, path, (st.st_dev, st.st_ino), self.cap_bits)
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


class Stopped(BaseException):
    """Raised in a forked walker by SIGTERM: unwind, report, exit (see _fork_json)."""


def _raise_stopped(signum, _frame):
    raise Stopped("stopped by signal %d" % signum)


_LIBC = []


def _die_with_parent(parent_pid):
    """In a forked child: be SIGKILLed when the parent dies (prctl PR_SET_PDEATHSIG,
    prctl(2)), and exit now if it died before that was set."""
    try:
        if not _LIBC:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        _LIBC[0].prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not glibc/Linux: the parent's signal handling still stops us
        pass
    if os.getppid() != parent_pid:
        os._exit(1)


def _fork_json(run):
    """Fork a child that runs `run()` (a JSON-able dict) and writes it to a pipe.

    Returns (pid, read_fd). Read it with _read_json. A child that raises reports
    {"worker_error": ...}; it never returns into the caller's code. The child dies with
    its parent (PR_SET_PDEATHSIG) and unwinds on SIGTERM (stopping its own children).
    """
    parent = os.getpid()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        status = 0
        try:
            signal.signal(signal.SIGTERM, _raise_stopped)
            _die_with_parent(parent)
            os.close(read_fd)
            data = json.dumps(run()).encode()
        except BaseException as exc:  # report, never raise out of a forked child
            data = json.dumps({"worker_error": "%s: %s" % (type(exc).__name__, exc)}).encode()
            status = 1
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view):]
        finally:
            os._exit(status)
    os.close(write_fd)
    return pid, read_fd


def stop_child(pid, grace=WORKER_STOP_S):
    """SIGTERM a forked walker, give it `grace` seconds to stop its own children, then
    SIGKILL; reap it. When this returns the child is gone and changes nothing more."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return
        time.sleep(0.01)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _read_json(pid, read_fd, limit):
    """Collect a forked child's JSON; kill it at monotonic time `limit` (None: wait).

    Returns the dict, or None when the child was killed. Interrupted (KeyboardInterrupt,
    Stopped, SystemExit...), it stops and reaps the child before re-raising.
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
    except BaseException:
        os.close(read_fd)
        stop_child(pid)
        raise
    os.close(read_fd)
    os.waitpid(pid, 0)
    if killed:
        return None
    return json.loads(b"".join(chunks).decode() or "{}")


def _read_all(children):
    """_read_json for each (pid, read_fd) in turn; interrupted, stop every one not yet read."""
    results = []
    try:
        for pid, read_fd in children:
            results.append(_read_json(pid, read_fd, None))
    except BaseException:
        for pid, read_fd in children[len(results) + 1:]:
            os.close(read_fd)
            stop_child(pid)
        raise
    return results


def _run_in_worker(run, budget):
    """Run `run()` in a forked child; the parent's working directory never moves.

    If the child outlives budget + WORKER_GRACE_S it is killed and None is returned.
    """
    pid, read_fd = _fork_json(run)
    limit = (time.monotonic() + budget + WORKER_GRACE_S) if budget else None
    return _read_json(pid, read_fd, limit)


def run(paths, options=None, **kwargs):
    """Walk `paths` once and apply the actions; return the report.

    ``options`` is a StripOptions (or a dict of its keywords); keywords work as well:
    ``actions`` (subset of ACTIONS), ``dry_run``, ``budget`` (seconds for the whole
    walk; 0 or None: no limit), ``chown_to`` ((uid, gid), required with the chown
    action), ``chown_from``, ``caps_method``, ``hardlinks``, ``one_file_system``,
    ``prune_mounts``, ``max_listed``, ``progress(counts)`` (called at most every
    ``progress_interval`` seconds, between directories), ``fork`` (None decides by
    itself: a forked worker when the process has one thread), ``allow_files``,
    ``setuid``/``setgid`` (which bits the setid action clears), ``workers`` (forked
    walkers sharing subtrees; None uses up to MAX_WORKERS of the CPUs this process may
    run on). Bad values raise ValueError naming the option.

    Roots are opened first, component by component (roots.open_root); a refused root
    raises RootRefused before anything is walked, and each walk starts from the
    descriptor that was proven, reporting the path it proves. Touches the system: it changes files unless ``dry_run``.
    """
    opts = options_from(options, **kwargs)
    if isinstance(paths, (str, bytes)):
        paths = [paths]
    if not paths:
        raise RootRefused("", "no paths given")
    opened = []
    try:
        for path in paths:
            opened.append(open_root(path, allow_file=opts.allow_files))
        return _run_opened(opened, opts)
    finally:
        for root in opened:
            root.close()


def _run_opened(opened, opts):
    """Walk roots already opened and proven (roots.open_root); return the report."""
    started = time.monotonic()
    report = new_report([root.path for root in opened], opts.dry_run)
    use_fork = _fork_is_safe() if opts.fork is None else bool(opts.fork)
    n_workers = _default_workers() if opts.workers is None else opts.workers

    def walk_all(use_chdir):
        walker = _Walk(report, opts, use_chdir, n_workers if use_chdir else 1)
        for root in opened:
            if walker.out_of_time():
                break
            if root.is_dir:
                walker.walk_root(root)
            else:
                _walk_single_file(walker, root)
        return report

    if use_fork:
        result = _run_in_worker(lambda: walk_all(True), opts.budget)
        if result is None:
            report["complete"] = False
            report["errors"].append({"path": opened[0].path, "op": "walk",
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


def _walk_single_file(walker, root):
    """Apply the actions to a single regular file given as a root (an OpenRoot of a file:
    its parent's descriptor, its name and the inode proven when it was opened)."""
    walker.counts["files"] += 1
    walker.act_on_file(root.fd, root.name, root.st, root.path)


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
