# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

What the guard says: the record of a fixed file, the line people read for it, and where a
held descriptor is now. Every container-written name in a line goes through text.escape, and
``say`` makes any line one printable line, so a newline in a name never forges a line.
"""
import os

from .._core.text import escape, one_line


def file_record(entry, latency_ms, via):
    """One line of output for a fixed file (the --json object): the report entry's names."""
    return {"path": entry["path"], "actions": entry["actions"], "mode_before": entry["mode_before"],
            "mode_after": entry.get("mode_after"), "caps_before": entry.get("caps_before"),
            "latency_ms": latency_ms, "via": via, "error": entry.get("error")}


def human_line(record):
    """The line people read for one fixed file: the name through text.escape (a newline or
    an escape sequence a container put in a name never forges a line)."""
    bits = "%s -> %s" % (record["mode_before"], record["mode_after"])
    if record["caps_before"]:
        bits += ", had %s" % escape(record["caps_before"])
    when = "" if record["latency_ms"] is None else " %.0f ms after the change" % record["latency_ms"]
    verb = "FAILED to strip" if record.get("error") else "stripped"
    tail = ": %s" % one_line(record["error"]) if record.get("error") else ""
    return "%s %s (%s; %s)%s [%s]%s" % (verb, escape(record["path"]), ", ".join(record["actions"]), bits, when,
                                        record["via"], tail)


def names(paths):
    """Paths for a log line: each through text.escape, comma-separated."""
    return ", ".join(escape(p) for p in paths)


def say(log):
    """A log function that writes every line as one printable line (names already escaped)."""
    return lambda text: log(one_line(text))


def fd_path(fd):
    try:
        return os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        return "?"


def where(opened):
    """Where a held directory is now (/proc/self/fd), or the path it was proven at."""
    now = fd_path(opened.fd)
    return now if now.startswith("/") and not now.endswith(" (deleted)") else opened.path
