# GENERATED from python/src/sandboxguard/bwrap_settings.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Validate the Hermes bubblewrap plugin settings (``plugins.entries.bubblewrap.settings``).

The rules are the ones seed 004 states for the backend, checked before a config is
written so the operator hears about a bad value from the play, not from a backend that
refuses to start: a known profile; non-negative limits (0 disables one); a ``home_allow``
entry naming a credential store is dropped with a warning; a read-only bind whose source
is missing is an error (skipping it would leave the path as writable as the directory
around it), a read-write one is skipped with a warning.

``validate_plugin_settings`` only reads (``os.lstat`` under ``root``); it returns a
normalised copy of the settings with errors and warnings, never raises on bad input.
"""
import os

from . import credentials
from .bwrap import DEFAULT_LIMITS, DEFAULT_PROFILE, PROFILES

SETTING_KEYS = ("profile", "memory_mb", "cpu_seconds", "max_procs", "binds", "home_allow")
# home_allow names a dot entry at the top of home, or one child of these (seed 004).
NESTED_ALLOW_PARENTS = (".config", ".local", ".local/share")


def _as_int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _as_bool(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1", "false", "no", "off", "0"):
        return value.strip().lower() in ("true", "yes", "on", "1")
    if isinstance(value, int):
        return bool(value)
    return None


def is_credential_store(rel):
    """True when a home-relative path is a credential store the backend hides, or lies inside one."""
    return credentials.is_home_store(rel, "bwrap")


def _check_home_allow(entries, errors, warnings):
    kept = []
    if entries is None:
        return kept
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, list):
        errors.append("home_allow must be a list of home-relative dot entries, got %s" % type(entries).__name__)
        return kept
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip():
            errors.append("home_allow entry %r must be a non-empty string such as '.config/nvim'" % (entry,))
            continue
        rel = entry.strip().strip("/")
        if rel.startswith("~/"):
            rel = rel[2:]
        parts = rel.split("/")
        if ".." in parts or rel.startswith("/") or not parts[0].startswith("."):
            errors.append("home_allow entry %r must be a dot entry of the home directory (like '.zz-tool') "
                          "or one child of .config, .local or .local/share" % entry)
            continue
        if is_credential_store(rel):
            warnings.append("home_allow entry %r names a credential store; it stays hidden and the entry is "
                            "ignored" % entry)
            continue
        parent = "/".join(parts[:-1])
        if len(parts) > 1 and parent not in NESTED_ALLOW_PARENTS:
            errors.append("home_allow entry %r: only one level below .config, .local or .local/share can be "
                          "allowed" % entry)
            continue
        kept.append(rel)
    return kept


def _check_binds(binds, errors, warnings, root, hidden_roots):
    kept = []
    if binds is None:
        return kept
    if not isinstance(binds, list):
        errors.append("binds must be a list of {src, dest, readonly} mappings, got %s" % type(binds).__name__)
        return kept
    for index, bind in enumerate(binds):
        label = "binds[%d]" % index
        if isinstance(bind, str):
            bind = {"src": bind}
        if not isinstance(bind, dict) or not isinstance(bind.get("src"), str) or not bind["src"].startswith("/"):
            errors.append("%s needs src, an absolute host path" % label)
            continue
        unknown = sorted(set(bind) - {"src", "dest", "readonly"})
        if unknown:
            errors.append("%s has unknown key(s) %s; known: src, dest, readonly" % (label, ", ".join(unknown)))
            continue
        src = os.path.normpath(bind["src"])
        dest = os.path.normpath(bind.get("dest") or src)
        if not dest.startswith("/"):
            errors.append("%s dest %r must be absolute" % (label, bind.get("dest")))
            continue
        readonly = _as_bool(bind.get("readonly", True))
        if readonly is None:
            errors.append("%s readonly must be true or false, got %r" % (label, bind.get("readonly")))
            continue
        if any(src == h or src.startswith(h + "/") for h in hidden_roots):
            warnings.append("%s src %s lies under a hidden path; the backend ignores it" % (label, src))
            continue
        if not os.path.lexists(os.path.join(root, src.lstrip("/"))):
            if readonly:
                errors.append("%s: read-only bind source %s does not exist; the backend refuses to start with "
                              "it (create it or remove the bind)" % (label, src))
            else:
                warnings.append("%s: read-write bind source %s does not exist; the backend skips it" % (label, src))
            continue
        kept.append({"src": src, "dest": dest, "readonly": readonly})
    return kept


def validate_plugin_settings(settings, home=None, root="/"):
    """Check the plugin settings; return {"settings", "errors", "warnings"}.

    ``settings`` is the mapping for ``plugins.entries.bubblewrap.settings``; values from an
    AWX survey may arrive as strings and are converted. ``home`` is the agent's home (for
    the hidden-path rule on binds); ``root`` is where paths are looked up (tests).
    """
    errors, warnings = [], []
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        return {"settings": {}, "errors": ["settings must be a mapping, got %s" % type(settings).__name__],
                "warnings": []}
    unknown = sorted(set(settings) - set(SETTING_KEYS))
    if unknown:
        errors.append("unknown setting(s) %s; known: %s" % (", ".join(unknown), ", ".join(SETTING_KEYS)))
    out = {}
    profile = settings.get("profile", DEFAULT_PROFILE)
    if profile not in PROFILES:
        errors.append("profile %r is not one of %s" % (profile, ", ".join(PROFILES)))
    else:
        out["profile"] = profile
    for key in ("memory_mb", "cpu_seconds", "max_procs"):
        value = _as_int(settings.get(key, DEFAULT_LIMITS[key]))
        if value is None or value < 0:
            errors.append("%s must be a non-negative integer (0 disables the limit), got %r" % (key, settings[key]))
        else:
            out[key] = value
    hidden_roots = credentials.hidden_roots(home, None, "bwrap")
    out["binds"] = _check_binds(settings.get("binds"), errors, warnings, root, hidden_roots)
    out["home_allow"] = _check_home_allow(settings.get("home_allow"), errors, warnings)
    return {"settings": out, "errors": errors, "warnings": warnings}
