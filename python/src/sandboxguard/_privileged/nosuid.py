# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Sandbox roots as ``nosuid,nodev`` bind mounts of themselves on the host.

Whatever a container leaves under such a root gives no privilege when run from there on
the host: the kernel ignores setuid/setgid bits and file capabilities on a MNT_NOSUID
mount (execve(2), capabilities(7)) and refuses device nodes on MNT_NODEV, before any
strip has run. The files keep their bits, so a copy taken out of the mount by root with
``cp -a`` is privileged again: that is why the strip (guard and sweeps) stays.

Every root lies in the agent's tree, which the agent changes at will, so nothing here acts
by path (docs/architecture.md, "Root never resolves a name a less-privileged user can
change"). Each root is opened component by component (roots.open_root: no symlink, no
system path) and everything after acts on that descriptor (fdmount):

- a directory that is not a mount point gets a clone of itself (``open_tree``), made
  nosuid,nodev while still detached (``mount_setattr``) and attached onto the same
  descriptor (``move_mount``); the clone keeps the per-mount flags of the mount the
  directory lies on (ro, noexec, atime). Where the kernel lacks the new mount API, mount(2)
  on ``/proc/self/fd/N`` and a bind remount through the new mount's own descriptor;
- an existing mount at the root that lacks the two flags gets them on its root's
  descriptor (``mount_setattr``), its other flags kept; a directory on a mount that already
  has both needs nothing;
