# GENERATED from python/src/sandboxguard/nosuid.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Sandbox roots as ``nosuid,nodev`` bind mounts of themselves on the host.

Whatever a container leaves under such a root gives no privilege when run from there on
the host: the kernel ignores setuid/setgid bits and file capabilities on a MNT_NOSUID
mount (execve(2), capabilities(7)) and refuses device nodes on MNT_NODEV, before any
strip has run. The files keep their bits, so a copy taken out of the mount by root with
``cp -a`` is privileged again: that is why the strip (guard and sweeps) stays.

How the mount is made: ``mount --bind P P`` then ``mount -o remount,bind,<flags>,nosuid,nodev P``
where <flags> are the per-mount flags P had (ro, noexec, atime), because a bind remount
sets all per-mount flags at once. An existing mount at P that lacks the two flags gets
only the remount; ``unmounted`` removes only bind mounts of P onto itself (never a
filesystem someone else mounted there).

Mount propagation: a container already running holds its own mounts of the task
directories, made before; they are unaffected (the container keeps reading and writing,
the files appear on the host through the new mount, where they cannot be executed with
privilege). A container started afterwards bind-mounts from the new mount, and a bind
mount copies the source's per-mount flags: its mounts are nosuid,nodev inside the
container too (it still reads and writes them).

Planning is pure (``plan`` over parsed mountinfo); effects go through a ``run(argv)``
callable (Ansible's run_command in the module) and plain file writes for persistence.
"""
import os
import posixpath
import re

from . import atomicfile
from .mountinfo import read_mountinfo
from .roots import check_root

STATES = ("mounted", "unmounted")
PERSIST = ("systemd", "fstab", "none")
REQUIRED = ("nosuid", "nodev")
UNIT_DIR = "/etc/systemd/system"
FSTAB = "/etc/fstab"
WANTED_BY = "local-fs.target"
MARKER = "# managed by sandboxguard.boundary.nosuid_mount"
# Per-mount flags a bind remount must carry over (mount(8) "remount,bind"); the rest of
# mountinfo's per-mount options (e.g. idmapped) are not settable this way.
CARRIED_FLAGS = ("ro", "rw", "noexec", "exec", "noatime", "nodiratime", "relatime", "strictatime", "nosymfollow")


class NosuidError(ValueError):
    """A path the module cannot handle; str() names the path, why and the fix."""


# -- pure: mountinfo ---------------------------------------------------------------
def _b(path):
    return os.fsencode(path)


def mounts_at(path, mounts):
    """Mounts whose mount point is exactly `path`, bottom first (stacked order)."""
    at = [m for m in mounts if m["mount_point"] == _b(path)]
    ids = {m["mount_id"] for m in at}
    bottom = [m for m in at if m["parent_id"] not in ids]
    ordered = []
    while bottom:
        cur = bottom.pop(0)
        ordered.append(cur)
        bottom += [m for m in at if m["parent_id"] == cur["mount_id"]]
    return ordered


def containing_mount(path, mounts):
    """The mount `path` lies in (the top mount at its longest mount-point prefix)."""
    path_b = _b(path)
    best = None
    for mount in mounts:
        point = mount["mount_point"]
        if point in (path_b, b"/") or path_b.startswith(point.rstrip(b"/") + b"/"):
            if best is None or len(point) >= len(best["mount_point"]):
                best = mount
    if best is None:
        return None
    stack = mounts_at(os.fsdecode(best["mount_point"]), mounts)
    return stack[-1] if stack else best


def is_self_bind(mount, mounts):
    """Whether `mount` is a bind mount of its own mount point (what `mounted` makes)."""
    parent = next((m for m in mounts if m["mount_id"] == mount["parent_id"]), None)
    if parent is None or parent["dev"] != mount["dev"]:
        return False
    point = mount["mount_point"]
    if point == parent["mount_point"]:  # stacked on another mount of the same point
        return mount["root"] == parent["root"]
    rel = point[len(parent["mount_point"].rstrip(b"/")):]
    return mount["root"] == (parent["root"].rstrip(b"/") + rel if parent["root"] != b"/" else rel)


def describe(path, mounts):
    """One line on what `path` is now (for diffs and results)."""
    stack = mounts_at(path, mounts)
    if not stack:
        return "%s: not a mount point" % path
    top = stack[-1]
    kind = "bind mount of itself" if is_self_bind(top, mounts) else "mount of %s%s (%s)" % (
        os.fsdecode(top["source"]), "" if top["root"] == b"/" else ":" + os.fsdecode(top["root"]), top["fstype"])
    return "%s: %s, %s" % (path, kind, ",".join(top["options"]))


def remount_options(options):
    """The -o of the bind remount: carried per-mount flags plus nosuid,nodev."""
    kept = [o for o in options if o in CARRIED_FLAGS]
    return ",".join(["remount", "bind", *kept, *REQUIRED])


def plan(path, state, mounts):
    """The mount(8)/umount(8) commands that bring `path` to `state`, and warnings (pure).

    Returns (commands, warnings): commands a list of argv lists.
    """
    stack = mounts_at(path, mounts)
    if state == "mounted":
        if not stack:
            where = containing_mount(path, mounts)
            options = where["options"] if where else ["rw"]
            return [["mount", "--bind", path, path], ["mount", "-o", remount_options(options), path]], []
        top = stack[-1]
        if all(flag in top["options"] for flag in REQUIRED):
            return [], []
        return [["mount", "-o", remount_options(top["options"]), path]], []
    commands, warnings = [], []
    for mount in reversed(stack):
        if not is_self_bind(mount, mounts):
            warnings.append("%s is a %s, not a bind mount of itself: left mounted" % (
                path, describe(path, mounts).split(": ", 1)[1]))
            break
        commands.append(["umount", path])
    return commands, warnings


# -- pure: persistence -------------------------------------------------------------
def unit_name(path):
    """systemd's mount unit name for `path` (systemd-escape --path --suffix=mount)."""
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


def _unit_quote(path):
    # Where=/What= take a path; systemd unit files expand % specifiers and treat \ as escape.
    return path.replace("\\", "\\\\").replace("%", "%%")


def unit_text(path):
    """The mount unit that recreates the bind mount at boot, before the engine starts."""
    return "\n".join([
        MARKER,
        "[Unit]",
        "Description=sandboxguard: %s as a nosuid,nodev bind mount of itself" % _unit_quote(path),
        "Documentation=https://github.com/sandboxguard/boundary/blob/main/docs/sandbox-sweep.md",
        "Before=docker.service containerd.service",
        "",
        "[Mount]",
        "What=%s" % _unit_quote(path),
        "Where=%s" % _unit_quote(path),
        "Type=none",
        "Options=bind,nosuid,nodev",
        "",
        "[Install]",
        "WantedBy=%s" % WANTED_BY,
        "",
    ])


def fstab_escape(path):
    out = []
    for byte in os.fsencode(path):
        out.append("\\%03o" % byte if byte in b" \t\n\\" else chr(byte) if byte < 128 else "\\%03o" % byte)
    return "".join(out)


def fstab_unescape(field):
    raw = os.fsencode(field)
    return os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes((int(m.group(1), 8) & 0xFF,)), raw))


