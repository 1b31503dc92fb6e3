# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The crontab header rule for the leak audit and leaks_remove, without crontab_shim.py.

crontab_shim.py runs standalone as the eval shim, so it cannot import this, and importing it
would put the whole shim (a thousand lines) in the AnsiballZ payload of every module that
reads a cron table. So crontab_shim.py keeps a twin of this rule and of NHEADER_LINES (the
same expression), and tests/unit/test_crontab_header.py holds the two the same.
"""

NHEADER_LINES = 3


def is_header_line(skipped, line):
    """The header rule, written once: a stored table starts with up to NHEADER_LINES lines
    that begin with ``#`` (the ones :func:`header_lines` writes), which ``crontab -l`` and
    ``-e`` hide. *line* (bytes or str) is one more of them when *skipped* came before it and
    it starts with ``#``; the header ends at the first line that is not one. crontab_shim.py
    (``crontab -l``/``-e`` of the shim) holds its twin; leaks and leaks_remove use this one."""
    return skipped < NHEADER_LINES and line[:1] in (b"#", "#")
