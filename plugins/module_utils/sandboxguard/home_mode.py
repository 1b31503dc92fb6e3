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

Where the pieces live (the private package ``_terminal``): ``modes`` (the vocabulary and the
mode parser), ``dirs`` (directories made and tightened through descriptors), ``configure``
(configure_terminal_home), ``eval_tools`` (the crontab shim and the eval-run wrapper
installed). This module is the public face and the home rules themselves.
"""
import contextlib
import os
import tempfile

from ._terminal.configure import (
    CONFIG_KEY,
    CONFIG_NAME,
    CONFIG_SECTION,
    DEFAULT_WHERE,
    ENV_NAME,
    PROFILES_DIR,
    WHERE_CHOICES,
    configure_terminal_home,
    configure_terminal_homes,  # noqa: F401  # the loop over several homes (not in the API table)
    hermes_homes,
)
from ._terminal.dirs import _make_dirs_at, _open_dir, _set_mode_at, ensure_private_dir, set_dir_mode
from ._terminal.eval_tools import DEFAULT_EVAL_BIN, EVAL_WRAPPER_NAME, eval_wrapper_text, install_eval_tools
from ._terminal.modes import (
    CONFIGURED_MODE,
    CRONTAB_FILE_ENV,
    CRONTAB_TABLE_NAME,
    DEFAULT_MODE,
    HERMES_HOME_ENV,
    HOME_MODE_ENV,
    MANAGED_ENV,
    MANAGED_MARKER,
    MODE_ALIASES,
    MODE_ENV,
    MODES,
    PRIVATE_DIR_MODE,
    PROFILE_HOME_DIR,
    REAL_HOME_ENV,
    SCRATCH_MARKER_ENV,
    SCRATCH_SUBDIR,
    SHIM_BIN_SUBDIR,
    TMP_ENV_VARS,
    USER_BUS_ENV_VARS,
    XDG_BASE_DIRS,
    XDG_BASE_ENV_VARS,
    HomeModeError,
    _env_value,
    accepted_modes_text,
    norm_path,
    normalize_mode,
)

# One container detection for the whole library (container.py); re-exported here, where
# the home mode's ``auto`` rule uses it.
from .container import detect_container

# The public names (python/README.md) and what the modules, the CLI and the tests use here.
__all__ = [
    "CONFIGURED_MODE", "CONFIG_KEY", "CONFIG_NAME", "CONFIG_SECTION", "CRONTAB_FILE_ENV", "CRONTAB_TABLE_NAME",
    "DEFAULT_EVAL_BIN", "DEFAULT_MODE", "DEFAULT_WHERE", "ENV_NAME", "EVAL_WRAPPER_NAME", "HERMES_HOME_ENV",
    "HOME_MODE_ENV", "MANAGED_ENV", "MANAGED_MARKER", "MODES", "MODE_ALIASES", "MODE_ENV", "PRIVATE_DIR_MODE",
    "PROFILES_DIR", "PROFILE_HOME_DIR", "REAL_HOME_ENV", "SCRATCH_MARKER_ENV", "SCRATCH_SUBDIR", "SHIM_BIN_SUBDIR",
    "TMP_ENV_VARS", "USER_BUS_ENV_VARS", "WHERE_CHOICES", "XDG_BASE_DIRS", "XDG_BASE_ENV_VARS", "HomeModeError",
    "accepted_modes_text", "apply_subprocess_home_env", "configure_terminal_home", "detect_container",
    "ensure_isolation_dirs", "ensure_private_dir", "eval_isolation", "eval_wrapper_text", "hermes_homes",
    "install_eval_tools", "is_in_protected_home", "isolated_env", "isolation_layout", "norm_path", "normalize_mode",
    "protected_homes", "resolve_subprocess_home", "set_dir_mode", "xdg_base_dirs",
]


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
            with _open_dir(scratch, create=True) as held:  # one proof: made and tightened through it
                mode = scratch_dir_mode(env, hermes_home, in_container)
                if mode is not None:
                    _set_mode_at(held.fd, mode, scratch)
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
    Everything goes through descriptors (the run directory proven by safefs.open_dir, the
    rest made with make_dir_at below it and tightened with fchmod): a symlink in their
    place, or on the way in a directory another user can change, is refused
    (:class:`HomeModeError`), never followed.
    """
    layout = isolation_layout(hermes_home)
    with _open_dir(layout["hermes_home"], create=True) as base:
        for key, parts in (("home", (PROFILE_HOME_DIR,)), ("scratch", SCRATCH_SUBDIR), ("bin", SHIM_BIN_SUBDIR)):
            fd = _make_dirs_at(base.fd, layout["hermes_home"], parts)
            try:
                _set_mode_at(fd, PRIVATE_DIR_MODE, layout[key])
            finally:
                os.close(fd)
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
    from ._terminal import eval_tools  # noqa: PLC0415 - only eval isolation needs it

    target = os.environ if environ is None else environ
    layout = ensure_isolation_dirs(hermes_home)
    if shim_bin is None:
        eval_tools._install(eval_tools.install_shim, layout["bin"])
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
