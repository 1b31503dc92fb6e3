# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Landing a fetched file on the controller: below a held destination directory (safefs), a
temporary file, fsync, chmod (never setid), rename (atomicfile.write_at); an identical file is
left as it is.
"""
import os
import stat

from .._core import atomicfile, safefs
from .._core.text import escape
from .policy import FetchError, safe_name

MODE_PUBLIC = 0o644
MODE_PRIVATE = 0o600


def land_file(data, dest_dir, name, *, private=False, executable=False, overwrite=True, dry_run=False, held=None):
    """Write ``data`` as ``dest_dir/name`` atomically; return (path, mode, changed).

    Touches the file system: the destination directory is proven component by component
    (safefs.open_dir: a symlink is followed only where only root, or this user, could have
    made it; ``held``: a safefs.Dir of it the caller proved already), then, below that
    descriptor only, a temp file created O_EXCL|O_NOFOLLOW, chmod to 0644 (0600 when
    ``private``; matching execute bits only when ``executable``; never setuid/setgid/sticky),
    fsync, rename over the final name, fsync of the directory. An identical existing file
    (same bytes and mode) is left alone. Nothing is left behind when it fails. ``dry_run``
    decides ``changed`` and writes nothing.
    """
    mode = MODE_PRIVATE if private else MODE_PUBLIC
    if executable:
        mode |= (mode & 0o444) >> 2
    if name != safe_name(name):
        raise FetchError("destination name %r is not a safe file name; use %r" % (name, safe_name(name)))
    final = os.path.join(dest_dir, name)
    if held is None:
        try:
            directory = safefs.open_dir(dest_dir)
        except FileNotFoundError:
            if dry_run:
                return final, mode, True  # the caller would create it
            raise FetchError("destination directory %s does not exist; create it first" % escape(dest_dir)) from None
        except safefs.PathRefused as exc:
            fix = exc.with_fix("give a directory only you can change")
            raise FetchError("destination directory %s" % fix) from None
        except OSError as exc:
            raise FetchError("destination directory %s: %s; create it first"
                             % (escape(dest_dir), exc.strerror)) from None
    else:
        directory = held
    try:
        dfd = directory.fd
        st = safefs.lstat_at(dfd, name)
        if st is not None:
            if not stat.S_ISREG(st.st_mode):
                raise FetchError("destination %s exists and is not a regular file; remove it or pick another name"
                                 % escape(final))
            if not overwrite:
                raise FetchError("destination %s exists; remove it or allow overwrite" % escape(final))
            if stat.S_IMODE(st.st_mode) == mode and st.st_size == len(data) and _same_content(dfd, name, data):
                return final, mode, False
        if dry_run:
            return final, mode, True
        try:
            atomicfile.write_at(dfd, name, data, mode=mode)
        except FileExistsError:
            raise FetchError("cannot create a temporary file in %s" % escape(dest_dir)) from None
        return final, mode, True
    finally:
        if held is None:
            directory.close()


def _same_content(dfd, name, data):
    """Whether ``name`` in the held directory is a regular file holding exactly ``data``
    (safefs.read_at: never a FIFO or device, never through a symlink)."""
    try:
        found, _st = safefs.read_at(dfd, name, limit=len(data) + 1)
    except (safefs.PathRefused, OSError):
        return False
    return found == data


def make_dest_dir(dest_dir):
    """Create a missing destination directory (and parents) at 0755, just before landing;
    return it as a proven safefs.Dir (each missing directory made with mkdirat and checked
    through its descriptor; a symlink on the way that another user could have planted
    refuses the path)."""
    try:
        return safefs.open_dir(dest_dir, create=True, mode=0o755)
    except safefs.PathRefused as exc:
        raise FetchError("destination directory %s" % exc.with_fix("give a directory only you can change")) from None
    except OSError as exc:
        raise FetchError("destination directory %s: %s; pick a directory this user can create"
                         % (escape(dest_dir), exc.strerror)) from None
