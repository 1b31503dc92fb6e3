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
import tempfile

from . import defaults, safefs

# One container detection for the whole library (container.py); re-exported here, where
# the home mode's ``auto`` rule uses it.
from .container import detect_container
from .errors import InputError
from .text import escape

# unset means auto (the agent decides per run); what terminal_home sets unless told otherwise is
# profile: children get the profile home, not the real HOME, crontab and user bus
DEFAULT_MODE = "auto"
MODES = ("auto", "real", "profile")
CONFIGURED_MODE = "profile"
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


class HomeModeError(InputError):
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


def _dir_error(exc, path, fix="it must be a real directory: remove what is there"):
    """HomeModeError (one line naming the path and the fix) for a refusal or OSError about ``path``."""
    if isinstance(exc, safefs.PathRefused):
        return HomeModeError(exc.with_fix(fix))
    if isinstance(exc, FileNotFoundError):
        return HomeModeError("%s does not exist: create it first" % escape(path))
    return HomeModeError("%s: %s" % (escape(path), exc.strerror or exc))


def _open_dir(path, create=False):
    """safefs.open_dir(path) (missing directories made 0700 with ``create``), errors as HomeModeError.

    Every component is opened relative to the one before with O_NOFOLLOW; a symlink is
    followed only in a directory that nobody but root (or this user) can change, so a link
    the agent planted in its own tree refuses the path instead of moving root elsewhere.
    """
    try:
        return safefs.open_dir(path, create=create, mode=PRIVATE_DIR_MODE)
    except (safefs.PathRefused, OSError) as exc:
        raise _dir_error(exc, path) from None


def _set_mode_at(fd, mode, path):
    """safefs.set_mode on the held directory (never by path); True when it changed."""
    try:
        return safefs.set_mode(fd, mode)
    except OSError as exc:
        raise HomeModeError("cannot set mode %04o on %s: %s" % (mode, escape(path), exc.strerror or exc)) from None


def _make_dirs_at(dir_fd, base, parts):
    """Make (or open) ``parts`` below the held ``dir_fd`` (the directory ``base``), each 0700
    when made (make_dir_at: mkdirat, reopened O_NOFOLLOW, fstat identity); return the last
    one's fd."""
    fd, shown = dir_fd, base.rstrip("/")
    try:
        for part in parts:
            shown = shown + "/" + part
            try:
                made, _created = safefs.make_dir_at(fd, part, PRIVATE_DIR_MODE, path_for_errors=shown)
            except (safefs.PathRefused, OSError) as exc:
                raise _dir_error(exc, shown) from None
            if fd != dir_fd:
                os.close(fd)
            fd = made
    except BaseException:
        if fd != dir_fd:
            os.close(fd)
        raise
    return fd


def set_dir_mode(path, mode=PRIVATE_DIR_MODE):
    """Give the directory *path* exactly *mode*; True when it changed. Touches the disk.

    The directory is proven component by component (safefs.open_dir) and changed through
    that descriptor, so a symlink planted at *path* or anywhere on the way to it in a
    directory another user can change is refused (:class:`HomeModeError`), never followed.
    """
    with _open_dir(path) as held:
        return _set_mode_at(held.fd, mode, path)


def ensure_private_dir(path, tighten=False):
    """Create *path* (and parents) with mode 0700 when missing; return it. Touches the disk.

    Through safefs.open_dir(create=True): each missing directory made with mkdirat and
    checked through its descriptor, a symlink on the way refused as in :func:`set_dir_mode`.
    With *tighten*, an existing directory is made 0700 as well (a scratch dir left at 0750
    by an older run or a umask of 027 lets the group read every temp file of the agent).
    """
    with _open_dir(path, create=True) as held:
        if tighten:
            _set_mode_at(held.fd, PRIVATE_DIR_MODE, path)
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
    from . import eval_tools  # noqa: PLC0415 - only eval isolation needs it

    target = os.environ if environ is None else environ
    layout = ensure_isolation_dirs(hermes_home)
    if shim_bin is None:
        _install(eval_tools.install_shim, layout["bin"])
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
WHERE_CHOICES = defaults.HOME_WHERE_CHOICES
DEFAULT_WHERE = defaults.HOME_WHERE
NEW_FILE_MODE = 0o600


def hermes_homes(hermes_home, include_profiles=True):
    """The default home and, with *include_profiles*, each profile under ``profiles/`` by the
    one rule (sandboxes.list_profile_names: through descriptors; a symlinked ``profiles``,
    a symlinked profile and a name starting with a dot give none)."""
    from .sandboxes import list_profile_names  # noqa: PLC0415

    base = norm_path(hermes_home)
    homes = [base]
    if include_profiles:
        homes.extend(os.path.join(base, PROFILES_DIR, name) for name in list_profile_names(base))
    return homes