def fstab_line(path):
    escaped = fstab_escape(path)
    return "%s %s none bind,nosuid,nodev 0 0  %s" % (escaped, escaped, MARKER)


def fstab_edit(text, path, present):
    """New /etc/fstab text with our line for `path` present or absent (pure).

    Raises NosuidError when another entry already mounts something at `path`.
    """
    lines = text.splitlines()
    kept, ours = [], False
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if fields and not fields[0].startswith("#") and len(fields) >= 2 and fstab_unescape(fields[1]) == path:
            if MARKER in line:
                ours = True
                if present:
                    kept.append(fstab_line(path))
                continue
            if present:
                raise NosuidError("%s: /etc/fstab line %d already mounts something there (%s); edit that line "
                                  "(add nosuid,nodev) or use persist: none" % (path, number, line.strip()))
        kept.append(line)
    if present and not ours:
        kept.append(fstab_line(path))
    return "\n".join(kept) + "\n" if kept else ""


# -- effects -----------------------------------------------------------------------
def _read(path):
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write(path, text, mode=0o644):
    atomicfile.write(path, text, mode=mode)


def _persist_changes(path, state, persist, unit_dir, fstab):
    """[(file, before, after)] for what persistence needs (None after = remove)."""
    changes = []
    unit = posixpath.join(unit_dir, unit_name(path))
    link = posixpath.join(unit_dir, WANTED_BY + ".wants", unit_name(path))
    unit_before = _read(unit)
    want_unit = state == "mounted" and persist == "systemd"
    if want_unit:
        if unit_before != unit_text(path):
            changes.append((unit, unit_before, unit_text(path)))
        if not os.path.islink(link):
            changes.append((link, None, "-> ../%s" % unit_name(path)))
    elif unit_before is not None and unit_before.startswith(MARKER):
        changes.append((unit, unit_before, None))
        if os.path.islink(link):
            changes.append((link, "-> ../%s" % unit_name(path), None))
    fstab_before = _read(fstab)
    if fstab_before is not None or (state == "mounted" and persist == "fstab"):
        after = fstab_edit(fstab_before or "", path, state == "mounted" and persist == "fstab")
        if after != (fstab_before or "") and not (fstab_before is None and not after):
            changes.append((fstab, fstab_before, after))
    return changes


