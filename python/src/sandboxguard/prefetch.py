# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Cold cache: directory reads kept in flight ahead of the forked walkers.

A cold walk waits on the disk: each walker reads one directory at a time, so two
walkers keep at most two reads in flight, however many the disk could serve
(benchmarks/bench_cold_limit.py measures how many). Once the walkers are forked, the
process that forked them only waits for their reports; while they read from the disk,
that process runs ``threads`` prefetch threads instead. They list directories taken
from one shared stack as they discover them (work is split per directory, not per
subtree, so a package holding 40 % of the tree is read by every thread), which fills
the kernel's dentry, inode and directory-block caches just before the walkers get
there: every directory is listed, and one regular file per inode-table block is
stat()ed (a cold walk reads file inodes as well as directories: measured, a walk after
a directories-only prefetch still read 300 MB of inode tables). Directory reads
release the GIL, and the walkers are other processes, so the threads compete with
nobody's interpreter but each other's.

A prefetch reads, never acts, and hands nothing to the walk: every walker still opens
every directory itself (O_NOFOLLOW, identity-checked) and decides everything from
what it sees then. Safety of the reads themselves:

* Every directory is opened with openat2(2) relative to the root's proven descriptor
  with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV:
  the kernel refuses a symlink in any component, any step out of the root and any
  mount crossing (a same-filesystem bind mount included), so a tree changing under us
  cannot point a read anywhere else. Without openat2 (Linux before 5.6, a seccomp
  filter refusing it) nothing is prefetched and the walk runs as before.
* Each thread holds at most one descriptor at a time (two where scandir is used: its
  copy); an error (EMFILE, ENAMETOOLONG, a vanished directory) skips that directory.
* Directories deeper than MAX_DEPTH below the root are left to the walkers (a chain
  thousands deep would make every openat2 resolve thousands of names).
* The threads stop at the walk's deadline, or when told to; ``stop()`` joins them, so
  none outlives the walk (the next root forks its walkers from a one-thread process).

