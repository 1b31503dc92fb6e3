# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

What 1.0.0's nosuid_mount persisted, read so it can be removed (pure).

1.0.0 wrote fstab lines and ``.mount`` units (marked with MARKER) that the boot resolved by
path; nosuid.ensure finds them (old_unit_path, fstab_ours), adds their roots to its list
and removes them (fstab_remove) when it writes the persistence that mounts through
descriptors.
"""
import os
import re

MARKER = "# managed by sandboxguard.boundary.nosuid_mount"


def unit_name(path):
    """systemd's mount unit name for `path` (systemd-escape --path --suffix=mount): the
    name of the unit 1.0.0 wrote for a root."""
    trimmed = path.strip("/")
    if not trimmed:
        return "-.mount"
    out = []
    for i, byte in enumerate(os.fsencode(trimmed)):
        char = chr(byte)
        if char == "/":
            out.append("-")
        elif (char.isascii() and (char.isalnum() or char in ":_.")) and not (i == 0 and char == "."):
            out.append(char)
        else:
            out.append("\\x%02x" % byte)
    return "".join(out) + ".mount"


def old_unit_path(text):
    """The root of a mount unit 1.0.0 wrote (its Where=, unquoted), or None (pure)."""
    if not text.startswith(MARKER):
        return None
    for line in text.splitlines():
        if line.startswith("Where="):
            return line[len("Where="):].replace("%%", "%").replace("\\\\", "\\")
    return None


def fstab_unescape(field):
    raw = os.fsencode(field)
    return os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes((int(m.group(1), 8) & 0xFF,)), raw))


def fstab_ours(text):
    """The roots of the lines 1.0.0 marked in an fstab text (pure)."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if MARKER in line and len(fields) >= 2 and not fields[0].startswith("#"):
            found.append(fstab_unescape(fields[1]))
    return found


def fstab_remove(text, paths=None):
    """The fstab text without 1.0.0's marked lines (for ``paths`` only, when given) (pure)."""
    kept = []
    for line in text.splitlines():
        fields = line.split()
        if MARKER in line and len(fields) >= 2 and not fields[0].startswith("#"):
            if paths is None or fstab_unescape(fields[1]) in paths:
                continue
        kept.append(line)
    return "\n".join(kept) + "\n" if kept else ""
