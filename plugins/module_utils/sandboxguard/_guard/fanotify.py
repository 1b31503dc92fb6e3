# GENERATED from python/src/sandboxguard/_guard/fanotify.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

fanotify(7) through ctypes: the raw binding the guard needs, and nothing more.

The library stays stdlib-only, so the three syscalls (fanotify_init, fanotify_mark,
open_by_handle_at) come from glibc by name, and the event records are parsed with
struct. Only the reporting mode the guard uses is supported: FAN_CLASS_NOTIF with
FAN_REPORT_FID | FAN_REPORT_DIR_FID | FAN_REPORT_NAME, where every event names its
directory by a file handle and the entry by name (no event carries an open fd).

Constants and record layouts are from include/uapi/linux/fanotify.h.
"""
import ctypes
import ctypes.util
import errno
import functools
import os
import struct

# fanotify_init flags
FAN_CLOEXEC = 0x00000001
FAN_NONBLOCK = 0x00000002
FAN_CLASS_NOTIF = 0x00000000
FAN_UNLIMITED_QUEUE = 0x00000010
FAN_REPORT_FID = 0x00000200
FAN_REPORT_DIR_FID = 0x00000400
FAN_REPORT_NAME = 0x00000800
FAN_REPORT_DFID_NAME = FAN_REPORT_DIR_FID | FAN_REPORT_NAME

# fanotify_mark flags
FAN_MARK_ADD = 0x00000001
FAN_MARK_REMOVE = 0x00000002
FAN_MARK_FILESYSTEM = 0x00000100

# event mask bits
FAN_MODIFY = 0x00000002
FAN_ATTRIB = 0x00000004
FAN_CLOSE_WRITE = 0x00000008
FAN_MOVED_FROM = 0x00000040
FAN_MOVED_TO = 0x00000080
FAN_CREATE = 0x00000100
FAN_DELETE_SELF = 0x00000400
FAN_MOVE_SELF = 0x00000800
FAN_Q_OVERFLOW = 0x00004000
FAN_EVENT_ON_CHILD = 0x08000000
FAN_ONDIR = 0x40000000

FANOTIFY_METADATA_VERSION = 3
FAN_NOFD = -1

# info record types
FAN_EVENT_INFO_TYPE_FID = 1
FAN_EVENT_INFO_TYPE_DFID_NAME = 2
FAN_EVENT_INFO_TYPE_DFID = 3

AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
MAX_HANDLE_SZ = 128

_METADATA = struct.Struct("=IBBHQii")  # event_len, vers, reserved, metadata_len, mask, fd, pid
_INFO_HEADER = struct.Struct("=BBH")  # info_type, pad, len
_FSID = struct.Struct("=ii")
_HANDLE_HEADER = struct.Struct("=Ii")  # handle_bytes, handle_type

READ_BUFFER_BYTES = 1 << 16


class FanotifyUnavailable(OSError):
    """fanotify cannot be used here; str() names why (not root, no kernel support...)."""


@functools.cache
def _lib():
    """glibc with the four calls typed (loaded once)."""
    name = ctypes.util.find_library("c") or "libc.so.6"
    lib = ctypes.CDLL(name, use_errno=True)
    for func in ("fanotify_init", "fanotify_mark", "open_by_handle_at", "name_to_handle_at"):
        if not hasattr(lib, func):
            raise FanotifyUnavailable(errno.ENOSYS, "the C library has no %s()" % func)
    lib.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
    lib.fanotify_init.restype = ctypes.c_int
    lib.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
    lib.fanotify_mark.restype = ctypes.c_int
    lib.open_by_handle_at.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.open_by_handle_at.restype = ctypes.c_int
    lib.name_to_handle_at.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    lib.name_to_handle_at.restype = ctypes.c_int
    return lib


def _raise_errno(what):
    code = ctypes.get_errno()
    raise OSError(code, "%s: %s" % (what, os.strerror(code)))


def init(flags=FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_REPORT_DFID_NAME, event_f_flags=os.O_RDONLY):
    """fanotify_init(2) with CLOEXEC and NONBLOCK added; returns the fd.

    Raises FanotifyUnavailable naming the cause when the kernel or the caller cannot.
    """
    try:
        lib = _lib()
    except OSError as exc:
        raise FanotifyUnavailable(errno.ENOSYS, "cannot load the C library: %s" % exc) from None
    fd = lib.fanotify_init(flags | FAN_CLOEXEC | FAN_NONBLOCK, event_f_flags | getattr(os, "O_LARGEFILE", 0))
    if fd < 0:
        code = ctypes.get_errno()
        if code == errno.EPERM:
            reason = "fanotify needs root (CAP_SYS_ADMIN)"  # before Linux 5.13, fanotify_init itself
        elif code == errno.ENOSYS:
            reason = "this kernel has no fanotify (CONFIG_FANOTIFY)"
        elif code == errno.EINVAL:
            reason = "this kernel's fanotify cannot report file handles with names (needs Linux 5.9 or later)"
        else:
            reason = "fanotify_init failed: %s" % os.strerror(code)
        raise FanotifyUnavailable(code, reason)
    return fd


def mark_filesystem(fan_fd, target, mask, remove=False):
    """Add (or remove) a FAN_MARK_FILESYSTEM mark for the filesystem holding `target`.

    ``target``: an open descriptor (int; the mark goes to the filesystem of the very
    object it holds, no name is looked up) or a path (str/bytes; looked up by the kernel).
    """
    flags = (FAN_MARK_REMOVE if remove else FAN_MARK_ADD) | FAN_MARK_FILESYSTEM
    if isinstance(target, int):
        dirfd, pathname, shown = target, None, "fd %d" % target
    else:
        dirfd, pathname, shown = AT_FDCWD, os.fsencode(target), os.fsdecode(target)
    if _lib().fanotify_mark(fan_fd, flags, mask, dirfd, pathname) < 0:
        _raise_errno("fanotify_mark %s" % shown)


def open_by_handle(mount_fd, handle, flags):
    """open_by_handle_at(2): `handle` is the raw struct file_handle bytes from an event."""
    fd = _lib().open_by_handle_at(mount_fd, handle, flags)
    if fd < 0:
        _raise_errno("open_by_handle_at")
    return fd


def check_handle_permission():
    """Raise OSError(EPERM) when this process may not call open_by_handle_at at all
    (it lacks CAP_DAC_READ_SEARCH). The kernel checks that before it looks at the handle,
    so a handle that names nothing answers the question on any filesystem: EPERM, or
    another error (ESTALE, EINVAL...) when the permission is there."""
    bogus = _HANDLE_HEADER.pack(8, 1) + b"\xff" * 8  # FILEID_INO32_GEN, inode 0xffffffff
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        opened = _lib().open_by_handle_at(fd, bogus, os.O_RDONLY | getattr(os, "O_PATH", 0))
        if opened >= 0:
            os.close(opened)
            return
        code = ctypes.get_errno()
        if code == errno.EPERM:
            raise OSError(code, "open_by_handle_at: %s" % os.strerror(code))
    finally:
        os.close(fd)


def handle_of_fd(fd):
    """name_to_handle_at(fd, "", AT_EMPTY_PATH): the file handle of an open fd, in the
    byte layout events carry (struct file_handle), so the two compare equal."""
    buf = ctypes.create_string_buffer(_HANDLE_HEADER.size + MAX_HANDLE_SZ)
    _HANDLE_HEADER.pack_into(buf, 0, MAX_HANDLE_SZ, 0)
    mount_id = ctypes.c_int()
    if _lib().name_to_handle_at(fd, b"", buf, ctypes.byref(mount_id), AT_EMPTY_PATH) < 0:
        _raise_errno("name_to_handle_at")
    size = _HANDLE_HEADER.unpack_from(buf.raw, 0)[0]
    return buf.raw[:_HANDLE_HEADER.size + size]


class Event:
    """One fanotify event: mask, and for FID reports the directory handle and entry name.

    ``dir_handle`` is the struct file_handle bytes of the directory (usable with
    open_by_handle), ``fsid`` its filesystem id, ``name`` the entry (bytes) or None when
    the event is about the directory itself; ``obj_handle`` the object's own handle.
    """

    __slots__ = ("dir_handle", "fsid", "mask", "name", "obj_handle", "pid")

    def __init__(self, mask, pid):
        self.mask = mask
        self.pid = pid
        self.dir_handle = None
        self.fsid = None
        self.name = None
        self.obj_handle = None

    def __repr__(self):
        return "Event(mask=%#x, name=%r)" % (self.mask, self.name)


def parse_events(buf):
    """Parse a buffer read from a FID-reporting fanotify fd into a list of Event (pure).

    Any event that carries an fd (not expected in FID mode) has it closed so nothing leaks.
    """
    events = []
    offset = 0
    end = len(buf)
    while offset + _METADATA.size <= end:
        event_len, vers, _reserved, meta_len, mask, fd, pid = _METADATA.unpack_from(buf, offset)
        if event_len < _METADATA.size or offset + event_len > end:
            break
        if vers != FANOTIFY_METADATA_VERSION:
            raise OSError(errno.EPROTO, "fanotify metadata version %d, expected %d" % (vers, FANOTIFY_METADATA_VERSION))
        if fd >= 0:
            os.close(fd)
        event = Event(mask, pid)
        info = offset + meta_len
        stop = offset + event_len
        while info + _INFO_HEADER.size <= stop:
            info_type, _pad, info_len = _INFO_HEADER.unpack_from(buf, info)
            if info_len < _INFO_HEADER.size or info + info_len > stop:
                break
            if info_type in (FAN_EVENT_INFO_TYPE_FID, FAN_EVENT_INFO_TYPE_DFID_NAME, FAN_EVENT_INFO_TYPE_DFID):
                pos = info + _INFO_HEADER.size
                fsid = _FSID.unpack_from(buf, pos)
                pos += _FSID.size
                handle_bytes, _handle_type = _HANDLE_HEADER.unpack_from(buf, pos)
                hend = pos + _HANDLE_HEADER.size + handle_bytes
                handle = bytes(buf[pos:hend])
                if info_type == FAN_EVENT_INFO_TYPE_FID:
                    event.obj_handle = handle
                    event.fsid = event.fsid or fsid
                else:
                    event.dir_handle = handle
                    event.fsid = fsid
                    if info_type == FAN_EVENT_INFO_TYPE_DFID_NAME:
                        raw = bytes(buf[hend:info + info_len])
                        name = raw.split(b"\0", 1)[0]
                        event.name = None if name in (b"", b".") else name
            info += info_len
        events.append(event)
        offset += event_len
    return events


def read_events(fan_fd, size=READ_BUFFER_BYTES):
    """Read what is queued (non-blocking fd); [] when nothing is."""
    try:
        buf = os.read(fan_fd, size)
    except BlockingIOError:
        return []
    return parse_events(buf)
