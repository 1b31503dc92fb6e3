# GENERATED from python/src/sandboxguard/_prevent/prevent.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection (the ``sandbox_prevent`` module).

Switch the prevention on (or off) in one place: the profile installed, the place's config edited.

One call, one place (``hermes``, ``docker_daemon``, ``podman``), ``state`` present or absent,
with a dry run (check mode) and a diff. The profile is made from the running engine's own
default every time and written only when its bytes differ: a new engine version (a changed base
checksum) gives a new profile, the same engine the same bytes (idempotent). The profile
directory is root's (a trusted directory, made 0755 when missing); the Hermes config is the
agent's and is read and written only through the held home (hermes_config.read_at/write_at);
daemon.json and containers.conf are root's and are written through their held directory.
"""
import os
import time

from .. import hermes_config, yamlconf
from .. import report as envelope
from .._core import atomicfile, safefs
from .._core.text import escape
from . import bases, hermes, places, profile, seccomp

PLACES = ("hermes", "docker_daemon", "podman", "profiles")
STATES = ("present", "absent")
DEFAULT_PROFILE_DIR = "/etc/sandboxguard/seccomp"
DEFAULT_DAEMON_JSON = "/etc/docker/daemon.json"
DEFAULT_CONTAINERS_CONF = "/etc/containers/containers.conf"
PROFILE_MODE = 0o644  # the docker CLI reads it as the user who runs it (Hermes' agent user)
CONFIG_MODE = 0o644
READ_LIMIT = 4 << 20


def profile_path(profile_dir, engine, devices=False):
    """Where the profile for ``engine`` lives: one per engine (and one with the device rules,
    for a Docker daemon-wide default)."""
    return os.path.join(profile_dir, "%s%s.json" % (engine, "-devices" if devices else ""))


def _held_root_dir(path, create):
    """A root-owned directory held open (safefs), made 0755 when missing and ``create``;
    InputError when it is one another user can change."""
    try:
        held = safefs.open_dir(path, create=create, mode=0o755)
    except safefs.PathRefused as exc:
        raise seccomp.SeccompError(exc.with_fix("give a directory only root can change")) from None
    if not held.trusted:
        held.close()
        raise seccomp.SeccompError("%s: another user can change it (or a directory above it): give a directory only "
                                   "root can change" % escape(path))
    return held


def _read(held, name, path):
    data, st = safefs.read_at(held.fd, name, limit=READ_LIMIT, single_link=True, path_for_errors=path)
    return (None, None) if data is None else (data.decode("utf-8", "surrogateescape"), st)


def _diff(path, before, after):
    return {"before": before or "", "after": after or "", "before_header": path, "after_header": path}


def write_root_file(path, text, dry_run, state="present", mode=CONFIG_MODE):
    """Make ``path`` (a file in a root-owned directory) hold ``text``, or remove it with
    ``absent``. Returns {path, changed, diff}. The directory is made only to write into it."""
    parent_path, name = os.path.split(path)
    make = not dry_run and state == "present"
    held = _held_root_dir(parent_path, create=True) if make else _dry_held(parent_path)
    if held is None:  # a dry run, or a removal, where the directory does not exist
        changed = state == "present"
        return {"path": path, "changed": changed, "diff": _diff(path, "", text) if changed else None}
    with held:
        before, st = _read(held, name, path)
        if state == "absent":
            if before is None:
                return {"path": path, "changed": False, "diff": None}
            if not dry_run:
                safefs.unlink_at(held.fd, name, path_for_errors=path)
            return {"path": path, "changed": True, "diff": _diff(path, before, "")}
        if before == text:
            return {"path": path, "changed": False, "diff": None}
        if not dry_run:
            keep = safefs.plain_mode(st.st_mode) if st is not None else mode
            atomicfile.write_at(held.fd, name, text, mode=keep, owner=(0, 0) if os.geteuid() == 0 else None)
        return {"path": path, "changed": True, "diff": _diff(path, before, text)}


def _dry_held(path):
    """The directory ``path`` held when it exists, else None (a dry run makes nothing)."""
    try:
        return _held_root_dir(path, create=False)
    except FileNotFoundError:
        return None


BASE_NAME = "%s-base.json"  # the engine's default as last read, beside the profiles


def engine_base(engine, profile_dir, image, base, docker_host, dry_run):
    """(base, source) of the running engine's default, kept beside the profiles; when Docker's
    daemon-wide default is our own profile (its builtin is hidden then) the kept one, as long
    as the engine's version is the one it was read from."""
    path = os.path.join(profile_dir, BASE_NAME % engine)
    try:
        found, source, _kind = profile.engine_base(engine, base, image, docker_host)
    except bases.BaseHidden as exc:
        held = _dry_held(profile_dir)
        kept = None
        if held is not None:
            with held:
                text = _read(held, BASE_NAME % engine, path)[0]
            kept = seccomp.load_profile(text, path) if text else None
        meta = (kept or {}).get(seccomp.META_KEY) or {}
        if not kept or meta.get("engine_version") != exc.version or not isinstance(kept.get("base"), dict):
            raise seccomp.SeccompError("%s (no base of Docker %s kept in %s: take the prevention out of daemon.json "
                                       "first, state absent, then present)" % (exc, exc.version, escape(path))) \
                from None
        return kept["base"], {k: meta.get(k) for k in ("engine", "engine_version", "origin")}
    if base is None:
        keep = {seccomp.META_KEY: dict(source, kind="the engine's default profile as last read"), "base": found}
        write_root_file(path, seccomp.profile_text(keep), dry_run, mode=PROFILE_MODE)
    return found, source