def _where(where):
    value = (where or "config").strip().lower()
    if value not in WHERE_CHOICES:
        raise HomeModeError("where=%r: use one of %s" % (where, ", ".join(WHERE_CHOICES)))
    return ("config", "env") if value == "both" else (value,)


def _open_hermes_home(base):
    """The Hermes home as a proven safefs.Dir; HomeModeError naming it (and, for one reached
    through a symlink another user could have planted, the real path it leads to)."""
    try:
        return safefs.open_dir(base)
    except FileNotFoundError:
        raise HomeModeError("hermes_home %s is not a directory: create the Hermes home first" % escape(base)) from None
    except safefs.PathRefused as exc:
        raise HomeModeError("hermes_home %s" % exc.with_fix("give the Hermes home's real path")) from None
    except OSError as exc:
        raise HomeModeError("hermes_home %s: %s" % (escape(base), exc.strerror or exc)) from None


def _each_home(base_dir, base, include_profiles, report):
    """(path, fd, fstat, error) for the Hermes home and each profile, every one opened
    below the held home with O_NOFOLLOW (the fd is the caller's to close unless it is the
    home's own). A profile that cannot be opened comes with ``error`` (a line) and no fd."""
    from . import report as envelope  # noqa: PLC0415
    from .sandboxes import profile_names_at  # noqa: PLC0415

    yield base, base_dir.fd, base_dir.st, None
    if not include_profiles:
        return
    profiles = os.path.join(base, PROFILES_DIR)
    try:
        profiles_fd = safefs.open_dir_at(base_dir.fd, PROFILES_DIR, path_for_errors=profiles)
    except FileNotFoundError:
        return
    except safefs.PathRefused as exc:  # the one rule: a symlinked profiles lists none
        envelope.add_warning(report, "%s; no profile under it is configured" % exc)
        return
    except OSError as exc:
        yield profiles, None, None, "%s: %s" % (escape(profiles), exc.strerror or exc)
        return
    try:
        for name in profile_names_at(profiles_fd):
            path = os.path.join(profiles, name)
            try:
                fd = safefs.open_dir_at(profiles_fd, name, path_for_errors=path)
            except FileNotFoundError:
                continue  # removed since it was listed
            except safefs.PathRefused as exc:
                yield path, None, None, exc.with_fix("a profile must be a real directory: remove the link")
                continue
            except OSError as exc:
                yield path, None, None, "%s: %s" % (escape(path), exc.strerror or exc)
                continue
            yield path, fd, os.fstat(fd), None
    finally:
        os.close(profiles_fd)


def configure_terminal_home(hermes_home, mode, where=DEFAULT_WHERE, include_profiles=True, create_profile_home=True,
                            dry_run=False, check=None):
    """Set TERMINAL_HOME_MODE for a Hermes home and its profiles; return a report dict.

    ``terminal.home_mode`` in each ``config.yaml`` (the agent reads non-secret settings
    from config before ``.env``; comments and other keys are kept, see yamlconf), and
    with *where* ``env`` or ``both`` the ``TERMINAL_HOME_MODE=`` line of ``.env``.
    With *create_profile_home*, ``{home}/home`` is created 0700 (owned like the Hermes
    home) and group/other write (and any setid bit) is removed from an existing one.
    *dry_run* changes nothing and reports what would change.

    The Hermes home is the agent's own tree, so everything goes through descriptors: the
    home proven by safefs.open_dir, each profile opened below it with O_NOFOLLOW, the
    files read with safefs.read_at (a regular file with one link; a symlink, FIFO or
    device is never opened) and replaced with atomicfile.write_at under the held directory,
    keeping the old file's owner and permission bits from its fstat (never setid bits); the
    profile home made with make_dir_at and tightened through its descriptor.

    Raises HomeModeError for a bad mode or *where* and for a Hermes home that is missing or
    refused. A home or profile that cannot be configured (a refused file or directory, a
    config yamlconf will not edit) is an error of its own in the report (``errors``, and
    the entry's ``error``); the others are still configured.
    """
    from . import report as envelope  # noqa: PLC0415
    from .hermes_config import ConfigError  # noqa: PLC0415
    from .yamlconf import YamlEditError  # noqa: PLC0415

    dry_run = envelope.dry_run_arg(dry_run, check, "configure_terminal_home")
    mode = normalize_mode(mode)
    targets = _where(where)
    base = norm_path(hermes_home)
    with _open_hermes_home(base) as base_dir:
        report = envelope.new_report([base], dry_run=dry_run, mode=mode, where=list(targets), homes=[], diff=[])
        for home, fd, st, error in _each_home(base_dir, base, include_profiles, report):
            entry = {"hermes_home": home, "config_path": None, "previous": None, "config_changed": False,
                     "env_path": None, "env_previous": None, "env_changed": False,
                     "profile_home": os.path.join(home, PROFILE_HOME_DIR), "profile_home_changed": False,
                     "error": error}
            if fd is not None:
                try:
                    _configure_home(fd, st, entry, targets, mode, dry_run, create_profile_home, report)
                except (ConfigError, HomeModeError, YamlEditError, safefs.PathRefused) as exc:
                    entry["error"] = str(exc)
                except OSError as exc:
                    entry["error"] = "%s: %s" % (escape(exc.filename or home), exc.strerror or exc)
                finally:
                    if fd != base_dir.fd:
                        os.close(fd)
            if entry["error"]:
                envelope.add_error(report, home, "configure", entry["error"])
            report["homes"].append(entry)
            report["changed"] = report["changed"] or any(
                entry[k] for k in ("config_changed", "env_changed", "profile_home_changed"))
    report["previous"] = report["homes"][0]["previous"] if report["homes"] else None
    report["config_path"] = report["homes"][0]["config_path"] if report["homes"] else None
    return report


