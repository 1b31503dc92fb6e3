# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Set keys in a Hermes ``config.yaml``, keeping every comment, key order and quote.

The one way the collection edits a Hermes config: terminal_home (``terminal.home_mode``)
and the bwrap role (``plugins.entries.bubblewrap.settings.*``, ``terminal.backend``, through
the hermes_config module) both go through yamlconf's line editor, so running one after
the other never drops what the other kept. A config the editor cannot change safely is
refused with the line, never rewritten.

The config lives in the agent's own tree, which it can change between any two system
calls, so root reads and writes it only through the directory held open (safefs): the
directory is proven component by component, the file is read with ``safefs.read_at``
(a regular file with one link, never a symlink, FIFO or device) and replaced with
``atomicfile.write_at`` under the same descriptor. The new file gets the old one's owner
and permission bits from the descriptor's fstat, never setuid, setgid or sticky
(``safefs.plain_mode``); a new file gets the directory's owner (from its fstat) unless
told otherwise.

Touches the system: reads and (unless ``dry_run``) writes one file, atomically.
"""
import os
import time

from . import report as envelope
from . import yamlconf
from ._core import atomicfile, safefs
from ._core.text import escape
from .errors import InputError

__all__ = ["ConfigError", "set_config"]

NEW_FILE_MODE = 0o600
READ_LIMIT = 4 << 20  # a Hermes config is a few kilobytes; never read more than this


class ConfigError(InputError):
    """The config cannot be edited as asked; str() names the path and the fix."""


def read_at(dir_fd, name, path):
    """(text, fstat) of the config ``name`` in the held directory, or (None, None) when absent.

    Refused (ConfigError naming ``path``): anything but a regular file with one link (a
    symlink, FIFO, socket or device is never opened) and a file over READ_LIMIT bytes.
    Bytes that are not UTF-8 (an operator's Latin-1 comment) are kept as they are
    (surrogateescape), so an edit writes them back byte for byte.
    """
    try:
        data, st = safefs.read_at(dir_fd, name, limit=READ_LIMIT, single_link=True, path_for_errors=path)
    except safefs.PathRefused as exc:
        raise ConfigError(exc.with_fix("make it a regular file (or remove it), then run again")) from None
    if data is None:
        return None, None
    return data.decode("utf-8", "surrogateescape"), st


def write_at(dir_fd, name, text, old_st=None, owner=None, mode=NEW_FILE_MODE, dir_st=None):
    """Replace ``name`` in the held directory with ``text`` (atomicfile.write_at).

    ``old_st``: the fstat of the file read (read_at): its owner and permission bits are
    kept, setid and sticky bits never. Without it (a new file): ``mode``, and ``owner``
    ((uid, gid)) or else the owner of the directory (``dir_st``, its fstat). Ownership is
    only given when running as root.
    """
    if old_st is not None:
        mode, owner = safefs.plain_mode(old_st.st_mode), (old_st.st_uid, old_st.st_gid)
    else:
        mode = safefs.plain_mode(mode)
        if owner is None and dir_st is not None:
            owner = (dir_st.st_uid, dir_st.st_gid)
    atomicfile.write_at(dir_fd, name, text, mode=mode, owner=owner if os.geteuid() == 0 else None)


def _open_parent(path, create=True):
    """(safefs.Dir of the directory holding ``path``, the file's name); ConfigError otherwise."""
    try:
        return safefs.open_parent(path)
    except safefs.PathRefused as exc:
        raise ConfigError(exc.with_fix("give the path of the real config file")) from None
    except FileNotFoundError:
        if not create:
            raise ConfigError("%s does not exist (create the Hermes config first, or allow creating it)"
                              % escape(path)) from None
        raise ConfigError("%s: the directory %s does not exist: create the Hermes home first"
                          % (escape(path), escape(os.path.dirname(path)))) from None
    except OSError as exc:
        raise ConfigError("%s: %s" % (escape(path), exc.strerror or exc)) from None


def write_like(path, text, owner=None, mode=NEW_FILE_MODE):
    """Write *text* to *path* atomically, keeping the owner and permission bits of the old
    file (never its setid bits), or *mode* and *owner* ((uid, gid) or None: the caller's)
    for a new one. Through the proven directory (safefs); the old file's owner and mode come
    from the fstat of the file itself, which must be a regular file with one link
    (ConfigError otherwise)."""
    parent, name = _open_parent(os.path.abspath(path))
    with parent:
        _text, old = read_at(parent.fd, name, path)
        write_at(parent.fd, name, text, old, owner, mode)


def _keys(name):
    keys = name.split(".") if isinstance(name, str) else list(name)
    if not keys or any(not isinstance(k, str) or not k for k in keys):
        raise ConfigError("setting %r: give a dotted key path such as terminal.backend" % (name,))
    return keys


def set_config(path, settings, dry_run=False, create=True, owner=None, mode=NEW_FILE_MODE):
    """Set each ``{dotted.key: value}`` of *settings* in the YAML file *path*; return a report.

    Values are scalars, lists or mappings (see yamlconf.set_path). A missing file is
    created (*mode*, *owner* (uid, gid) or its directory's owner) unless *create* is False. The
    report envelope adds ``path``, ``created``, ``previous`` ({key: old scalar or None})
    and ``diff`` ({before, after, before_header, after_header}). ``dry_run`` writes nothing
    and reports ``changed`` as would change.
    Raises ConfigError or yamlconf.YamlEditError naming the path and the line.
    """
    started = time.monotonic()
    path = os.path.abspath(path)
    report = envelope.new_report([path], dry_run=bool(dry_run), path=path, created=False, previous={}, diff=None,
                                 counts={"keys": 0, "keys_changed": 0})
    if not isinstance(settings, dict):
        raise ConfigError("settings must be a mapping of dotted keys to values, got %s" % type(settings).__name__)
    parent, name = _open_parent(path, create)
    with parent:
        return _set_config_at(parent, name, path, settings, dry_run, create, owner, mode, report, started)


def _set_config_at(parent, name, path, settings, dry_run, create, owner, mode, report, started):
    before, old_st = read_at(parent.fd, name, path)
    if before is None and not create:
        raise ConfigError("%s does not exist (create the Hermes config first, or allow creating it)"
                          % escape(path))
    after = before or ""
    for key, value in settings.items():
        keys = _keys(key)
        label = ".".join(keys)
        try:
            old = yamlconf.read_path(after, keys)
        except yamlconf.YamlEditError:
            old = None  # not a plain scalar; set_path below says whether it can be replaced
        try:
            edited = yamlconf.set_path(after, keys, value)
        except yamlconf.YamlEditError as exc:
            raise yamlconf.YamlEditError("%s: %s" % (escape(path), exc)) from None
        except ValueError as exc:
            raise ConfigError("%s: %s: %s" % (escape(path), label, exc)) from None
        report["previous"][label] = old
        report["counts"]["keys"] += 1
        if edited != after:
            report["counts"]["keys_changed"] += 1
        after = edited
    if after != (before or "") or before is None:
        report["changed"] = True
        report["created"] = before is None
        report["diff"] = {"before": before or "", "after": after, "before_header": path, "after_header": path}
        if not dry_run:
            write_at(parent.fd, name, after, old_st, owner, mode, parent.st)
    return envelope.finish(report, started)