def install_profile(engine, profile_dir, image=None, base=None, docker_host=None, devices=False, dry_run=False):
    """Make the profile from the running ``engine``'s own default (or ``base``) and install it
    at profile_path(); returns {path, changed, diff, base (where it came from), sha256}."""
    found, source = engine_base(engine, profile_dir, image, base, docker_host, dry_run)
    made = seccomp.build_profile(found, source, devices=devices)
    path = profile_path(profile_dir, engine, devices)
    written = write_root_file(path, seccomp.profile_text(made), dry_run, mode=PROFILE_MODE)
    meta = made[seccomp.META_KEY]["base"]
    return dict(written, base={k: meta[k] for k in ("engine", "engine_version", "origin")}, sha256=meta["sha256"])


def edit_hermes(hermes_home, profile_file, state, dry_run, no_new_privileges=True):
    """Edit ``terminal.docker_extra_args`` of ``<hermes_home>/config.yaml``; returns {path,
    changed, diff, args, warnings}. The config must exist (Hermes makes it)."""
    path = os.path.join(hermes_home, hermes.CONFIG_NAME)
    try:
        held = safefs.open_dir(hermes_home)
    except safefs.PathRefused as exc:
        raise hermes_config.ConfigError(exc.with_fix("give the real Hermes home")) from None
    except FileNotFoundError:
        raise hermes_config.ConfigError("%s does not exist: give an existing Hermes home" % escape(hermes_home)) \
            from None
    with held:
        text, st = hermes_config.read_at(held.fd, hermes.CONFIG_NAME, path)
        if text is None:
            if state == "absent":
                return {"path": path, "changed": False, "diff": None, "args": [], "warnings": []}
            raise hermes_config.ConfigError("%s does not exist: run Hermes once (it writes its config), or create it"
                                            % escape(path))
        try:
            current = yamlconf.read_list(text, hermes.EXTRA_ARGS) or []
            backend = yamlconf.read_path(text, hermes.BACKEND)
            snap = (yamlconf.read_path(text, ("terminal", "docker_snap_compat")) or "").lower() in ("true", "yes")
        except yamlconf.YamlEditError as exc:
            raise yamlconf.YamlEditError("%s: %s" % (escape(path), exc)) from None
        new, warnings = places.hermes_args(current, profile_file, state, no_new_privileges and not snap)
        if snap and no_new_privileges and state == "present":
            warnings.append("%s: terminal.docker_snap_compat is on: no-new-privileges is left out (snap's Docker "
                            "refuses every exec with it)" % escape(path))
        if state == "present" and (backend or "local") != "docker":
            warnings.append("%s: terminal.backend is %s: docker_extra_args act only when it is docker"
                            % (escape(path), backend or "unset (local)"))
        if new == current:
            return {"path": path, "changed": False, "diff": None, "args": new, "warnings": warnings}
        after = yamlconf.set_list(text, hermes.EXTRA_ARGS, new)
        if not dry_run:
            hermes_config.write_at(held.fd, hermes.CONFIG_NAME, after, st)
    return {"path": path, "changed": True, "diff": _diff(path, text, after), "args": new, "warnings": warnings}


