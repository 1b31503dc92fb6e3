# GENERATED from python/src/sandboxguard/_core/fdmount.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Mounts made through descriptors, never by path; and the boot program that re-makes the
nosuid,nodev bind mounts at boot (``sandboxguard-nosuid``).

A path through a directory another user can write means nothing between one system call
and the next, and mount(8) resolves source and target separately: ``mount --bind P P``
raced by the agent mounted its own directory over a root one. Here every mount starts
from a descriptor the caller proved (roots.open_root, or :func:`open_strict` at boot):

- a new bind is ``open_tree(fd, "", OPEN_TREE_CLONE|AT_EMPTY_PATH|OPEN_TREE_CLOEXEC)`` (a
  non-recursive clone of exactly that directory, keeping its mount's per-mount flags:
  ro, noexec, atime), ``mount_setattr`` on the still detached clone (nosuid, nodev), then
  ``move_mount`` onto the destination's descriptor: the new mount is never visible
  without the flags and lands on exactly the directory proven. Where the kernel lacks
  these (ENOSYS, before Linux 5.2 / 5.12), mount(2) with ``/proc/self/fd/N`` as source and
  target (the magic link is the directory held, never a lookup), then a bind remount of
  the new mount through ``/proc/self/fd/M``, carrying the per-mount flags ``fstatvfs``
  reports (a bind remount sets them all at once);
- flags are added to an existing mount with ``mount_setattr`` on its root's descriptor
  (the kernel refuses any descriptor that is not a mount root), or the bind remount on
  ``/proc/self/fd/M``;
- an unmount is ``umount2("/proc/self/fd/M", MNT_DETACH)``: it takes the topmost mount at
  M's location, never another place (callers check the mount id is gone afterwards; a
  plain umount would be busy, since M itself holds the mount).

The syscall numbers of open_tree (428), move_mount (429) and mount_setattr (442) are the
same in every architecture's table that has the unified numbering; elsewhere (alpha,
mips, ia64) this module reports ENOSYS and takes the mount(2) way.

This file is self-contained (standard library, no imports from its package): the module
nosuid_mount writes it out, root-owned, as the program a oneshot systemd unit runs at
boot (:func:`program_source`, :func:`main`), which re-proves every listed path component
by component, with no symlink followed anywhere, before it mounts.
"""
import ctypes
import errno
import os
import platform
import re
import stat
import sys

OPEN_TREE_CLONE = 0x1
OPEN_TREE_CLOEXEC = os.O_CLOEXEC
AT_EMPTY_PATH = 0x1000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOVE_MOUNT_T_EMPTY_PATH = 0x40
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4
MOUNT_ATTR_NOEXEC = 0x8
MOUNT_ATTR_SIZE_VER0 = 32
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOSYMFOLLOW = 0x100
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_RELATIME = 0x200000
MS_STRICTATIME = 0x1000000
MNT_DETACH = 0x2
# statvfs(3) f_flag bits (Linux): what the descriptor's mount has.
ST_RDONLY, ST_NOSUID, ST_NODEV, ST_NOEXEC = 0x1, 0x2, 0x4, 0x8
ST_NOATIME, ST_NODIRATIME, ST_RELATIME, ST_NOSYMFOLLOW = 0x400, 0x800, 0x1000, 0x2000
NOSUID_NODEV = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV

# The unified syscall table (asm-generic, and every architecture since Linux 5.1 but the few
# with an offset or a table of their own).
SYSCALLS = {"open_tree": 428, "move_mount": 429, "mount_setattr": 442}
UNIFIED_MACHINES = ("x86_64", "amd64", "i386", "i486", "i586", "i686", "aarch64", "arm64", "armv6l", "armv7l",
                    "armv8l", "armv8b", "ppc", "ppc64", "ppc64le", "s390x", "riscv64", "loongarch64", "sparc64",
                    "parisc64", "m68k")

O_PATH = getattr(os, "O_PATH", 0o10000000)
STEP_FLAGS = O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)

PROGRAM_MARKER = "# sandboxguard-nosuid: written by sandboxguard.boundary.nosuid_mount"
LIST_MARKER = "# sandboxguard.boundary.nosuid_mount: the roots the boot unit mounts nosuid,nodev"
MAX_LIST_BYTES = 1 << 20


class Refused(ValueError):
    """A path the boot program will not mount; str() names the path and why."""


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


_LIB = []


def _lib():
    """The C library (errno kept), loaded once, with the calls used here typed."""
    if not _LIB:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        lib.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
        lib.mount.restype = ctypes.c_int
        lib.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.umount2.restype = ctypes.c_int
        _LIB.append(lib)
    return _LIB[0]


def _fail(what):
    code = ctypes.get_errno()
    raise OSError(code, "%s: %s" % (what, os.strerror(code)))


def has_unified_syscalls(machine=None):
    """Whether this machine's syscall table numbers open_tree 428 (pure, but for uname)."""
    return (machine or platform.machine()) in UNIFIED_MACHINES


