# GENERATED from python/src/sandboxguard/_core/mountinfo.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Mount points from /proc/self/mountinfo (proc(5)).

A bind mount of the same filesystem has the same st_dev as its parent, so `find -xdev`
walks into it; only mountinfo tells the two apart. Paths there are octal-escaped
(space as \\040, tab \\011, newline \\012, backslash \\134) and may hold any bytes, so
they are decoded to bytes here and compared as bytes.
"""
import os
import re

from .pathnames import is_within

MOUNTINFO = "/proc/self/mountinfo"

_OCTAL = re.compile(rb"\\([0-7]{3})")


def decode_path(field):
    """Undo mountinfo's octal escapes in one path field (bytes in, bytes out)."""
    return _OCTAL.sub(lambda match: bytes((int(match.group(1), 8) & 0xFF,)), field)


def parse_mountinfo(data):
    """Parse mountinfo text (bytes) into a list of dicts.

    Each dict: mount_id (int), parent_id (int), dev ("major:minor"), root (bytes, the
    path inside the filesystem), mount_point (bytes), options (per-mount options, a
    list of str such as ["rw", "nosuid"]), fstype (str), source (bytes).
    Malformed lines are skipped.
    """
    mounts = []
    for line in data.split(b"\n"):
        fields = line.split(b" ")
        if len(fields) < 10 or b"-" not in fields[6:]:
            continue
        sep = fields.index(b"-", 6)
        try:
            mounts.append({
                "mount_id": int(fields[0]),
                "parent_id": int(fields[1]),
                "dev": fields[2].decode("ascii", "replace"),
                "root": decode_path(fields[3]),
                "mount_point": decode_path(fields[4]),
                "options": fields[5].decode("ascii", "replace").split(","),
                "fstype": fields[sep + 1].decode("utf-8", "replace") if len(fields) > sep + 1 else "",
                "source": decode_path(fields[sep + 2]) if len(fields) > sep + 2 else b"",
            })
        except (ValueError, IndexError):
            continue
    return mounts


def read_mountinfo(path=MOUNTINFO):
    """Read and parse the calling process's mountinfo (touches the system)."""
    with open(path, "rb") as handle:
        return parse_mountinfo(handle.read())


def mount_points_under(root, mounts):
    """Mount points strictly below `root` (bytes or str, an absolute real path).

    Returns a sorted list of bytes paths. `mounts` is parse_mountinfo()'s result.
    """
    root_b = os.fsencode(root)
    return sorted({m["mount_point"] for m in mounts if is_within(m["mount_point"], root_b, strict=True)})


def source_paths(mount_id, path, mounts):
    """Every other path where `path` shows in this mount namespace (pure).

    `path` (bytes, absolute) lies on the mount `mount_id`; a bind mount's "root" field
    says which directory of its filesystem it shows, and any other mount of the same
    filesystem (same "dev") whose root contains that directory shows it too, at its own
    mount point: a bind of /usr/bin at /srv/x makes /srv/x/sub show as /usr/bin/sub.
    Returns a sorted list of bytes paths (empty when `path` is not below the mount).
    """
    own = next((m for m in mounts if m["mount_id"] == mount_id), None)
    if own is None:
        return []
    point = own["mount_point"].rstrip(b"/")
    if not (path.rstrip(b"/") == point or path.startswith(point + b"/")):
        return []
    in_fs = own["root"].rstrip(b"/") + path[len(point):].rstrip(b"/")
    found = set()
    for other in mounts:
        if other is own or other["dev"] != own["dev"]:
            continue
        root = other["root"].rstrip(b"/")
        if in_fs == root or in_fs.startswith(root + b"/"):
            found.add((other["mount_point"].rstrip(b"/") + in_fs[len(root):]) or b"/")
    return sorted(found)


def mount_id_of_fd(fd, proc="/proc/self/fdinfo"):
    """The mount id of an open descriptor, from /proc/self/fdinfo/N (touches the system).

    Returns None where the kernel does not report it (before Linux 3.15).
    """
    with open("%s/%d" % (proc, fd), "rb") as handle:
        for line in handle:
            if line.startswith(b"mnt_id:"):
                return int(line.split()[1])
    return None
