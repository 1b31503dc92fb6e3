# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

configure_terminal_home: TERMINAL_HOME_MODE written into a Hermes home and its profiles
(config.yaml, .env), and the profile home made, everything through descriptors;
configure_terminal_homes: the same for several homes (the terminal_home module, remediate).
"""
import os

from .. import report as envelope
from .._core import defaults, safefs
from .._core.text import escape
from ..errors import InputError
from .dirs import _set_mode_at
from .modes import MODE_ENV, PRIVATE_DIR_MODE, PROFILE_HOME_DIR, HomeModeError, norm_path, normalize_mode

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
    from .._privileged.sandboxes import list_profile_names  # noqa: PLC0415

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
    from .. import report as envelope  # noqa: PLC0415
    from .._privileged.sandboxes import profile_names_at  # noqa: PLC0415

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
    from .. import report as envelope  # noqa: PLC0415
    from ..hermes_config import ConfigError  # noqa: PLC0415
    from ..yamlconf import YamlEditError  # noqa: PLC0415

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


def configure_terminal_homes(homes, mode, where=DEFAULT_WHERE, include_profiles=True, create_profile_home=True,
                             dry_run=False, skip_absent=False):
    """configure_terminal_home for each of *homes*, one at a time: a home that is refused or
    fails is an error of its own after the others were configured, never instead of them.

    Returns ``reports`` (configure_terminal_home's report of each home configured, in
    order), ``errors`` (``{path, op: configure, error}`` of each home that failed),
    ``failures`` (the same, one line each for people: the refusal's own message, or the
    path and the system's error) and ``absent`` (with *skip_absent*: the homes that do not
    exist, left alone rather than failed: remediate configures the homes present)."""
    result = {"reports": [], "errors": [], "failures": [], "absent": []}
    for home in homes:
        if skip_absent and not os.path.lexists(home):
            result["absent"].append(home)
            continue
        try:
            result["reports"].append(configure_terminal_home(
                home, mode, where=where, include_profiles=include_profiles,
                create_profile_home=create_profile_home, dry_run=dry_run))
        except InputError as exc:
            result["errors"].append(envelope.error_entry(home, "configure", str(exc)))
            result["failures"].append(str(exc))
        except OSError as exc:
            path = exc.filename or home
            result["errors"].append(envelope.error_entry(path, "configure", exc.strerror or str(exc)))
            result["failures"].append("%s: %s" % (escape(path), exc.strerror or exc))
    return result


def _configure_home(fd, st, entry, targets, mode, dry_run, create_profile_home, report):
    """Configure one held Hermes home (or profile) ``fd`` with fstat ``st``; fills ``entry``."""
    from ..hermes_config import read_at, write_at  # noqa: PLC0415
    from ..yamlconf import YamlEditError, read_env_line, read_nested, set_env_line, set_nested  # noqa: PLC0415

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
