# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

At jobs: each job queued with ``at``/``batch`` in an atd spool, with its uid and commands.
"""
import os
import re
import time

from .. import report as envelope
from .._core.text import escape
from .cron import MAX_ENTRY_CHARS
from .reading import entries, finding, iter_lines, read_chunks, read_regular

AT_SPOOL_DIRS = ("/var/spool/cron/atjobs", "/var/spool/at")
_AT_NAME = re.compile(r"^([A-Za-z=])([0-9a-f]{5})([0-9a-f]{8})$")
_AT_UID = re.compile(rb"^# atrun uid=(\d+) gid=(\d+)")
_AT_HEREDOC = re.compile(rb"^\$\{SHELL:-/bin/sh\} << '?(marcinDELIMITER[0-9a-f]+)'?$")


def _at_job_details(fd):
    """(uid from the ``# atrun`` line or None, the job's commands) of an at(1) job file.

    at writes a header (``#!/bin/sh``, ``# atrun uid=N gid=M``, ``# mail``, umask and the
    exported environment), then ``cd DIR || { ... }``, then the commands as given
    (Debian's at 3.2.5); some versions wrap them in a here-document, which is unwrapped.
    """
    uid = None
    state = "header"  # header -> cd (inside the cd block) -> body
    delimiter = None
    command = []
    size = 0
    for head, _length in iter_lines(read_chunks(fd), MAX_ENTRY_CHARS):
        if state == "header":
            match = _AT_UID.match(head)
            if match and uid is None:
                uid = int(match.group(1))
            elif head.startswith(b"cd ") and head.endswith(b"|| {"):
                state = "cd"
            continue
        if state == "cd":
            state = "body" if head == b"}" else "cd"
            continue
        if delimiter is None and not command:
            match = _AT_HEREDOC.match(head)
            if match:
                delimiter = match.group(1)
                continue
        if delimiter is not None and head == delimiter:
            break
        if size < MAX_ENTRY_CHARS:
            command.append(head.decode("utf-8", "surrogateescape"))
            size += len(head) + 1
    text = "\n".join(command).strip()[:MAX_ENTRY_CHARS]
    return uid, (text or None)


def audit_at_spool(spool_dir, now=None, report=None, uid_names=None):
    """``at_job`` findings: each job file in an atd spool (``at``, ``batch``)."""
    now = time.time() if now is None else now
    report = envelope.new_report([]) if report is None else report
    uid_names = uid_names or {}
    findings = []
    for spool_fd, name, path in entries(spool_dir, report):
        if name.startswith("."):  # .SEQ, the job counter
            continue
        opened = read_regular(spool_fd, name, path, report)
        if opened is None:
            continue
        fd, info = opened
        try:
            uid, command = _at_job_details(fd)
        except OSError as exc:
            envelope.add_error(report, path, "read", exc)
            uid, command = None, None
        finally:
            os.close(fd)
        uid = info.st_uid if uid is None else uid
        match = _AT_NAME.match(name)
        queue = match.group(1) if match else None
        job = int(match.group(2), 16) if match else None
        run_at = int(match.group(3), 16) * 60 if match else None
        user = uid_names.get(uid)
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(run_at)) if run_at is not None else "?"
        findings.append(finding(
            "at_job", path, info, now, "at job %s for %s, runs at %s: %s" % (
                job, user or "uid %d" % uid, when, escape((command or "?").splitlines()[0][:200])),
            user=user, job=job, queue=queue, run_at=run_at, running=queue == "=", entry=command,
            job_uid=uid))
    return findings