def _apply_file(change):
    name, _before, after = change
    if name.endswith(".wants/" + posixpath.basename(name)) and (after is None or after.startswith("-> ")):
        if after is None:
            os.unlink(name)
        else:
            os.makedirs(posixpath.dirname(name), exist_ok=True)
            os.symlink(after[3:], name)
        return
    if after is None:
        os.unlink(name)
    else:
        _write(name, after)


def ensure(paths, state="mounted", persist="systemd", run=None, check_mode=False, unit_dir=UNIT_DIR, fstab=FSTAB,
           mountinfo=None, systemd_running=None):
    """Bring each path to `state`, persisted by `persist`; return the result dict.

    ``run(argv) -> (rc, stdout, stderr)`` runs mount/umount/systemctl (required unless
    check_mode). Result: changed, paths (one dict each: path, before, after, commands,
    files), warnings, diff (before/after text). Raises NosuidError for a path it refuses
    (relative, missing, a symlink, a system path) or a command that fails.
    """
    if state not in STATES:
        raise NosuidError("state must be one of %s, not %r" % (", ".join(STATES), state))
    if persist not in PERSIST:
        raise NosuidError("persist must be one of %s, not %r" % (", ".join(PERSIST), persist))
    if isinstance(paths, str):
        paths = [paths]
    if not paths:
        raise NosuidError("path: give at least one directory")
    real = []
    for path in paths:
        try:
            real.append(check_root(path))
        except ValueError as exc:
            raise NosuidError(str(exc)) from None
    if systemd_running is None:
        systemd_running = os.path.isdir("/run/systemd/system")
    result = {"changed": False, "paths": [], "warnings": [], "diff": {"before": "", "after": ""}}
    reload_needed = False
    for path in dict.fromkeys(real):
        mounts = read_mountinfo() if mountinfo is None else mountinfo
        before = describe(path, mounts)
        commands, warnings = plan(path, state, mounts)
        files = _persist_changes(path, state, persist, unit_dir, fstab)
        result["warnings"] += warnings
        entry = {"path": path, "before": before, "after": before, "commands": commands,
                 "files": [name for name, _b, _a in files]}
        result["diff"]["before"] += before + "\n"
        for name, old, _new in files:
            result["diff"]["before"] += "--- %s\n%s" % (name, _ensure_nl(old))
        if commands or files:
            result["changed"] = True
        if not check_mode:
            for argv in commands:
                rc, out, err = run(argv)
                if rc != 0:
                    raise NosuidError("%s: `%s` failed (rc %s): %s" % (
                        path, " ".join(argv), rc, (err or out).strip() or "no output"))
            for change in files:
                _apply_file(change)
                reload_needed = reload_needed or change[0].endswith(".mount")
            if commands and mountinfo is None:
                entry["after"] = describe(path, read_mountinfo())
        if check_mode or mountinfo is not None:
            entry["after"] = _expected_after(path, state, before, commands)
        result["diff"]["after"] += entry["after"] + "\n"
        for name, _old, new in files:
            result["diff"]["after"] += "--- %s\n%s" % (name, _ensure_nl(new))
        result["paths"].append(entry)
    if reload_needed and systemd_running and not check_mode:
        rc, out, err = run(["systemctl", "daemon-reload"])
        if rc != 0:
            result["warnings"].append("systemctl daemon-reload failed (rc %s): %s; the unit takes effect at the next "
                                      "boot" % (rc, (err or out).strip()))
    return result


def _ensure_nl(text):
    if not text:
        return "(absent)\n"
    return text if text.endswith("\n") else text + "\n"


def _expected_after(path, state, before, commands):
    if not commands:
        return before
    if state == "mounted":
        return "%s: bind mount of itself, nosuid,nodev (would be)" % path
    return "%s: not a mount point (would be)" % path
