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
import os
import stat

from ._core import safefs
from ._core.mountinfo import mount_id_of_fd, read_mountinfo, source_paths
from ._core.pathnames import is_within
from ._core.safefs import HeldFd, PathRefused
from ._core.text import escape

__all__ = ["RootRefused", "check_root"]

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


class RootRefused(PathRefused):
    """A root that must not be walked; str() is one line naming the path and why.

    ``real_path``: for a root refused because it goes through (or is) a symlink, the
    directory it leads to now (safefs.real_path_hint: words for the operator, never a path
    to act on), else None. A PathRefused (an InputError): the one walk from ``/``
    (safefs.walk_path) raises it with the same messages as every other root-side walk.
    """


class RootMissing(RootRefused):
    """A root (or a directory on its way) that does not exist (yet): a RootRefused, so every
    caller that refuses it still does; callers that wait for it (nosuid_mount) tell it apart."""


def refusal_reason(real):
    """Why an absolute, resolved path is refused as a root, or None (pure)."""
    for tree in SYSTEM_TREES:
        if is_within(real, tree):
            return "refusing a system path (%s and everything under it); name the sandbox directory instead" % tree
    if real in SYSTEM_DIRS:
        return "refusing a system directory as a root (too broad); name the sandbox directory below it instead"
    return None


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

    def borrowed(self):
        """This root with the same descriptor, owned by the caller of borrowed (closing the
        copy closes a dup): a held root handed down to a walk that closes what it gets."""
        return OpenRoot(self.path, os.dup(self.fd), self.st, self.name)


def _root_missing(text, shown, last):
    return RootMissing(text, "does not exist" if last else "%s does not exist" % escape(shown))


def open_root(path, allow_file=False, mounts=None):
    """Open one operator-given root component by component from '/'; return an OpenRoot.

    The one walk from ``/`` (safefs.walk_path): every component is opened with
    O_NOFOLLOW|O_DIRECTORY relative to the one before, so no symlink anywhere in the path is
    followed however the path is spelled; ``..`` steps back to the directory opened before.
    Refuses (RootRefused, one line naming the path, the reason and the fix): relative or
    empty paths, missing components (RootMissing), any symlink, system paths (SYSTEM_TREES,
    SYSTEM_DIRS) by the proven path, by identity (st_dev, st_ino) and by mount source
    (mountinfo: a bind mount of a system directory), and anything but a directory (or, with
    allow_file, a regular file). ``mounts``: parse_mountinfo() output to use instead of
    reading /proc/self/mountinfo. Touches the system (opens, fstat) but changes nothing.
    """
    walked = safefs.walk_path(path, allow_file=allow_file, refused=RootRefused, missing_error=_root_missing)
    try:
        refuse_system(os.fsdecode(path), walked.path, walked.fd, walked.st, mounts)
    except BaseException:
        walked.close()
        raise
    fd, walked.fd = walked.fd, None
    return OpenRoot(walked.path, fd, walked.st, os.fsencode(walked.name) if walked.name is not None else None)


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


def refuse_system(text, proven, dir_fd, st, mounts=None):
    """Raise RootRefused when the proven root (its path, its directory's descriptor and
    fstat) is a system path: by the path (refusal_reason), by identity (st_dev, st_ino: a
    system directory under another name) and by mount source (mountinfo: a bind mount of a
    system directory). ``mounts``: read_mountinfo() output to reuse. Touches the system."""
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
