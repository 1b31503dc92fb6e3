# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Forked walkers handing directories to each other while they walk (issue 13).

walk.py's forked walkers used to take whole subtrees from a queue filled once. Two
things were wrong with that on a cold disk:

* one package holding 40 % of the tree kept one walker busy long after the others had
  finished;
* two walkers kept at most two reads in flight. On this machine a cold walk is bound
  by the guest kernel's CPU (benchmarks/bench_cold_limit.py: about 21-27 s of system
  time per 1M files, whoever walks), so the second core idles whenever both walkers
  wait on the disk.

Work is now split per directory, the way bench_cold_limit.py's C probe splits it:

* The walkers first take the frontier's directories by index from a pipe they read
  themselves (as before: no round trip per directory; measured, a round trip through
  the broker for each of a 1M tree's 4,937 frontier directories cost each walker 0.7 s).
* A ``Broker`` in the process that forked the walkers (which otherwise only waits)
  holds the work still to give: frontier indices that did not fit on the pipe, then
  directories that busy walkers hand over. A walker with nothing left says so (``H``); when nothing is
  queued, the broker bumps a generation counter in a shared anonymous mapping, and
  each busy walker that sees the new generation (one byte read per directory) hands
  over the shallowest directory it has not opened yet: its biggest share, usually.
* What is handed over is a directory **descriptor** (SCM_RIGHTS over a SOCK_SEQPACKET
  socketpair), opened and identity-checked by the walker that found the directory,
  exactly as it opens its own (O_NOFOLLOW under its parent's descriptor, mount
  checks), with its path for the report. Nothing is looked up again by path; no
  walker trusts another's names for anything but reporting.
* Cold: once the walk has read COLD_READ_BYTES from the disk (/proc/PID/io of this
  process and the walkers), the broker forks more walkers, up to COLD_WALKERS in all,
  so that more reads are in flight and a walker waiting on the disk leaves its core to
  another. They start with nothing and take what the others hand over. A warm walk
  reads nothing from the disk and keeps ``workers`` walkers.
* Done: every walker has said ``H`` and nothing is queued. Then each gets ``D`` and
  sends its report on its fork_json pipe. A walker out of time says ``Q`` and stops.

Descriptors: the broker holds only what is queued, and walkers hand over only when a
generation asks for it (at most one directory each per generation, and no generation
while anything is queued), so the broker holds at most one descriptor per walker. A
walker holds one received directory at a time beside its own bounded set.
"""
import collections
import mmap
import os
import select
import socket
import struct
import time

from .._core.forked import fork_json, free_descriptors, read_all, stop_child

# Walkers in all once the walk reads from the disk (measured on this machine: 16 and 32
# were no faster than 8, benchmarks/README.md). Warm walks keep the caller's count.
COLD_WALKERS = 8
# The walk is cold once it has read this much from the disk (/proc/PID/io read_bytes).
# Measured: a warm 200k or 1M walk still reads about 300 KB; a cold 1M walk about 700 MB.
COLD_READ_BYTES = 16 * 1024 * 1024
POLL_S = 0.02  # how often the broker looks at read_bytes until the walk is known cold or warm
MAX_MESSAGE = 1 << 16
# A directory whose path is longer than this is walked where it was found, not handed over.
MAX_HANDOFF_PATH = MAX_MESSAGE - 64

# Descriptors the broker keeps per walker (its socket and report pipe, one queued
# directory) and keeps free beside them, when it decides how many cold walkers fit.
FDS_PER_WALKER = 3
FD_SPARE = 8

HUNGRY, GIVE, QUIT = b"H", b"G", b"Q"  # walker -> broker
INDEX, DIRECTORY, DONE = b"I", b"F", b"D"  # broker -> walker
_INDEX = struct.Struct("<I")


def read_bytes(pid):
    """Bytes process `pid` (all its threads) made the block layer read: /proc/PID/io."""
    with open("/proc/%d/io" % pid, "rb") as f:
        for line in f:
            if line.startswith(b"read_bytes:"):
                return int(line.split()[1])
    raise OSError(2, "no read_bytes in /proc/%d/io" % pid)


def own_read_bytes():
    """read_bytes of this process, or None where /proc/PID/io cannot be read."""
    try:
        return read_bytes(os.getpid())
    except (OSError, ValueError):
        return None


class _Walker:
    __slots__ = ("chan", "pid", "report_fd", "state")

    def __init__(self, pid, report_fd, chan):
        self.pid, self.report_fd, self.chan = pid, report_fd, chan
        self.state = "busy"  # busy, hungry (waits for work), gone (quit or exited)


class Broker:
    """The work still to hand out, and the walkers it goes to (see the module docstring).

    ``indices``: frontier directories to hand out by index, first to last (those that did
    not fit on the pipe the walkers read themselves, walk.py); ``io_start``: this
    process's read_bytes when the walk began (None: no I/O accounting, so never cold);
    ``cold_walkers``: walkers in all once cold.
    """

    def __init__(self, indices=(), io_start=None, cold_walkers=COLD_WALKERS):
        self.queue = collections.deque((INDEX + _INDEX.pack(index), None) for index in indices)
        self.walkers = []
        self.io_start = io_start
        self.cold_walkers = cold_walkers
        self.cold = False
        self.handed = 0  # directories walkers handed over (for tests and benchmarks)
        self.lost = []  # paths below the root handed over whose descriptor never arrived
        self.generation = mmap.mmap(-1, 1)  # MAP_SHARED | MAP_ANONYMOUS: the forked walkers see it

    # -- forking --------------------------------------------------------------------

    def fork(self, run):
        """Fork a walker that runs ``run(WalkerSide)``; its report comes on fork_json's pipe."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)

        def child():
            self._close_inherited()
            mine.close()
            return run(WalkerSide(theirs, self.generation))

        try:
            pid, report_fd = fork_json(child)
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        self.walkers.append(_Walker(pid, report_fd, mine))

    def _close_inherited(self):
        """In a new walker: close what belongs to the broker (the other walkers' sockets and
        report pipes, queued descriptors)."""
        for walker in self.walkers:
            walker.chan.close()
            os.close(walker.report_fd)
        for _message, fd in self.queue:
            if fd is not None:
                os.close(fd)
        self.queue.clear()

    # -- the broker's loop ------------------------------------------------------------

    def run(self, spawn):
        """Hand out work until every walker is done; then collect and return their reports.

        ``spawn``: a callable that forks one more walker (``self.fork``), called when the
        walk turns cold. Interrupted, every walker is stopped and reaped before re-raising.
        """
        try:
            self._serve(spawn)
        except BaseException:
            self.abort()
            raise
        self._drop_queue()
        children = [(walker.pid, walker.report_fd) for walker in self.walkers]
        for walker in self.walkers:
            walker.chan.close()
        self.walkers = []
        return read_all(children)

    def abort(self):
        """Stop and reap every walker forked so far; close what the broker holds."""
        self._drop_queue()
        for walker in self.walkers:
            walker.chan.close()
            os.close(walker.report_fd)
            stop_child(walker.pid)
        self.walkers = []

    def _serve(self, spawn):
        next_look = time.monotonic()
        while any(walker.state == "busy" for walker in self.walkers):
            watching = not self.cold and self.io_start is not None and len(self.walkers) < self.cold_walkers
            live = {walker.chan.fileno(): walker for walker in self.walkers if walker.state != "gone"}
            timeout = max(0.0, next_look - time.monotonic()) if watching else None
            for fileno in select.select(list(live), [], [], timeout)[0]:
                self._receive(live[fileno])
            if watching and time.monotonic() >= next_look:  # /proc reads every POLL_S, not per message
                next_look = time.monotonic() + POLL_S
                if self._turned_cold():
                    self._spawn_cold(spawn)
        for walker in self.walkers:
            if walker.state == "hungry":
                try:
                    walker.chan.send(DONE)
                except OSError:
                    pass  # it died meanwhile: its report (or its absence) says so

    def _spawn_cold(self, spawn):
        """Fork walkers up to cold_walkers, as far as this process's descriptor limit leaves
        room for their sockets, pipes and a queued descriptor each (a fork that fails for
        want of descriptors or processes just leaves the walk with the walkers it has)."""
        free = free_descriptors()
        room = 0 if free is None else max(0, (free - FD_SPARE) // FDS_PER_WALKER)
        for _walker in range(min(self.cold_walkers - len(self.walkers), room)):
            try:
                spawn()  # a new walker is busy until it says H, which it does first
            except OSError:
                break
        self.cold_walkers = len(self.walkers)

    def _turned_cold(self):
        try:
            total = read_bytes(os.getpid()) - self.io_start
            for walker in self.walkers:
                total += read_bytes(walker.pid)
        except (OSError, ValueError):
            self.io_start = None  # no I/O accounting here (or a walker already reaped): stay as we are
            return False
        self.cold = total >= COLD_READ_BYTES
        return self.cold

    def _receive(self, walker):
        try:
            message, fds, _flags, _addr = socket.recv_fds(walker.chan, MAX_MESSAGE, 1)
        except ConnectionError:
            message, fds = b"", []
        kind = message[:1]
        if kind == GIVE and fds:
            self.handed += 1
            self._offer(DIRECTORY + message[1:], fds[0])
            return
        for fd in fds:  # none expected with any other message
            os.close(fd)
        if kind == GIVE:  # its descriptor did not arrive (the limit): say so, never skip silently
            self.lost.append(os.fsdecode(message[1:]))
        elif kind == HUNGRY:
            walker.state = "hungry"
            if self.queue:
                self._send(walker, *self.queue.popleft())
            elif any(other.state == "busy" for other in self.walkers):
                self._ask_for_work()
        elif kind == QUIT or not message:  # out of time, or it exited (EOF): it takes nothing more
            walker.state = "gone"
        else:
            raise RuntimeError("unexpected message from a walker: %r" % message[:16])

    def _offer(self, message, fd):
        hungry = [walker for walker in self.walkers if walker.state == "hungry"]
        if not hungry:
            self.queue.append((message, fd))
            return
        self._send(hungry[0], message, fd)
        if len(hungry) > 1:
            self._ask_for_work()  # more walkers wait: ask again

    def _send(self, walker, message, fd):
        walker.state = "busy"
        try:
            if fd is None:
                walker.chan.send(message)
            else:
                socket.send_fds(walker.chan, [message], [fd])
        except OSError:
            walker.state = "gone"  # it died: its report says why
        finally:
            if fd is not None:
                os.close(fd)

    def _ask_for_work(self):
        self.generation[0] = (self.generation[0] + 1) & 0xFF

    def _drop_queue(self):
        for _message, fd in self.queue:
            if fd is not None:
                os.close(fd)
        self.queue.clear()


class WalkerSide:
    """A forked walker's end: ask for work, hand work over, say it is out of time."""

    __slots__ = ("chan", "generation", "seen")

    def __init__(self, chan, generation):
        self.chan = chan
        self.generation = generation
        self.seen = generation[0]

    def asked(self):
        """True once per new generation: the broker has a hungry walker and nothing queued."""
        return self.generation[0] != self.seen

    def answer(self):
        self.seen = self.generation[0]

    def take(self):
        """Block for the next piece of work: ("index", n), ("directory", path bytes, fd) or None (done)."""
        self.chan.send(HUNGRY)
        message, fds, _flags, _addr = socket.recv_fds(self.chan, MAX_MESSAGE, 1)
        kind = message[:1]
        if kind == INDEX and not fds:
            return ("index", _INDEX.unpack(message[1:5])[0])
        if kind == DIRECTORY and len(fds) == 1:
            return ("directory", message[1:], fds[0])
        for fd in fds:
            os.close(fd)
        if kind == DONE:
            return None
        raise RuntimeError("unexpected message from the walk's broker: %r" % message[:16])

    def give(self, relpath, fd):
        """Hand directory `fd` (path `relpath` bytes below the root) to the broker."""
        socket.send_fds(self.chan, [GIVE + relpath], [fd])

    def quit(self):
        self.chan.send(QUIT)
