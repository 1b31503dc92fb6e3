# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Root-side operations below a held directory: the descriptor half of safefs.

Below a directory held open (safefs.walk_path proved it), everything goes through ``*at()``
calls with no-follow flags and ``f*()`` calls on what they return: :func:`make_dir_at`,
:func:`open_dir_at`, :func:`read_at` (``O_PATH|O_NOFOLLOW``, ``fstat`` says regular file,
then the same inode reopened through ``/proc/self/fd/N`` with ``O_NONBLOCK``: a FIFO never
blocks a read and a device is never opened), :func:`lstat_at`, :func:`rename_at` (identity
checked before and after), :func:`unlink_at`, :func:`rmdir_at`, :func:`set_mode`,
:func:`set_owner`. Every name here is re-exported by safefs, which callers import.
Touches the system where a function says so; nothing here changes the working directory or
other process-wide state (safe in a threaded harness).
"""
import errno
import os
import stat

from ..errors import InputError
from .text import escape

O_PATH = getattr(os, "O_PATH", 0o10000000)
# An ancestor needs only search permission, as a lookup by name does (a 0711 home).
STEP_FLAGS = O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
HANDLE_FLAGS = O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
MAX_LINKS = 40  # the kernel's own limit on symlinks in one lookup (path_resolution(7))
DEFAULT_READ_LIMIT = 16 << 20
_GROUP_OTHER_WRITE = stat.S_IWGRP | stat.S_IWOTH


class PathRefused(InputError):
    """A path or name root will not act on; str() is one line: the path, why, and the fix.

    ``real_path``: for a path refused because it goes through a symlink another user could
    have planted, the directory it leads to now (see :func:`real_path_hint`), or None.
    """

    def __init__(self, path, reason, real_path=None):
        path = os.fsdecode(path) if isinstance(path, bytes) else str(path)
        super().__init__("%s: %s" % (escape(path), reason))
        self.path = path
        self.reason = reason
        self.real_path = real_path

    def with_fix(self, fix):
        """This refusal as one line, with ``fix`` added when the reason names none (a reason
        that names its fix has one after a semicolon)."""
        return str(self) if "; " in self.reason else "%s; %s" % (self, fix)


def trusted_dir(st, euid=None):
    """Whether a directory's fstat says only root (or the caller) can change its entries (pure).

    Owned by root or by ``euid`` and writable by neither group nor others: a sticky
    world-writable directory (/tmp) is not trusted, since anyone can create names there.
    """
    euid = os.geteuid() if euid is None else euid
    return st.st_uid in (0, euid) and not st.st_mode & _GROUP_OTHER_WRITE


def plain_mode(mode, mask=0o777):
    """The permission bits of ``mode`` within ``mask``, never setuid, setgid or sticky (pure)."""
    return stat.S_IMODE(mode) & mask & 0o777


def writer_of(st):
    """Who besides root can change the entries of a directory with this fstat, in words (pure)."""
    who = []
    if st.st_uid != 0:
        who.append("uid %d" % st.st_uid)
    if st.st_mode & stat.S_IWGRP:
        who.append("group %d" % st.st_gid)
    if st.st_mode & stat.S_IWOTH:
        who.append("everyone")
    return " and ".join(who) or "root only"


class HeldFd:
    """What holds one descriptor in ``fd`` (safefs.Dir, roots.OpenRoot): ``close`` it once, or
    use ``with``."""

    __slots__ = ("fd",)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Dir(HeldFd):
    """A directory held open (see open_dir). Close it when done, or use ``with``.

    ``fd``: the directory, O_RDONLY|O_DIRECTORY (readable, usable as ``dir_fd``).
    ``path``: the absolute path the chain of opens proves (str). ``st``: its fstat.
    ``trusted``: this directory and every one above it are trusted (trusted_dir).
    """

    __slots__ = ("path", "st", "trusted")

    def __init__(self, fd, path, st, trusted):
        self.fd, self.path, self.st, self.trusted = fd, path, st, trusted

    def __repr__(self):
        return "Dir(%r, fd=%r)" % (self.path, self.fd)


def _readlink_at(dir_fd, name):
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return "?"


def lstat_at(dir_fd, name):
    """lstat of ``name`` in ``dir_fd`` (never follows), or None when it does not exist."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _kind(st):
    for test, word in ((stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(st.st_mode):
            return word
    return "not a regular file"


def open_dir_at(dir_fd, name, path_for_errors=None):
    """Open the directory ``name`` in ``dir_fd`` (O_NOFOLLOW); return its fd.

    Raises PathRefused when ``name`` is a symlink or not a directory, FileNotFoundError
    when it does not exist.
    """
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        st = lstat_at(dir_fd, name)
        if st is None:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path_for_errors or name) from None
        raise PathRefused(path_for_errors or name, "is %s, not a directory (never followed)" % _kind(st)) from None


def make_dir_at(dir_fd, name, mode=0o700, owner=None, path_for_errors=None):
    """Make (or open) the directory ``name`` in ``dir_fd``; return (fd, created).

    A new directory is made with ``mkdirat``, reopened O_NOFOLLOW|O_DIRECTORY and checked
    by fstat (a directory, owned by the caller, empty: nobody swapped another in), then
    given exactly ``mode`` (fchmod, no umask) and ``owner`` ((uid, gid) or None: fchown).
    An existing directory is opened O_NOFOLLOW and returned unchanged (``created`` False);
    a symlink or anything else there is refused (PathRefused).
    """
    shown = path_for_errors or name
    created = True
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
    except FileExistsError:
        created = False
    fd = open_dir_at(dir_fd, name, shown)
    try:
        if created:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid() or os.listdir(fd):
                raise PathRefused(shown, "changed while it was being made (another directory took its place); "
                                  "look at it, then run again")
            os.fchmod(fd, stat.S_IMODE(mode))
            if owner is not None and (st.st_uid, st.st_gid) != tuple(owner):
                os.fchown(fd, *owner)
                os.fchmod(fd, stat.S_IMODE(mode))  # fchown may clear a setgid bit asked for
    except BaseException:
        os.close(fd)
        raise
    return fd, created


def open_handle_at(dir_fd, name):
    """(O_PATH|O_NOFOLLOW fd, its fstat) of ``name`` in ``dir_fd``; FileNotFoundError if absent.

    The handle is of the name itself (a symlink is a handle of the link): act on it only
    through ``/proc/self/fd/N`` or ``f*()`` calls, after checking its type.
    """
    fd = os.open(name, HANDLE_FLAGS, dir_fd=dir_fd)
    try:
        return fd, os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise


def open_regular_at(dir_fd, name, flags=os.O_RDONLY, single_link=False, path_for_errors=None):
    """Open the regular file ``name`` in ``dir_fd`` for reading; return (fd, fstat).

    The name is opened O_PATH|O_NOFOLLOW and fstat'ed first: a symlink, FIFO, socket or
    device is refused (PathRefused) before anything opens it for I/O; then the very inode
    is reopened through /proc/self/fd/N with O_NONBLOCK|O_NOCTTY. ``single_link`` also
    refuses a file with more than one hard link (a link the agent made to a file it may
    not read). FileNotFoundError when the name does not exist.
    """
    shown = path_for_errors or name
    handle, st = open_handle_at(dir_fd, name)
    try:
        if not stat.S_ISREG(st.st_mode):
            raise PathRefused(shown, "is %s, not a regular file (never opened)" % _kind(st))
        if single_link and st.st_nlink > 1:
            raise PathRefused(shown, "has %d hard links: a link to another file is never read or replaced; "
                              "look at it, remove the extra links, then run again" % st.st_nlink)
        fd = os.open("/proc/self/fd/%d" % handle, (flags & ~os.O_CREAT) | READ_FLAGS)
    finally:
        os.close(handle)
    again = os.fstat(fd)
    if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):  # /proc/self/fd/N is the inode held
        os.close(fd)
        raise PathRefused(shown, "changed while it was opened; run again")
    return fd, again


