# GENERATED from python/src/sandboxguard/roots.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Which paths may be walked and changed at all, and the descriptor a walk starts from.

A strip under /usr would take the setuid bit off sudo and passwd; a symlink anywhere in
a root's path lets whoever controls the link choose what is changed. Both are refused
here with one line that names the path and the reason.

A root is opened component by component from ``/`` with O_NOFOLLOW|O_DIRECTORY
(open_root), however it is spelled (``link/``, ``link/.``, ``link//``, ``a/../b``: ``..``
steps back along the chain already opened, never through the kernel's ``..``), and the
walk starts from that very descriptor: nothing is checked by name and then reopened by
name, so swapping an ancestor for a symlink mid-way cannot steer the walk. The path
reported is the one the chain proves. A root is also refused when it *is* a system
directory under another name (same st_dev and st_ino: a bind mount of /usr/bin at
/srv/x) or when mountinfo says its mount shows a system path (a bind of /usr).
"""
import errno
import os
import stat

from .errors import InputError
from .mountinfo import mount_id_of_fd, read_mountinfo, source_paths
from .safefs import HeldFd, real_path_hint
from .text import escape

# Refused as roots, and so is everything beneath them: the system's own files.
SYSTEM_TREES = (
    "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot",
    "/dev", "/proc", "/sys", "/snap", "/var/lib/dpkg", "/var/lib/apt", "/var/lib/rpm",
)
# Refused as roots themselves (too broad), though a directory below them is fine.
SYSTEM_DIRS = (
    "/", "/home", "/root", "/var", "/var/lib", "/var/tmp", "/var/lib/docker", "/opt", "/srv",
    "/tmp", "/run", "/mnt", "/media", "/usr/local",
)


class RootRefused(InputError):
    """A root that must not be walked; str() is one line naming the path and why.

    ``real_path``: for a root refused because it goes through (or is) a symlink, the
    directory it leads to now (safefs.real_path_hint: words for the operator, never a path
    to act on), else None.
    """

    real_path = None

    def __init__(self, path, reason):
        super().__init__("%s: %s" % (escape(path), reason))
        self.path = path
        self.reason = reason


class RootMissing(RootRefused):
    """A root (or a directory on its way) that does not exist (yet): a RootRefused, so every
    caller that refuses it still does; callers that wait for it (nosuid_mount) tell it apart."""


def refusal_reason(real):
    """Why an absolute, resolved path is refused as a root, or None (pure)."""
    for tree in SYSTEM_TREES:
        if real == tree or real.startswith(tree + "/"):
            return "refusing a system path (%s and everything under it); name the sandbox directory instead" % tree
    if real in SYSTEM_DIRS:
        return "refusing a system directory as a root (too broad); name the sandbox directory below it instead"
    return None


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_PATH_FLAGS = getattr(os, "O_PATH", 0o10000000) | os.O_NOFOLLOW | os.O_CLOEXEC
# Ancestors need only search permission, as a lookup by name does (a 0711 home).
_STEP_FLAGS = _PATH_FLAGS | os.O_DIRECTORY


class OpenRoot(HeldFd):
    """A root opened component by component (see open_root). Close it when done.

    ``path``: the absolute path the chain of opens proves (str). For a directory,
    ``fd`` is the directory itself (O_RDONLY|O_DIRECTORY) and ``name`` is None; for a
    single regular file, ``fd`` is its parent directory and ``name`` its name (bytes).
    ``st``: the root's own fstat (the directory's, or the file's O_PATH handle's).
    """

    __slots__ = ("name", "path", "st")

    def __init__(self, path, fd, st, name=None):
        self.path, self.fd, self.st, self.name = path, fd, st, name

    @property
    def is_dir(self):
        return self.name is None


def _components(text):
    """The names of an absolute path, '.' and empty ones dropped; and whether the
    spelling demands a directory (a trailing '/', '/.' or '/..')."""
    raw = text.split("/")
    return [c for c in raw if c not in ("", ".")], raw[-1] in ("", ".", "..")


def _refuse_component(text, dfd, name, shown, last, allow_file):
    """Why `name` under dfd could not be opened as a directory: RootRefused, or None when
    it is the last component and a regular file that allow_file lets through."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return RootMissing(text, "does not exist" if last else "%s does not exist" % escape(shown))
    except OSError as exc:
        return RootRefused(text, "cannot stat %s: %s" % (escape(shown), exc.strerror))
    if stat.S_ISLNK(st.st_mode):
        try:
            target = " (to %s)" % escape(os.readlink(name, dir_fd=dfd))
        except OSError:
            target = ""
        real = real_path_hint(text)
        now = " (it leads to %s now)" % escape(real) if real else ""
        if last:
            refused = RootRefused(text, "is a symlink%s; give the directory it points to%s, after checking it"
                                  % (target, now))
        else:
            refused = RootRefused(text, "goes through a symlink, %s%s; give the real path%s, after checking it"
                                  % (escape(shown), target, now))
        refused.real_path = real
        return refused
    if last and allow_file and stat.S_ISREG(st.st_mode):
        return None
    if last:
        kind = "a regular file" if stat.S_ISREG(st.st_mode) else "not a directory"
        return RootRefused(text, "is %s; give a directory" % kind)
    return RootRefused(text, "%s is not a directory" % escape(shown))


