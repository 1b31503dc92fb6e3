# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The sweep's targets below a scope's held roots: the one engine-to-targets path.

The engines name bind-mount sources by path; sandboxes.scope_containers decides which lie
below a host-derived root (pure, over inspect data), and each target is then opened from its
root's held descriptor, one component at a time with O_NOFOLLOW (open_target): the sweep,
remediate, the watcher and the guard's engine query all walk from those descriptors, never
from the engine's path. Touches the system where a function says so.
"""
import os

from .._core import safefs
from .._core.pathnames import is_within
from .._core.text import escape
from ..roots import OpenRoot
from . import sandboxes


class Target:
    """A directory to sweep below a root: a container's in-scope bind mount, or a task
    directory no container mounts any more. ``held`` is opened from the root's held
    descriptor one component at a time (O_NOFOLLOW), never by path; None with ``reason``
    when that failed (a symlink the agent swapped in, gone)."""

    __slots__ = ("containers", "engines", "held", "realpath", "reason", "root")

    def __init__(self, realpath, root, containers, engines, held, reason=None):
        self.realpath, self.root, self.containers, self.engines = realpath, root, list(containers), list(engines)
        self.held, self.reason = held, reason

    def as_dict(self):
        return {"realpath": self.realpath, "root": self.root.realpath, "containers": list(self.containers),
                "engines": list(self.engines)}


def targets_for(inspects, roots, usable=None, task_dirs=()):
    """(containers, targets) for (engine name, inspect document) pairs over the held ``roots``
    (sandboxes.scope_containers decides; each target is then opened from its root's held
    descriptor, open_target). ``task_dirs``: (realpath, root realpath) pairs no container mounts
    that are targets too. Touches the system (resolves the mount sources to decide, opens
    the targets below the held roots), changes nothing."""
    usable = [root.as_dict() for root in roots] if usable is None else usable
    containers, decided = sandboxes.scope_containers([doc for _name, doc in inspects], usable, os.path.realpath,
                                                     sandboxes.path_kind, task_dirs)
    by_id = {}
    for record, (name, _doc) in zip(containers, inspects):
        record["engine"] = name
        by_id.setdefault(record["id"], name)
    by_real = {root.realpath: root for root in roots}
    targets = []
    for target in decided:
        root = by_real.get(target["root"])
        engines = sorted({by_id[cid] for cid in target["containers"] if cid in by_id})
        held, reason = open_target(root, target["realpath"])
        targets.append(Target(target["realpath"], root, target["containers"], engines, held, reason))
    return containers, targets


def open_target(root, realpath):
    """(OpenRoot, None) of the directory ``realpath`` below the held ``root``, opened one
    component at a time from the root's descriptor with O_NOFOLLOW|O_DIRECTORY; or (None,
    reason) when the root is not held, or a component is missing, a symlink or not a
    directory now (the engine's answer was a path; only the held root is trusted)."""
    if root is None or root.held is None or not root.held.is_dir:
        return None, "its root is not held"
    base = root.realpath.rstrip("/")
    if realpath == root.realpath:
        return root.held.borrowed(), None
    if not is_within(realpath, base, strict=True):
        return None, "not below its root %s" % escape(root.realpath)
    fd = os.dup(root.held.fd)
    shown = base
    try:
        for name in realpath[len(base) + 1:].split("/"):
            shown = shown + "/" + name
            child = safefs.open_dir_at(fd, name, path_for_errors=shown)
            os.close(fd)
            fd = child
        return OpenRoot(realpath, fd, os.fstat(fd)), None
    except (OSError, ValueError) as exc:
        os.close(fd)
        if isinstance(exc, FileNotFoundError):
            return None, "%s does not exist (any more)" % escape(shown)
        return None, str(getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc)


def task_dirs_of(roots):
    """(realpath, root realpath) of each task directory to sweep with no container: the
    Hermes ``<root>/<task>/{home,workspace}`` (listed through the held root), and each root
    whose provider names an owner (a runner's work folder: swept whole)."""
    found = []
    for root in roots:
        if root.held is None or not root.held.is_dir:
            continue
        if root.owner:
            found.append((root.realpath, root.realpath))
            continue
        found += [(path, root.realpath) for path in sandboxes.task_dirs_at(root.held.fd, root.realpath)]
    return found