def edit_root_config(path, edit, profile_file, state, dry_run):
    """Edit a root-owned engine config (daemon.json, containers.conf) with ``edit`` (places);
    returns {path, changed, diff, previous, warnings}."""
    parent_path, name = os.path.split(path)
    held = _dry_held(parent_path) if (dry_run or state == "absent") else _held_root_dir(parent_path, create=True)
    before = None
    if held is not None:
        with held:
            before = _read(held, name, path)[0]
    after, previous, warnings = edit(before, profile_file, state)
    if after == before or (state == "absent" and before is None):
        return {"path": path, "changed": False, "diff": None, "previous": previous, "warnings": warnings}
    written = write_root_file(path, after, dry_run)
    return dict(written, previous=previous, warnings=warnings)


def prevent(place, state="present", hermes_home=None, engine="auto", profile_dir=DEFAULT_PROFILE_DIR, image=None,
            base=None, docker_host=None, daemon_json=DEFAULT_DAEMON_JSON, containers_conf=DEFAULT_CONTAINERS_CONF,
            no_new_privileges=True, dry_run=False):
    """Switch the prevention on or off in ``place``; return the report envelope plus ``place``,
    ``state``, ``profile`` (install_profile's result, or None), ``config`` (the edited file's),
    ``restart`` (the engine must restart to apply it: a daemon.json change) and ``diff``."""
    started = time.monotonic()
    if place not in PLACES:
        raise seccomp.SeccompError("place %r: choose one of %s" % (place, ", ".join(PLACES)))
    if state not in STATES:
        raise seccomp.SeccompError("state %r: choose one of %s" % (state, ", ".join(STATES)))
    if place == "hermes" and not hermes_home:
        raise seccomp.SeccompError("place hermes needs the Hermes home (hermes_home)")
    if place == "profiles":
        return remove_profiles(profile_dir, state, dry_run, started)
    kind = {"docker_daemon": "docker", "podman": "podman"}.get(place) or _hermes_engine(engine, hermes_home)
    devices = place == "docker_daemon"
    target = profile_path(profile_dir, kind, devices)
    report = envelope.new_report([target], place=place, state=state, engine=kind, profile=None, config=None,
                                 restart=False, diff=[], dry_run=bool(dry_run))
    if state == "present":
        report["profile"] = install_profile(kind, profile_dir, image, base, docker_host, devices, dry_run)
    if place == "hermes":
        report["config"] = edit_hermes(hermes_home, target, state, dry_run, no_new_privileges)
    elif place == "docker_daemon":
        report["config"] = edit_root_config(daemon_json, places.daemon_json, target, state, dry_run)
        report["restart"] = report["config"]["changed"]
    else:
        report["config"] = edit_root_config(containers_conf, places.containers_conf, target, state, dry_run)
    for line in report["config"].get("warnings") or ():
        envelope.add_warning(report, line)
    for part in (report["profile"], report["config"]):
        if part and part["changed"]:
            report["changed"] = True
            report["diff"].append(part["diff"])
        if part:
            part.pop("diff", None)
    return envelope.finish(report, started)


def remove_profiles(profile_dir, state, dry_run, started):
    """Place ``profiles`` (absent only): remove every profile of ours in ``profile_dir`` (a
    file without our ``x-sandboxguard`` key is left alone), after the places no longer name them."""
    if state != "absent":
        raise seccomp.SeccompError("place profiles is for state absent (the other places install their profile)")
    report = envelope.new_report([profile_dir], place="profiles", state=state, engine=None, profile=None,
                                 config=None, restart=False, diff=[], dry_run=bool(dry_run), removed=[])
    held = _dry_held(profile_dir)
    if held is None:
        return envelope.finish(report, started)
    with held:
        names = [n for n in sorted(os.listdir(held.fd)) if n.endswith(".json")]
        for name in names:
            path = os.path.join(profile_dir, name)
            text = _read(held, name, path)[0]
            try:
                ours = seccomp.META_KEY in seccomp.load_profile(text or "", path)
            except seccomp.SeccompError:
                ours = False
            if not ours:
                continue
            if not dry_run:
                safefs.unlink_at(held.fd, name, path_for_errors=path)
            report["removed"].append(path)
            report["diff"].append(_diff(path, text, ""))
    report["changed"] = bool(report["removed"])
    return envelope.finish(report, started)


def _hermes_engine(engine, hermes_home):
    """The engine Hermes' docker backend drives from ``hermes_home`` (``auto``), or ``engine``."""
    if engine in ("docker", "podman"):
        return engine
    if engine != "auto":
        raise seccomp.SeccompError("engine %r: choose one of %s" % (engine, ", ".join(bases.ENGINE_CHOICES)))
    return hermes.backend_engine(hermes_home)["kind"] or "docker"
