# GENERATED from python/src/sandboxguard/strip.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Find and remove what a root container left privileged in a host directory.

One race-safe walk per call does every requested action on each regular file:

* ``chown``: ownership return. Files and directories owned by a uid in ``chown_from``
  (root by default) are given to ``chown_to``; with ``chown_from="others"``, every file
  and directory whose uid or gid is not ``chown_to``'s (a CI runner's work folder). The
  kernel clears setuid, setgid (when group-executable) and ``security.capability`` on a
  regular file it chowns, which is why the seeds run this first.
* ``setid``: clear S_ISUID and S_ISGID on regular files, keeping every other bit.
* ``caps``: remove the ``security.capability`` xattr (method ``xattr``), or re-chown
  the file to its own uid and gid so the kernel drops it (method ``chown``).
* ``device``: a block or character device node (Docker keeps CAP_MKNOD: a root container
  can ``mknod`` a disk node 0666 into its bind mount) is made harmless, never given away:
  root-owned, mode 0000 (its directory's owner may still unlink it).

A regular file with more than one hard link is never given away (a link may be another
user's file); where ``fs.protected_hardlinks`` is 0 nothing at all is changed on it, since
any user may have linked a system binary into the tree (reported, with the sysctl as the
fix). A change that failed is an error, never counted as done.

How the walk treats a tree written by an untrusted container, possibly while we walk:

* Directories are opened relative to their parent's descriptor with O_NOFOLLOW, so a
  directory swapped for a symlink cannot redirect the walk; names are never joined into
  long paths for a syscall, so paths beyond PATH_MAX work; the walk is iterative.
* It stays on the root's filesystem (st_dev) and prunes nested mount points: when
  /proc/self/mountinfo lists any below a root, every directory's mount id is checked
  (/proc/self/fdinfo), which also catches a bind mount of the same filesystem.
* Only regular files and device nodes are changed (and directories given back by the
  ownership return), and only through an O_PATH|O_NOFOLLOW handle whose fstat shows the
  same (st_dev, st_ino) and type as the scan; the change goes through /proc/self/fd/N.
  Nothing is ever opened for I/O; FIFOs, sockets and directories never lose bits (a
  setgid directory keeps its setgid bit).
* A deadline (``budget`` seconds) ends the walk early with ``complete: False``;
  per-file errors are collected and the walk goes on; listed findings are capped.

The walk runs in a forked worker when the calling process has one thread (a module
or the CLI): the worker may fchdir into each directory, which makes the per-file
xattr check cheaper, and the caller's working directory never moves. In a threaded
caller (an agent harness) it runs in-process and resolves names through
/proc/self/fd/D/NAME instead. Either way the result is the same report.

Where the pieces live: ``fileops`` (what is done to one file: the file actions,
``fix_file_at``, the ``StripOptions`` parameters object), ``walk`` (directories,
descriptors, the budget, the walkers sharing work), ``forked`` (child processes and
signals), ``roots`` (which roots, opened how). This module's public API is its ``__all__``
(python/README.md's row): ``run``, ``scan``, ``strip``, ``StripOptions``, ``fix_file_at``,
``findings_remain``, ``ChangedUnderUs`` and three constants; ``run_opened`` (a walk of roots
already proven) is the library's own, for the sweep, the guard and the fleet.
"""
import time

from . import report as envelope
from ._core import forked
from ._walk import walk
from ._walk.fileops import (
    ACTIONS,
    DEFAULT_BUDGET_S,
    DEFAULT_MAX_LISTED,
    ChangedUnderUs,
    StripOptions,
    fix_file_at,
    options_from,
)
from ._walk.walk import new_report
from .roots import RootRefused, open_root

__all__ = [
    "ACTIONS",
    "DEFAULT_BUDGET_S",
    "DEFAULT_MAX_LISTED",
    "ChangedUnderUs",
    "StripOptions",
    "findings_remain",
    "fix_file_at",
    "run",
    "scan",
    "strip",
]


def run(paths, options=None, **kwargs):
    """Walk `paths` once and apply the actions; return the report.

    ``options`` is a StripOptions (or a dict of its keywords); keywords work as well:
    ``actions`` (subset of ACTIONS; default setid, caps and device), ``dry_run``, ``budget`` (seconds for the whole
    walk; 0 or None: no limit), ``chown_to`` ((uid, gid), required with the chown
    action), ``chown_from`` (uids; or "others": every uid and gid but chown_to's),
    ``caps_method``, ``hardlinks``, ``one_file_system``,
    ``prune_mounts``, ``max_listed``, ``progress(counts)`` (called at most every
    ``progress_interval`` seconds, between directories), ``fork`` (None decides by
    itself: a forked worker when the process has one thread), ``allow_files``,
    ``setuid``/``setgid`` (which bits the setid action clears), ``workers`` (forked
    walkers handing directories to each other; None uses up to MAX_WORKERS of the CPUs
    this process may run on; a walk that reads from the disk forks more, up to
    handoff.COLD_WALKERS, see walk.py). Bad values raise InputError (a ValueError) naming the option.

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


def run_opened(opened, options=None, **kwargs):
    """Walk roots the caller already holds open and return the report; ``options`` and the
    keywords as for run.

    ``opened``: a list of roots.OpenRoot (from open_root, or built by the caller around
    a directory descriptor it proved itself, as the guard does for the roots it holds
    and for a directory moved in under one). The walk starts from those descriptors;
    no root is looked up by name again. The caller keeps and closes them.
    Touches the system: it changes files unless ``dry_run``.
    """
    return _run_opened(list(opened), options_from(options, **kwargs))


def _run_opened(opened, opts):
    """Walk roots already opened and proven (roots.open_root); return the report."""
    started = time.monotonic()
    report = new_report([root.path for root in opened], opts.dry_run)
    use_fork = forked.fork_is_safe() if opts.fork is None else bool(opts.fork)
    n_workers = forked.default_workers() if opts.workers is None else opts.workers

    def walk_all(use_chdir):
        walker = walk.Walk(report, opts, use_chdir, n_workers if use_chdir else 1)
        for root in opened:
            if walker.out_of_time():
                break
            if root.is_dir:
                walker.walk_root(root)
            else:
                _walk_single_file(walker, root)
        return report

    if use_fork:
        result = forked.run_in_worker(lambda: walk_all(True), opts.budget)
        if result is None:
            report["complete"] = False
            envelope.add_error(report, opened[0].path, "walk",
                               "the walker did not stop within its budget and was killed")
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


def scan(paths, caps=True, setid=True, devices=True, **kwargs):
    """Report setuid/setgid files, file capabilities and device nodes under `paths`; change nothing.

    A scan is read-only, not a dry run of a strip: its report says ``changed: false``
    whatever it finds (the findings are in ``files`` and ``counts``; findings_remain
    tells whether there are any), as file_caps' ``state: query`` does.
    """
    actions = tuple(a for a, on in (("setid", setid), ("caps", caps), ("device", devices)) if on)
    report = run(paths, actions=actions, dry_run=True, **kwargs)
    report["changed"] = False
    return report


def strip(paths, setid=True, caps=True, chown_to=None, dry_run=False, devices=True, **kwargs):
    """Return ownership (when chown_to is given), strip setid bits, clear capabilities and make
    device nodes harmless (root-owned, mode 0000)."""
    actions = tuple(a for a, on in (("chown", chown_to is not None), ("setid", setid), ("caps", caps),
                                    ("device", devices)) if on)
    return run(paths, actions=actions, dry_run=dry_run, chown_to=chown_to, **kwargs)


def findings_remain(report):
    """True when a report leaves something for the operator: findings in a scan, or an
    incomplete walk or per-file errors in a strip (the CLI's exit code 1)."""
    if not report["complete"] or report["counts"]["errors"] or report["counts"]["skipped"]:
        return True
    if report.get("dry_run"):
        counts = report["counts"]
        return bool(counts["setid"] or counts["caps"] or counts["chown"] or counts.get("device"))
    return False
