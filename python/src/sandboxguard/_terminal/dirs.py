# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Directories under a Hermes home made and tightened through descriptors (safefs): a
symlink the agent planted in its own tree refuses the path instead of moving root elsewhere.
Errors come as HomeModeError, one line naming the path and the fix.
"""
import os

from .._core import safefs
from .._core.text import escape
from .modes import PRIVATE_DIR_MODE, HomeModeError


def _dir_error(exc, path, fix="it must be a real directory: remove what is there"):
    """HomeModeError (one line naming the path and the fix) for a refusal or OSError about ``path``."""
    if isinstance(exc, safefs.PathRefused):
        return HomeModeError(exc.with_fix(fix))
    if isinstance(exc, FileNotFoundError):
        return HomeModeError("%s does not exist: create it first" % escape(path))
    return HomeModeError("%s: %s" % (escape(path), exc.strerror or exc))


def _open_dir(path, create=False):
    """safefs.open_dir(path) (missing directories made 0700 with ``create``), errors as HomeModeError.

    Every component is opened relative to the one before with O_NOFOLLOW; a symlink is
    followed only in a directory that nobody but root (or this user) can change, so a link
    the agent planted in its own tree refuses the path instead of moving root elsewhere.
    """
    try:
        return safefs.open_dir(path, create=create, mode=PRIVATE_DIR_MODE)
    except (safefs.PathRefused, OSError) as exc:
        raise _dir_error(exc, path) from None


def _set_mode_at(fd, mode, path):
    """safefs.set_mode on the held directory (never by path); True when it changed."""
    try:
        return safefs.set_mode(fd, mode)
    except OSError as exc:
        raise HomeModeError("cannot set mode %04o on %s: %s" % (mode, escape(path), exc.strerror or exc)) from None


def _make_dirs_at(dir_fd, base, parts):
    """Make (or open) ``parts`` below the held ``dir_fd`` (the directory ``base``), each 0700
    when made (make_dir_at: mkdirat, reopened O_NOFOLLOW, fstat identity); return the last
    one's fd."""
    fd, shown = dir_fd, base.rstrip("/")
    try:
        for part in parts:
            shown = shown + "/" + part
            try:
                made, _created = safefs.make_dir_at(fd, part, PRIVATE_DIR_MODE, path_for_errors=shown)
            except (safefs.PathRefused, OSError) as exc:
                raise _dir_error(exc, shown) from None
            if fd != dir_fd:
                os.close(fd)
            fd = made
    except BaseException:
        if fd != dir_fd:
            os.close(fd)
        raise
    return fd


def set_dir_mode(path, mode=PRIVATE_DIR_MODE):
    """Give the directory *path* exactly *mode*; True when it changed. Touches the disk.

    The directory is proven component by component (safefs.open_dir) and changed through
    that descriptor, so a symlink planted at *path* or anywhere on the way to it in a
    directory another user can change is refused (:class:`HomeModeError`), never followed.
    """
    with _open_dir(path) as held:
        return _set_mode_at(held.fd, mode, path)


def ensure_private_dir(path, tighten=False):
    """Create *path* (and parents) with mode 0700 when missing; return it. Touches the disk.

    Through safefs.open_dir(create=True): each missing directory made with mkdirat and
    checked through its descriptor, a symlink on the way refused as in :func:`set_dir_mode`.
    With *tighten*, an existing directory is made 0700 as well (a scratch dir left at 0750
    by an older run or a umask of 027 lets the group read every temp file of the agent).
    """
    with _open_dir(path, create=True) as held:
        if tighten:
            _set_mode_at(held.fd, PRIVATE_DIR_MODE, path)
    return path
