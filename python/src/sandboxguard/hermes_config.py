# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Set keys in a Hermes ``config.yaml``, keeping every comment, key order and quote.

The one way the collection edits a Hermes config: terminal_home (``terminal.home_mode``)
and the bwrap role (``plugins.entries.bubblewrap.settings.*``, ``terminal.backend``, through
the hermes_config module) both go through yamlconf's line editor, so running one after
the other never drops what the other kept. A config the editor cannot change safely is
refused with the line, never rewritten.

Touches the system: reads and (unless ``dry_run``) writes one file, atomically.
"""
import os
import stat
import time

from . import atomicfile, yamlconf
from . import report as reportmod

NEW_FILE_MODE = 0o600


class ConfigError(ValueError):
    """The config cannot be edited as asked; str() names the path and the fix."""


def write_like(path, text, owner=None, mode=NEW_FILE_MODE):
    """Write *text* to *path* atomically, keeping the mode and owner of the old file, or
    *mode* and *owner* ((uid, gid) or None: the caller's) for a new one."""
    try:
        info = os.stat(path)
        mode, owner = info.st_mode & 0o7777, (info.st_uid, info.st_gid)
    except FileNotFoundError:
        pass
    atomicfile.write(path, text, mode=mode, owner=owner if os.geteuid() == 0 else None)


def _keys(name):
    keys = name.split(".") if isinstance(name, str) else list(name)
    if not keys or any(not isinstance(k, str) or not k for k in keys):
        raise ConfigError("setting %r: give a dotted key path such as terminal.backend" % (name,))
    return keys


def _read(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError("%s is a symlink: point path at the real config file (it is never followed)" % path)
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError("%s is not a regular file" % path)
    with open(path, encoding="utf-8") as handle:
        return handle.read()


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
    report = reportmod.new_report([path], dry_run=bool(dry_run), path=path, created=False, previous={}, diff=None,
                                  counts={"keys": 0, "keys_changed": 0})
    if not isinstance(settings, dict):
        raise ConfigError("settings must be a mapping of dotted keys to values, got %s" % type(settings).__name__)
    before = _read(path)
    if before is None and not create:
        raise ConfigError("%s does not exist (create the Hermes config first, or allow creating it)" % path)
    if before is None and not os.path.isdir(os.path.dirname(path)):
        raise ConfigError("%s: the directory %s does not exist: create the Hermes home first"
                          % (path, os.path.dirname(path)))
    after = before or ""
    for name, value in settings.items():
        keys = _keys(name)
        label = ".".join(keys)
        try:
            old = yamlconf.read_path(after, keys)
        except yamlconf.YamlEditError:
            old = None  # not a plain scalar; set_path below says whether it can be replaced
        try:
            edited = yamlconf.set_path(after, keys, value)
        except yamlconf.YamlEditError as exc:
            raise yamlconf.YamlEditError("%s: %s" % (path, exc)) from None
        except ValueError as exc:
            raise ConfigError("%s: %s: %s" % (path, label, exc)) from None
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
            if owner is None and before is None:
                info = os.stat(os.path.dirname(path))
                owner = (info.st_uid, info.st_gid)
            write_like(path, after, owner, mode)
    return reportmod.finish(report, started)
