# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The guard's roots: each proven once by the scope (scope.derive: component by component,
no symlink anywhere in its path), handed over as the held descriptor and worked on from it
only; re-derived at every rescan, marked for fanotify through the held descriptor, dropped
when its name leads elsewhere.
"""
import os

from .._core.pathnames import is_within
from .._core.text import escape
from ..roots import OpenRoot
from . import fanotify

_WATCH_FILES = fanotify.FAN_ATTRIB | fanotify.FAN_CREATE | fanotify.FAN_MOVED_TO | fanotify.FAN_CLOSE_WRITE
WATCH_MASK = _WATCH_FILES | fanotify.FAN_ONDIR | fanotify.FAN_EVENT_ON_CHILD
DIR_READ = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
DIR_PATH = getattr(os, "O_PATH", 0o10000000) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Root:
    """A root being guarded: proven once by the scope (component by component, no symlink
    anywhere in its path) and worked on from that descriptor only: its identity
    (st_dev, st_ino) filters events, it is the mount fd for handles, the fanotify mark
    goes through it and full sweeps walk from it. The name is looked up again only at a
    rescan, to see whether it still leads to the same directory."""

    __slots__ = ("dev", "fd", "fsid", "ino", "path", "source", "st")

    def __init__(self, opened, source):
        self.path = opened.path
        self.source = source
        self.fd = opened.fd  # O_RDONLY|O_DIRECTORY: open_by_handle_at refuses an O_PATH mount fd (EBADF)
        self.st = opened.st
        self.dev, self.ino = opened.st.st_dev, opened.st.st_ino
        self.fsid = os.fstatvfs(self.fd).f_fsid

    def opened(self):
        """An OpenRoot for the walker around the held descriptor (which the Root keeps)."""
        return OpenRoot(self.path, self.fd, self.st)

    def __repr__(self):
        return "Root(%r)" % self.path


class _HeldRoot:
    """A held OpenRoot seen as a scope root (``realpath``, ``held``) for scope.open_target."""

    __slots__ = ("held", "realpath")

    def __init__(self, opened):
        self.held, self.realpath = opened, opened.path


def probe_handles(fd):
    """Open a held directory again by its own file handle; raises OSError when this
    filesystem or this process cannot (EPERM, EOPNOTSUPP...)."""
    os.close(fanotify.open_by_handle(fd, fanotify.handle_of_fd(fd), DIR_PATH))


class RootSet:
    """The roots guarded now, {(st_dev, st_ino): Root}; ``roots_source()`` says which are wanted
    (see Guard), ``log(line)`` hears what changed. ``extra`` are the engine's (path, source)."""

    def __init__(self, roots_source, log):
        self.roots_source = roots_source
        self.log = log
        self.roots = {}  # (dev, ino) -> Root
        self.marked = {}  # st_dev -> path the mark was placed through
        self.said = {}  # path -> the refusal last logged for it (said again only when it changes)
        self.extra = []  # (path, source) the last engine query added

    def refresh(self, fan_fd):
        """Take the roots the source proved (held descriptors: never opened by path here), keep
        the ones held already, drop those gone, mark the new ones' filesystems; the engine's
        extra directories are opened below a held root (scope.open_target). Returns the new
        roots."""
        wanted, refused = self.roots_source()[:2]
        said, self.said = self.said, {}
        for item in refused:
            self._say_refusal(said, item["path"], "refused root %s: %s" % (escape(item["path"]), item["reason"]))
        old, current = self.roots, {}
        for opened, source in list(wanted) + self._extra(wanted, said):
            key = (opened.st.st_dev, opened.st.st_ino)
            if key in current or key in old:
                opened.close()  # the descriptor held since it was first proven stays the one used
                current.setdefault(key, old.get(key))
                continue
            current[key] = Root(opened, source)
        for key, root in old.items():
            if key not in current:
                self.log("root %s is gone or is another directory now: no longer guarded" % escape(root.path))
                os.close(root.fd)
        new = [root for key, root in current.items() if key not in old]
        self.roots = current
        for root in new:
            self._mark(fan_fd, root)
        return new

    def _extra(self, wanted, said):
        """[(OpenRoot, source)] of the engine's directories (self.extra: paths an engine named),
        each opened from the held root it lies below, one component at a time (O_NOFOLLOW);
        one below no root, or not a directory there any more, is left out (and said)."""
        from .._privileged.targets import open_target  # noqa: PLC0415

        found = []
        for path, source in [tuple(item) for item in self.extra]:
            below = [opened for opened, _source in wanted if opened.is_dir and is_within(path, opened.path)]
            if not below:
                continue
            fake = _HeldRoot(below[0])
            held, reason = open_target(fake, path)
            if held is None:
                self._say_refusal(said, path, "cannot guard %s: %s" % (escape(path), reason))
                continue
            found.append((held, source))
        return found

    def _mark(self, fan_fd, root):
        # Marked through every new root, even on a filesystem marked before: adding a mark
        # again is a no-op, and a st_dev seen before may be another filesystem now (an
        # anonymous device number is reused once the old tmpfs is gone).
        try:
            probe_handles(root.fd)
        except OSError as exc:
            self.log("cannot watch %s (open_by_handle_at: %s): no real-time strip there, only sweeps"
                     % (escape(root.path), os.strerror(exc.errno)))
            return
        try:
            fanotify.mark_filesystem(fan_fd, root.fd, WATCH_MASK)  # through the held fd
        except OSError as exc:
            self.log("cannot watch %s (fanotify_mark: %s): no real-time strip there, only sweeps"
                     % (escape(root.path), exc.strerror))
            return
        self.marked[root.dev] = root.path

    def _say_refusal(self, said, path, line):
        """Log why a root is not guarded the first time, and again only when the reason
        changes (or after the root was accepted in between): not at every rescan."""
        self.said[path] = line
        if said.get(path) != line:
            self.log(line)

    def probe(self, fan_fd):
        """Try a filesystem mark on each existing root (added and removed again).

        Returns (tried, failures): the paths tried and [(path, reason)] where it fails.
        """
        tried, failures = [], []
        for opened, _source in self.roots_source()[0]:
            with opened:
                tried.append(opened.path)
                try:
                    probe_handles(opened.fd)
                except OSError as exc:
                    failures.append((opened.path, "open_by_handle_at: %s" % os.strerror(exc.errno)))
                    continue
                try:
                    fanotify.mark_filesystem(fan_fd, opened.fd, WATCH_MASK)
                    fanotify.mark_filesystem(fan_fd, opened.fd, WATCH_MASK, remove=True)
                except OSError as exc:
                    failures.append((opened.path, exc.strerror or str(exc)))
        return tried, failures

    def close(self):
        for root in self.roots.values():
            os.close(root.fd)
        self.roots.clear()
