# GENERATED from python/src/sandboxguard/_core/safefs.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Root-side file operations through proven descriptors: the one way the library's root
side reaches a file or directory it did not just walk to.

The rule (docs/architecture.md, "Root never resolves a name a less-privileged user can
change"): a directory that another user can write is that user's to change at any moment,
so a path through it means nothing between one system call and the next. Here:

- :func:`open_dir` opens a path component by component from ``/`` with
  ``O_PATH|O_DIRECTORY|O_NOFOLLOW`` relative to the directory before. A symbolic link is
  followed only where only root could have put it: in a *trusted* directory (owned by root,
  or by the caller, and writable by nobody else), with every directory above it trusted too
  (its target is resolved by the same rules, never by the kernel). A link anywhere below
  the first untrusted directory refuses the path (:class:`PathRefused`). Missing directories
  can be created (``mkdirat``, then reopened ``O_NOFOLLOW`` and checked by ``fstat``: a
  directory, ours, empty), each with an exact mode.
- Below a held directory, everything goes through ``*at()`` calls with no-follow flags and
  ``f*()`` calls on what they return: :func:`make_dir_at`, :func:`open_dir_at`,
  :func:`read_at` (``O_PATH|O_NOFOLLOW``, ``fstat`` says regular file, then the same inode
  reopened through ``/proc/self/fd/N`` with ``O_NONBLOCK``: a FIFO never blocks a read and a
  device is never opened), :func:`lstat_at`, :func:`rename_at` (identity checked before and
  after), :func:`unlink_at`, :func:`rmdir_at`, and ``atomicfile.write_at`` for whole files
  (``safemove.move_at`` moves a file, link or tree between held directories, across file
  systems too).
- A mode is never copied from an inode the agent controls with its setuid/setgid bits:
  :func:`plain_mode`.

Touches the system where a function says so; nothing here changes the working directory
or other process-wide state (safe in a threaded harness).
"""
import errno
import os
import stat

from .fdops import (  # noqa: F401  # pylint: disable=unused-import  # re-exported: callers import safefs
    DEFAULT_READ_LIMIT,
    DIR_FLAGS,
    HANDLE_FLAGS,
    MAX_LINKS,
    O_PATH,
    READ_FLAGS,
    STEP_FLAGS,
    Dir,
    HeldFd,
    PathRefused,
    _kind,
    _readlink_at,
    list_dir_at,
    lstat_at,
    make_dir_at,
    open_dir_at,
    open_handle_at,
    open_regular_at,
    plain_mode,
    read_at,
    rename_at,
    rmdir_at,
    set_mode,
    set_owner,
    trusted_dir,
    unlink_at,
    writer_of,
)
from .text import escape


def _split(text):
    return [part for part in text.split("/") if part not in ("", ".")]


MISSING_RAISE = "raise"  # a missing component: FileNotFoundError (or the ``missing_error`` given)
MISSING_TAIL = "tail"  # ends what can be proven: the rest is kept as spelled (Walked.tail)
MISSING_CREATE = "create"  # made with mkdirat, reopened O_NOFOLLOW and checked (make_dir_at)
MISSING_POLICIES = (MISSING_RAISE, MISSING_TAIL, MISSING_CREATE)


class Walked(HeldFd):
    """What :func:`walk_path` proved. Close it when done, or use ``with``.

    ``path``: the absolute path the chain of opens proves (str), with the unproven ``tail``
    (names below the last directory that exists, as spelled) appended. ``fd``: the
    directory itself (O_RDONLY|O_DIRECTORY: readable, usable as ``dir_fd``), or for a
    regular file (``allow_file``) its parent directory with ``name`` its name (str), or None
    (nothing held: ``hold`` was False, or a tail is left). ``st``: the fstat of the directory,
    or of the file's O_PATH handle. ``trusted``: this directory and every one above it are
    trusted (trusted_dir).
    """

    __slots__ = ("name", "path", "st", "tail", "trusted")

    def __init__(self, path, fd, st, name=None, tail=(), trusted=False):
        self.path, self.fd, self.st, self.name, self.tail, self.trusted = path, fd, st, name, list(tail), trusted


def _missing_raise(text, shown, last):
    return FileNotFoundError(errno.ENOENT, "No such file or directory (%s does not exist)" % escape(shown), text)


class _Chain:
    """The directories one walk_path holds, from ``/`` down: entries [name, fd, trusted, own];
    ``own`` False for a descriptor borrowed from the caller's ``held`` cache (never closed here)."""

    def __init__(self, held):
        self.entries = []
        self.held = held

    def shown(self, name=None):
        names = [entry[0] for entry in self.entries[1:]] + ([name] if name is not None else [])
        return "/" + "/".join(names)

    def push(self, name, fd, trusted, own=True):
        self.entries.append([name, fd, trusted, own])

    def pop(self):
        entry = self.entries.pop()
        if entry[3]:
            os.close(entry[1])

    def to_root(self):
        while len(self.entries) > 1:
            self.pop()

    def close(self):
        while self.entries:
            self.pop()

    @property
    def fd(self):
        return self.entries[-1][1]

    @property
    def trusted(self):
        return self.entries[-1][2]


def walk_path(path, follow_trusted_links=False, missing=MISSING_RAISE, mode=0o700, allow_file=False, owners=None,
              held=None, refused=PathRefused, missing_error=_missing_raise, hold=True):
    """Walk the absolute ``path`` from ``/`` one component at a time: the one walk from ``/``
    of the library (safefs.open_dir, roots.open_root and the scope's proof all go through it,
    with one set of messages); return a :class:`Walked`.

    Every component is opened O_PATH|O_DIRECTORY|O_NOFOLLOW relative to the one before, so
    nothing is resolved by the kernel; ``..`` steps back along the chain already opened
    (never the kernel's ``..``). The policy:

    - ``follow_trusted_links``: a symlink is followed only where only root (or the caller)
      could have put it: in a trusted directory with every directory above it trusted
      (trusted_dir); its target is walked by the same rules, at most MAX_LINKS links. Any
      other symlink refuses the path (``refused``, naming the link, where it leads now and the
      fix).
    - ``missing``: MISSING_RAISE (``missing_error(text, shown, last)`` is raised: a
      FileNotFoundError by default), MISSING_TAIL (the first component that does not exist, is
      not a directory or cannot be searched ends the proof; the rest is kept as spelled in
      ``tail``, a later ``..`` climbing back into it), or MISSING_CREATE (made with exactly
      ``mode``, owned by the caller: make_dir_at).
    - ``allow_file``: the last component may be a regular file (not when the spelling demands
      a directory: a trailing ``/``, ``/.`` or ``/..``).
    - ``owners``: a dict filled with {proven directory: (uid, gid)}, as the walk goes (a
      refusal keeps what it proved).
    - ``held``: a dict {proven directory: (fd, (uid, gid), trusted)} this walk reuses and adds to;
      the caller closes those (the roots of one scope share their common directories).
    - ``hold``: False proves only (``fd`` None).

    Raises ``refused`` (a PathRefused, or a subclass such as roots.RootRefused) for a relative
    or empty path, a symlink that is not followed, something that is not a directory, a
    directory that changed while it was made, or one that cannot be opened. Touches the
    system; changes nothing unless ``missing`` is MISSING_CREATE.
    """
    text = os.fsdecode(path) if isinstance(path, bytes) else str(path)
    if not text:
        raise refused(text, "empty path")
    if not text.startswith("/"):
        raise refused(text, "relative path; give an absolute path")
    walk = _Walk(text, follow_trusted_links, missing, mode, allow_file, owners, held, refused, missing_error)
    try:
        walk.run()
        return _walked(walk.chain, walk.tail, walk.file_name, hold, text, refused)
    finally:
        walk.chain.close()


class _Walk:
    """walk_path's state while it goes: the chain held, the names pending (a stack a followed
    link's target is pushed onto), the unproven tail, the file found, the links followed."""

    def __init__(self, text, follow, missing, mode, allow_file, owners, held, refused, missing_error):
        self.text, self.follow, self.missing, self.mode, self.allow_file = text, follow, missing, mode, allow_file
        self.refused, self.missing_error, self.held = refused, missing_error, held
        self.must_be_dir = text.split("/")[-1] in ("", ".", "..")
        self.euid = os.geteuid()
        self.chain = _Chain(held)
        self.seen = owners if owners is not None else {}
        self.pending = list(reversed(_split(text)))
        self.tail, self.file_name, self.links = [], None, 0

    def run(self):
        _step_into(self.chain, None, "/", "/", self.euid, self.held, self.seen)
        while self.pending and self.file_name is None:
            name = self.pending.pop()
            if name == "..":
                if self.tail:
                    self.tail.pop()
                elif len(self.chain.entries) > 1:
                    self.chain.pop()
            elif self.tail:
                self.tail.append(name)
            else:
                self.step(name)

    def step(self, name):
        """One component: a directory joins the chain; anything else goes to _not_opened."""
        shown = self.chain.shown(name)
        try:
            _step_into(self.chain, self.chain.fd, name, shown, self.euid, self.held, self.seen)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EACCES):
                raise self.refused(self.text, "cannot open %s: %s" % (escape(shown), exc.strerror)) from None
            self._not_opened(name, shown, exc)

    def _not_opened(self, name, shown, failure):
        """A component that is no directory to open: a file, something missing, or a symlink."""
        last = not self.pending
        st = lstat_at(self.chain.fd, name) if failure.errno != errno.EACCES else None
        other = st is not None and not stat.S_ISLNK(st.st_mode) and not stat.S_ISDIR(st.st_mode)
        if failure.errno == errno.EACCES or other:
            self._not_a_directory(name, shown, st, last, failure)
        elif st is None or stat.S_ISDIR(st.st_mode):  # gone (or back) since the open: missing
            self._missing(name, shown, last)
        else:
            self._symlink(name)

    def _not_a_directory(self, name, shown, st, last, failure):
        if last and self.allow_file and not self.must_be_dir and st is not None and stat.S_ISREG(st.st_mode):
            self.file_name = name
        elif self.missing == MISSING_TAIL:
            self.tail.append(name)
        elif failure.errno == errno.EACCES:
            raise self.refused(self.text, "cannot open %s: %s" % (escape(shown), failure.strerror))
        elif last:
            raise self.refused(self.text, "is %s; give a directory" % (
                "a regular file" if stat.S_ISREG(st.st_mode) else "not a directory"))
        else:
            raise self.refused(self.text, "%s is not a directory" % escape(shown))

    def _missing(self, name, shown, last):
        if self.missing == MISSING_TAIL:
            self.tail.append(name)
        elif self.missing == MISSING_CREATE:
            fd, _created = make_dir_at(self.chain.fd, name, self.mode, path_for_errors=shown)
            st = os.fstat(fd)
            self.chain.push(name, fd, self.chain.trusted and trusted_dir(st, self.euid))
            self.seen[shown] = (st.st_uid, st.st_gid)
        else:
            raise self.missing_error(self.text, shown, last)

    def _symlink(self, name):
        target = _readlink_at(self.chain.fd, name)
        if not (self.follow and self.chain.trusted):
            raise _link_refused(self.refused, self.text, self.chain, name, target, self.follow)
        self.links += 1
        if self.links > MAX_LINKS:
            raise self.refused(self.text, "more than %d symlinks on the way" % MAX_LINKS)
        if target.startswith("/"):
            self.chain.to_root()
        self.pending.extend(reversed(_split(target)))