def _syscall(name, *args):
    if not has_unified_syscalls():
        raise OSError(errno.ENOSYS, "%s: not attempted on %s (syscall number unknown)" % (name, platform.machine()))
    result = _lib().syscall(ctypes.c_long(SYSCALLS[name]), *args)
    if result < 0:
        _fail(name)
    return result


def open_tree(dir_fd, flags=OPEN_TREE_CLONE | AT_EMPTY_PATH | OPEN_TREE_CLOEXEC):
    """A detached clone of the mount at ``dir_fd`` (the directory itself, not recursive); its fd."""
    return _syscall("open_tree", ctypes.c_int(dir_fd), b"", ctypes.c_uint(flags))


def move_mount(from_fd, to_fd):
    """Attach the mount held by ``from_fd`` onto the directory held by ``to_fd``."""
    _syscall("move_mount", ctypes.c_int(from_fd), b"", ctypes.c_int(to_fd), b"",
             ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH))


def mount_setattr(mount_fd, attr_set, attr_clr=0):
    """Set (and clear) per-mount attributes of the mount whose root ``mount_fd`` holds."""
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    _syscall("mount_setattr", ctypes.c_int(mount_fd), b"", ctypes.c_uint(AT_EMPTY_PATH), ctypes.byref(attr),
             ctypes.c_size_t(MOUNT_ATTR_SIZE_VER0))


def proc_fd(fd):
    """The magic link of a descriptor: resolves to the very directory held, never by name."""
    return "/proc/self/fd/%d" % fd


def sys_mount(source, target, flags):
    if _lib().mount(source.encode() if source else None, target.encode(), None, flags, None) != 0:
        _fail("mount")


def umount2(target, flags):
    if _lib().umount2(target.encode(), flags) != 0:
        _fail("umount2")


def mount_id(fd):
    """The mount id of a descriptor (/proc/self/fdinfo/N), or None before Linux 3.15."""
    with open("/proc/self/fdinfo/%d" % fd, "rb") as handle:
        for line in handle:
            if line.startswith(b"mnt_id:"):
                return int(line.split()[1])
    return None


def is_mount_root(fd):
    """Whether the directory held by ``fd`` is the root of its mount: its ``..`` lies in
    another mount (a mount root's ``..`` is the mount point's parent). Touches nothing."""
    up = os.open("..", STEP_FLAGS, dir_fd=fd)
    try:
        return mount_id(up) != mount_id(fd)
    finally:
        os.close(up)


def has_flags(fd, attr=NOSUID_NODEV):
    """Whether the mount the descriptor lies on already has nosuid (and nodev) (fstatvfs)."""
    flags = os.fstatvfs(fd).f_flag
    want = (ST_NOSUID if attr & MOUNT_ATTR_NOSUID else 0) | (ST_NODEV if attr & MOUNT_ATTR_NODEV else 0)
    return flags & want == want