- ``unmounted`` removes only bind mounts of the root onto itself (mount id and mountinfo's
  root field checked for the descriptor's own mount), each with ``umount2`` on its
  descriptor's magic link, and checks that exactly that mount id is gone.

A root that is refused (a symlink on the way, a system path) is refused alone, with a
warning naming it and why; the others still get their mount. Roots that do not exist yet
are named in ``missing``. The roots are scope.derive's (from the Hermes homes, the sandbox
dir and the operator's roots), so the mounts cover exactly what the sweep and the guard cover.

Persistence (``persist: systemd``): a oneshot unit, ``sandboxguard-nosuid.service``, runs a
root-owned standalone program this module writes (fdmount's own source) over a root-owned
list of the roots, before the engine starts. At every boot it proves each path again
component by component (no symlink followed anywhere) and mounts through descriptors. No
root's path is ever written into a unit (only the program, the interpreter and the list,
each fully escaped). 1.0.0 wrote fstab lines and ``.mount`` units that the boot resolved by
path (a link the agent planted made systemd mount another directory nosuid,nodev, and
systemd refuses a ``Where=`` through a symlink, so the layer was silently gone); those it
marked are removed when the new persistence is written, with a warning, and their roots
join the list. ``persist: fstab`` is deprecated and means ``systemd``.

Mount propagation: a container already running holds its own mounts of the task
directories, made before; they are unaffected (the container keeps reading and writing,
the files appear on the host through the new mount, where they cannot be executed with
privilege). A container started afterwards bind-mounts from the new mount, and a bind
mount copies the source's per-mount flags: its mounts are nosuid,nodev inside the
container too (it still reads and writes them).
"""
import hashlib
import os
import posixpath
import stat
import sys

from .. import report as envelope
from .._core import atomicfile, defaults, fdmount, safefs
from .._core.mountinfo import read_mountinfo
from .._core.nosuid_legacy import MARKER, fstab_ours, fstab_remove, old_unit_path
from .._core.text import escape
from ..errors import InputError
from ..roots import RootMissing, open_root
from . import scope

STATES = ("mounted", "unmounted")
PERSIST = ("systemd", "fstab", "none")
REQUIRED = ("nosuid", "nodev")
UNIT_DIR = "/etc/systemd/system"
FSTAB = "/etc/fstab"
UNIT = "sandboxguard-nosuid.service"
UNIT_WANTED_BY = "multi-user.target"
PROGRAM = "/usr/local/sbin/sandboxguard-nosuid"
PATHS_FILE = "/etc/sandboxguard/nosuid-paths"
DEFAULT_PYTHON = defaults.SYSTEM_PYTHON
# What 1.0.0 persisted: a mount unit per root, wanted by local-fs.target, or an fstab line.
OLD_WANTED_BY = "local-fs.target"
MAX_UNIT_BYTES = 1 << 16
MAX_STACK = 32
FSTAB_DEPRECATED = ("persist: fstab is deprecated and now means persist: systemd: a line in /etc/fstab is resolved "
                    "by path at boot, so a symlink planted in the agent's tree would mount another directory "
                    "(/usr/bin, /dev) nosuid,nodev; the roots are re-proven at boot by %s instead" % UNIT)


class NosuidError(InputError):
    """A request the module cannot carry out at all; str() names what, why and the fix."""


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


def mount_by_id(mount_id, mounts):
    return next((m for m in mounts if m["mount_id"] == mount_id), None)


def is_self_bind(mount, mounts):
    """Whether `mount` is a bind mount of its own mount point (what `mounted` makes)."""
    parent = mount_by_id(mount["parent_id"], mounts)
    if parent is None or parent["dev"] != mount["dev"]:
        return False
    point = mount["mount_point"]
    if point == parent["mount_point"]:  # stacked on another mount of the same point
        return mount["root"] == parent["root"]
    rel = point[len(parent["mount_point"].rstrip(b"/")):]
    return mount["root"] == (parent["root"].rstrip(b"/") + rel if parent["root"] != b"/" else rel)


def has_required(mount):
    return all(flag in mount["options"] for flag in REQUIRED)


def describe(path, mounts):
    """One line on what `path` is now (for diffs and results); names are escaped."""
    stack = mounts_at(path, mounts)
    shown = escape(path)
    if not stack:
        where = containing_mount(path, mounts)
        if where is not None and has_required(where):
            return "%s: not a mount point, on %s, which is %s" % (
                shown, escape(where["mount_point"]), ",".join(where["options"]))
        return "%s: not a mount point" % shown
    top = stack[-1]
    kind = "bind mount of itself" if is_self_bind(top, mounts) else "mount of %s%s (%s)" % (
        escape(top["source"]), "" if top["root"] == b"/" else ":" + escape(top["root"]), escape(top["fstype"]))
    return "%s: %s, %s" % (shown, kind, ",".join(top["options"]))


# -- pure: unit text and 1.0.0's persistence ----------------------------------------
def unit_quote(text):
    """One argument of a unit's ExecStart= as a double-quoted word systemd reads back as
    exactly these bytes (pure): ``%`` (specifiers) as ``%%``, ``$`` (variables) as ``$$``,
    the quote characters and the backslash escaped, every byte that is not printable ASCII
    (a newline, a tab, a byte that is not UTF-8) as ``\\xNN``. The result is one printable
    line that no text can end, extend or give a specifier."""
    raw = text if isinstance(text, bytes) else os.fsencode(text)
    out = ['"']
    for byte in raw:
        char = chr(byte)
        if char == "%":
            out.append("%%")
        elif char == "$":
            out.append("$$")
        elif char in "\"'\\":
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append("\\x%02x" % byte)
    out.append('"')
    return "".join(out)


def unit_text(python=DEFAULT_PYTHON, program=PROGRAM, paths_file=PATHS_FILE):
    """The oneshot unit that mounts the listed roots at boot, before the engine starts.

    No root's path is in it: the program reads them from ``paths_file`` and proves each.
    """
    return "\n".join([
        MARKER,
        "[Unit]",
        "Description=sandboxguard: the sandbox roots as nosuid,nodev bind mounts of themselves",
        "Documentation=https://github.com/sandboxguard/boundary/blob/main/docs/sandbox-sweep.md",
        "After=local-fs.target remote-fs.target",
        "Before=docker.service containerd.service podman.service sandboxguard-guard.service "
        "sandboxguard-watch.service sandboxguard-sweep.service",
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        "ExecStart=%s -I %s --paths-file %s" % (unit_quote(python), unit_quote(program), unit_quote(paths_file)),
        "",
        "[Install]",
        "WantedBy=%s" % UNIT_WANTED_BY,
        "",
    ])


# -- effects: one root ----------------------------------------------------------------
def _reopen(path):
    """The root proven again (roots.open_root); its descriptor, which the caller owns."""
    held = open_root(path)
    fd, held.fd = held.fd, None
    return fd


def _mount(held, entry, dry_run):
    """state mounted for one proven root: nothing, a flag change or a new bind."""
    fd = held.fd
    if fdmount.has_flags(fd):
        return
    shown = escape(held.path)
    if fdmount.is_mount_root(fd):
        entry["actions"].append("add nosuid,nodev to the mount at %s (mount id %s), keeping its other flags"
                                % (shown, fdmount.mount_id(fd)))
        if not dry_run:
            entry["how"] = fdmount.set_attr(fd)
        return
    entry["actions"].append("bind %s onto itself, nosuid,nodev, keeping the flags of the mount it lies on" % shown)
    if not dry_run:
        mount_fd, entry["how"] = fdmount.bind_nosuid(fd, reopen=lambda: _reopen(held.path))
        os.close(mount_fd)


def _unmount(held, entry, dry_run, result):
    """state unmounted for one proven root: detach each bind of it onto itself, top first."""
    fd, own = held.fd, False
    shown = escape(held.path)
    try:
        for _round in range(MAX_STACK):
            if not fdmount.is_mount_root(fd):
                return
            mounts = read_mountinfo()
            mid = fdmount.mount_id(fd)
            mine = mount_by_id(mid, mounts)
            if mine is None:
                raise NosuidError("%s: its mount (id %s) is not in /proc/self/mountinfo; run again" % (shown, mid))
            if not is_self_bind(mine, mounts):
                envelope.add_warning(result, "%s is a %s, not a bind mount of itself: left mounted" % (
                    shown, describe(held.path, mounts).split(": ", 1)[1]))
                return
            if any(m["parent_id"] == mid for m in mounts):
                envelope.add_warning(result, "%s: the bind mount of itself (mount id %s) has mounts below it: "
                                     "left mounted; unmount those first" % (shown, mid))
                return
            entry["actions"].append("unmount the bind of %s onto itself (mount id %s)" % (shown, mid))
            if dry_run:
                below = [m for m in mounts_at(held.path, mounts) if m["mount_id"] != mid]
                entry["actions"] += ["unmount the bind of %s onto itself (mount id %s)" % (shown, m["mount_id"])
                                     for m in reversed(below) if is_self_bind(m, mounts)]
                return
            fdmount.detach(fd)
            if any(m["mount_id"] == mid for m in read_mountinfo()):
                raise NosuidError("%s: mount id %s is still there after the unmount (another mount was put on it "
                                  "meanwhile?); look at it, then run again" % (shown, mid))
            if own:
                os.close(fd)
            fd, own = None, False
            try:
                fd, own = _reopen(held.path), True
            except RootMissing:
                return
    finally:
        if own and fd is not None:
            os.close(fd)


def _one_root(root, state, dry_run, result):
    """Bring one root of the scope (scope.Root) to ``state`` through its held descriptor (the
    scope closes it); return its entry, or None (missing, or a regular file)."""
    held = root.held
    if held is None:
        result["missing"].append(root.realpath)
        return None
    if not held.is_dir:
        _refuse(result, root.path, "is a regular file; give a directory")
        return None
    before = describe(held.path, read_mountinfo())
    entry = {"path": held.path, "before": before, "after": before, "actions": [], "how": None}
    try:
        if state == "mounted":
            _mount(held, entry, dry_run)
        else:
            _unmount(held, entry, dry_run, result)
    except (OSError, ValueError) as exc:
        text = envelope.error_text(exc) if isinstance(exc, OSError) else str(exc)
        envelope.add_error(result, held.path, state, text)
        entry["error"] = text
    if entry["actions"]:
        if dry_run:
            entry["after"] = ("%s: bind mount of itself, nosuid,nodev (would be)" % escape(held.path)
                              if state == "mounted" else "%s: not a mount point (would be)" % escape(held.path))
        else:
            entry["after"] = describe(held.path, read_mountinfo())
    return entry


def _refuse(result, path, reason):
    result["refused"].append({"path": path, "reason": reason})
    envelope.add_warning(result, "%s: refused, not mounted nosuid,nodev: %s (the other roots are still mounted)"
                         % (escape(path), reason))


# -- effects: persistence ---------------------------------------------------------------
class _Files:
    """The persisted files of one run: reads through proven directories, planned changes
    [(path, before, after, apply)], applied only when not a dry run."""

    def __init__(self):
        self.changes = []

    @staticmethod
    def held_dir(path, create=False):
        """The trusted directory ``path`` (a Dir), or None when it does not exist and not create."""
        try:
            held = safefs.open_dir(path, create=create, mode=0o755)
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise NosuidError("cannot use %s for the boot unit's files: %s" % (escape(path), exc)) from None
        if not held.trusted:
            held.close()
            raise NosuidError("refusing to keep root's boot files in %s: it, or a directory above it, can be "
                              "changed by another user than root; choose a directory only root can change"
                              % escape(held.path))
        return held

    def read(self, path, limit=MAX_UNIT_BYTES):
        head, name = posixpath.split(path)
        held = self.held_dir(head)
        if held is None:
            return None
        with held:
            try:
                data, _st = safefs.read_at(held.fd, name, limit=limit, path_for_errors=path)
            except ValueError as exc:
                raise NosuidError("cannot read %s: %s" % (escape(path), exc)) from None
        return data

    def is_link(self, path):
        head, name = posixpath.split(path)
        held = self.held_dir(head)
        if held is None:
            return False
        with held:
            st = safefs.lstat_at(held.fd, name)
        return st is not None and stat.S_ISLNK(st.st_mode)

    def write(self, path, before, after, data, mode):
        def apply():
            head, name = posixpath.split(path)
            with self.held_dir(head, create=True) as held:
                atomicfile.write_at(held.fd, name, data, mode=mode, owner=(0, 0) if os.geteuid() == 0 else None)
        self.changes.append((path, before, after, apply))

    def link(self, path, target):
        def apply():
            head, name = posixpath.split(path)
            with self.held_dir(head, create=True) as held:
                if safefs.lstat_at(held.fd, name) is not None:
                    os.unlink(name, dir_fd=held.fd)
                os.symlink(target, name, dir_fd=held.fd)
        self.changes.append((path, None, "-> %s" % target, apply))

    def remove(self, path, before):
        def apply():
            head, name = posixpath.split(path)
            held = self.held_dir(head)
            if held is not None:
                with held:
                    if safefs.lstat_at(held.fd, name) is not None:
                        os.unlink(name, dir_fd=held.fd)
        self.changes.append((path, before, None, apply))


def _text(data):
    return None if data is None else data.decode("utf-8", "surrogateescape")


def _old_units(files, unit_dir):
    """{root: unit file path} of the mount units 1.0.0 wrote (marked) in ``unit_dir``."""
    held = files.held_dir(unit_dir)
    if held is None:
        return {}
    with held:
        names = sorted(n for n in safefs.list_dir_at(held.fd) if n.endswith(".mount"))
    found = {}
    for name in names:
        try:
            text = _text(files.read(posixpath.join(unit_dir, name)))
        except NosuidError:
            continue
        path = old_unit_path(text or "")
        if path is not None:
            found[path] = posixpath.join(unit_dir, name)
    return found


def old_persistence(unit_dir=UNIT_DIR, fstab=FSTAB):
    """The roots 1.0.0 persisted (its marked mount units and fstab lines), sorted."""
    files = _Files()
    fstab_text = _text(files.read(fstab, limit=1 << 20)) or ""
    return sorted(set(_old_units(files, unit_dir)) | set(fstab_ours(fstab_text)))


def _plan_persistence(result, state, persist, handled, candidates, unit_dir, fstab, program, paths_file, python):
    """Plan the persisted files; ``handled``: roots now (or soon) nosuid; ``candidates``:
    every root this run was asked about. Returns a _Files."""
    files = _Files()
    list_before = files.read(paths_file, limit=fdmount.MAX_LIST_BYTES)
    listed = {os.fsdecode(p) for p in fdmount.parse_list(list_before or b"")}
    want = set(listed)
    migrate = state == "mounted" and persist == "systemd"
    if migrate:
        want |= set(handled)
    else:
        want -= set(candidates)
    # 1.0.0's units and fstab lines: all of them go when the new persistence is written;
    # otherwise those of the roots asked about, as 1.0.0's unmounted and persist none did.
    old_units = _old_units(files, unit_dir)
    fstab_text = _text(files.read(fstab, limit=1 << 20))
    old_scope = None if migrate and want else set(candidates)
    for path, unit in sorted(old_units.items()):
        if old_scope is None or path in old_scope:
            files.remove(unit, _text(files.read(unit)))
            link = posixpath.join(unit_dir, OLD_WANTED_BY + ".wants", posixpath.basename(unit))
            if files.is_link(link):
                files.remove(link, "-> ../%s" % posixpath.basename(unit))
            envelope.add_warning(result, "removed the mount unit 1.0.0 wrote for %s (%s): systemd resolved it by path "
                                 "at boot%s" % (escape(path), escape(unit),
                                                "; %s re-proves the root at boot now" % UNIT
                                                if path in want else ""))
    if fstab_text is not None:
        after = fstab_remove(fstab_text, old_scope)
        if after != fstab_text:
            files.write(fstab, fstab_text, after, after, 0o644)
            removed = [escape(p) for p in fstab_ours(fstab_text) if old_scope is None or p in old_scope]
            envelope.add_warning(result, "removed the line(s) 1.0.0 wrote in %s (%s): mount(8) resolved them by path "
                                 "at boot%s" % (escape(fstab), ", ".join(removed),
                                                "; %s re-proves the roots at boot now" % UNIT if want else ""))
    unit_path = posixpath.join(unit_dir, UNIT)
    link_path = posixpath.join(unit_dir, UNIT_WANTED_BY + ".wants", UNIT)
    unit_before = _text(files.read(unit_path))
    program_before = files.read(program, limit=1 << 20)
    if want:
        list_after = fdmount.list_text(sorted(want))
        if _text(list_before) != list_after:
            files.write(paths_file, _text(list_before), list_after, list_after, 0o644)
        source = fdmount.program_source(python).encode("utf-8")
        if program_before != source:
            files.write(program, _program_summary(program_before), _program_summary(source), source, 0o755)
        text = unit_text(python, program, paths_file)
        if unit_before != text:
            files.write(unit_path, unit_before, text, text, 0o644)
        if not files.is_link(link_path):
            files.link(link_path, "../" + UNIT)
    elif list_before is not None or (unit_before or "").startswith(MARKER):
        for path, before in ((paths_file, _text(list_before)), (unit_path, unit_before)):
            if before is not None:
                files.remove(path, before)
        if files.is_link(link_path):
            files.remove(link_path, "-> ../" + UNIT)
        if program_before is not None and fdmount.PROGRAM_MARKER.encode() in program_before[:200]:
            files.remove(program, _program_summary(program_before))
    return files


def _program_summary(data):
    if data is None:
        return None
    return "(the boot program: %d bytes, sha256 %s)\n" % (len(data), hashlib.sha256(data).hexdigest())


def default_python():
    """Debian's /usr/bin/python3 when present, else the interpreter running this."""
    return DEFAULT_PYTHON if os.access(DEFAULT_PYTHON, os.X_OK) else sys.executable


def listed_roots(paths_file=PATHS_FILE):
    """The roots (str) the persisted list ``paths_file`` names, [] when there is none; read
    through descriptors in a directory only root can change, as the boot files are written."""
    data = _Files().read(paths_file, limit=fdmount.MAX_LIST_BYTES)
    return [os.fsdecode(p) for p in fdmount.parse_list(data or b"")]


# -- the operation ----------------------------------------------------------------------
def ensure(paths=(), state="mounted", persist="systemd", run=None, dry_run=False, unit_dir=UNIT_DIR, fstab=FSTAB,
           systemd_running=None, hermes_homes=(), sandbox_dir=None, extra_roots=(), program=PROGRAM,
           paths_file=PATHS_FILE, python=None, check_mode=None, providers=(), listed=False):
    """Bring every root to ``state``, persisted by ``persist``; return the report envelope.
    ``dry_run``: change nothing (no mount, no file written), report what would change
    (``check_mode`` is its deprecated alias).

    The roots: ``paths`` and ``extra_roots`` as given, plus what ``hermes_homes`` and
    ``sandbox_dir`` and ``providers`` (runners.runner_providers: opt-in) give (scope.derive).
    ``listed``: also every root ``paths_file`` lists (listed_roots; unmounted: all of them out).
    ``run(argv) -> (rc, stdout, stderr)`` runs ``systemctl daemon-reload`` when a unit changed and systemd runs.
    Result (report.new_report): roots (the proven paths handled), changed, errors (a mount
    or unmount that failed: {path, op, error}), warnings (refused roots, 1.0.0 persistence
    removed, foreign mounts left), paths (one dict per proven root: path, before, after,
    actions, how), refused ([{path, reason}]), missing ([path]: not there yet), files
    (persisted files written or removed), diff (before/after text). Raises NosuidError for
    a bad argument or a persistence directory another user can change.
    """
    dry_run = envelope.dry_run_arg(dry_run, check_mode, "nosuid.ensure", alias="check_mode")
    if state not in STATES:
        raise NosuidError("state must be one of %s, not %r" % (", ".join(STATES), state))
    if persist not in PERSIST:
        raise NosuidError("persist must be one of %s, not %r" % (", ".join(PERSIST), persist))
    if isinstance(paths, (str, bytes)):
        paths = [paths]
    paths = list(dict.fromkeys([os.fsdecode(p) for p in paths] + (listed_roots(paths_file) if listed else [])))
    if not (paths or hermes_homes or sandbox_dir or extra_roots or providers or listed):
        raise NosuidError("no roots: give path, or hermes_home, sandbox_dir or roots (the sweep's scope)")
    python = python or default_python()
    result = envelope.new_report([], paths=[], refused=[], missing=[], files=[], diff={"before": "", "after": ""},
                                 persist=persist)
    if persist == "fstab":
        envelope.add_warning(result, FSTAB_DEPRECATED)
        persist = "systemd"
    extra = list(extra_roots) + paths
    if state == "mounted" and persist == "systemd":
        extra += [p for p in old_persistence(unit_dir, fstab) if p not in extra]
    with scope.derive(scope.Request(hermes_homes, sandbox_dir, extra, providers=providers)) as found:
        handled, candidates = _each_root(found, state, dry_run, result)
    where = (unit_dir, fstab, program, paths_file, python)
    _finish(result, state, persist, handled, candidates, where, dry_run, run, systemd_running)
    return result


def _each_root(found, state, dry_run, result):
    """Every root of the scope brought to ``state`` from its held descriptor; (handled,
    candidates): the paths done, and every path the persistence may name."""
    for item in found.refused:
        _refuse(result, item["path"], item["reason"])
    handled, candidates = [], [item["path"] for item in found.refused]
    for root in found.roots:
        candidates += [root.path, root.realpath]
        entry = _one_root(root, state, dry_run, result)
        if entry is None:
            continue
        result["roots"].append(entry["path"])
        result["paths"].append(entry)
        candidates.append(entry["path"])
        if "error" not in entry:
            handled.append(entry["path"])
        result["changed"] = result["changed"] or bool(entry["actions"])
        result["diff"]["before"] += entry["before"] + "\n"
        result["diff"]["after"] += entry["after"] + "\n"
    return handled, candidates


def _finish(result, state, persist, handled, candidates, where, dry_run, run, systemd_running):
    """The persistence of what was handled (``where``: unit_dir, fstab, program, paths_file,
    python), the daemon-reload, the counts."""
    unit_dir, fstab, program, paths_file, python = where
    files = _plan_persistence(result, state, persist, handled if state == "mounted" else [], candidates, unit_dir,
                              fstab, program, paths_file, python)
    reload_needed = False
    for path, before, after, apply in files.changes:
        result["files"].append(path)
        result["changed"] = True
        result["diff"]["before"] += "--- %s\n%s" % (path, _ensure_nl(before))
        result["diff"]["after"] += "--- %s\n%s" % (path, _ensure_nl(after))
        if not dry_run:
            try:
                apply()
            except OSError as exc:
                raise NosuidError("cannot write %s: %s" % (escape(path), envelope.error_text(exc))) from None
        reload_needed = reload_needed or path.endswith((".mount", ".service"))
    if systemd_running is None:
        systemd_running = os.path.isdir("/run/systemd/system")
    if reload_needed and systemd_running and not dry_run and run is not None:
        rc, out, err = run(["systemctl", "daemon-reload"])
        if rc != 0:
            envelope.add_warning(result, "systemctl daemon-reload failed (rc %s): %s; the unit takes effect at the "
                                 "next boot" % (rc, escape((err or out).strip())))
    result["complete"] = not result["errors"]
    result["counts"].update(roots=len(result["paths"]), refused=len(result["refused"]),
                            missing=len(result["missing"]), errors=result["counts"].get("errors", 0))


def _ensure_nl(text):
    if not text:
        return "(absent)\n"
    return text if text.endswith("\n") else text + "\n"
