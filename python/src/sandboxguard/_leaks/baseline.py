# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Baseline mode's snapshot file: written atomically (0600), read back with its schema checked,
and the comparison that keeps what was added or changed since.
"""
import json
import os
import stat

from .._core import atomicfile
from ..errors import InputError

BASELINE_SCHEMA = "sandboxguard.leaks.baseline/1"
BASELINE_MODES = ("auto", "write", "compare")
DEFAULT_BASELINE_MODE = "auto"
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class LeakAuditError(InputError):
    """Bad input (a baseline file that cannot be used, a bad mode); the message names the fix."""


def compare(findings, baseline):
    """The findings added or changed since *baseline* (a :func:`snapshot`), with ``change``."""
    before = {item["key"]: item.get("sig") for item in baseline["items"]}
    out = []
    for item in findings:
        key = item["_key"]
        if key not in before:
            item["change"] = "added"
        elif before[key] != item["_sig"]:
            item["change"] = "modified"
        else:
            continue
        out.append(item)
    return out


def write_baseline(path, snap):
    """Write *snap* to *path* as JSON, atomically, mode 0600. Touches the disk."""
    atomicfile.write(path, json.dumps(snap, sort_keys=True) + "\n", mode=0o600)


def read_baseline(path):
    """Load a baseline written by :func:`write_baseline`; LeakAuditError names what is wrong."""
    try:
        fd = os.open(path, _FILE_FLAGS)
    except OSError as exc:
        raise LeakAuditError("baseline %s: %s" % (path, exc.strerror or exc)) from None
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise LeakAuditError("baseline %s is not a regular file" % path)
        try:
            snap = json.load(handle)
        except ValueError as exc:
            raise LeakAuditError("baseline %s is not JSON (%s): write it again with baseline_mode write"
                                 % (path, exc)) from None
    if not isinstance(snap, dict) or snap.get("schema") != BASELINE_SCHEMA or not isinstance(snap.get("items"), list):
        raise LeakAuditError("baseline %s is not a sandboxguard leak baseline (%s): write it again with "
                             "baseline_mode write" % (path, BASELINE_SCHEMA))
    return snap
