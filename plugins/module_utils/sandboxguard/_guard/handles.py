# GENERATED from python/src/sandboxguard/_guard/handles.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Which guarded root a directory (named by a fanotify file handle) lies in, decided once per
handle: open it by handle (O_PATH) and walk up ``..`` with O_NOFOLLOW directory fds until a
root's (st_dev, st_ino) or the top. Every ancestor's handle is cached with the answer
(handles carry the inode generation, so a reused inode number is a different handle); any
directory rename clears the cache (``clear``).
"""
import errno
import os

from . import fanotify
from .rootset import DIR_PATH

MAX_CACHED_HANDLES = 200000  # handle -> root decisions kept before the cache starts over
MAX_WALK_UP = 4096  # '..' steps before a directory counts as outside every root


def fsid_key(pair):
    """The kernel's two-int fsid as glibc's statvfs f_fsid packs it (val[0] | val[1] << 32)."""
    return (pair[0] & 0xFFFFFFFF) | ((pair[1] & 0xFFFFFFFF) << 32)


class HandleFilter:
    """``root_of(fsid, handle)``: the Root or None, over ``rootset.roots``; counts an error in
    ``stats`` and says it (once per errno) through ``log``."""

    def __init__(self, rootset, stats, log):
        self.rootset = rootset
        self.stats = stats
        self.log = log
        self.cache = {}  # (fsid, handle) -> Root or None
        self.errors_said = set()  # errnos of open_by_handle_at already logged

    def clear(self):
        self.cache.clear()

    def root_of(self, fsid, handle):
        """The Root a directory (by handle) lies in, or None; cached (see the module doc)."""
        key = (fsid, handle)
        if key in self.cache:
            return self.cache[key]
        roots = self.rootset.roots
        mount = next((r for r in roots.values() if r.fsid == fsid), None)
        if mount is None:
            self.cache[key] = None
            return None
        try:
            fd = fanotify.open_by_handle(mount.fd, handle, DIR_PATH)
        except OSError as exc:
            if exc.errno not in (errno.ESTALE, errno.ENOENT) and exc.errno not in self.errors_said:
                self.errors_said.add(exc.errno)  # once per kind: say it, never drop events silently
                self.stats["errors"] += 1
                self.log("cannot open an event's directory by its handle (open_by_handle_at: %s): events there "
                         "are not decided; the sweeps still strip" % os.strerror(exc.errno))
            return None  # gone already (ESTALE), or not reachable from the root's mount; nothing to fix
        seen = [key]
        found = None
        try:
            for _hop in range(MAX_WALK_UP):
                st = os.fstat(fd)
                root = roots.get((st.st_dev, st.st_ino))
                if root is not None:
                    found = root
                    break
                parent = os.open("..", DIR_PATH, dir_fd=fd)
                pst = os.fstat(parent)
                if (pst.st_dev, pst.st_ino) == (st.st_dev, st.st_ino):
                    os.close(parent)
                    break  # the top
                os.close(fd)
                fd = parent
                try:
                    pkey = (fsid, fanotify.handle_of_fd(fd))
                except OSError:
                    continue
                if pkey in self.cache:
                    found = self.cache[pkey]
                    break
                seen.append(pkey)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(self.cache) > MAX_CACHED_HANDLES:
            self.cache.clear()
        for item in seen:
            self.cache[item] = found
        return found
