# GENERATED from python/src/sandboxguard/_core/atomicfile.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The library's one atomic file write: a temporary file in the same directory, fsync, rename.

Every file the library writes whole lands through :func:`write_at` under a directory
descriptor the caller proved (or :func:`write`, which proves the directory with
``safefs.open_dir`` first and refuses a path through a symlink another user could plant):
a fetched artifact (fetch), a Hermes config or ``.env`` (hermes_config, home_mode), a
leaks baseline and a rewritten crontab (leaks, leaks_remove), the fleet reports
(audit_report), ``/etc/fstab`` and mount units (nosuid). One decision, so a reader of any
of them finds the same guarantees:

- the temporary file is created ``O_EXCL|O_NOFOLLOW|O_CLOEXEC`` at 0600 next to the target
  (a rename never crosses a file system), under a name nobody can predict;
- mode and owner are set on the open descriptor (``fchmod``/``fchown``), never by path, and
  before the rename, so the final name never shows other bits or another owner;
- the data is fsynced, renamed over the final name relative to the directory descriptor
  (a symlink at the final name is replaced, never written through), then the directory is
  fsynced: after a crash the file is the old one or the new one, whole;
- nothing is left behind when any step fails.

The crontab shim (``_terminal/crontab_shim.py``) keeps its own copy of this: it runs standalone, as
``/usr/bin/python3 crontab``, and imports nothing from the package.
"""
import os
import secrets
import shutil
import stat

from ..errors import InputError

DEFAULT_MODE = 0o600
_ATTEMPTS = 100
_CHUNK = 1 << 20


def _bytes(data):
    return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else bytes(data)


def write_at(dir_fd, name, data, mode=DEFAULT_MODE, owner=None):
    """Replace ``name`` in the open directory ``dir_fd`` with ``data``, atomically.

    ``data``: str, bytes, or a binary file object read to its end in chunks (a copy made
    through descriptors, of any size). ``mode``: the permission bits the file gets, exactly
    (no umask). ``owner``: ``(uid, gid)`` or None for the caller's; a chown that is not
    needed is not attempted, so a caller that is not root can pass its own ids. Touches the file system; raises OSError
    (with the temporary file removed) when a step fails.
    """
    if not name or "/" in name or name in (".", ".."):
        raise InputError("write_at: %r is not a file name in its directory" % (name,))
    stream = data if hasattr(data, "read") else None
    payload = None if stream is not None else _bytes(data)
    fd = tmp = None
    for _attempt in range(_ATTEMPTS):
        candidate = ".%s.sandboxguard-%s" % (name[:40], secrets.token_hex(6))
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue
        tmp = candidate
        break
    if tmp is None:
        raise FileExistsError("no free temporary name next to %s after %d attempts" % (name, _ATTEMPTS))
    try:
        with os.fdopen(fd, "wb") as handle:
            if stream is None:
                handle.write(payload)
            else:
                shutil.copyfileobj(stream, handle, _CHUNK)
            handle.flush()
            if owner is not None:
                st = os.fstat(handle.fileno())
                if (st.st_uid, st.st_gid) != tuple(owner):
                    os.fchown(handle.fileno(), *owner)
            os.fchmod(handle.fileno(), stat.S_IMODE(mode))  # after fchown, which may clear setid bits
            os.fsync(handle.fileno())
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    os.fsync(dir_fd)
    return name


def write(path, data, mode=DEFAULT_MODE, owner=None):
    """:func:`write_at` for a path (a relative one starts at the working directory): its
    directory is opened component by component (safefs.open_dir: no symlink followed below
    a directory another user can change), and the file is written under that descriptor.
    Raises safefs.PathRefused for a path that goes through such a symlink; OSError as
    write_at does.
    """
    from .safefs import open_parent  # noqa: PLC0415 - safefs imports nothing of ours but text

    path = os.fspath(path)
    parent, name = open_parent(os.path.join(os.getcwd(), path) if not os.path.isabs(path) else path)
    with parent:
        write_at(parent.fd, name, data, mode=mode, owner=owner)
    return path