def _step_into(chain, dir_fd, name, shown, euid, held, seen):
    """Push the directory ``name`` below ``dir_fd`` (None: ``/``) onto ``chain``, opened
    O_PATH|O_NOFOLLOW|O_DIRECTORY, or the one ``held`` has for ``shown``. Raises OSError."""
    parent_trusted = chain.trusted if chain.entries else True
    if held is not None and shown in held:
        fd, ids, trusted = held[shown]
        chain.push(name, fd, trusted, own=False)
        seen[shown] = ids
        return
    fd = os.open(name, STEP_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    trusted = parent_trusted and trusted_dir(st, euid)
    seen[shown] = (st.st_uid, st.st_gid)
    if held is not None:
        held[shown] = (fd, (st.st_uid, st.st_gid), trusted)
        chain.push(name, fd, trusted, own=False)
    else:
        chain.push(name, fd, trusted)


def _walked(chain, tail, file_name, hold, text, refused):
    """The Walked of a finished walk_path (the chain is closed by the caller)."""
    proven = chain.shown()
    if tail:
        return Walked("/".join([proven.rstrip("/"), *tail]), None, None, tail=tail, trusted=False)
    if file_name is not None:
        handle, st = open_handle_at(chain.fd, file_name)
        os.close(handle)
        if not stat.S_ISREG(st.st_mode):
            raise refused(text, "changed while it was opened; run again")
        shown = chain.shown(file_name)
        return Walked(shown, os.dup(chain.fd) if hold else None, st, file_name, trusted=chain.trusted)
    if not hold:
        return Walked(proven, None, os.fstat(chain.fd), trusted=chain.trusted)
    try:
        fd = os.open(".", DIR_FLAGS, dir_fd=chain.fd)  # "." never follows anything
    except OSError as exc:
        raise refused(text, "cannot open the directory: %s" % exc.strerror) from None
    return Walked(proven, fd, os.fstat(fd), trusted=chain.trusted)


def _link_refused(refused, text, chain, name, target, follow_trusted_links):
    """The one refusal of a path through a symlink, wherever it sits in the path: names the
    link and its target, why it is not followed, where the path leads now (real_path_hint:
    words for the operator, never acted on) and the fix."""
    real = real_path_hint(text)
    why = _why_untrusted(chain.entries) if follow_trusted_links else "and symlinks are not followed here"
    reason = "goes through a symlink, %s (to %s), %s; give the real path%s, after checking it" % (
        escape(chain.shown(name)), escape(target), why, " (it leads to %s now)" % escape(real) if real else "")
    return refused(text, reason, real_path=real)


def open_dir(path, create=False, mode=0o700, follow_trusted_links=True):
    """Open the directory ``path`` component by component (walk_path); return a :class:`Dir`.

    ``..`` steps back to the directory opened before (never the kernel's ``..``). A symlink
    is followed only inside a trusted chain (see the module docstring) and only with
    ``follow_trusted_links``; its target is resolved here, by the same rules. With
    ``create``, missing directories are made with exactly ``mode``, owned by the caller.
    Raises PathRefused (relative path, a symlink below an untrusted directory, not a
    directory, a directory that changed while it was made), FileNotFoundError for a missing
    component without ``create``, or OSError for other failures. Touches the system; changes
    nothing without ``create``.
    """
    walked = walk_path(path, follow_trusted_links=follow_trusted_links,
                       missing=MISSING_CREATE if create else MISSING_RAISE, mode=mode)
    return Dir(walked.fd, walked.path, walked.st, walked.trusted)


def _names(pending, chain):
    """real_path_hint's names still ``pending`` (a stack a symlink's target is pushed onto),
    in order; ``..`` steps back to the directory opened before it in ``chain`` (closing that
    one), never the kernel's ``..``, and is not yielded."""
    while pending:
        name = pending.pop()
        if name == "..":
            if len(chain) > 1:
                os.close(chain.pop()[1])
            continue
        yield name


def real_path_hint(path):
    """The directory ``path`` leads to now, every symlink followed, or None (touches the
    system, changes nothing): words for an error message, never a path to act on.

    Only ``O_PATH|O_NOFOLLOW`` handles are opened and links are read with ``readlinkat``
    on them, so nothing is opened for I/O and no lookup is left to the kernel; None when a
    component is missing, not a directory, unreadable, or there are more than MAX_LINKS
    links. What it names is whatever the path's owners made it a moment ago: the operator
    checks it before giving it back.
    """
    text = os.fsdecode(path) if isinstance(path, bytes) else str(path)
    if not text.startswith("/"):
        return None
    chain = [("", os.open("/", STEP_FLAGS))]
    pending = list(reversed(_split(text)))
    links = 0
    try:
        for name in _names(pending, chain):
            try:
                chain.append((name, os.open(name, STEP_FLAGS, dir_fd=chain[-1][1])))
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    return None
            try:
                target = os.readlink(name, dir_fd=chain[-1][1])
            except OSError:
                return None
            links += 1
            if links > MAX_LINKS:
                return None
            if target.startswith("/"):
                while len(chain) > 1:
                    os.close(chain.pop()[1])
            pending.extend(reversed(_split(target)))
        return "/" + "/".join(entry[0] for entry in chain[1:])
    finally:
        for _name, held in chain:
            os.close(held)


def _why_untrusted(entries):
    """Words for the first directory of a walk's chain another user can change."""
    for index, entry in enumerate(entries):
        st = os.fstat(entry[1])
        if not trusted_dir(st):
            shown = "/" + "/".join(e[0] for e in entries[1:index + 1])
            return "below %s, which %s can change" % (escape(shown), writer_of(st))
    return "below a directory another user can change"


def open_parent(path, create=False, mode=0o700):
    """(Dir of the directory holding ``path``, the last component as str), for a writer.

    Refuses a path whose last component is empty, ``.`` or ``..`` (PathRefused).
    """
    text = os.fsdecode(path) if isinstance(path, bytes) else str(path)
    if not text.startswith("/"):
        raise PathRefused(text, "relative path; give an absolute path")
    head, name = text.rsplit("/", 1)
    if name in ("", ".", ".."):
        raise PathRefused(text, "names a directory, not a file in one")
    return open_dir(head or "/", create=create, mode=mode), name
