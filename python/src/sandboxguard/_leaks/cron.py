# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Cron tables: the jobs of a stored crontab, read whole and streamed (a job after a 2 MiB
comment line is found; a NUL splits a line as cron's reader does), and the ``cron_job``
findings of a user's table in the spool. The header rule is crontab_shim.py's
(_core.crontab_header.is_header_line, its twin).
"""
import os
import re
import time

from .. import report as envelope
from .._core import defaults
from .._core.crontab_header import is_header_line
from .._core.text import escape
from .reading import finding, iter_lines, open_dir, read_chunks, read_regular

SPOOL_DIR = defaults.CRON_SPOOL_DIR
# A crontab line is read up to this many bytes (the rest of a longer one is counted, not kept).
MAX_LINE_BYTES = 1 << 16
MAX_ENTRY_CHARS = 2048
_ENV_LINE = re.compile(r"""^\s*("[^"]*"|'[^']*'|[^\s=#"']+)\s*=""")


def iter_cron_jobs(chunks, cap=MAX_LINE_BYTES):
    """The jobs of a stored crontab given as byte chunks: yield (line number, text, truncated).

    The header lines crontab writes are skipped the way ``crontab -l`` skips them
    (_core.crontab_header.is_header_line); comments, blank lines and environment assignments are not
    jobs. Line numbers count the lines ``crontab -l`` would print, from 1. A NUL ends cron's
    string (misc.c get_string), so what follows it on the line is read as another entry, as
    cron does. *truncated* is True for a job on a line longer than *cap* (only its start was kept).
    """
    number = 0
    header = 0
    in_header = True
    for head, length in iter_lines(chunks, cap):
        if in_header and is_header_line(header, head):
            header += 1
            continue
        in_header = False
        number += 1
        if head.lstrip(b" \t").startswith(b"#"):
            continue  # cron skips a comment byte by byte to the newline, NULs included
        for segment in head.split(b"\0"):
            line = segment.decode("utf-8", "surrogateescape")  # the bytes cron runs: leaks_remove matches them
            text = line.strip()
            if not text or text.startswith("#") or _ENV_LINE.match(line):
                continue
            yield number, text, length > cap


def cron_jobs(data):
    """The job lines of a stored crontab (bytes): a list of (line number, text)."""
    return [(number, text) for number, text, _cut in iter_cron_jobs([data])]


def audit_cron_spool(user, spool_dir=SPOOL_DIR, now=None, report=None):
    """``cron_job`` findings for *user*'s table in *spool_dir*, the whole table streamed."""
    now = time.time() if now is None else now
    report = envelope.new_report([]) if report is None else report
    spool_fd = open_dir(spool_dir, (), report)
    if spool_fd is None:
        return []
    path = os.path.join(spool_dir, user)
    try:
        opened = read_regular(spool_fd, user, path, report)
    finally:
        os.close(spool_fd)
    if opened is None:
        return []
    fd, info = opened
    findings = []
    seen = {}
    try:
        for number, text, cut in iter_cron_jobs(read_chunks(fd)):
            if cut:
                envelope.add_error(report, path, "read", "line %d is longer than %d bytes: only its start was read"
                                   % (number, MAX_LINE_BYTES))
            entry = text[:MAX_ENTRY_CHARS]
            occurrence = seen[entry] = seen.get(entry, 0) + 1
            item = finding("cron_job", path, info, now, "job in %s's crontab: %s" % (user, escape(entry[:200])),
                           user=user, line=number, entry=entry)
            # a job is the same job wherever its line moved; the table's mtime does not matter
            item["_key"] = "\0".join(("cron_job", path, entry, str(occurrence)))
            item["_sig"] = None
            findings.append(item)
    except OSError as exc:
        envelope.add_error(report, path, "read", exc)
    finally:
        os.close(fd)
    return findings
