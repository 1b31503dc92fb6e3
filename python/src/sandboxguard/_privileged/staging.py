# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

A path the Docker engine may resolve for a directory in the agent's tree.

The engine (root) resolves a bind mount's ``Source`` by path when it starts the container,
following every symlink: handed ``<sandbox>/docker/<task>/workspace``, it mounted whatever
the agent had swapped in at that moment (a root directory, whose 0600 file the container's
ownership return then chowned to the agent). So the container sweep method never hands it
the agent's path. :func:`staged` proves the directory (roots.open_root) and clones that
very directory (fdmount.clone_onto: open_tree and move_mount on descriptors) onto a new
directory under a root-only chain (``/run/sandboxguard/staging/<pid>.<start>.<random>``,
every directory root-owned and writable by root only). The engine gets that path, which
nobody but root can change; the clone is nosuid,nodev,noexec and not recursive (mounts
below the directory are not in it). After the step the clone is unmounted (by its own
descriptor, checked by mount id) and the directory removed; what a crashed run left is
cleaned at the next staging (its process is gone).

A directory whose whole chain only root (or the caller) can change needs no staging: its
path is handed over as it is (a caller sweeping its own tree without root).
"""
import contextlib
import os
import secrets
import stat

from .._core import fdmount, safefs
from .._core.mountinfo import read_mountinfo
from .._core.text import escape
from ..errors import InputError
from ..roots import OpenRoot, open_root

STAGING_DIR = "/run/sandboxguard/staging"
STAGING_ATTR = fdmount.MOUNT_ATTR_NOSUID | fdmount.MOUNT_ATTR_NODEV | fdmount.MOUNT_ATTR_NOEXEC
_MAX_STACK = 16


class StagingError(InputError):
    """The staging bind could not be made (or unmade); str() names the directory, why and the fix."""


def _start_time(pid):
    """The start time of process ``pid`` (clock ticks, /proc/PID/stat field 22), or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return fields[19].decode("ascii", "replace") if len(fields) > 19 else None


def _owner_alive(name):
    """Whether the process a staging directory is named after still runs (the same one)."""
    pid, _dot, rest = name.partition(".")
    start = rest.partition(".")[0]
    if not pid.isdigit():
        return False
    return _start_time(int(pid)) == start


def _trusted_chain(path):
    try:
        with safefs.open_dir(path, follow_trusted_links=False) as held:
            return held.trusted
    except (OSError, ValueError):
        return False


def _detach_all(fd, reopen):
    """Unmount every mount stacked at the location ``fd`` holds (leftovers); return the fd
    of the directory itself, reached again, which the caller closes."""
    for _round in range(_MAX_STACK):
        if not fdmount.is_mount_root(fd):
            return fd
        fdmount.detach(fd)
        os.close(fd)
        fd = reopen()
    return fd


def clean_leftovers(parent_fd, shown):
    """Unmount and remove the staging directories of processes that are gone; return their names."""
    cleaned = []
    for name in safefs.list_dir_at(parent_fd):
        if _owner_alive(name):
            continue
        st = safefs.lstat_at(parent_fd, name)
        if st is None:
            continue
        try:
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(name, dir_fd=parent_fd)
            else:
                fd = safefs.open_dir_at(parent_fd, name, path_for_errors=shown + "/" + name)
                os.close(_detach_all(fd, lambda n=name: safefs.open_dir_at(parent_fd, n)))
                os.rmdir(name, dir_fd=parent_fd)
            cleaned.append(name)
        except (OSError, ValueError):
            continue  # another run is cleaning it, or it is busy: the next staging tries again
    return cleaned


@contextlib.contextmanager
def _held(target):
    """The OpenRoot of ``target``: the one given (a held directory: the caller closes it), or
    one opened by roots.open_root from a path (closed here)."""
    if isinstance(target, OpenRoot):
        yield target
        return
    with open_root(target) as root:
        yield root


@contextlib.contextmanager
def staged(target, staging_dir=STAGING_DIR):
    """Yield (path, st): a path for the engine that shows exactly the directory ``target``
    holds (a roots.OpenRoot the scope proved; or a path, proven here), and that directory's
    fstat (its inode is what the container checks first).

    Refuses (RootRefused, from roots.open_root) a target path with a symlink on the way or a
    system path; raises StagingError when the staging bind cannot be made (not root:
    the mount needs CAP_SYS_ADMIN) or ``staging_dir`` is not root's alone.
    """
    # the held root is closed when the caller's with-block ends (this generator is a context manager)
    with _held(target) as root:  # pylint: disable=contextmanager-generator-missing-cleanup
        if _trusted_chain(root.path):
            yield root.path, root.st  # only root (or we) can change any directory on the way
            return
        try:
            parent = safefs.open_dir(staging_dir, create=True, mode=0o711)
        except (OSError, ValueError) as exc:
            raise StagingError("cannot make the staging directory %s for %s: %s" % (
                escape(staging_dir), escape(root.path), exc)) from None
        with parent:
            if not parent.trusted:
                raise StagingError("the staging directory %s can be changed by another user than root: not "
                                   "used; remove it (root recreates it)" % escape(parent.path))
            clean_leftovers(parent.fd, parent.path)
            name = "%d.%s.%s" % (os.getpid(), _start_time(os.getpid()), secrets.token_hex(6))
            fd, _created = safefs.make_dir_at(parent.fd, name, 0o700, path_for_errors=parent.path + "/" + name)
            try:
                try:
                    mount_fd, _how = fdmount.clone_onto(root.fd, fd, STAGING_ATTR,
                                                        reopen=lambda: safefs.open_dir_at(parent.fd, name))
                except OSError as exc:
                    raise StagingError("cannot bind %s onto the staging directory %s/%s for the engine "
                                       "(%s): the container method needs root (CAP_SYS_ADMIN) for it, "
                                       "or a target only root and you can change" % (
                                           escape(root.path), escape(parent.path), name,
                                           os.strerror(exc.errno) if exc.errno else exc)) from None
                mid = fdmount.mount_id(mount_fd)
                try:
                    yield "%s/%s" % (parent.path, name), root.st
                finally:
                    try:
                        fdmount.detach(mount_fd)
                    finally:
                        os.close(mount_fd)
                    if any(m["mount_id"] == mid for m in read_mountinfo()):
                        raise StagingError("the staging bind %s/%s (mount id %s) is still mounted; the next "
                                           "staging removes it" % (escape(parent.path), name, mid))
            finally:
                os.close(fd)
                try:
                    os.rmdir(name, dir_fd=parent.fd)
                except OSError:
                    pass  # still mounted somewhere: clean_leftovers removes it later