def carried_flags(fd):
    """The MS_* per-mount flags a bind remount must carry for the descriptor's mount (ro,
    noexec, nosuid, nodev, atime, nosymfollow: a bind remount sets them all at once)."""
    flags = os.fstatvfs(fd).f_flag
    out = 0
    for st_flag, ms_flag in ((ST_RDONLY, MS_RDONLY), (ST_NOSUID, MS_NOSUID), (ST_NODEV, MS_NODEV),
                             (ST_NOEXEC, MS_NOEXEC), (ST_NODIRATIME, MS_NODIRATIME),
                             (ST_NOSYMFOLLOW, MS_NOSYMFOLLOW)):
        if flags & st_flag:
            out |= ms_flag
    if flags & ST_NOATIME:
        out |= MS_NOATIME
    elif flags & ST_RELATIME:
        out |= MS_RELATIME
    else:
        out |= MS_STRICTATIME
    return out


def _ms(attr):
    return (MS_NOSUID if attr & MOUNT_ATTR_NOSUID else 0) | (MS_NODEV if attr & MOUNT_ATTR_NODEV else 0) | \
        (MS_NOEXEC if attr & MOUNT_ATTR_NOEXEC else 0) | (MS_RDONLY if attr & MOUNT_ATTR_RDONLY else 0)


def _remount(mount_fd, attr):
    sys_mount(None, proc_fd(mount_fd), MS_REMOUNT | MS_BIND | carried_flags(mount_fd) | _ms(attr))


def set_attr(mount_fd, attr=NOSUID_NODEV):
    """Add ``attr`` to the mount whose root ``mount_fd`` holds, keeping its other flags.

    Returns how: ``"mount_setattr"`` or ``"remount"`` (mount(2) MS_REMOUNT|MS_BIND on
    /proc/self/fd/N, where the kernel lacks mount_setattr). The kernel refuses (EINVAL) a
    descriptor that is not a mount's root, so nothing else is ever changed.
    """
    try:
        mount_setattr(mount_fd, attr)
        return "mount_setattr"
    except OSError as exc:
        if exc.errno != errno.ENOSYS:
            raise
    _remount(mount_fd, attr)
    return "remount"


def _same_dir(fd, st):
    held = os.fstat(fd)
    return stat.S_ISDIR(held.st_mode) and (held.st_dev, held.st_ino) == (st.st_dev, st.st_ino)


def clone_onto(src_fd, dst_fd, attr=NOSUID_NODEV, reopen=None):
    """Bind the directory held by ``src_fd`` onto the one held by ``dst_fd``, with ``attr``
    added; return (fd of the new mount's root, how).

    ``how``: ``"open_tree"`` (the new mount API: flags set before it is attached),
    ``"open_tree+remount"`` (no mount_setattr: flags by a bind remount right after) or
    ``"mount(2)"`` (no open_tree: mount(2) on the two magic links, then ``reopen()``, which
    must return a descriptor of the destination reached again, is checked to be the new
    mount's root (same directory as ``src_fd``, another mount id, a mount root) before the
    remount acts on it). Raises OSError; in the mount(2) way, one whose errno is EAGAIN
    when the new mount could not be found again (it is left, without ``attr``, on the
    destination: a bind of the source, which a second run remounts).
    """
    try:
        tree = open_tree(src_fd)
    except OSError as exc:
        if exc.errno not in (errno.ENOSYS, errno.EPERM) or reopen is None:
            raise
        return _mount2_onto(src_fd, dst_fd, attr, reopen), "mount(2)"
    try:
        how = "open_tree"
        try:
            mount_setattr(tree, attr)
        except OSError as exc:
            if exc.errno != errno.ENOSYS:
                raise
            how = "open_tree+remount"
        move_mount(tree, dst_fd)
        if how == "open_tree+remount":
            _remount(tree, attr)
    except BaseException:
        os.close(tree)  # a detached clone goes away with its last descriptor
        raise
    return tree, how


def _mount2_onto(src_fd, dst_fd, attr, reopen):
    src_st = os.fstat(src_fd)
    before = mount_id(dst_fd)
    sys_mount(proc_fd(src_fd), proc_fd(dst_fd), MS_BIND)
    fd = reopen()
    try:
        if not (_same_dir(fd, src_st) and mount_id(fd) != before and is_mount_root(fd)):
            raise OSError(errno.EAGAIN, "the new bind mount could not be found again (the path changed meanwhile); "
                                        "it is left without nosuid,nodev: run again")
        _remount(fd, attr)
    except BaseException:
        os.close(fd)
        raise
    return fd


