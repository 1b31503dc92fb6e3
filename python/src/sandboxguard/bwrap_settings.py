# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Validate the Hermes bubblewrap plugin settings (``plugins.entries.bubblewrap.settings``).

The rules are the ones seed 004 states for the backend and Hermes' tests check, applied
before a config is written so the operator hears about a bad value from the play, not
from a backend that refuses to start or silently drops it:

* a known profile, ``network`` when unset (seed 004's table);
* non-negative limits (0 disables one);
* ``home_allow``: a dot entry of the home or one child of ``.config``, ``.local``,
  ``.local/share``; an entry naming a credential store (or resolving into one) is dropped
  with a warning, and so are ``.``, ``.config``, ``.local`` and ``.local/share`` themselves,
  which are not units of the allowlist;
* ``binds``: ``~`` in a source or destination is the agent's home; each source is resolved
  once, and one at or under a hidden path (a credential store, ``~/.hermes``, the Hermes
  home), or resolving there (a symlink into ``~/.ssh``), is dropped with a warning; so is a
  source that contains a hidden path (the home directory) bound at another destination, where
  the hidden path would show uncovered; a read-only bind whose source is missing is an error
  (skipping it would leave the path as writable as the directory around it), a read-write
  one is skipped with a warning.

The hidden set comes from ``credentials.py``, the list the probe and fetch use too.
``validate_plugin_settings`` only reads (``stat``/``realpath`` under ``root``); it returns
a normalised copy of the settings with errors and warnings, never raises on bad input.
"""
import os

from . import credentials
from ._bwrap.argv import DEFAULT_LIMITS, DEFAULT_PROFILE, PROFILES
from ._core.inputs import bool_word
from ._core.pathnames import is_within
from ._core.text import escape

__all__ = ["validate_plugin_settings"]

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


def is_credential_store(rel):
    """True when a home-relative path is a credential store the backend hides, or lies inside one."""
    return credentials.is_home_store(rel, "bwrap")


def _host(root, path):
    """``path`` (absolute, in the host's spelling) looked up under ``root``."""
    return os.path.join(root, path.lstrip("/"))


def _resolve(root, path):
    """The real path of ``path`` under ``root``, spelled from ``root`` again (resolved once)."""
    real = os.path.realpath(_host(root, path))
    if root in ("", "/"):
        return real
    top = os.path.realpath(root)
    return "/" + os.path.relpath(real, top).lstrip("/") if is_within(real, top) else real


def _hidden_set(home, hermes_home, root):
    """The hidden paths as named and as resolved: credential stores, ``~/.hermes`` and ``hermes_home``.

    A store that resolves to the home directory or above it is left out as resolved (as
    Hermes leaves it out): hiding it would hide the home, and every bind under it would go.
    """
    named = credentials.hidden_roots(home, hermes_home, "bwrap")
    real_home = _resolve(root, home) if home else None
    found = []
    for path in named + [_resolve(root, p) for p in named]:
        if real_home and is_within(real_home, path):
            continue
        if path not in found:
            found.append(path)
    return found


def _expand_tilde(path, home):
    """``~`` and ``~/x`` against the agent's home; None when the home is not known."""
    if path == "~" or path.startswith("~/"):
        if not home:
            return None
        return os.path.normpath(home + "/" + path[2:])
    return path


def _allow_unit(entry, home):
    """The home-relative allowlist unit ``entry`` names: (unit, None), or (None, (kind, reason)).

    kind "warning" (the entry is ignored, as Hermes ignores it): a credential store, and
    ``.``, ``.config``, ``.local``, ``.local/share`` themselves (default-deny directories whose
    children are the units). kind "error": what can never name a dot entry of the home (a
    non-dot entry, ``..``, an absolute path outside the home, more than one level below
    ``.config``, ``.local`` or ``.local/share``).
    """
    text = entry.strip()
    if text.startswith("~/"):
        text = text[2:]
    if text.startswith("/"):
        path = os.path.normpath(text)
        if not (home and is_within(path, home, strict=True)):
            return None, ("error", "home_allow entry %r is not inside the home directory%s; name a dot entry such "
                                   "as '.zz-tool' or one child of .config, .local or .local/share"
                          % (entry, " %s" % home if home else " (the agent's home is not known)"))
        text = os.path.relpath(path, home)
    if ".." in text.split("/"):
        return None, ("error", "home_allow entry %r climbs out of the home directory; name a dot entry such as "
                               "'.zz-tool' or one child of .config, .local or .local/share" % entry)
    rel = os.path.normpath(text) if text else "."
    if is_credential_store(rel):
        return None, ("warning", "home_allow entry %r names a credential store; it stays hidden and the entry is "
                                 "ignored" % entry)
    if rel == "." or rel in NESTED_ALLOW_PARENTS:
        return None, ("warning", "home_allow entry %r is not a unit of the allowlist (%s is default-deny: allow "
                                 "one child of it, such as '.config/nvim'); it is ignored"
                      % (entry, "the home directory" if rel == "." else rel))
    parts = rel.split("/")
    if not parts[0].startswith("."):
        return None, ("error", "home_allow entry %r must be a dot entry of the home directory (like '.zz-tool') "
                               "or one child of .config, .local or .local/share; non-dot entries are visible "
                               "already" % entry)
    parent = "/".join(parts[:-1])
    if len(parts) > 1 and parent not in NESTED_ALLOW_PARENTS:
        return None, ("error", "home_allow entry %r: only one level below .config, .local or .local/share can be "
                               "allowed; allow %r instead" % (entry, _unit_of(parts)))
    return rel, None


def _unit_of(parts):
    """The allowlist unit that holds the home-relative components ``parts`` (Hermes' allow_unit)."""
    depth = 1
    while "/".join(parts[:depth]) in NESTED_ALLOW_PARENTS and depth < len(parts):
        depth += 1
    return "/".join(parts[:depth])


def _check_home_allow(entries, errors, warnings, home=None, hidden=(), root="/"):
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
        rel, problem = _allow_unit(entry, home)
        if problem:
            (errors if problem[0] == "error" else warnings).append(problem[1])
            continue
        resolved = _resolve(root, os.path.join(home, rel)) if home else None
        if resolved and any(is_within(resolved, h) for h in hidden):
            warnings.append("home_allow entry %r resolves to %s, a hidden path; it stays hidden and the entry is "
                            "ignored" % (entry, escape(resolved)))
            continue
        if rel not in kept:
            kept.append(rel)
    return kept


def _bind_paths(label, bind, home, errors):
    """(src, dest, readonly) of one bind with ``~`` expanded and paths normalised, or None after an error."""
    src = _expand_tilde(bind["src"], home)
    if src is None:
        errors.append("%s src %r starts with ~ but the agent's home is not known; give the home or an absolute "
                      "path" % (label, bind["src"]))
        return None
    if not src.startswith("/"):
        errors.append("%s src %r must be an absolute host path (or ~/... for the agent's home)" % (label, bind["src"]))
        return None
    dest = _expand_tilde(bind.get("dest") or src, home)
    if dest is None or not dest.startswith("/"):
        errors.append("%s dest %r must be an absolute path (or ~/... for the agent's home)" % (label, bind.get("dest")))
        return None
    readonly = bool_word(bind.get("readonly", True))
    if readonly is None:
        errors.append("%s readonly must be true or false, got %r" % (label, bind.get("readonly")))
        return None
    return os.path.normpath(src), os.path.normpath(dest), readonly


def _exposes_hidden(label, src, dest, hidden, root):
    """Why the bind would expose a hidden path (a warning), or None. Sources are resolved once."""
    real_src = _resolve(root, src)
    for candidate in dict.fromkeys((src, real_src)):
        for path in hidden:
            if is_within(candidate, path):
                return ("%s src %s %s the hidden path %s; the backend ignores it"
                        % (label, escape(src), "lies under" if candidate == src else "resolves to %s, under"
                           % escape(real_src), escape(path)))
    if real_src == _resolve(root, dest):
        return None
    for candidate in dict.fromkeys((src, real_src)):
        for path in hidden:
            if is_within(path, candidate, strict=True):
                return ("%s src %s contains the hidden path %s, which would be readable at dest %s; the backend "
                        "ignores it: bind it at its own path (dest equal to src) instead"
                        % (label, escape(src), escape(path), escape(dest)))
    return None


def _check_binds(binds, errors, warnings, root, home, hidden):
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
        if not isinstance(bind, dict) or not isinstance(bind.get("src"), str) or not bind["src"].strip():
            errors.append("%s needs src, an absolute host path" % label)
            continue
        unknown = sorted(set(bind) - {"src", "dest", "readonly"})
        if unknown:
            errors.append("%s has unknown key(s) %s; known: src, dest, readonly" % (label, ", ".join(unknown)))
            continue
        paths = _bind_paths(label, bind, home, errors)
        if paths is None:
            continue
        src, dest, readonly = paths
        problem = _exposes_hidden(label, src, dest, hidden, root)
        if problem:
            warnings.append(problem)
            continue
        if not os.path.exists(_host(root, src)):
            if readonly:
                errors.append("%s: read-only bind source %s does not exist; the backend refuses to start with "
                              "it (create it or remove the bind)" % (label, escape(src)))
            else:
                warnings.append("%s: read-write bind source %s does not exist; the backend skips it"
                                % (label, escape(src)))
            continue
        kept.append({"src": src, "dest": dest, "readonly": readonly})
    return kept


def validate_plugin_settings(settings, home=None, root="/", hermes_home=None):
    """Check the plugin settings; return {"settings", "errors", "warnings"}.

    ``settings`` is the mapping for ``plugins.entries.bubblewrap.settings``; values from an
    AWX survey may arrive as strings and are converted. ``home`` is the agent's home: ``~``
    in a bind is expanded against it, and the hidden set (the credential stores of
    ``credentials.py`` and ``~/.hermes``) is built under it; ``hermes_home`` is the agent's
    HERMES_HOME when it lies elsewhere (hidden too). ``root`` is where paths are looked up
    (tests). Reads the file system (``os.stat``, ``os.path.realpath`` under ``root``).
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
    hidden = _hidden_set(home, hermes_home, root)
    out["binds"] = _check_binds(settings.get("binds"), errors, warnings, root, home, hidden)
    out["home_allow"] = _check_home_allow(settings.get("home_allow"), errors, warnings, home, hidden, root)
    return {"settings": out, "errors": errors, "warnings": warnings}
