# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The home mode's vocabulary: the modes and their aliases, the environment variables, the
layout names under a Hermes home, HomeModeError and the one mode parser (pure).
"""
import os

from ..errors import InputError

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
