# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Move a file, symlink or directory tree from a held directory to another one, through
descriptors only, across file systems too (what leaks_remove quarantines with).

The source is in a directory another user can change (a home, /tmp, a spool), the
destination is root's own (the quarantine, 0700). :func:`move_at`:

- on the same file system, ``renameat`` between the two held directories after an
  ``fstat`` identity check of the name (safefs.rename_at): the name itself moves, a
  symlink as a symlink, a directory with everything in it;
- across file systems (EXDEV: /tmp on tmpfs, the quarantine under /var/lib), a copy
  through descriptors, then the source removed under its held parent, each piece only
  while it is still the inode that was copied: regular files are opened O_PATH|O_NOFOLLOW,
  checked, reopened through /proc/self/fd/N (safefs.open_regular_at) and written with
  atomicfile.write_at; symlinks are recreated as symlinks (readlinkat, symlinkat), never
  followed; directories are walked with held descriptors opened O_NOFOLLOW, never into
  another mount; FIFOs and sockets are recreated; a device node is refused. Modes are
  copied without setuid/setgid/sticky bits (safefs.plain_mode), owners from the lstat of
  the held directory's entry.

A piece that cannot be moved safely stays where it is and is named, with the reason, in
the result; nothing that was not copied is removed. Touches the system; no working
directory or other process-wide state changes.
"""
import errno
import os
import stat

from . import atomicfile, safefs
from .mountinfo import mount_id_of_fd
from .safefs import PathRefused

MAX_ENTRIES = 10000
MAX_DEPTH = 64


class MoveResult:
    """How a move went: ``how`` (``renamed`` or ``copied``), ``entries`` copied (the top
    included), and ``left``: [(path, reason)] of the pieces that stayed where they were."""

    __slots__ = ("entries", "how", "left")

    def __init__(self, how, entries=1, left=()):
        self.how, self.entries, self.left = how, entries, list(left)


def move_at(src_dir_fd, name, dst_dir_fd, dst_name, expected, path_for_errors=None, max_entries=MAX_ENTRIES):
    """Move ``name`` (the name itself) from ``src_dir_fd`` to ``dst_name`` in ``dst_dir_fd``.

    ``expected``: the (st_dev, st_ino) the caller checked; anything else at the name is
    left where it is (PathRefused). ``dst_name`` must not exist (the caller picks a free
    name in its own directory: a rename would replace it). Returns a MoveResult. Raises
    PathRefused when nothing was moved (replaced since, a device node), FileNotFoundError
    when the name is gone, OSError for other failures. In a tree copied across file
    systems, a piece that cannot be moved (a device node, a mount point, one replaced
    while it was copied, everything past ``max_entries`` entries) stays, named in
    ``left``, and the rest moves.
    """
    shown = path_for_errors or name
    try:
        safefs.rename_at(src_dir_fd, name, dst_dir_fd, dst_name, expected=expected, path_for_errors=shown)
        return MoveResult("renamed")
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    return copy_then_remove(src_dir_fd, name, dst_dir_fd, dst_name, expected, shown, max_entries)


def copy_then_remove(src_dir_fd, name, dst_dir_fd, dst_name, expected, path_for_errors=None,
                     max_entries=MAX_ENTRIES):
    """The cross-file-system move of :func:`move_at` (see the module docstring)."""
    shown = path_for_errors or name
    st = safefs.lstat_at(src_dir_fd, name)
    if st is None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", shown)
    if expected is not None and (st.st_dev, st.st_ino) != tuple(expected):
        raise PathRefused(shown, "is not the file that was checked (replaced since); left where it is")
    if not stat.S_ISDIR(st.st_mode):
        _copy_entry(src_dir_fd, name, st, dst_dir_fd, dst_name, shown)
        _remove_entry(src_dir_fd, name, st, shown)
        return MoveResult("copied")
    return _TreeCopy(shown, max_entries).run(src_dir_fd, name, st, dst_dir_fd, dst_name)


def _same(st, other):
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


def _copy_entry(src_fd, name, st, dst_fd, dst_name, shown):
    """Copy one non-directory ``name`` (lstat ``st``) into ``dst_fd`` as ``dst_name``.

    The destination is root's own directory, which nobody else can change, so the new
    name is given its owner and mode by name there; the source is only read through a
    descriptor proven to be ``st``'s inode (a regular file) or read as a link.
    """
    mode = safefs.plain_mode(st.st_mode)
    if stat.S_ISREG(st.st_mode):
        fd, fst = safefs.open_regular_at(src_fd, name, path_for_errors=shown)
        with os.fdopen(fd, "rb") as handle:
            if not _same(st, fst):
                raise PathRefused(shown, "changed while it was copied (another file took its place); left where it is")
            atomicfile.write_at(dst_fd, dst_name, handle, mode=mode, owner=(fst.st_uid, fst.st_gid))
        return
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=src_fd), dst_name, dir_fd=dst_fd)
    elif stat.S_ISFIFO(st.st_mode):
        os.mkfifo(dst_name, 0o600, dir_fd=dst_fd)
    elif stat.S_ISSOCK(st.st_mode):
        os.mknod(dst_name, stat.S_IFSOCK | 0o600, dir_fd=dst_fd)
    else:
        raise PathRefused(shown, "is %s: a device node is never copied; look at it and remove it by hand, or "
                          "put the quarantine on the same file system" % safefs._kind(st))
    os.chown(dst_name, st.st_uid, st.st_gid, dir_fd=dst_fd, follow_symlinks=False)
    if not stat.S_ISLNK(st.st_mode):
        os.chmod(dst_name, mode, dir_fd=dst_fd)  # our FIFO or socket in root's own directory


def _remove_entry(src_fd, name, st, shown):
    """Remove the source ``name`` when it is still the inode copied (``st``); a name swapped
    since is left (PathRefused), and so is what it replaced: nothing uncopied goes."""
    safefs.unlink_at(src_fd, name, expected=(st.st_dev, st.st_ino), path_for_errors=shown)


class _TreeCopy:
    """One directory tree copied through held descriptors, then removed piece by piece."""

    def __init__(self, shown, max_entries):
        self.shown = shown
        self.max_entries = max_entries
        self.entries = 0
        self.left = []
        self.stopped = False

    def run(self, src_dir_fd, name, st, dst_dir_fd, dst_name):
        top = safefs.open_dir_at(src_dir_fd, name, self.shown)
        try:
            if not _same(st, os.fstat(top)):
                raise PathRefused(self.shown, "is not the directory that was checked (replaced since); left where "
                                  "it is")
            self.mount = mount_id_of_fd(top)
            made, _created = safefs.make_dir_at(dst_dir_fd, dst_name, 0o700, path_for_errors=self.shown)
        except BaseException:
            os.close(top)
            raise
        self.entries = 1
        self._walk(top, st, made)  # closes both
        self._finish_dir(src_dir_fd, name, st, self.shown)
        return MoveResult("copied", self.entries, self.left)

    def _walk(self, top, top_st, made):
        # Each level: (source fd, its lstat, destination fd, names left, shown path).
        stack = [(top, top_st, made, iter(sorted(os.listdir(top))), self.shown)]
        try:
            while stack and not self.stopped:
                src_fd, _st, dst_fd, names, shown = stack[-1]
                name = next(names, None)
                if name is None:
                    stack.pop()
                    self._close_level(src_fd, _st, dst_fd)
                    if stack:
                        self._finish_dir(stack[-1][0], os.path.basename(shown), _st, shown)
                    continue
                child = self._copy_child(src_fd, dst_fd, name, shown + "/" + name, len(stack))
                if child is not None:
                    stack.append(child)
        finally:
            for src_fd, _st, dst_fd, _names, _shown in stack:
                os.close(src_fd)
                os.close(dst_fd)

    def _copy_child(self, src_fd, dst_fd, name, shown, depth):
        """Copy one entry of a held directory; a directory is opened and returned as the
        next level, anything else copied and removed. A piece refused is noted in left."""
        st = safefs.lstat_at(src_fd, name)
        if st is None:
            return None  # gone since it was listed
        self.entries += 1
        if self.entries > self.max_entries:
            self.stopped = True
            self.left.append((self.shown, "holds more than %d entries: the copy across file systems stopped there "
                              "and the rest stays; put the quarantine on the same file system, or move it by hand"
                              % self.max_entries))
            return None
        try:
            if not stat.S_ISDIR(st.st_mode):
                _copy_entry(src_fd, name, st, dst_fd, name, shown)
                _remove_entry(src_fd, name, st, shown)
                return None
            if depth >= MAX_DEPTH:
                raise PathRefused(shown, "is deeper than %d levels: not copied" % MAX_DEPTH)
            sub = safefs.open_dir_at(src_fd, name, shown)
        except (PathRefused, OSError) as exc:
            self._note(shown, exc)
            return None
        try:
            if not _same(st, os.fstat(sub)):
                raise PathRefused(shown, "changed while it was copied (another directory took its place)")
            if mount_id_of_fd(sub) != self.mount:
                raise PathRefused(shown, "is a mount point: never copied or removed; unmount it first")
            made, _created = safefs.make_dir_at(dst_fd, name, 0o700, path_for_errors=shown)
        except (PathRefused, OSError) as exc:
            os.close(sub)
            self._note(shown, exc)
            return None
        return (sub, st, made, iter(sorted(os.listdir(sub))), shown)

    def _close_level(self, src_fd, st, dst_fd):
        """The copy of one directory is whole: give it the source's plain mode and owner."""
        try:
            safefs.set_owner(dst_fd, st.st_uid, st.st_gid)
            safefs.set_mode(dst_fd, safefs.plain_mode(st.st_mode))
        finally:
            os.close(src_fd)
            os.close(dst_fd)

    def _finish_dir(self, parent_fd, name, st, shown):
        """Remove the emptied source directory ``name`` (still ``st``'s inode) from its parent."""
        try:
            safefs.rmdir_at(parent_fd, name, expected=(st.st_dev, st.st_ino), path_for_errors=shown)
        except (PathRefused, OSError) as exc:
            if not (isinstance(exc, OSError) and exc.errno == errno.ENOTEMPTY and self.left):
                self._note(shown, exc)  # not empty only because of a piece already named

    def _note(self, shown, exc):
        if isinstance(exc, PathRefused):
            self.left.append((exc.path, exc.reason))
        elif isinstance(exc, OSError):
            self.left.append((shown, "%s; left where it is" % (exc.strerror or exc)))
        else:
            self.left.append((shown, str(exc)))