def _configure_home(fd, st, entry, targets, mode, dry_run, create_profile_home, report):
    """Configure one held Hermes home (or profile) ``fd`` with fstat ``st``; fills ``entry``."""
    from .hermes_config import read_at, write_at  # noqa: PLC0415
    from .yamlconf import YamlEditError, read_env_line, read_nested, set_env_line, set_nested  # noqa: PLC0415

    home = entry["hermes_home"]
    for target, name in (("config", CONFIG_NAME), ("env", ENV_NAME)):
        if target not in targets:
            continue
        path = os.path.join(home, name)
        entry["%s_path" % target] = path
        before, old = read_at(fd, name, path)
        try:
            if target == "config":
                entry["previous"] = read_nested(before or "", CONFIG_SECTION, CONFIG_KEY)
                after = set_nested(before or "", CONFIG_SECTION, CONFIG_KEY, mode)
                changed = after != (before or "") or before is None
            else:
                entry["env_previous"] = read_env_line(before or "", MODE_ENV)
                after = set_env_line(before or "", MODE_ENV, mode)
                changed = after != (before or "")
        except YamlEditError as exc:
            raise YamlEditError("%s: %s" % (escape(path), exc)) from None
        if changed:
            entry["%s_changed" % target] = True
            report["diff"].append({"before_header": path, "after_header": path, "before": before or "",
                                   "after": after})
            if not dry_run:
                write_at(fd, name, after, old, None, NEW_FILE_MODE, st)
    if create_profile_home:
        entry["profile_home_changed"] = _ensure_profile_home(fd, st, entry["profile_home"], dry_run)


