# GENERATED from python/src/sandboxguard/home_mode.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""TERMINAL_HOME_MODE: which HOME an agent's terminal children get, and eval isolation.

Terminal children inherit the operator's HOME, crontab and user D-Bus, so one eval run
can leave cron jobs, scripts and user services behind for months (seed 002). The agent
already has the contract that fixes it:

============  =====================================================================
mode          children's HOME
============  =====================================================================
``auto``      the real HOME on a host; ``{HERMES_HOME}/home`` inside a container
``real``      always the real HOME
``profile``   always ``{HERMES_HOME}/home``
============  =====================================================================

``isolated``, ``profile_home`` and ``profile-home`` mean ``profile``; ``host``, ``user``,
``real_home`` and ``real-home`` mean ``real``. As in the agent, the profile home only
counts when the directory exists, and a parent whose HOME already is the profile home is
repaired back to the real home.

Pure functions take the environment as a plain mapping and the host facts (is this a
container, does a directory exist, the account's home from the password database) as
arguments, so every rule is testable without a container. The functions that touch the
process or the file system say so in their names: ``apply_*`` mutates the mapping it is
given, ``ensure_*`` creates directories, ``eval_isolation`` changes ``os.environ``.
"""
import contextlib
import os
import shlex
import stat
import tempfile

# One container detection for the whole library (container.py); re-exported here, where
# the home mode's ``auto`` rule uses it.
from .container import detect_container

DEFAULT_MODE = "auto"
MODES = ("auto", "real", "profile")
MODE_ALIASES = {
    "isolated": "profile",
    "profile_home": "profile",
    "profile-home": "profile",
    "host": "real",
    "user": "real",
    "real_home": "real",
    "real-home": "real",
}
MODE_ENV = "TERMINAL_HOME_MODE"
REAL_HOME_ENV = "HERMES_REAL_HOME"
HERMES_HOME_ENV = "HERMES_HOME"
# The value the agent itself exported for the temp vars; a temp var equal to it is ours to
# re-derive, any other value was set by the user or the OS and is kept.
SCRATCH_MARKER_ENV = "HERMES_SCRATCH_DIR"
TMP_ENV_VARS = ("TMPDIR", "TMP", "TEMP")
# Without these, `systemctl --user` cannot find the operator's user manager.
USER_BUS_ENV_VARS = ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")
CRONTAB_FILE_ENV = "EVAL_CRONTAB_FILE"
# The XDG base directories (XDG Base Directory Specification 0.8) and where they default to
# under a home. An inherited XDG_CONFIG_HOME=/home/op/.config would send a child that writes
# ~/.config/autostart/x.desktop or ~/.config/systemd/user/x.service to the real home even
# with HOME substituted, so wherever HOME becomes the profile home they move with it.
XDG_BASE_DIRS = (
    ("XDG_CONFIG_HOME", (".config",)),
    ("XDG_DATA_HOME", (".local", "share")),
    ("XDG_STATE_HOME", (".local", "state")),
    ("XDG_CACHE_HOME", (".cache",)),
)
XDG_BASE_ENV_VARS = tuple(key for key, _parts in XDG_BASE_DIRS)
# Hermes' scratch-dir permission policy (hermes_constants.get_scratch_dir and its tests,
# tests/test_scratch_dir.py): owner-only on a host, an explicit HERMES_HOME_MODE wins, and a
# managed install (HERMES_MANAGED, or a .managed marker in the Hermes home) or a container
# keeps the operator's mode.
HOME_MODE_ENV = "HERMES_HOME_MODE"
MANAGED_ENV = "HERMES_MANAGED"
MANAGED_MARKER = ".managed"

PROFILE_HOME_DIR = "home"
SCRATCH_SUBDIR = ("cache", "scratch")
SHIM_BIN_SUBDIR = ("cache", "eval-bin")
CRONTAB_TABLE_NAME = "crontab"
PRIVATE_DIR_MODE = 0o700


class HomeModeError(ValueError):
    """A value that is not a home mode; the message names the accepted values."""


def accepted_modes_text():
    """The accepted values, for error messages and docs."""
    aliases = ", ".join("%s (%s)" % (alias, mode) for alias, mode in sorted(MODE_ALIASES.items()))
    return "%s; aliases: %s" % (", ".join(MODES), aliases)


def normalize_mode(value):
    """Return ``auto``, ``real`` or ``profile`` for *value*.

    ``None`` and blank strings are ``auto``; case and surrounding blanks are ignored;
    aliases map to their mode. Anything else raises :class:`HomeModeError`.
    """
    text = "" if value is None else str(value).strip().lower()
    if not text:
        return DEFAULT_MODE
    text = MODE_ALIASES.get(text, text)
    if text not in MODES:
        raise HomeModeError(
            "%s=%r is not a home mode: use one of %s" % (MODE_ENV, str(value), accepted_modes_text())
        )
    return text


def _env_value(env, key):
    return str(env.get(key) or "").strip()


def norm_path(path):
    """A comparable absolute form of *path* (``~`` expanded, no trailing slash); ``""`` for blank."""
    raw = (path or "").strip()
    if not raw:
        return ""
    return os.path.normpath(os.path.abspath(os.path.expanduser(raw)))


def profile_home_path(hermes_home):
    """``{HERMES_HOME}/home`` for *hermes_home* (whether or not it exists); None for blank."""
    home = norm_path(hermes_home)
    return os.path.join(home, PROFILE_HOME_DIR) if home else None


def scratch_dir_path(hermes_home):
    """``{HERMES_HOME}/cache/scratch``: the temp directory children get."""
    return os.path.join(norm_path(hermes_home), *SCRATCH_SUBDIR)


def existing_profile_home(env, isdir=os.path.isdir):
    """The profile home of ``env["HERMES_HOME"]`` when that directory exists, else None."""
    candidate = profile_home_path(_env_value(env, HERMES_HOME_ENV))
    return candidate if candidate and isdir(candidate) else None


def account_home(uid=None):
    """The home directory of *uid* (default: this process) in the password database, or None."""
    try:
        import pwd  # noqa: PLC0415 - POSIX only; the rest of the module is portable

        return pwd.getpwuid(os.getuid() if uid is None else uid).pw_dir or None
    except (ImportError, KeyError):
        return None


def real_home(env, account=None, isdir=os.path.isdir):
    """The OS user's real home for *env*, never the profile home.

    Candidates in trust order: ``HERMES_REAL_HOME``, ``HOME``, then *account* (the
    password database's home). The first that is not the profile home wins; None when
    there is none (the agent falls back to the temp dir; we never point HOME there).
    """
    profile = existing_profile_home(env, isdir)
    profile_key = norm_path(profile)
    for candidate in (_env_value(env, REAL_HOME_ENV), _env_value(env, "HOME"), (account or "").strip()):
        key = norm_path(candidate)
        if key and key != profile_key:
            return candidate
    return None


def resolve_subprocess_home(env, in_container=False, account=None, isdir=os.path.isdir):
    """The HOME a terminal child should get, or None to leave the parent's HOME alone.

    Precedence, as in the agent:
    1. ``profile``: the profile home (None when ``{HERMES_HOME}/home`` does not exist);
    2. ``real``: the real home, or None when HOME already is it;
    3. ``auto``: the profile home inside a container; on a host, the real home when the
       parent's HOME is empty or is the profile home (repair), else None.
    Raises :class:`HomeModeError` for an unknown ``TERMINAL_HOME_MODE``.
    """
    mode = normalize_mode(env.get(MODE_ENV))
    profile = existing_profile_home(env, isdir)
    if mode == "profile":
        return profile
    real = real_home(env, account, isdir)
    current = _env_value(env, "HOME")
    repaired = real if real and norm_path(real) != norm_path(current) else None
    if mode == "real":
        return repaired
    if profile and in_container:
        return profile
    if not current or (profile and norm_path(current) == norm_path(profile)):
        return repaired
    return None


def apply_scratch_tmp_env(env, scratch):
    """Point TMPDIR, TMP and TEMP in *env* at *scratch* unless the user or OS set one.

    A temp var whose value equals ``HERMES_SCRATCH_DIR`` was exported by the agent and is
    re-derived; any other non-blank value wins and nothing changes. Returns True when
    the vars were written.
    """
    ours = _env_value(env, SCRATCH_MARKER_ENV)
    for key in TMP_ENV_VARS:
        value = _env_value(env, key)
        if value and value != ours:
            return False
    for key in TMP_ENV_VARS:
        env[key] = scratch
    env[SCRATCH_MARKER_ENV] = scratch
    return True


def xdg_base_dirs(home):
    """``{XDG_CONFIG_HOME: home/.config, XDG_DATA_HOME: home/.local/share, ...}`` for *home*."""
    return {key: os.path.join(home, *parts) for key, parts in XDG_BASE_DIRS}


def set_dir_mode(path, mode=PRIVATE_DIR_MODE):
    """Give the directory *path* exactly *mode*; True when it changed. Touches the disk.

    The directory is opened with O_NOFOLLOW and changed through that descriptor, so a
    symlink planted at *path* is refused (:class:`HomeModeError`) rather than followed.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if os.path.islink(path):
            raise HomeModeError("%s is a symlink: it must be a real directory; remove the link" % path) from None
        raise HomeModeError("%s: %s" % (path, exc.strerror or exc)) from None
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) == mode:
            return False
        os.fchmod(fd, mode)
        return True
    except OSError as exc:
        raise HomeModeError("cannot set mode %04o on %s: %s" % (mode, path, exc.strerror or exc)) from None
    finally:
        os.close(fd)


def ensure_private_dir(path, tighten=False):
    """Create *path* (and parents) with mode 0700 when missing; return it. Touches the disk.

    With *tighten*, an existing directory is made 0700 as well (a scratch dir left at 0750
    by an older run or a umask of 027 lets the group read every temp file of the agent).
    """
    os.makedirs(path, mode=PRIVATE_DIR_MODE, exist_ok=True)
    if tighten:
        set_dir_mode(path, PRIVATE_DIR_MODE)
    return path


def scratch_dir_mode(env, hermes_home, in_container=False, lexists=os.path.lexists):
    """The mode Hermes gives an existing scratch dir, or None to keep the operator's.

    As ``hermes_constants.get_scratch_dir``: an explicit ``HERMES_HOME_MODE`` (octal) wins;
    a managed install (``HERMES_MANAGED`` set, or a ``.managed`` marker in *hermes_home*,
    even an empty or unreadable one) or a container keeps what is there; on a host 0700.
    """
    explicit = _env_value(env, HOME_MODE_ENV)
    if explicit:
        try:
            mode = int(explicit, 8)
        except ValueError:
            raise HomeModeError("%s=%r is not an octal mode such as 0700" % (HOME_MODE_ENV, explicit)) from None
        if not 0 <= mode <= 0o7777:
            raise HomeModeError("%s=%r is not an octal mode such as 0700" % (HOME_MODE_ENV, explicit))
        return mode
    if _env_value(env, MANAGED_ENV) or lexists(os.path.join(norm_path(hermes_home), MANAGED_MARKER)):
        return None
    return None if in_container else PRIVATE_DIR_MODE


def apply_subprocess_home_env(env, in_container=None, account=None, isdir=os.path.isdir, create_scratch=True):
    """Apply the agent's subprocess HOME contract to *env* in place; return *env*.

    Records the real home in ``HERMES_REAL_HOME``, sets HOME per the mode (see
    :func:`resolve_subprocess_home`), and points TMPDIR/TMP/TEMP at
    ``{HERMES_HOME}/cache/scratch`` unless the user or the OS already set them.
    When HOME becomes the profile home, the XDG base directories (``XDG_CONFIG_HOME``,
    ``XDG_DATA_HOME``, ``XDG_STATE_HOME``, ``XDG_CACHE_HOME``) move into it too (Hermes
    leaves them as inherited; an inherited one pointing into the real home is a leak).
    *in_container* None means "detect"; *account* None means "look up this uid".
    With *create_scratch* the scratch directory is created (0700): a TMPDIR that does
    not exist makes ``mktemp`` fail and Python's tempfile silently fall back to /tmp. An
    existing one gets the mode of :func:`scratch_dir_mode` (0700 on a host).
    """
    if in_container is None:
        in_container = detect_container()
    if account is None:
        account = account_home()
    real = real_home(env, account, isdir)
    if real:
        env[REAL_HOME_ENV] = real
    home = resolve_subprocess_home(env, in_container, account, isdir)
    if home:
        env["HOME"] = home
    profile = existing_profile_home(env, isdir)
    if profile and norm_path(env.get("HOME")) == norm_path(profile):
        env.update(xdg_base_dirs(profile))
    hermes_home = _env_value(env, HERMES_HOME_ENV)
    if hermes_home:
        scratch = scratch_dir_path(hermes_home)
        if apply_scratch_tmp_env(env, scratch) and create_scratch:
            ensure_private_dir(scratch)
            mode = scratch_dir_mode(env, hermes_home, in_container)
            if mode is not None:
                set_dir_mode(scratch, mode)
    return env


def protected_homes(env, process_home=None, account=None, in_container=False, isdir=os.path.isdir):
    """The homes a write guard must protect: a sorted list of normalised paths.

    The union of the process's own home, the real home, the subprocess home and the
    profile home. Leaving one out is the seed's perverse case: HOME pinned to the
    profile, and an absolute-path write into the real home goes unguarded.
    """
    homes = {
        norm_path(process_home if process_home is not None else _env_value(env, "HOME")),
        norm_path(real_home(env, account, isdir)),
        norm_path(resolve_subprocess_home(env, in_container, account, isdir)),
        norm_path(profile_home_path(_env_value(env, HERMES_HOME_ENV))),
        norm_path(account),
    }
    homes.discard("")
    return sorted(homes)


def is_in_protected_home(path, homes):
    """True when *path* (normalised, not resolved) is one of *homes* or lies under one."""
    target = norm_path(path)
    for home in homes:
        if target == home or target.startswith(home.rstrip(os.sep) + os.sep):
            return True
    return False


# --- eval isolation -------------------------------------------------------------------

def isolation_layout(hermes_home):
    """Paths an eval run under *hermes_home* uses, as a dict of plain strings."""
    base = norm_path(hermes_home)
    return {
        "hermes_home": base,
        "home": os.path.join(base, PROFILE_HOME_DIR),
        "scratch": os.path.join(base, *SCRATCH_SUBDIR),
        "bin": os.path.join(base, *SHIM_BIN_SUBDIR),
        "crontab_file": os.path.join(base, CRONTAB_TABLE_NAME),
    }


def isolated_env(env, hermes_home, shim_bin=None, crontab_file=None, real=None):
    """Return a new environment dict for an eval run under *hermes_home*; *env* is not changed.

    HOME is the profile home, ``TERMINAL_HOME_MODE=profile``, *shim_bin* (the directory
    holding the crontab shim) first on PATH, ``DBUS_SESSION_BUS_ADDRESS`` and
    ``XDG_RUNTIME_DIR`` dropped, TMPDIR/TMP/TEMP at the scratch dir (always: an eval run
    must not write to the system temp dir), ``XDG_CONFIG_HOME``, ``XDG_DATA_HOME``,
    ``XDG_STATE_HOME`` and ``XDG_CACHE_HOME`` under the profile home (an inherited one would
    send ``~/.config/autostart`` and ``~/.config/systemd/user`` writes to the real home),
    and ``EVAL_CRONTAB_FILE`` naming the table.
    """
    layout = isolation_layout(hermes_home)
    out = dict(env)
    if real is None:
        # HOME may already be this run's profile home (nested isolation): skip it
        real = real_home(dict(env, **{HERMES_HOME_ENV: layout["hermes_home"]}), account_home())
    if real:
        out[REAL_HOME_ENV] = real
    out[HERMES_HOME_ENV] = layout["hermes_home"]
    out["HOME"] = layout["home"]
    out[MODE_ENV] = "profile"
    bin_dir = shim_bin or layout["bin"]
    path = env.get("PATH") or os.defpath
    parts = [p for p in path.split(os.pathsep) if p and norm_path(p) != norm_path(bin_dir)]
    out["PATH"] = os.pathsep.join([bin_dir, *parts])
    for key in USER_BUS_ENV_VARS:
        out.pop(key, None)
    out.update(xdg_base_dirs(layout["home"]))
    for key in TMP_ENV_VARS:
        out[key] = layout["scratch"]
    out[SCRATCH_MARKER_ENV] = layout["scratch"]
    out[CRONTAB_FILE_ENV] = crontab_file or layout["crontab_file"]
    return out


def ensure_isolation_dirs(hermes_home):
    """Create the profile home, the scratch dir and the shim bin dir 0700; return the layout.

    Existing ones are made 0700 too, in a container as well: unlike an agent's own home,
    an eval run directory has no operator mode to keep (Hermes keeps it in containers).
    A symlink in their place is refused (:class:`HomeModeError`).
    """
    layout = isolation_layout(hermes_home)
    for key in ("home", "scratch", "bin"):
        ensure_private_dir(layout[key], tighten=True)
    return layout


@contextlib.contextmanager
def eval_isolation(hermes_home, shim_bin=None, crontab_file=None, environ=None):
    """Isolate this process and its children for an eval run; restore everything on exit.

    Before any agent code runs: HOME is the profile home (the process's own HOME too,
    because tools that expand ``~`` in-process would otherwise write to the real home),
    ``TERMINAL_HOME_MODE=profile``, the crontab shim first on PATH, no user bus, TMPDIR at
    scratch, the XDG base directories in the profile home, and Python's cached temp dir
    reset. Changes *environ* (default ``os.environ``): process-wide, so not for
    concurrent use from several threads. Yields the layout dict (see :func:`isolation_layout`).

    *shim_bin* None installs the crontab shim into ``{HERMES_HOME}/cache/eval-bin``.
    """
    from . import crontab as crontab_shim  # noqa: PLC0415 - only eval isolation needs it

    target = os.environ if environ is None else environ
    layout = ensure_isolation_dirs(hermes_home)
    if shim_bin is None:
        crontab_shim.install_shim(layout["bin"])
    new = isolated_env(target, hermes_home, shim_bin, crontab_file)
    saved = {key: target.get(key) for key in set(new) | set(target)}
    saved_tempdir = tempfile.tempdir
    try:
        for key in [k for k in target if k not in new]:
            del target[key]
        for key, value in new.items():
            if target.get(key) != value:
                target[key] = value
        tempfile.tempdir = None
        yield dict(layout, crontab_file=new[CRONTAB_FILE_ENV])
    finally:
        for key, value in saved.items():
            if value is None:
                target.pop(key, None)
            elif target.get(key) != value:
                target[key] = value
        tempfile.tempdir = saved_tempdir


# --- configuring a Hermes home ----------------------------------------------------------

CONFIG_NAME = "config.yaml"
ENV_NAME = ".env"
PROFILES_DIR = "profiles"
CONFIG_SECTION = "terminal"
CONFIG_KEY = "home_mode"
WHERE_CHOICES = ("config", "env", "both")
NEW_FILE_MODE = 0o600


def hermes_homes(hermes_home, include_profiles=True):
    """The default home and, with *include_profiles*, every directory under ``profiles/``
    (symlinks are not followed: a profile link could point anywhere)."""
    base = norm_path(hermes_home)
    homes = [base]
    profiles = os.path.join(base, PROFILES_DIR)
    if include_profiles and os.path.isdir(profiles) and not os.path.islink(profiles):
        for name in sorted(os.listdir(profiles)):
            path = os.path.join(profiles, name)
            if os.path.isdir(path) and not os.path.islink(path):
                homes.append(path)
    return homes


def _read_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write_like(path, text, owner_of):
    """Write *text* to *path* atomically, keeping the mode and owner of the old file, or
    0600 and the owner of *owner_of* for a new one (hermes_config.write_like)."""
    from .hermes_config import write_like  # noqa: PLC0415

    info = os.stat(owner_of)
    write_like(path, text, (info.st_uid, info.st_gid), NEW_FILE_MODE)


def _where(where):
    value = (where or "config").strip().lower()
    if value not in WHERE_CHOICES:
        raise HomeModeError("where=%r: use one of %s" % (where, ", ".join(WHERE_CHOICES)))
    return ("config", "env") if value == "both" else (value,)


def configure_terminal_home(hermes_home, mode, where="config", include_profiles=True, create_profile_home=True,
                            dry_run=False, check=None):
    """Set TERMINAL_HOME_MODE for a Hermes home and its profiles; return a report dict.

    ``terminal.home_mode`` in each ``config.yaml`` (the agent reads non-secret settings
    from config before ``.env``; comments and other keys are kept, see yamlconf), and
    with *where* ``env`` or ``both`` the ``TERMINAL_HOME_MODE=`` line of ``.env``.
    With *create_profile_home*, ``{home}/home`` is created 0700 (owned like the Hermes
    home) and group/other write is removed from an existing one. *dry_run* changes nothing
    and reports what would change. Raises HomeModeError for a bad mode or *where*, and
    yamlconf.YamlEditError for a config it refuses to edit.
    """
    from .report import dry_run_arg, new_report  # noqa: PLC0415
    from .yamlconf import read_env_line, read_nested, set_env_line, set_nested  # noqa: PLC0415

    check = dry_run_arg(dry_run, check, "configure_terminal_home")  # the name used below
    mode = normalize_mode(mode)
    targets = _where(where)
    base = norm_path(hermes_home)
    if not os.path.isdir(base):
        raise HomeModeError("hermes_home %s is not a directory: create the Hermes home first" % base)
    report = new_report([base], dry_run=check, mode=mode, where=list(targets), homes=[], diff=[])
    for home in hermes_homes(base, include_profiles):
        entry = {"hermes_home": home, "config_path": None, "previous": None, "config_changed": False,
                 "env_path": None, "env_previous": None, "env_changed": False,
                 "profile_home": os.path.join(home, PROFILE_HOME_DIR), "profile_home_changed": False}
        if "config" in targets:
            path = os.path.join(home, CONFIG_NAME)
            before = _read_text(path)
            entry["config_path"] = path
            entry["previous"] = read_nested(before or "", CONFIG_SECTION, CONFIG_KEY)
            after = set_nested(before or "", CONFIG_SECTION, CONFIG_KEY, mode)
            if after != (before or "") or before is None:
                entry["config_changed"] = True
                report["diff"].append({"before_header": path, "after_header": path,
                                       "before": before or "", "after": after})
                if not check:
                    _write_like(path, after, home)
        if "env" in targets:
            path = os.path.join(home, ENV_NAME)
            before = _read_text(path)
            entry["env_path"] = path
            entry["env_previous"] = read_env_line(before or "", MODE_ENV)
            after = set_env_line(before or "", MODE_ENV, mode)
            if after != (before or ""):
                entry["env_changed"] = True
                report["diff"].append({"before_header": path, "after_header": path,
                                       "before": before or "", "after": after})
                if not check:
                    _write_like(path, after, home)
        if create_profile_home:
            entry["profile_home_changed"] = _ensure_profile_home(entry["profile_home"], home, check)
        report["homes"].append(entry)
        report["changed"] = report["changed"] or any(
            entry[k] for k in ("config_changed", "env_changed", "profile_home_changed"))
    report["previous"] = report["homes"][0]["previous"] if report["homes"] else None
    report["config_path"] = report["homes"][0]["config_path"] if report["homes"] else None
    return report


def _ensure_profile_home(path, owner_of, check):
    """Create *path* 0700 owned like *owner_of*, or drop group/other write; True if changed."""
    if os.path.islink(path):
        raise HomeModeError("%s is a symlink: the profile home must be a real directory; remove the link" % path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if not check:
            os.mkdir(path, PRIVATE_DIR_MODE)
            os.chmod(path, PRIVATE_DIR_MODE)
            owner = os.stat(owner_of)
            if os.geteuid() == 0:
                os.chown(path, owner.st_uid, owner.st_gid)
        return True
    if info.st_mode & 0o022:
        if not check:
            os.chmod(path, info.st_mode & 0o7755 & ~0o022)
        return True
    return False


# --- the eval-run wrapper ------------------------------------------------------------------

EVAL_WRAPPER_NAME = "sandboxguard-eval-run"
DEFAULT_EVAL_BIN = "/usr/local/lib/sandboxguard/eval-bin"

_EVAL_WRAPPER = """#!/bin/sh
# sandboxguard-eval-run RUN_DIR CMD [ARG...]: run CMD isolated for an eval run (generated by
# sandboxguard; see docs/terminal-home.md). HOME, temp files and the crontab table stay in
# RUN_DIR; the user's systemd manager and D-Bus session are out of reach.
set -eu
if [ "$#" -lt 2 ]; then
    echo "usage: sandboxguard-eval-run RUN_DIR CMD [ARG...]" >&2
    exit 2
fi
run=$1
shift
case $run in /*) ;; *) run=$(pwd)/$run ;; esac
if [ "$(cd / && realpath -m -- "$run")" = / ]; then
    echo "sandboxguard-eval-run: refusing / as RUN_DIR: pass a directory for this run" >&2
    exit 2
fi
umask 077
mkdir -p -- "$run/home" "$run/cache/scratch"
for dir in "$run/home" "$run/cache/scratch"; do
    if [ -L "$dir" ]; then
        echo "sandboxguard-eval-run: $dir is a symlink: it must be a real directory; remove the link" >&2
        exit 2
    fi
done
# an existing run dir left at 0750 (umask 027) would let the group read the run's files
chmod 700 -- "$run/home" "$run/cache/scratch"
HERMES_REAL_HOME=${HERMES_REAL_HOME:-${HOME:-}}
scratch=$run/cache/scratch
home=$run/home
export HERMES_REAL_HOME HERMES_HOME="$run" HOME="$home" TERMINAL_HOME_MODE=profile
export PATH=%(bin)s:"$PATH" TMPDIR="$scratch" TMP="$scratch" TEMP="$scratch" HERMES_SCRATCH_DIR="$scratch"
export XDG_CONFIG_HOME="$home/.config" XDG_DATA_HOME="$home/.local/share"
export XDG_STATE_HOME="$home/.local/state" XDG_CACHE_HOME="$home/.cache"
export EVAL_CRONTAB_FILE="$run/crontab"
unset DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR
exec "$@"
"""


def eval_wrapper_text(bin_dir):
    """The POSIX shell wrapper that applies :func:`isolated_env` around one command."""
    return _EVAL_WRAPPER % {"bin": shlex.quote(bin_dir)}


def install_eval_tools(bin_dir=DEFAULT_EVAL_BIN, python=None, dry_run=False, check=None):
    """Install the crontab shim and the eval-run wrapper into *bin_dir* (0755 scripts).

    Returns {"crontab": path, "wrapper": path, "changed": bool}; *dry_run* writes nothing
    (``check`` is its deprecated alias).
    """
    from . import crontab as crontab_shim  # noqa: PLC0415
    from .report import dry_run_arg  # noqa: PLC0415

    check = dry_run_arg(dry_run, check, "install_eval_tools")

    shim, shim_changed = crontab_shim.install_shim(bin_dir, python=python, dry_run=check)
    wrapper, wrapper_changed = crontab_shim.install_text(
        bin_dir, EVAL_WRAPPER_NAME, eval_wrapper_text(bin_dir).encode("utf-8"), dry_run=check)
    return {"crontab": shim, "wrapper": wrapper, "changed": shim_changed or wrapper_changed}
