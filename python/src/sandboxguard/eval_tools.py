# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Installing the eval-run tools (the crontab shim, the eval-run wrapper) through descriptors.

Root installs them into ``/usr/local/lib/sandboxguard/eval-bin`` (terminal_home's
``eval_isolation``) and, for ``sandboxguard home-env`` and ``home_mode.eval_isolation``,
into a run directory's ``cache/eval-bin``, which may be the agent's to change. So the
directory is proven component by component and made where missing (``safefs.open_dir``:
a symlink is followed only where only root could have made it, a new directory is made
with mkdirat and checked through its descriptor), and the file is compared and replaced
below that descriptor only (``safefs.read_at``, ``atomicfile.write_at``): a directory
swapped for a symlink to /usr/bin sends nothing there.

This lives outside ``crontab.py`` because that file also runs standalone as the shim
(``/usr/bin/python3 crontab``) and imports nothing from the package; ``crontab.install_shim``
and ``crontab.install_text`` hand over to the functions here.

Touches the system unless ``dry_run``.
"""
import os
import stat

from . import atomicfile, safefs

BIN_DIR_MODE = 0o755  # every user an eval runs as must reach the tools


def _same_at(dir_fd, name, text, mode):
    """Whether ``name`` in the held directory already is ours, a regular file with one link,
    holding ``text`` with ``mode`` (never opened when it is anything else)."""
    st = safefs.lstat_at(dir_fd, name)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid != os.geteuid():
        return False
    if stat.S_IMODE(st.st_mode) != stat.S_IMODE(mode) or st.st_size != len(text):
        return False
    try:
        data, now = safefs.read_at(dir_fd, name, limit=len(text) + 1, single_link=True)
    except (safefs.PathRefused, OSError):
        return False
    return data == text and now is not None and stat.S_IMODE(now.st_mode) == stat.S_IMODE(mode)


def install_text(bin_dir, name, text, mode=0o755, dry_run=False):
    """Write *text* (bytes) as ``<bin_dir>/<name>`` with *mode*, atomically, when it differs.

    Returns (path, changed); with *dry_run* nothing is written. A missing *bin_dir* is made
    (0755 for each missing directory). What is at the name and is not our regular file with
    one link (a symlink, a FIFO, a hard link, another user's file) is replaced, never
    followed or written through. Raises safefs.PathRefused for a *bin_dir* reached through a
    symlink another user could have planted, OSError when a step fails.
    """
    path = os.path.join(bin_dir, name)
    if dry_run:
        try:
            held = safefs.open_dir(bin_dir)
        except FileNotFoundError:
            return path, True
        with held:
            return path, not _same_at(held.fd, name, text, mode)
    with safefs.open_dir(bin_dir, create=True, mode=BIN_DIR_MODE) as held:
        if _same_at(held.fd, name, text, mode):
            return path, False
        atomicfile.write_at(held.fd, name, text, mode=stat.S_IMODE(mode))
    return path, True


def install_shim(bin_dir, python=None, name="crontab", mode=0o755, dry_run=False):
    """Write the crontab shim as ``<bin_dir>/<name>`` (a standalone script run by *python*;
    None: crontab.shim_python(), Debian's /usr/bin/python3 that any user can run).

    Returns (path, changed); see install_text.
    """
    from . import crontab  # noqa: PLC0415 - the shim's own source is what is installed

    python = python or crontab.shim_python()
    return install_text(bin_dir, name, crontab.shim_source(python).encode("utf-8"), mode, dry_run)