def _ensure_profile_home(dir_fd, dir_st, path, dry_run):
    """Create ``home`` in the held directory 0700, owned like it (its fstat), or drop
    group/other write (and setid bits) from an existing one; True if (it would have) changed.

    make_dir_at (mkdirat, reopened O_NOFOLLOW, fstat identity, then fchmod/fchown) and
    set_mode on the descriptor: nothing by path, and a mode never copied with setid bits
    (an agent directory at 06777 becomes 0755). A symlink or anything but a directory there
    is refused (HomeModeError).
    """
    fix = "the profile home must be a real directory: remove what is there"
    try:
        if dry_run:
            if safefs.lstat_at(dir_fd, PROFILE_HOME_DIR) is None:
                return True
            fd = safefs.open_dir_at(dir_fd, PROFILE_HOME_DIR, path_for_errors=path)
        else:
            owner = (dir_st.st_uid, dir_st.st_gid) if os.geteuid() == 0 else None
            fd, created = safefs.make_dir_at(dir_fd, PROFILE_HOME_DIR, PRIVATE_DIR_MODE, owner=owner,
                                             path_for_errors=path)
            if created:
                os.close(fd)
                return True
    except safefs.PathRefused as exc:
        raise HomeModeError(exc.with_fix(fix)) from None
    try:
        st = os.fstat(fd)
        if not st.st_mode & 0o022:
            return False
        if not dry_run:
            _set_mode_at(fd, safefs.plain_mode(st.st_mode) & ~0o022, path)
        return True
    finally:
        os.close(fd)


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
# mkdir and chmod below act by path. That is safe only where no other user can change a
# name on the way: another user could swap a directory for a symlink between two of them
# and send root's chmod to /etc. So every lookup on the way to RUN_DIR/home and
# RUN_DIR/cache/scratch must be in a directory owned by root or this user that nobody else
# can write, or (a sticky directory such as /tmp) of an entry root or this user owns; a
# missing directory is made only where nobody else can add names. Otherwise: refuse, and
# let the user who can change it run this.
me=$(id -u)
sg_refuse() {
    sg_fix="run it as that user, or give a run directory only you and root can change"
    echo "sandboxguard-eval-run: refusing $run: $1; $sg_fix" >&2
    exit 2
}
sg_stat() {
    sg_out=$(stat -c '%%u %%a' -- "$1" 2>/dev/null) || sg_refuse "cannot stat $1"
    sg_uid=${sg_out%%%% *} sg_mode=${sg_out#* }
}
sg_ours() {
    [ "$1" = 0 ] || [ "$1" = "$me" ]
}
sg_check() {
    sg_rest=$1 sg_cur='' sg_links=0 sg_missing=''
    while [ -n "$sg_rest" ]; do
        case $sg_rest in
            /*) sg_rest=${sg_rest#/}; continue ;;
            */*) sg_c=${sg_rest%%%%/*} sg_rest=${sg_rest#*/} ;;
            *) sg_c=$sg_rest sg_rest= ;;
        esac
        case $sg_c in
            ''|.) continue ;;
            ..) sg_cur=${sg_cur%%/*}; continue ;;
        esac
        sg_p=$sg_cur/$sg_c
        sg_cur=$sg_p
        [ -z "$sg_missing" ] || continue
        sg_dir=${sg_p%%/*}
        sg_stat "${sg_dir:-/}"
        sg_ours "$sg_uid" || sg_refuse "${sg_dir:-/} belongs to uid $sg_uid"
        sg_closed=yes
        [ $(( 0$sg_mode & 022 )) -eq 0 ] || sg_closed=
        sg_sticky=
        [ $(( 0$sg_mode & 01000 )) -eq 0 ] || sg_sticky=yes
        if [ ! -e "$sg_p" ] && [ ! -L "$sg_p" ]; then
            [ -n "$sg_closed" ] || sg_refuse "${sg_dir:-/} can be changed by other users"
            sg_missing=yes
            continue
        fi
        if [ -z "$sg_closed" ]; then
            sg_stat "$sg_p"
            if [ -z "$sg_sticky" ] || ! sg_ours "$sg_uid"; then
                sg_refuse "${sg_dir:-/} can be changed by other users"
            fi
        fi
        if [ -L "$sg_p" ]; then
            sg_links=$((sg_links + 1))
            [ "$sg_links" -le 40 ] || sg_refuse "more than 40 symlinks on the way"
            sg_t=$(readlink -- "$sg_p"; echo x)
            sg_t=${sg_t%%?x}
            case $sg_t in /*) sg_cur= ;; *) sg_cur=${sg_dir} ;; esac
            sg_rest=$sg_t/$sg_rest
        fi
    done
}
sg_check "$run/home"
sg_check "$run/cache/scratch"
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


def _install(install, *args, **kwargs):
    """Call an eval_tools installer; its refusals (safefs.PathRefused) as HomeModeError."""
    try:
        return install(*args, **kwargs)
    except safefs.PathRefused as exc:
        raise HomeModeError(exc.with_fix("give a directory only root can change")) from None


def install_eval_tools(bin_dir=DEFAULT_EVAL_BIN, python=None, dry_run=False, check=None):
    """Install the crontab shim and the eval-run wrapper into *bin_dir* (0755 scripts).

    Returns the report envelope with ``crontab`` and ``wrapper`` (the two paths) and
    ``changed`` (in a dry run: would change); *dry_run* writes nothing
    (``check`` is its deprecated alias). Through descriptors (eval_tools: the directory
    proven and made by safefs, the files written with atomicfile.write_at under it); a
    directory reached through a symlink another user could have planted is refused
    (HomeModeError). OSError when a write fails.
    """
    from . import eval_tools  # noqa: PLC0415
    from . import report as envelope  # noqa: PLC0415

    dry_run = envelope.dry_run_arg(dry_run, check, "install_eval_tools")

    shim, shim_changed = _install(eval_tools.install_shim, bin_dir, python=python, dry_run=dry_run)
    wrapper, wrapper_changed = _install(eval_tools.install_text, bin_dir, EVAL_WRAPPER_NAME,
                                        eval_wrapper_text(bin_dir).encode("utf-8"), dry_run=dry_run)
    return envelope.new_report([bin_dir], crontab=shim, wrapper=wrapper, changed=shim_changed or wrapper_changed)
