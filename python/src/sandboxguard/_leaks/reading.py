# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

How the leak audit reads the host: nothing below a home, a spool or the temp directory is
followed through a symbolic link (safefs' descriptor steps: open_dir_at, lstat_at,
open_regular_at), a tree is walked by descriptor with a budget, a file is streamed in chunks;
and the finding record every auditor returns. Errors go into the report, never raised.
"""
import errno
import os
import stat

from .. import report as envelope
from .._core import safefs

MAX_WALK_ENTRIES = 10000
MAX_WALK_DEPTH = 64
READ_CHUNK = 1 << 16
_BASE_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


def finding(kind, path, info, now, reason, **extra):
    """One finding: kind, path, reason, age and the file's identity; ``_key`` and ``_sig``
    are what a baseline compares (the same key is the same item; the same inode, size and
    mtime is the same content)."""
    item = {"kind": kind, "path": path, "reason": reason, "age": max(0, int(now - info.st_mtime)),
            "mtime": int(info.st_mtime), "uid": info.st_uid, "dev": info.st_dev, "ino": info.st_ino}
    item.update(extra)
    item["_key"] = "\0".join((kind, path))
    item["_sig"] = [info.st_ino, info.st_size, info.st_mtime_ns]
    return item


def _quiet(exc):
    """A missing path, a symlink or a non-directory: no error, nothing there to list."""
    return isinstance(exc, (FileNotFoundError, safefs.PathRefused)) or getattr(exc, "errno", None) in (
        errno.ENOENT, errno.ENOTDIR, errno.ELOOP)


def open_dir(base, parts, report, follow_base=True):
    """A descriptor of ``base/parts...`` opened component by component with O_NOFOLLOW, or None.

    *base* itself (a home from the password database, a spool) is host-derived and may be
    reached through symlinks when *follow_base*; nothing under it is (safefs.open_dir_at).
    A missing path, a symlink or a non-directory is None without an error; anything else is
    an error.
    """
    path = base
    try:
        fd = os.open(base, _BASE_FLAGS if follow_base else _BASE_FLAGS | os.O_NOFOLLOW)
    except OSError as exc:
        if not _quiet(exc):
            envelope.add_error(report, base, "open", exc)
        return None
    for part in parts:
        path = os.path.join(path, part)
        try:
            child = safefs.open_dir_at(fd, part, path)
        except (OSError, safefs.PathRefused) as exc:
            if not _quiet(exc):
                envelope.add_error(report, path, "open", exc)
            return None
        finally:
            os.close(fd)
        fd = child
    return fd


def entries(path, report):
    """(directory descriptor, name, path) of each entry of the directory *path*, sorted by name:
    the directory is opened without following a link once and closed after the last entry (or
    when the caller stops); one that cannot be opened or listed is an error of *report* and has
    no entries."""
    fd = open_dir(path, (), report)
    if fd is None:
        return
    try:
        try:
            names = sorted(safefs.list_dir_at(fd))
        except OSError as exc:
            envelope.add_error(report, path, "listdir", exc)
            return
        for name in names:
            yield fd, name, os.path.join(path, name)
    finally:
        os.close(fd)


def lstat_at(dir_fd, name, path, report):
    """lstat of *name* in the open directory *dir_fd*, or None: vanished is skipped (not a leak,
    not an error), any other failure is an ``lstat`` error on *path*."""
    try:
        return safefs.lstat_at(dir_fd, name)
    except OSError as exc:
        envelope.add_error(report, path, "lstat", exc)
        return None


def walk(fd, top, report, budget):
    """Yield (path, lstat, dir_fd, name) for every non-directory below the open directory *fd*.

    Takes ownership of *fd*. Directories are entered by descriptor with O_NOFOLLOW, so a
    symlink is listed, never followed. *budget* is a one-item list of entries left for
    the whole audit; running out, or a tree deeper than MAX_WALK_DEPTH, is an error.
    """
    stack = [(fd, top, None)]
    try:
        while stack:
            dir_fd, path, names = stack[-1]
            if names is None:
                try:
                    names = iter(sorted(safefs.list_dir_at(dir_fd)))
                except OSError as exc:
                    envelope.add_error(report, path, "listdir", exc)
                    os.close(stack.pop()[0])
                    continue
                stack[-1] = (dir_fd, path, names)
            name = next(names, None)
            if name is None:
                os.close(stack.pop()[0])
                continue
            budget[0] -= 1
            if budget[0] < 0:
                envelope.add_error(report, top, "walk", "more than %d entries; listing stopped" % MAX_WALK_ENTRIES)
                return
            child = os.path.join(path, name)
            info = lstat_at(dir_fd, name, child, report)
            if info is None:
                continue
            if not stat.S_ISDIR(info.st_mode):
                yield child, info, dir_fd, name
                continue
            if len(stack) >= MAX_WALK_DEPTH:
                envelope.add_error(report, child, "walk", "deeper than %d levels; not listed" % MAX_WALK_DEPTH)
                continue
            try:
                sub = safefs.open_dir_at(dir_fd, name, child)
            except (OSError, safefs.PathRefused) as exc:
                if not isinstance(exc, FileNotFoundError):
                    envelope.add_error(report, child, "open", exc)
                continue
            stack.append((sub, child, None))
    finally:
        for dir_fd, _path, _names in stack:
            os.close(dir_fd)


def walk_under(base, parts, report, budget):
    fd = open_dir(base, parts, report)
    if fd is None:
        return iter(())
    return walk(fd, os.path.join(base, *parts), report, budget)


def read_regular(dir_fd, name, path, report):
    """(fd, fstat) of *name* under *dir_fd* opened for reading if it is a regular file (never
    a FIFO or a link: safefs.open_regular_at), or None."""
    try:
        return safefs.open_regular_at(dir_fd, name, path_for_errors=path)
    except safefs.PathRefused:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP):
            envelope.add_error(report, path, "open", exc)
        return None


def read_chunks(fd):
    while True:
        data = os.read(fd, READ_CHUNK)
        if not data:
            return
        yield data


def iter_lines(chunks, cap):
    """Split byte *chunks* into lines: yield (first *cap* bytes of the line, its full length).

    Memory stays at one chunk plus *cap* whatever the line lengths (a 2 MiB comment
    line costs nothing). A last line without a newline is yielded too.
    """
    head = bytearray()
    length = 0
    pending = False
    for data in chunks:
        start = 0
        while start <= len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            room = cap - len(head)
            if room > 0:
                head += data[start:min(end, start + room)]
            length += end - start
            pending = pending or end > start
            if newline < 0:
                break
            yield bytes(head), length
            head, length, pending = bytearray(), 0, False
            start = newline + 1
    if pending:
        yield bytes(head), length
