# GENERATED from python/src/sandboxguard/_core/forked.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Forked walkers: a child that runs a walk and hands back its report as JSON on a pipe.

``fchdir`` is process-wide, so the walk that uses it runs in a forked child, and a
second forked walker uses the second core (threads are slower: FACTS.md). A child dies
with its parent (PR_SET_PDEATHSIG) and unwinds on SIGTERM, stopping its own children;
a parent interrupted while it waits stops and reaps its children before it re-raises,
so nothing changes after the parent has gone.
"""
import ctypes
import json
import os
import resource
import select
import signal
import threading
import time

# How much longer than the budget the parent waits for a forked worker before killing it.
WORKER_GRACE_S = 5.0
# How long a stopped walker has to stop its own walkers before it is SIGKILLed.
WORKER_STOP_S = 2.0
MAX_WORKERS = 2  # measured: a second walker helps on 2 cores; threads make it slower (FACTS.md)


def default_workers():
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus))


def free_descriptors():
    """Descriptors this process may still open under RLIMIT_NOFILE (soft limit minus
    /proc/self/fd), a very large number when unlimited, None when either cannot be read."""
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        in_use = len(os.listdir("/proc/self/fd"))
    except (OSError, ValueError):
        return None
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft - in_use


def fork_is_safe():
    return hasattr(os, "fork") and threading.active_count() == 1


class Stopped(BaseException):
    """Raised in a forked walker by SIGTERM: unwind, report, exit (see fork_json)."""


def _raise_stopped(signum, _frame):
    raise Stopped("stopped by signal %d" % signum)


_LIBC = []
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def libc():
    """This process's C library through ctypes (errno kept; ``syscall`` returns a long),
    loaded once; None where there is none to load."""
    if not _LIBC:
        try:
            lib = ctypes.CDLL(None, use_errno=True)
            lib.syscall.restype = ctypes.c_long
        except (OSError, AttributeError):
            lib = None
        _LIBC.append(lib)
    return _LIBC[0]


def _die_with_parent(parent_pid):
    """In a forked child: be SIGKILLed when the parent dies (prctl PR_SET_PDEATHSIG,
    prctl(2)), and exit now if it died before that was set."""
    try:
        libc().prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not glibc/Linux: the parent's signal handling still stops us
        pass
    if os.getppid() != parent_pid:
        os._exit(1)


def fork_json(run):
    """Fork a child that runs `run()` (a JSON-able dict) and writes it to a pipe.

    Returns (pid, read_fd). Read it with read_json. A child that raises reports
    {"worker_error": ...}; it never returns into the caller's code. The child dies with
    its parent (PR_SET_PDEATHSIG) and unwinds on SIGTERM (stopping its own children).
    """
    parent = os.getpid()
    read_fd, write_fd = os.pipe()
    # SIGTERM/SIGINT stay blocked across the fork until the child has its own handler: a
    # signal that arrived in the child's first instructions ran the inherited handler inside
    # CPython's after-fork hooks, where the exception is printed and swallowed ("Exception
    # ignored in: <function _after_fork>") and the walker went on. Pending, it is delivered
    # at the unblock below, inside the try, and unwinds the walk as any later one does.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    if pid == 0:  # child
        status = 0
        try:
            signal.signal(signal.SIGTERM, _raise_stopped)
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
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
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
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


def read_json(pid, read_fd, limit):
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


def read_all(children):
    """read_json for each (pid, read_fd) in turn; interrupted, stop every one not yet read."""
    results = []
    done = 0  # children read_json has taken care of (it stops and reaps its own when interrupted)
    try:
        for pid, read_fd in children:
            done += 1
            results.append(read_json(pid, read_fd, None))
    except BaseException:
        for pid, read_fd in children[done:]:
            os.close(read_fd)
            stop_child(pid)
        raise
    return results


def run_in_worker(run, budget):
    """Run `run()` in a forked child; the parent's working directory never moves.

    If the child outlives budget + WORKER_GRACE_S it is killed and None is returned.
    """
    pid, read_fd = fork_json(run)
    limit = (time.monotonic() + budget + WORKER_GRACE_S) if budget else None
    return read_json(pid, read_fd, limit)