def bind_nosuid(dir_fd, reopen=None):
    """The directory held by ``dir_fd`` as a nosuid,nodev bind mount of itself (see clone_onto)."""
    return clone_onto(dir_fd, dir_fd, NOSUID_NODEV, reopen)


def detach(mount_fd):
    """Unmount (MNT_DETACH) the topmost mount at the location ``mount_fd`` holds; the caller
    checks that the mount id it meant is gone. Never reaches any other place."""
    umount2(proc_fd(mount_fd), MNT_DETACH)


# -- proving a path at boot ----------------------------------------------------------
def trusted_dir(st, euid=None):
    """Owned by root (or the caller) and writable by nobody else (pure)."""
    euid = os.geteuid() if euid is None else euid
    return st.st_uid in (0, euid) and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def open_strict(path, trusted=False):
    """Open the directory ``path`` component by component from ``/`` with O_NOFOLLOW:
    no symlink is followed anywhere, ``..`` and relative paths are refused. With
    ``trusted``, every directory on the way must be trusted (trusted_dir). Returns an
    O_RDONLY|O_DIRECTORY fd. Raises Refused, or FileNotFoundError for a missing component.
    """
    text = os.fsdecode(path)
    if not text.startswith("/"):
        raise Refused("%s: relative path" % shown(text))
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise Refused("%s: contains .." % shown(text))
    fd = os.open("/", STEP_FLAGS)
    done = ""
    try:
        for part in parts:
            if trusted and not trusted_dir(os.fstat(fd)):
                raise Refused("%s: %s is writable by another user than root" % (shown(text), shown(done or "/")))
            try:
                nxt = os.open(part, STEP_FLAGS, dir_fd=fd)
            except OSError as exc:
                try:
                    st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    raise FileNotFoundError(errno.ENOENT, "%s does not exist" % shown(done + "/" + part)) from None
                if stat.S_ISLNK(st.st_mode):
                    raise Refused("%s: %s is a symlink (never followed here)" % (shown(text),
                                                                                 shown(done + "/" + part))) from None
                if not stat.S_ISDIR(st.st_mode):
                    raise Refused("%s: %s is not a directory" % (shown(text), shown(done + "/" + part))) from None
                raise Refused("%s: cannot open %s: %s" % (shown(text), shown(done + "/" + part),
                                                          exc.strerror)) from None
            os.close(fd)
            fd = nxt
            done += "/" + part
        if trusted and not trusted_dir(os.fstat(fd)):
            raise Refused("%s: writable by another user than root" % shown(text))
        final = os.open(".", DIR_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)
    return final


def shown(name):
    """``name`` (str or bytes) as one printable line: every byte that is not printable
    ASCII, and the backslash, as \\xNN (pure)."""
    raw = name if isinstance(name, bytes) else os.fsencode(name)
    return "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else "\\x%02x" % b for b in raw)


# -- the list of roots the boot program mounts ----------------------------------------
def encode_path(path):
    """One line of the list for ``path``: bytes outside printable ASCII, space and the
    backslash as \\xNN, so no name can add a line (pure; str or bytes in, str out)."""
    raw = path if isinstance(path, bytes) else os.fsencode(path)
    return "".join(chr(b) if 0x21 <= b < 0x7F and b != 0x5C else "\\x%02x" % b for b in raw)


def decode_path(line):
    """The path (bytes) of one list line (bytes or str; pure): each \\xNN back to its byte."""
    raw = line if isinstance(line, bytes) else os.fsencode(line)
    return re.sub(rb"\\x([0-9a-fA-F]{2})", lambda match: bytes((int(match.group(1), 16),)), raw)


def list_text(paths):
    """The list file for ``paths`` (str or bytes), sorted and unique (pure)."""
    lines = sorted({encode_path(p) for p in paths})
    return "".join(line + "\n" for line in [LIST_MARKER, *lines])


