# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Which paths may be walked and changed at all.

A strip under /usr would take the setuid bit off sudo and passwd; a root that is a
symlink lets whoever controls the link choose what is changed. Both are refused here,
before anything is opened, with one line that names the path and the reason.
"""
import os
import stat

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


class RootRefused(ValueError):
    """A root that must not be walked; str() is one line naming the path and why."""

    def __init__(self, path, reason):
        super().__init__("%s: %s" % (path, reason))
        self.path = path
        self.reason = reason


def refusal_reason(real):
    """Why an absolute, resolved path is refused as a root, or None (pure)."""
    for tree in SYSTEM_TREES:
        if real == tree or real.startswith(tree + "/"):
            return "refusing a system path (%s and everything under it); name the sandbox directory instead" % tree
    if real in SYSTEM_DIRS:
        return "refusing a system directory as a root (too broad); name the sandbox directory below it instead"
    return None


def check_root(path, allow_file=False):
    """Validate one operator-given root; return its resolved absolute path (str).

    Refuses: relative paths, nonexistent paths, a root that is itself a symlink,
    system paths (see SYSTEM_TREES and SYSTEM_DIRS), and anything but a directory
    (or, with allow_file, a regular file). Raises RootRefused. Touches the system
    (lstat and realpath) but changes nothing.
    """
    text = os.fsdecode(path)
    if not text:
        raise RootRefused(text, "empty path")
    if not os.path.isabs(text):
        raise RootRefused(text, "relative path; give an absolute path")
    try:
        st = os.lstat(text)
    except FileNotFoundError:
        raise RootRefused(text, "does not exist") from None
    except OSError as exc:
        raise RootRefused(text, "cannot stat: %s" % exc.strerror) from None
    if stat.S_ISLNK(st.st_mode):
        raise RootRefused(text, "is a symlink; give the directory it points to, after checking it")
    real = os.path.realpath(text)
    reason = refusal_reason(real)
    if reason:
        raise RootRefused(text, reason)
    if stat.S_ISDIR(st.st_mode) or (allow_file and stat.S_ISREG(st.st_mode)):
        return real
    kind = "a regular file" if stat.S_ISREG(st.st_mode) else "not a directory"
    raise RootRefused(text, "is %s; give a directory" % kind)
