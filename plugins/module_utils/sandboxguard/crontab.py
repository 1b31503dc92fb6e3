# GENERATED from python/src/sandboxguard/crontab.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The crontab shim for eval runs: ``main`` (the shim itself) and ``install_shim``.

An eval run that calls ``crontab -`` would schedule jobs in the operator's real table.
The shim takes the same options, prints the same words on the same streams and exits
with the same codes as Debian's ``crontab``, but keeps the table in one file
(``EVAL_CRONTAB_FILE``, else ``{HERMES_HOME}/crontab``); see ``_terminal/crontab_shim.py``,
the shim's one file, which runs standalone and imports nothing from the package.
:func:`install_shim` writes that file out as a ``crontab`` executable any user can run,
through ``_terminal.eval_tools`` (the directory proven and written through descriptors).
"""
from . import report as envelope
from ._terminal import eval_tools
from ._terminal.crontab_shim import main

__all__ = ["install_shim", "main"]


def install_shim(bin_dir, python=None, name="crontab", mode=0o755, dry_run=False, check=None):
    """Write the shim as ``<bin_dir>/<name>`` (a standalone script run by *python*).

    *python* None means ``crontab_shim.shim_python()``: Debian's /usr/bin/python3, which any
    user can run, unlike a Python under root's 0700 home. Returns (path, changed). Touches
    the disk unless *dry_run* (``check``: its deprecated alias, warns), which only reports
    whether it would change. Through the package's ``_terminal.eval_tools`` (the directory proven
    and written through descriptors; safefs.PathRefused for one reached through a symlink
    another user could have planted).
    """
    dry_run = envelope.dry_run_arg(dry_run, check, "crontab.install_shim")
    return eval_tools.install_shim(bin_dir, python=python, name=name, mode=mode, dry_run=dry_run)


def install_text(bin_dir, name, text, mode=0o755, dry_run=False, check=None):
    """Write *text* (bytes) as ``<bin_dir>/<name>`` with *mode*, atomically, when it differs.

    Returns (path, changed); with *dry_run* (``check``: its deprecated alias, warns)
    nothing is written. See _terminal.eval_tools.install_text, which does it.
    """
    dry_run = envelope.dry_run_arg(dry_run, check, "crontab.install_text")
    return eval_tools.install_text(bin_dir, name, text, mode, dry_run)