When: only when the walk is reading from the disk. ``ColdWatch.poll`` (called while
the parent waits for its walkers) sums read_bytes of /proc/PID/io for this process
(since the walk started) and the walkers; at COLD_READ_BYTES it starts the threads.
A warm walk reads nothing from the disk and starts no thread, so its cost is a few
reads of /proc per second.
"""
import ctypes
import os
import platform
import stat
import struct
import threading
import time

from .forked import libc

SYS_OPENAT2 = 437  # one number on every Linux architecture (syscalls added since 5.1 share them)
RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE_FLAGS = RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH
OPEN_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
MAX_DEPTH = 64
# getdents64(2) through syscall(2) where its number is known: one call fills a buffer with
# hundreds of entries, parsed for the DT_DIR ones (a scandir() makes an object per entry,
# 3-4x the CPU for the same listing). Elsewhere os.scandir.
SYS_GETDENTS64 = {"x86_64": 217, "aarch64": 61, "riscv64": 61, "ppc64le": 202, "s390x": 220}.get(platform.machine())
DENTS_BUFFER = 1 << 15
_DIRENT = struct.Struct("=QqHB")  # d_ino, d_off, d_reclen, d_type; d_name follows (NUL-terminated)
DT_UNKNOWN, DT_DIR, DT_REG = 0, 4, 8
INODES_PER_BLOCK = 16  # ext4's default: 256-byte inodes in 4 KiB blocks (a guess elsewhere: only costs stats)
# Prefetch threads: measured on this machine's disk (benchmarks/results/*cold-limit*): cold
# directory reads scale up to about 8-16 in flight; more only add GIL hand-offs.
THREADS = 8
# The walk is cold once it has read this much from the disk (/proc/PID/io read_bytes).
# Measured: a warm 200k or 1M walk still reads about 300 KB (so 256 KiB started the
# threads on warm walks and cost 40 % more CPU); a cold 1M walk reads about 700 MB.
COLD_READ_BYTES = 16 * 1024 * 1024
POLL_S = 0.02  # how often the waiting parent looks at read_bytes


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _openat2(dir_fd, path):
    """openat2(dir_fd, path, OPEN_FLAGS, RESOLVE_FLAGS); an fd, or raises OSError."""
    lib = libc()
    if lib is None:
        raise OSError(38, "no C library to call openat2 through")  # ENOSYS
    how = _OpenHow(OPEN_FLAGS, 0, RESOLVE_FLAGS)
    fd = lib.syscall(ctypes.c_long(SYS_OPENAT2), ctypes.c_int(dir_fd), ctypes.c_char_p(path),
                     ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def supported(root_fd):
    """True when openat2 with the RESOLVE_ flags works here (tried on the root itself)."""
    try:
        os.close(_openat2(root_fd, b"."))
    except (OSError, AttributeError):
        return False
    return True


def read_bytes(pid):
    """Bytes process `pid` (all its threads) made the block layer read: /proc/PID/io."""
    with open("/proc/%d/io" % pid, "rb") as f:
        for line in f:
            if line.startswith(b"read_bytes:"):
                return int(line.split()[1])
    raise OSError(2, "no read_bytes in /proc/%d/io" % pid)


class Prefetcher:
    """`threads` threads listing directories below `root_fd` from one shared stack.

    ``seeds``: relative paths (bytes) to start from, listed first-to-last in the order
    the walkers take them; their subdirectories are pushed as they are found. ``dirs``
    counts the directories listed (for tests and benchmarks).
    """

    def __init__(self, root_fd, seeds, threads=THREADS, deadline=None):
        self.root_fd = root_fd
        self.deadline = deadline
        self.stack = [(path, path.count(b"/")) for path in reversed(seeds)]
        self.cond = threading.Condition()
        self.busy = 0
        self.stopping = False
        self.dirs = 0
        self.threads = [threading.Thread(target=self._run, name="sandboxguard-prefetch", daemon=True)
                        for _thread in range(max(1, threads))]

    def start(self):
        for thread in self.threads:
            thread.start()
        return self

    def stop(self):
        """Tell the threads to stop and wait until they have (each finishes one read)."""
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        for thread in self.threads:
            if thread.is_alive():
                thread.join()

    def wait(self):
        """Wait until every directory reachable from the seeds has been listed (tests)."""
        for thread in self.threads:
            thread.join()

    def _take(self):
        with self.cond:
            while not self.stack and self.busy and not self.stopping:
                self.cond.wait()
            if self.stopping or not self.stack:
                self.cond.notify_all()  # nothing left: wake the others so they return too
                return None
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.stopping = True
                self.cond.notify_all()
                return None
            self.busy += 1
            return self.stack.pop()

    def _run(self):
        buf = ctypes.create_string_buffer(DENTS_BUFFER) if SYS_GETDENTS64 else None
        while True:
            item = self._take()
            if item is None:
                return
            found = self._list(buf, *item)
            with self.cond:
                self.busy -= 1
                if found is None:  # refused or vanished: nothing listed
                    found = ()
                else:
                    self.dirs += 1
                self.stack.extend(found)
                if found:
                    self.cond.notify(len(found))
                elif not self.busy and not self.stack:
                    self.cond.notify_all()

    def _list(self, buf, path, depth):
        """List one directory; return its subdirectories as (relative path, depth), or
        None when it could not be opened or read."""
        try:
            fd = _openat2(self.root_fd, path)
        except OSError:
            return None
        try:
            names = _subdirs(fd, buf) if buf is not None else _subdirs_scandir(fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        if depth >= MAX_DEPTH:
            return ()
        prefix = path + b"/"
        # pushed in listing order, so popped last-listed first, as a walker does
        return [(prefix + name, depth + 1) for name in names]


def _subdirs(fd, buf):
    """Names (bytes) of the subdirectories in directory `fd`, read with getdents64 into
    `buf` (a ctypes buffer of DENTS_BUFFER bytes). On the way, one regular file per
    inode-table block is stat()ed (INODES_PER_BLOCK consecutive inode numbers): that
    reads the block (and the filesystem's inode readahead after it), so the walker's
    own lstat of every file finds it cached."""
    lib = libc()
    found = []
    blocks = set()
    unpack = _DIRENT.unpack_from
    while True:
        got = lib.syscall(ctypes.c_long(SYS_GETDENTS64), ctypes.c_int(fd), buf, ctypes.c_size_t(DENTS_BUFFER))
        if got < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        if got == 0:
            return found
        data = ctypes.string_at(buf, got)
        off = 0
        while off < got:
            ino, _offset, reclen, dtype = unpack(data, off)
            if dtype == DT_REG:
                if ino // INODES_PER_BLOCK not in blocks:
                    blocks.add(ino // INODES_PER_BLOCK)
                    _stat_at(fd, data[off + 19:data.index(b"\0", off + 19)])
            elif dtype in (DT_DIR, DT_UNKNOWN):
                name = data[off + 19:data.index(b"\0", off + 19)]
                if name not in (b".", b"..") and (dtype == DT_DIR or _is_dir_at(fd, name)):
                    found.append(name)
            off += reclen


def _stat_at(fd, name):
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        pass


def _is_dir_at(fd, name):
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _subdirs_scandir(fd):
    with os.scandir(fd) as entries:
        return [os.fsencode(entry.name) for entry in entries if entry.is_dir(follow_symlinks=False)]


class ColdWatch:
    """Starts a Prefetcher once the walk reads from the disk (see the module docstring).

    ``own_start``: this process's read_bytes when the walk began (None: not readable).
    ``poll()`` returns True once it needs no more calls (started, or cannot tell).
    """

    def __init__(self, root_fd, seeds, pids, own_start, threads=THREADS, deadline=None):
        self.root_fd = root_fd
        self.seeds = seeds
        self.pids = pids
        self.own_start = own_start
        self.threads = threads
        self.deadline = deadline
        self.prefetcher = None

    def cold(self):
        total = read_bytes(os.getpid()) - self.own_start
        for pid in self.pids:
            total += read_bytes(pid)
        return total >= COLD_READ_BYTES

    def poll(self):
        if self.own_start is None or not self.threads or not self.seeds:
            return True
        try:
            if not self.cold():
                return False
        except (OSError, ValueError):
            return True  # no I/O accounting here (or a walker already reaped): no prefetch
        if supported(self.root_fd):
            self.prefetcher = Prefetcher(self.root_fd, self.seeds, self.threads, self.deadline).start()
        return True

    def stop(self):
        if self.prefetcher is not None:
            self.prefetcher.stop()
