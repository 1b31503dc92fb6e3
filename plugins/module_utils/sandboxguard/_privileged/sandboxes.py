# GENERATED from python/src/sandboxguard/_privileged/sandboxes.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Which directories a Docker sandbox sweep may touch: pure functions over inspect data.

Hermes keeps persistent sandboxes at ``<sandbox>/docker/<task>/{home,workspace}``, where
``<sandbox>`` is ``TERMINAL_SANDBOX_DIR`` or ``{HERMES_HOME}/sandboxes``, and each profile
under ``{HERMES_HOME}/profiles/<name>/`` has its own ``sandboxes/docker``. The host derives
those ``<sandbox>/docker`` roots from its own configuration; a bind mount is in scope only
when the realpath of its Source lies below one of them. Nothing a container controls
(labels such as ``hermes-profile``, image LABELs, extra arguments, the mount's
Destination) can add a root.

The roots themselves come from scope.derive. The decisions here take plain data and a
``realpath`` callable (``os.path.realpath`` in production, a table in tests) and return
plain data; path_kind, list_task_dirs and the profile listing touch the system.
"""
import os
import posixpath
import re
import stat

from .._core.pathnames import is_within
from .._core.text import escape
from ..roots import refusal_reason

DOCKER_SUBDIR = "docker"
# Hermes Agent's own profile id (hermes_cli/profiles.py, PROFILE_ID_RE): what `hermes profile
# create` accepts and `hermes profile list` lists; "default" names the Hermes home itself.
PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
HERMES_LABEL = "hermes-agent"

REASON_IN_SCOPE = "bind mount below the host-derived sandbox root %s"
REASON_NOT_BIND = "not a bind mount (type %s): the engine owns it"
REASON_MISSING = "source %s does not exist: skipped, never recreated"
REASON_NOT_DIR = "source %s is not a directory: skipped"
REASON_OUTSIDE = "source resolves to %s, outside every host-derived sandbox root"
REASON_SYSTEM = "source resolves to the system path %s: never swept"
REASON_IS_ROOT = "source is the sandbox root %s itself, not a task directory below it"
REASON_WHOLE_ROOT = "bind mount of the runner root %s itself (swept whole, its owner known)"


def mount_scope(mount, roots, realpath, kind_of):
    """Decide one mount from ``docker inspect`` (its ``Mounts[]`` entry).

    ``roots``: scope.derive()'s usable roots. ``realpath(path)`` and ``kind_of(path)``
    (``"dir"``, ``"missing"`` or ``"other"``) are injected. Returns a dict: source,
    realpath, destination, type, rw, in_scope, reason, root (the matching root's
    realpath or None).
    """
    kind = mount.get("Type", "")
    source = mount.get("Source", "")
    result = {"source": source, "realpath": None, "destination": mount.get("Destination", ""),
              "type": kind, "rw": bool(mount.get("RW", True)), "in_scope": False, "reason": "", "root": None}
    if kind != "bind":
        result["reason"] = REASON_NOT_BIND % (kind or "unknown")
        return result
    if not source or not posixpath.isabs(source):
        result["reason"] = "bind source %r is not an absolute path" % source
        return result
    what = kind_of(source)
    if what == "missing":
        result["reason"] = REASON_MISSING % escape(source)
        return result
    if what != "dir":
        result["reason"] = REASON_NOT_DIR % escape(source)
        return result
    real = realpath(source)
    result["realpath"] = real
    system = refusal_reason(real)
    if system:
        result["reason"] = REASON_SYSTEM % escape(real)
        return result
    for root in roots:
        if real == root["realpath"] and root.get("owner"):
            # a root whose provider names its owner (a CI runner's work folder, bound whole
            # into the job as /__w) is swept whole, its files given back to that owner
            result.update(in_scope=True, root=root["realpath"], reason=REASON_WHOLE_ROOT % escape(root["realpath"]))
            return result
        if real == root["realpath"]:
            result["reason"] = REASON_IS_ROOT % escape(root["realpath"])
            return result
        if is_within(real, root["realpath"], strict=True):
            result.update(in_scope=True, root=root["realpath"], reason=REASON_IN_SCOPE % escape(root["realpath"]))
            return result
    result["reason"] = REASON_OUTSIDE % escape(real)
    return result


def container_summary(inspect):
    """The few fields of a ``docker inspect`` container document the report shows."""
    config = inspect.get("Config") or {}
    state = inspect.get("State") or {}
    labels = config.get("Labels") or {}
    return {
        "id": inspect.get("Id", "")[:12],
        "name": (inspect.get("Name") or "").lstrip("/"),
        "image": config.get("Image", ""),
        "status": state.get("Status", ""),
        "hermes": labels.get(HERMES_LABEL) == "1",
        "task_id": labels.get("hermes-task-id"),
        "profile": labels.get("hermes-profile"),
    }


def scope_containers(inspects, roots, realpath, kind_of, task_dirs=()):
    """Scope decisions for every mount of every container, and the sweep targets.

    Returns (containers, targets): containers is a list of container_summary() dicts
    each with ``mounts`` (mount_scope() dicts); targets is a list of dicts realpath,
    root, containers (ids), one per distinct in-scope directory, sorted by realpath.
    A directory nested below another target is folded into it (one walk covers both).
    ``task_dirs``: (realpath, root) pairs of ``<root>/<task>/{home,workspace}`` directories
    found on the host; those no container mounts (a --rm container already gone) are
    targets too, with no containers.
    """
    containers, by_path = [], {}
    for inspect in inspects:
        summary = container_summary(inspect)
        summary["mounts"] = [mount_scope(m, roots, realpath, kind_of) for m in inspect.get("Mounts") or ()]
        containers.append(summary)
        for mount in summary["mounts"]:
            if mount["in_scope"]:
                target = by_path.setdefault(mount["realpath"], {"realpath": mount["realpath"], "root": mount["root"],
                                                                "containers": []})
                if summary["id"] not in target["containers"]:
                    target["containers"].append(summary["id"])
    for path, root in task_dirs:
        by_path.setdefault(path, {"realpath": path, "root": root, "containers": []})
    targets = []
    for path in sorted(by_path):
        parent = next((t for t in targets if is_within(path, t["realpath"], strict=True)), None)
        if parent is not None:
            for cid in by_path[path]["containers"]:
                if cid not in parent["containers"]:
                    parent["containers"].append(cid)
            continue
        targets.append(by_path[path])
    return containers, targets


def engine_facts(info):
    """What ``docker info`` says about ownership of what containers write.

    Returns a dict: os, rootless, userns_remap, remap_root (uid, gid) or None,
    sweepable (bool) and reason.
    """
    options = info.get("SecurityOptions") or []
    names = set()
    for option in options:
        for part in str(option).split(","):
            if part.startswith("name="):
                names.add(part[len("name="):])
    ostype = info.get("OSType") or "linux"
    rootless = "rootless" in names
    remap = "userns" in names
    remap_root = None
    if remap:
        # With userns-remap the engine's root dir gets a "<uid>.<gid>" suffix naming the
        # host ids container root maps to (dockerd(8), --userns-remap).
        tail = posixpath.basename((info.get("DockerRootDir") or "").rstrip("/"))
        uid, gid = tail.partition(".")[::2]
        if uid.isdigit() and gid.isdigit():
            remap_root = (int(uid), int(gid))
    facts = {"os": ostype, "rootless": rootless, "userns_remap": remap, "remap_root": remap_root,
             "sweepable": True, "reason": ""}
    if ostype != "linux":
        facts.update(sweepable=False, reason="engine OSType is %s: bind mounts are not host files here" % ostype)
    elif rootless:
        facts["reason"] = ("rootless engine: container root is the engine's own user, so files arrive owned by "
                           "that user, not root; the sweep still strips setid bits and capabilities but returns "
                           "no ownership")
    elif remap:
        facts["reason"] = ("userns-remap: container root is host uid %s; ownership return takes files from that "
                           "uid instead of 0" % (remap_root[0] if remap_root else "unknown"))
    return facts


def chown_from_uids(facts):
    """The host uids whose files ownership return gives back, given engine facts."""
    if facts["rootless"]:
        return ()
    if facts["userns_remap"]:
        return (facts["remap_root"][0],) if facts["remap_root"] else ()
    return (0,)


TASK_SUBDIRS = ("home", "workspace")


def path_kind(path):
    """"dir", "missing" or "other" for a path, following symlinks (touches the system)."""
    if os.path.isdir(path):
        return "dir"
    return "other" if os.path.lexists(path) else "missing"


def list_task_dirs(roots):
    """(realpath, root) of every ``<root>/<task>/{home,workspace}`` that is a real directory
    (not a symlink) below a usable root (touches the system: lists the roots by path; the
    scope lists them through its held descriptors instead, task_dirs_at)."""
    found = []
    for root in roots:
        try:
            tasks = sorted(e.name for e in os.scandir(root["realpath"]) if e.is_dir(follow_symlinks=False))
        except OSError:
            continue
        for task in tasks:
            for sub in TASK_SUBDIRS:
                path = posixpath.join(root["realpath"], task, sub)
                if os.path.isdir(path) and not os.path.islink(path) and os.path.realpath(path) == path:
                    found.append((path, root["realpath"]))
    return found


def task_dirs_at(root_fd, root_path):
    """The paths of every ``<task>/{home,workspace}`` below the held root directory that is a
    directory by an lstat through the descriptors (a symlink never counts), sorted. Touches
    the system (lists the held directory), changes nothing; [] when it cannot be listed."""
    from .._core import safefs  # noqa: PLC0415 - the pure functions here need no file system

    found = []
    try:
        tasks = sorted(name for name in os.listdir(root_fd) if _is_dir_at(root_fd, name))
    except OSError:
        return found
    for task in tasks:
        try:
            fd = safefs.open_dir_at(root_fd, task)
        except (OSError, ValueError):
            continue
        try:
            for sub in TASK_SUBDIRS:
                if _is_dir_at(fd, sub):
                    found.append(posixpath.join(root_path, task, sub))
        finally:
            os.close(fd)
    return found


def _is_dir_at(dir_fd, name):
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def is_profile_name(name):
    """The one rule for which names under ``profiles/`` are profiles, Hermes Agent's own: a
    profile id (lower-case letters, digits, ``_`` and ``-``, starting with a letter or digit,
    at most 64 characters; so never a name starting with a dot, such as Hermes' ``.deleted``
    tombstones), and not ``default``. Pure."""
    return isinstance(name, str) and name != "default" and PROFILE_NAME.match(name) is not None


def list_profile_names(hermes_home):
    """Profile directory names under HERMES_HOME/profiles (touches the system; [] if none).

    The Hermes home is opened component by component (safefs.open_dir: no symlink followed
    below a directory another user can change), ``profiles`` under it with O_NOFOLLOW, and
    its entries are listed by profile_names_at. Scope (scope.profile_names) walks the home
    with no symlink followed at all; both list by the same rule.
    """
    from .._core import safefs  # noqa: PLC0415 - the pure functions here need no file system

    try:
        with safefs.open_dir(hermes_home) as home:
            fd = safefs.open_dir_at(home.fd, "profiles")
            try:
                return profile_names_at(fd)
            finally:
                os.close(fd)
    except (OSError, ValueError):  # missing, refused (a symlink on the way), unreadable
        return []


def profile_names_at(profiles_fd):
    """The profile names in the held ``profiles`` directory, sorted: the entries that
    is_profile_name accepts and that are directories by an lstat through the descriptor (a
    symlink never counts, though Hermes would follow one). Names are str (os.fsdecode).
    Raises OSError when the directory cannot be listed."""
    from .._core import safefs  # noqa: PLC0415

    names = []
    for name in os.listdir(profiles_fd):
        if not is_profile_name(name):
            continue
        st = safefs.lstat_at(profiles_fd, name)
        if st is not None and stat.S_ISDIR(st.st_mode):
            names.append(name)
    return sorted(names)