def read_at(dir_fd, name, limit=DEFAULT_READ_LIMIT, single_link=False, path_for_errors=None):
    """(bytes, fstat) of the regular file ``name`` in ``dir_fd``, or (None, None) when absent.

    See open_regular_at for what is refused. A file larger than ``limit`` bytes is refused
    (PathRefused) rather than read in part.
    """
    try:
        fd, st = open_regular_at(dir_fd, name, single_link=single_link, path_for_errors=path_for_errors)
    except FileNotFoundError:
        return None, None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise PathRefused(path_for_errors or name, "is larger than %d bytes; not read" % limit)
    return data, st


def rename_at(src_dir_fd, src_name, dst_dir_fd, dst_name, expected=None, path_for_errors=None):
    """Move ``src_name`` (the name itself: a symlink moves as a symlink) from one held
    directory to another with renameat; return the fstat of what moved.

    ``expected``: the (st_dev, st_ino) the caller saw; anything else at the name is left
    where it is (PathRefused). The destination is checked afterwards too: a swap between
    the check and the rename is reported (PathRefused) with what moved left in the
    destination. Raises OSError (EXDEV across filesystems, EEXIST...) as renameat does.
    """
    shown = path_for_errors or src_name
    handle, st = open_handle_at(src_dir_fd, src_name)
    os.close(handle)
    if expected is not None and (st.st_dev, st.st_ino) != tuple(expected):
        raise PathRefused(shown, "is not the file that was checked (replaced since); left where it is")
    os.rename(src_name, dst_name, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
    moved = lstat_at(dst_dir_fd, dst_name)
    if moved is None or (moved.st_dev, moved.st_ino) != (st.st_dev, st.st_ino):
        raise PathRefused(shown, "was replaced during the move; what moved is in the destination: look at it")
    return moved


def unlink_at(dir_fd, name, expected=None, path_for_errors=None):
    """Remove the non-directory ``name`` from ``dir_fd`` (unlinkat), when it is still the
    inode ``expected`` ((st_dev, st_ino) or None); False when it was already gone."""
    try:
        handle, st = open_handle_at(dir_fd, name)
    except FileNotFoundError:
        return False
    os.close(handle)
    if expected is not None and (st.st_dev, st.st_ino) != tuple(expected):
        raise PathRefused(path_for_errors or name, "is not the file that was checked (replaced since); left alone")
    os.unlink(name, dir_fd=dir_fd)
    return True


def rmdir_at(dir_fd, name, expected=None, path_for_errors=None):
    """Remove the empty directory ``name`` from ``dir_fd`` (unlinkat AT_REMOVEDIR), when it is
    still the inode ``expected`` ((st_dev, st_ino) or None); False when it was already gone.

    A symlink or anything else at the name is refused (PathRefused); a directory that is not
    empty raises OSError ENOTEMPTY, as rmdir does.
    """
    try:
        handle, st = open_handle_at(dir_fd, name)
    except FileNotFoundError:
        return False
    os.close(handle)
    shown = path_for_errors or name
    if not stat.S_ISDIR(st.st_mode):
        raise PathRefused(shown, "is %s, not a directory; left alone" % _kind(st))
    if expected is not None and (st.st_dev, st.st_ino) != tuple(expected):
        raise PathRefused(shown, "is not the directory that was checked (replaced since); left alone")
    os.rmdir(name, dir_fd=dir_fd)
    return True


def set_mode(fd, mode):
    """Give the inode held by ``fd`` exactly ``mode``; True when it changed.

    Works on O_PATH handles too (through /proc/self/fd/N, which acts on the inode held,
    and is refused for a symlink's handle: never followed).
    """
    st = os.fstat(fd)
    if stat.S_IMODE(st.st_mode) == stat.S_IMODE(mode):
        return False
    try:
        os.fchmod(fd, stat.S_IMODE(mode))
    except OSError as exc:
        if exc.errno != errno.EBADF:  # an O_PATH descriptor
            raise
        os.chmod("/proc/self/fd/%d" % fd, stat.S_IMODE(mode))
    return True


def set_owner(fd, uid, gid):
    """Give the inode held by ``fd`` to (uid, gid) when it is not theirs; True when it changed."""
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) == (uid, gid):
        return False
    try:
        os.fchown(fd, uid, gid)
    except OSError as exc:
        if exc.errno != errno.EBADF:
            raise
        os.chown("/proc/self/fd/%d" % fd, uid, gid)  # the magic link is the inode held, never a lookup
    return True


def list_dir_at(dir_fd):
    """The names in the held directory (os.listdir on the descriptor: no path resolved)."""
    return os.listdir(dir_fd)
