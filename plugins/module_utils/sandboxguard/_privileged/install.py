# GENERATED from python/src/sandboxguard/_privileged/install.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Install a tree of text files (the library and the CLI) under one directory in one call.

The sandbox_sweep role used one ``copy`` task per file: about 60 module round trips, 47 s
of a 58 s role run on localhost, and the same again on every fleet host. Here the role
hands the whole tree over once (module ``library_install``) and this decides, per file,
whether its content, mode or owner differ:

- a file that differs is replaced through ``atomicfile.write_at`` (a temporary file in its
  directory, fsync, rename), so a reader (the running timer's sweep) sees the old or the
  new file, never half of one;
- a file with one of ``suffixes`` that the tree no longer lists is removed, but only from
  the directories the tree lists; nothing else under ``dest`` is touched;
- directories are created (``dir_mode``, root) and opened one component at a time below
  ``dest`` with O_NOFOLLOW, so a symbolic link planted in the install tree is refused,
  never followed. ``dest`` itself is the operator's choice (usually under /usr/local/lib)
  and must be a directory, not a link, once it exists.

Returns the report envelope (sandboxguard.report) with ``written`` and ``removed`` (paths
relative to ``dest``, sorted) and counts ``files``, ``written``, ``removed``, ``unchanged``.
Standard library only.
"""
import errno
import hashlib
import os
import stat
import time

from .. import report as envelope
from .._core import atomicfile, safefs
from ..errors import InputError

__all__ = ["InstallError", "install_tree", "remove_tree"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
FILE_MODE = 0o644
DIR_MODE = 0o755
# a file with one of these suffixes that the tree no longer lists is removed; others stay
SUFFIXES = (".py",)


class InstallError(InputError):
    """The tree cannot be installed as asked; str() names the path and the reason."""


def _check_names(files):
    """Each key a relative path of plain components; returns {dir parts: {name: bytes}}."""
    tree = {}
    for rel, content in files.items():
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise InstallError("file name %r: give a relative path without '.', '..' or empty components" % rel)
        if not isinstance(content, (str, bytes)):
            raise InstallError("file %s: the content must be a string, not %s" % (rel, type(content).__name__))
        data = content.encode("utf-8") if isinstance(content, str) else content
        tree.setdefault(tuple(parts[:-1]), {})[parts[-1]] = data
    return tree


def _open_dir(parent_fd, name, shown, create, dir_mode):
    """Open directory `name` under parent_fd without following a link; create it when asked.
    Returns the fd, or None when it is missing and create is False (dry run)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            return None
        os.mkdir(name, dir_mode, dir_fd=parent_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        os.fchmod(fd, dir_mode)  # the umask does not decide it
        if os.geteuid() == 0:
            os.fchown(fd, 0, 0)
        return fd
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise InstallError("%s: not a directory (a symbolic link or a file is in the way); "
                               "remove it and run again" % shown) from None
        raise


def _open_dest(dest, create, dir_mode):
    """dest's fd: its parent proven component by component (safefs.open_parent: no symlink
    followed below a directory another user can change), dest itself without following a link."""
    try:
        parent, name = safefs.open_parent(os.path.abspath(dest))
    except (OSError, ValueError) as exc:
        raise InstallError("%s: its directory cannot be opened: %s" % (dest, envelope.error_text(exc))) from None
    with parent:
        return _open_dir(parent.fd, name, dest, create, dir_mode)


def _same(dir_fd, name, data, mode, owner):
    """True when `name` is a regular file with exactly this content, mode and owner."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False  # a link in the way: replaced by the rename, never followed
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data) or stat.S_IMODE(st.st_mode) != mode:
            return False
        if owner is not None and (st.st_uid, st.st_gid) != owner:
            return False
        digest = hashlib.sha256()
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            digest.update(chunk)
        return digest.digest() == hashlib.sha256(data).digest()
    finally:
        os.close(fd)


def _stale(dir_fd, listed, suffixes):
    """Names in the directory with one of the suffixes that the tree does not list."""
    with os.scandir(dir_fd) as entries:
        return sorted(e.name for e in entries
                      if e.name.endswith(suffixes) and e.name not in listed and not e.is_dir(follow_symlinks=False))


def install_tree(dest, files, mode=FILE_MODE, dir_mode=DIR_MODE, suffixes=SUFFIXES, dry_run=False):
    """Make `dest` hold `files` ({relative path: str or bytes}); see the module docstring."""
    started = time.monotonic()
    tree = _check_names(files)
    owner = (0, 0) if os.geteuid() == 0 else None
    result = envelope.new_report(dest, written=[], removed=[],
                                 counts={"files": len(files), "written": 0, "removed": 0, "unchanged": 0})
    dest_fd = _open_dest(dest, not dry_run, dir_mode)
    try:
        for parts in sorted(tree):
            _install_dir(result, dest_fd, parts, tree[parts], mode, dir_mode, owner, tuple(suffixes), dry_run)
    finally:
        if dest_fd is not None:
            os.close(dest_fd)
    result["written"].sort()
    result["removed"].sort()
    counts = result["counts"]
    counts["written"], counts["removed"] = len(result["written"]), len(result["removed"])
    counts["unchanged"] = counts["files"] - counts["written"]
    result["changed"] = bool(result["written"] or result["removed"])
    return envelope.finish(result, started)


def _install_dir(result, dest_fd, parts, names, mode, dir_mode, owner, suffixes, dry_run):
    """One directory of the tree: open (or create) it below dest, then write what differs."""
    fds = []
    dir_fd = dest_fd
    try:
        for depth, part in enumerate(parts):
            shown = os.path.join(result["roots"][0], *parts[:depth + 1])
            dir_fd = None if dir_fd is None else _open_dir(dir_fd, part, shown, not dry_run, dir_mode)
            if dir_fd is not None:
                fds.append(dir_fd)
        prefix = "/".join(parts) + "/" if parts else ""
        for name in sorted(names):
            if dir_fd is None or not _same(dir_fd, name, names[name], mode, owner):
                result["written"].append(prefix + name)
                if not dry_run:
                    atomicfile.write_at(dir_fd, name, names[name], mode=mode, owner=owner)
        if dir_fd is not None:
            for name in _stale(dir_fd, names, suffixes):
                result["removed"].append(prefix + name)
                if not dry_run:
                    os.unlink(name, dir_fd=dir_fd)
    finally:
        for fd in fds:
            os.close(fd)


def remove_tree(dest, files, suffixes=SUFFIXES, dry_run=False):
    """Remove from ``dest`` what install_tree(dest, files) put there; the report envelope.

    ``files``: the same mapping (or any iterable of the same relative paths; contents are not
    read). Each listed file goes, with what Python compiled from it (``__pycache__/<stem>.*.pyc``),
    and so does any other file with one of ``suffixes`` in the listed directories (what an
    older install left); then every listed directory, its ``__pycache__`` and ``dest`` itself
    when they are left empty. Anything else stays (a directory holding another tool's files
    keeps them and stays). Through descriptors, never following a link, as install_tree.
    ``removed`` lists what went (relative to ``dest``, directories with a trailing /).
    Touches the system unless ``dry_run``.
    """
    started = time.monotonic()
    listed = list(files)
    tree = _check_names(dict.fromkeys(listed, b""))
    for parts in list(tree):  # the directories on the way, emptied by the walk below them
        for depth in range(len(parts)):
            tree.setdefault(parts[:depth], {})
    result = envelope.new_report(dest, written=[], removed=[],
                                 counts={"files": len(listed), "written": 0, "removed": 0, "unchanged": 0})
    try:
        dest_fd = _open_dest(dest, False, DIR_MODE)
    except InstallError:
        if not os.path.lexists(os.path.dirname(os.path.abspath(dest))):  # words only: nothing to remove
            return envelope.finish(result, started)
        raise
    if dest_fd is None:
        return envelope.finish(result, started)
    try:
        for parts in sorted(tree, key=lambda p: (-len(p), p)):  # deepest first: their parents may empty
            _remove_dir(result, dest_fd, parts, tree[parts], tuple(suffixes), dry_run)
        left = [n for n in os.listdir(dest_fd) if n + "/" not in result["removed"] and n not in result["removed"]]
    finally:
        os.close(dest_fd)
    if not left:
        parent, name = safefs.open_parent(os.path.abspath(dest))
        with parent:
            if not dry_run:
                safefs.rmdir_at(parent.fd, name, path_for_errors=dest)
        result["removed"].append("./")
    result["removed"].sort()
    result["counts"]["removed"] = len(result["removed"])
    result["changed"] = bool(result["removed"])
    return envelope.finish(result, started)


def _remove_dir(result, dest_fd, parts, names, suffixes, dry_run):
    """One directory of the tree: its files (and their bytecode) out, then it when left empty.
    ``names`` empty: a directory the tree only passes through (nothing in it is removed but
    what the walk below emptied)."""
    fds = [dest_fd]
    try:
        for depth, part in enumerate(parts):
            shown = os.path.join(result["roots"][0], *parts[:depth + 1])
            fd = _open_dir(fds[-1], part, shown, False, DIR_MODE)
            if fd is None:
                return
            fds.append(fd)
        here, prefix = fds[-1], "/".join(parts) + "/" if parts else ""
        with os.scandir(here) as entries:
            kinds = {e.name: e.is_dir(follow_symlinks=False) for e in entries}
        files = sorted(n for n, is_dir in kinds.items()
                       if not is_dir and n != "__pycache__" and (n in names or (names and n.endswith(suffixes))))
        gone = set(files)
        if kinds.get("__pycache__") and _remove_bytecode(result, here, prefix, set(files) | set(names), dry_run):
            gone.add("__pycache__")
        for name in files:
            result["removed"].append(prefix + name)
            if not dry_run:
                safefs.unlink_at(here, name, path_for_errors=prefix + name)
        left = [n for n in os.listdir(here) if n not in gone and prefix + n + "/" not in result["removed"]]
        if parts and not left:
            result["removed"].append(prefix)
            if not dry_run:
                safefs.rmdir_at(fds[-2], parts[-1], path_for_errors=prefix.rstrip("/"))
    finally:
        for fd in fds[1:]:
            os.close(fd)


def _remove_bytecode(result, here, prefix, sources, dry_run):
    """__pycache__/<stem>.*.pyc of ``sources`` out; True when __pycache__ is then empty (and gone)."""
    stems = {name.rsplit(".", 1)[0] for name in sources}
    cache = _open_dir(here, "__pycache__", prefix + "__pycache__", False, DIR_MODE)
    try:
        every = os.listdir(cache)
        named = [n for n in every if n.endswith(".pyc") and n.split(".", 1)[0] in stems]
        ours = sorted(n for n in named if stat.S_ISREG(os.stat(n, dir_fd=cache, follow_symlinks=False).st_mode))
        for name in ours:
            result["removed"].append(prefix + "__pycache__/" + name)
            if not dry_run:
                os.unlink(name, dir_fd=cache)
    finally:
        os.close(cache)
    if len(ours) != len(every):
        return False
    result["removed"].append(prefix + "__pycache__/")
    if not dry_run:
        safefs.rmdir_at(here, "__pycache__", path_for_errors=prefix + "__pycache__")
    return True