def open_root(path, allow_file=False, mounts=None):
    """Open one operator-given root component by component from '/'; return an OpenRoot.

    Every component is opened with O_NOFOLLOW|O_DIRECTORY relative to the one before, so
    no symlink anywhere in the path is followed however the path is spelled; ``..``
    steps back to the directory opened before. Refuses (RootRefused, one line naming the
    path, the reason and the fix): relative or empty paths, missing components, any
    symlink, system paths (SYSTEM_TREES, SYSTEM_DIRS) by the proven path, by identity
    (st_dev, st_ino) and by mount source (mountinfo: a bind mount of a system
    directory), and anything but a directory (or, with allow_file, a regular file).
    ``mounts``: parse_mountinfo() output to use instead of reading /proc/self/mountinfo.
    Touches the system (opens, fstat) but changes nothing.
    """
    text = os.fsdecode(path)
    if not text:
        raise RootRefused(text, "empty path")
    if not text.startswith("/"):
        raise RootRefused(text, "relative path; give an absolute path")
    names, must_be_dir = _components(text)
    chain = [(None, os.open("/", _STEP_FLAGS))]
    file_name = None
    try:
        for index, name in enumerate(names):
            if name == "..":
                if len(chain) > 1:
                    os.close(chain.pop()[1])
                continue
            last = index == len(names) - 1
            shown = "/" + "/".join([n for n, _fd in chain[1:]] + [name])
            try:
                chain.append((name, os.open(name, _STEP_FLAGS, dir_fd=chain[-1][1])))
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    raise RootRefused(text, "cannot open %s: %s" % (escape(shown), exc.strerror)) from None
                refusal = _refuse_component(text, chain[-1][1], name, shown, last, allow_file and not must_be_dir)
                if refusal is not None:
                    raise refusal from None
                file_name = name
        proven = "/" + "/".join([n for n, _fd in chain[1:]] + ([file_name] if file_name else []))
        dfd = chain[-1][1]
        if file_name is not None:
            st = _stat_file(text, dfd, file_name)
        else:
            st = os.fstat(dfd)
        _refuse_system(text, proven, dfd, st, mounts)
        if file_name is None:  # the directory itself, readable for the walk ("." never follows anything)
            try:
                chain.append((None, os.open(".", _DIR_FLAGS, dir_fd=dfd)))
            except OSError as exc:
                raise RootRefused(text, "cannot open the directory: %s" % exc.strerror) from None
    except BaseException:
        for _name, fd in chain:
            os.close(fd)
        raise
    for _name, fd in chain[:-1]:
        os.close(fd)
    return OpenRoot(proven, chain[-1][1], st, os.fsencode(file_name) if file_name else None)


def _stat_file(text, dfd, name):
    fd = os.open(name, _PATH_FLAGS, dir_fd=dfd)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise RootRefused(text, "changed while it was opened; run again")
    return st


def system_identities():
    """{(st_dev, st_ino): path} of the system directories that exist here (touches the system)."""
    found = {}
    for path in SYSTEM_TREES + SYSTEM_DIRS:
        try:
            st = os.stat(path)
        except OSError:
            continue
        found.setdefault((st.st_dev, st.st_ino), os.path.realpath(path))
    return found


def _refuse_system(text, proven, dir_fd, st, mounts):
    reason = refusal_reason(proven)
    if reason:
        raise RootRefused(text, reason)
    same = system_identities().get((st.st_dev, st.st_ino))
    if same is not None and stat.S_ISDIR(st.st_mode):
        raise RootRefused(text, "is the system directory %s under another name (same device and inode: a bind "
                                "mount?); name the sandbox directory instead" % same)
    try:
        mnt_id = mount_id_of_fd(dir_fd)
        if mnt_id is None:
            return
        mounts = read_mountinfo() if mounts is None else mounts
    except OSError as exc:
        raise RootRefused(text, "cannot read /proc/self/mountinfo to check bind mounts: %s" % exc.strerror) from None
    for source in source_paths(mnt_id, os.fsencode(proven), mounts):
        reason = refusal_reason(os.fsdecode(source))
        if reason:
            raise RootRefused(text, "is a bind mount of %s (mountinfo); %s" % (escape(os.fsdecode(source)), reason))


def check_root(path, allow_file=False):
    """Validate one operator-given root (see open_root); return its proven absolute path.

    The descriptor is closed again: a walk should use open_root and start from it.
    Raises RootRefused. Touches the system (opens) but changes nothing.
    """
    with open_root(path, allow_file=allow_file) as root:
        return root.path
