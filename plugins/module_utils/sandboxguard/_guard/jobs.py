# GENERATED from python/src/sandboxguard/_guard/jobs.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The guard's forked jobs: walks of a directory moved in, full sweeps of roots (both from held
descriptors, never a name) and engine queries, at most ``max_jobs`` walks at once; each job's
JSON report is read back without blocking the event loop.
"""
import json
import os
import select
import signal
import time

from .. import strip as stripmod
from .._core import forked
from ..roots import OpenRoot
from .lines import fd_path, file_record, names, where

MAX_JOBS = 4  # forked walks (moved-in trees, full sweeps) at once; the rest wait
MAX_WAITING_TREES = 256  # moved-in trees waiting with their directory held open; beyond: a sweep of the root
ENGINE_QUERY_TIMEOUT_S = 60.0  # a forked engine query older than this is killed and asked again


def _child_signals():
    """In a forked child: the parent's stop handlers and wakeup fd are not ours."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)


class JobPool:
    """Jobs by read fd (``jobs``) and those waiting for a slot (``waiting``).

    ``walk_options`` (budget, dry_run, actions, setuid, setgid) are the walks'; ``rootset``
    says which roots are still held; ``emit(record)`` takes each file a walk fixed, ``log``
    each line, ``on_engine(answer)`` each engine answer; ``stats`` counts sweeps, trees, errors.
    """

    def __init__(self, walk_options, rootset, emit, log, stats, on_engine):
        self.walk_options = walk_options
        self.rootset = rootset
        self.emit = emit
        self.log = log
        self.stats = stats
        self.on_engine = on_engine
        self.jobs = {}  # read fd -> job dict (pid, kind, paths, chunks, started)
        self.waiting = []  # jobs not started yet (max_jobs running); a tree job holds its directory fd
        self.max_jobs = MAX_JOBS
        self.max_waiting_trees = MAX_WAITING_TREES

    def start_tree(self, dir_fd, name, root, read_at):
        """Walk a directory moved in under a held directory (a forked job) from the
        descriptor opened here (O_NOFOLLOW under dir_fd): the walk never looks the tree up
        by name, so moving it on and leaving a symlink in its place steers nothing."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return  # moved on again, or a symlink: never followed
        if sum(1 for job in self.waiting if job["kind"] == "tree") >= self.max_waiting_trees:
            os.close(fd)  # descriptors stay bounded: the root's sweep finds the tree's files too
            self.start_sweep([root], "more trees moved in than the guard holds open")
            return
        self.stats["trees"] += 1
        opened = OpenRoot(fd_path(fd), fd, os.fstat(fd))
        self._queue({"kind": "tree", "paths": [opened.path], "opened": [opened], "owned": True,
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
        self.log("full sweep of %s (%s)" % (names(paths), reason))
        self._queue({"kind": "sweep", "paths": paths, "roots": roots, "reason": reason, "read_at": None})

    def start_engine_query(self, source):
        """Ask the engine (``source()``) in a forked child unless a query is running; one
        stuck longer than ENGINE_QUERY_TIMEOUT_S is killed."""
        for fd, job in list(self.jobs.items()):
            if job["kind"] == "engine":
                if time.monotonic() - job["started"] < ENGINE_QUERY_TIMEOUT_S:
                    return
                self.log("the engine did not answer within %g s: asking again" % ENGINE_QUERY_TIMEOUT_S)
                self._kill(job)
                del self.jobs[fd]
                os.close(fd)

        def ask():
            _child_signals()
            return source()

        pid, read_fd = forked.fork_json(ask)
        os.set_blocking(read_fd, False)
        self.jobs[read_fd] = {"kind": "engine", "paths": [], "pid": pid, "chunks": [], "started": time.monotonic(),
                              "read_at": None, "reason": "rescan"}

    def _running_walks(self):
        return sum(1 for j in self.jobs.values() if j["kind"] != "engine")

    def _queue(self, job):
        if self._running_walks() >= self.max_jobs:
            self.waiting.append(job)
            return
        if job["kind"] == "sweep":
            # The roots still guarded now (one dropped since the sweep was queued has its
            # descriptor closed): the walk starts from their held descriptors, never a name.
            held = {id(r) for r in self.rootset.roots.values()}
            roots = [r for r in job["roots"] if id(r) in held]
            for gone in (r for r in job["roots"] if id(r) not in held):
                self.log("full sweep of %s (%s) not run: no longer guarded" % (names([gone.path]), job["reason"]))
            if not roots:
                return
            job["paths"] = [r.path for r in roots]
            opened = [r.opened() for r in roots]
        else:
            opened = job["opened"]
        options = dict(self.walk_options)

        def walk():
            _child_signals()
            # A root or tree moved since it was proven is walked where it is: say where that is.
            held = [OpenRoot(where(item), item.fd, item.st) for item in opened]
            return stripmod.run_opened(held, fork=False, **options)

        try:
            pid, read_fd = forked.fork_json(walk)
        finally:
            if job.get("owned"):  # the child has its own copy of a moved-in tree's descriptor
                for item in opened:
                    item.close()
        os.set_blocking(read_fd, False)
        job.update(pid=pid, chunks=[], started=time.monotonic())
        self.jobs[read_fd] = job

    def start_waiting(self):
        """Start waiting jobs while fewer than max_jobs walks run."""
        while self.waiting and self._running_walks() < self.max_jobs:
            self._queue(self.waiting.pop(0))

    def read(self, read_fd):
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
        self._finish(job)
        self.start_waiting()

    def _finish(self, job):
        try:
            report = json.loads(b"".join(job["chunks"]).decode() or "{}")
        except ValueError:
            report = {"worker_error": "unreadable report"}
        if job["kind"] == "engine":
            self.on_engine(report)
            return
        what = "%s of %s" % (job["kind"], names(job["paths"]))
        if "worker_error" in report or "counts" not in report:
            self.stats["errors"] += 1
            self.log("%s failed: %s" % (what, report.get("worker_error", "no report")))
            return
        latency = None
        if job["read_at"] is not None:
            latency = round(max(0.0, time.time() - job["read_at"]) * 1000.0, 1)
        via = "sweep" if job["kind"] == "sweep" else "moved-in tree"
        for entry in report["files"]:
            self.emit(file_record(entry, latency, via))
        for err in report["errors"]:
            self.log("%s: %s: %s" % (what, names([err["path"]]), err["error"]))
        if job["kind"] == "sweep":
            counts = report["counts"]
            self.log("full sweep of %s done (%s): %d files, %d setid, %d caps, %d errors%s in %.1f s" % (
                names(job["paths"]), job["reason"], counts["files"], counts["setid"],
                counts["caps"], counts["errors"], "" if report["complete"] else ", INCOMPLETE (budget)",
                time.monotonic() - job["started"]))

    @staticmethod
    def _kill(job):
        try:
            os.kill(job["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(job["pid"], 0)
        except ChildProcessError:
            pass

    def wait(self, timeout):
        """Collect running jobs for up to `timeout` seconds (tests and a clean stop)."""
        limit = time.monotonic() + timeout
        while (self.jobs or self.waiting) and time.monotonic() < limit:
            ready = select.select(list(self.jobs), [], [], max(0.0, limit - time.monotonic()))[0]
            for fd in ready:
                self.read(fd)
        return not self.jobs and not self.waiting

    def close(self):
        for job in list(self.jobs.values()):
            self._kill(job)
        self.jobs.clear()
        for job in self.waiting:
            for opened in job.get("opened", ()) if job.get("owned") else ():
                opened.close()
        self.waiting.clear()