def parse_list(data):
    """The paths (bytes) of a list file's contents (bytes or str); comments and blanks skipped (pure)."""
    raw = data if isinstance(data, bytes) else os.fsencode(data)
    return [decode_path(line.strip()) for line in raw.split(b"\n") if line.strip() and not line.startswith(b"#")]


def read_list(paths_file):
    """The paths of a root-owned list file: its directories trusted all the way, the file a
    regular file owned by root (or the caller) writable by nobody else. Raises Refused."""
    text = os.fsdecode(paths_file)
    head, name = text.rsplit("/", 1)
    dir_fd = open_strict(head or "/", trusted=True)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or not trusted_dir(st):
            raise Refused("%s: not a regular file owned by root and writable by root only" % shown(text))
        data = handle.read(MAX_LIST_BYTES + 1)
    if len(data) > MAX_LIST_BYTES:
        raise Refused("%s: larger than %d bytes" % (shown(text), MAX_LIST_BYTES))
    return parse_list(data)


def ensure_nosuid(path, dry_run=False):
    """Make one directory (re-proven: :func:`open_strict`) a nosuid,nodev mount; return one
    line of what was done. Raises Refused, FileNotFoundError or OSError."""
    fd = open_strict(path)
    try:
        if has_flags(fd):
            return "already nosuid,nodev"
        if is_mount_root(fd):
            if dry_run:
                return "would add nosuid,nodev to the mount there"
            return "nosuid,nodev added to the mount there (%s)" % set_attr(fd)
        if dry_run:
            return "would bind it onto itself nosuid,nodev"
        mount_fd, how = bind_nosuid(fd, reopen=lambda: open_strict(path))
        os.close(mount_fd)
        return "bound onto itself nosuid,nodev (%s)" % how
    finally:
        os.close(fd)


def _say(stream, line):
    stream.write(line + "\n")


def main(argv=None):
    """``sandboxguard-nosuid [--paths-file FILE] [--check]``: mount every listed root nosuid,nodev.

    Exit 0 when every root is mounted (or does not exist yet), 1 when one was refused or
    failed (the others are still mounted), 2 when the list cannot be read.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    paths_file, dry_run = "/etc/sandboxguard/nosuid-paths", False
    while args:
        arg = args.pop(0)
        if arg == "--paths-file" and args:
            paths_file = args.pop(0)
        elif arg.startswith("--paths-file="):
            paths_file = arg.split("=", 1)[1]
        elif arg == "--check":
            dry_run = True
        else:
            _say(sys.stderr, "usage: sandboxguard-nosuid [--paths-file FILE] [--check]")
            return 2
    try:
        paths = read_list(paths_file)
    except (OSError, ValueError) as exc:
        _say(sys.stderr, "sandboxguard-nosuid: cannot read %s: %s" % (shown(paths_file), exc))
        return 2
    status = 0
    for path in paths:
        try:
            _say(sys.stdout, "sandboxguard-nosuid: %s: %s" % (shown(path), ensure_nosuid(path, dry_run)))
        except FileNotFoundError as exc:
            _say(sys.stdout, "sandboxguard-nosuid: %s: not mounted, %s" % (shown(path), exc.strerror))
        except (OSError, ValueError) as exc:
            status = 1
            _say(sys.stderr, "sandboxguard-nosuid: %s: REFUSED or failed, left as it is: %s" % (shown(path), exc))
    sys.stdout.flush()
    return status


def program_source(python="/usr/bin/python3"):
    """The text of the standalone boot program: this module with a shebang and a marker."""
    import inspect  # noqa: PLC0415 - only the module writing the program needs it

    lines = inspect.getsource(sys.modules[__name__]).splitlines(True)
    if lines and lines[0].startswith("# GENERATED"):
        lines = lines[1:]
    shebang = python if python and all(0x21 <= ord(c) < 0x7F for c in python) else "/usr/bin/python3"
    return "#!%s -I\n%s\n" % (shebang, PROGRAM_MARKER) + "".join(lines)


if __name__ == "__main__":
    # the installed boot program is a standalone script, not an Ansible module
    sys.exit(main())  # pylint: disable=ansible-bad-function
