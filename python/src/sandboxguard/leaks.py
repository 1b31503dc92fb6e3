# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Leak audit: what an agent left outside its sandbox on the host.

Seed 002's morning after: three cron jobs nobody wrote in the operator's real crontab,
two scripts in the real ``~/.hermes/scripts/``, and 24 empty ``/tmp/ab-*`` run
directories. This module lists such leftovers, one finding per item with its ``kind``,
``path``, a one-line ``reason`` and its age, and changes nothing:

- ``cron_job``: each job of a user's table in the cron spool, read whole and streamed
  (a job after a 2 MiB comment line is found; a NUL splits a line as cron's reader does);
- ``at_job``: each job queued with ``at``/``batch`` in the atd spool;
- ``hermes_script``: each file under ``~/.hermes/scripts/``;
- ``user_unit``: each unit file under ``~/.config/systemd/user/``,
  ``~/.local/share/systemd/user/`` or the runtime ``/run/user/UID/systemd/user/``;
- ``enabled_timer`` / ``enabled_unit``: each link in a ``*.wants/`` (``*.requires/``,
  ``*.upholds/``) directory there, which is what ``systemctl --user enable`` leaves;
- ``transient_unit``: each unit under ``/run/user/UID/systemd/transient/`` (what
  ``systemd-run --user`` leaves while its unit or timer is loaded);
- ``autostart``: each entry of ``~/.config/autostart/`` (started at the next desktop login);
- ``tmp_run_dir``: each entry of the temp directory matching a run-directory pattern
  (``ab-*`` by default);
- ``ssh_file`` and ``shell_rc``: files in the real ``~/.ssh/`` and shell start-up files
  (``~/.bashrc``, ``~/.profile``, ...). Every host has some, so these are reported only
  against a baseline, when a run added or changed one (``ssh-keygen`` ignores ``HOME``).

**Baseline mode**: :func:`snapshot` records everything above before an eval run;
``audit(baseline=snap)`` afterwards reports only what was added or changed since
(``change``: ``added`` or ``modified``). :func:`audit_with_baseline_file` keeps the
snapshot in a JSON file for the CLI and the module.

Nothing below a home, the spool or the temp directory is followed through a symbolic
link: each directory is opened with O_NOFOLLOW relative to its parent's descriptor. No
file other than a crontab or an at job in its spool is opened. Reading other users'
spool entries and homes needs root. ``complete`` is False whenever something could not
be read whole.

Where the pieces live (the private package ``_leaks``): ``reading`` (the descriptor reads on
top of safefs and the finding record), ``cron`` (cron tables), ``atjobs``, ``home`` (the
auditors of homes, runtime directories and /tmp), ``baseline`` (the snapshot file). This
module is the public face: the audit, the snapshot and the names in python/README.md.
"""
import os
import time

from . import report as envelope
from ._core.text import escape, one_line
from ._leaks.atjobs import AT_SPOOL_DIRS, audit_at_spool
from ._leaks.baseline import (
    BASELINE_MODES,
    BASELINE_SCHEMA,
    LeakAuditError,
    compare,
    read_baseline,
    write_baseline,
)
from ._leaks.cron import SPOOL_DIR, audit_cron_spool, cron_jobs
from ._leaks.home import DEFAULT_TMP_PATTERNS, RUNTIME_ROOT, TMP_DIR, audit_home, audit_runtime, audit_tmp
from ._leaks.reading import MAX_WALK_ENTRIES

__all__ = [
    "BASELINE_ONLY_KINDS",
    "KINDS",
    "LeakAuditError",
    "audit",
    "audit_with_baseline_file",
    "cron_jobs",
    "finding_lines",
    "read_baseline",
    "snapshot",
    "write_baseline",
]

KINDS = ("cron_job", "at_job", "hermes_script", "user_unit", "enabled_timer", "enabled_unit", "transient_unit",
         "autostart", "ssh_file", "shell_rc", "tmp_run_dir")
# every host has these: a finding only when a run added or changed one since a baseline
BASELINE_ONLY_KINDS = ("ssh_file", "shell_rc")
FIRST_REGULAR_UID = 1000
NOBODY_UID = 65534


def local_accounts(min_uid=FIRST_REGULAR_UID):
    """(name, uid, home) for root and every regular account (uid >= *min_uid*, not nobody)."""
    import pwd  # noqa: PLC0415 - POSIX only

    accounts = []
    for entry in pwd.getpwall():
        if entry.pw_uid == 0 or min_uid <= entry.pw_uid < NOBODY_UID:
            accounts.append((entry.pw_name, entry.pw_uid, entry.pw_dir))
    return accounts


def named_accounts(users):
    """(name, uid, home) of each account named in *users* that the password database knows,
    whatever its uid (an agent's service account is often a system user below 1000)."""
    import pwd  # noqa: PLC0415 - POSIX only

    accounts = []
    for name in dict.fromkeys(users):
        try:
            entry = pwd.getpwnam(name)
        except (KeyError, TypeError, ValueError):
            continue
        accounts.append((entry.pw_name, entry.pw_uid, entry.pw_dir))
    return accounts


def _accounts(accounts, users):
    """The accounts an audit looks at: *accounts* (default: root and the regular accounts,
    or with *users* the named accounts, any uid), narrowed to *users* when given."""
    if accounts is None:
        accounts = named_accounts(users) if users else local_accounts()
    accounts = list(accounts)
    if users:
        wanted = set(users)
        accounts = [a for a in accounts if a[0] in wanted]
    return accounts


def _sort_key(item):
    return KINDS.index(item["kind"]), item["path"], item.get("line") or 0


def _spool_users(spool_dir, names, report):
    try:
        listed = sorted(os.listdir(spool_dir))
    except FileNotFoundError:
        return []
    except OSError as exc:
        envelope.add_error(report, spool_dir, "listdir", exc)
        return []
    return [n for n in listed if n not in names and not n.startswith("tmp.")]


def _collect(accounts, users, tmp_dir, tmp_patterns, spool_dir, at_spool_dirs, runtime_root, now, report):
    """Every finding of the host, the baseline-only kinds included."""
    names = [a[0] for a in accounts]
    spool_users = list(names)
    if not users:
        spool_users += _spool_users(spool_dir, names, report)
    uid_names = {uid: name for name, uid, _home in accounts}
    findings = []
    for user in spool_users:
        findings += audit_cron_spool(user, spool_dir, now, report)
    for at_dir in at_spool_dirs:
        jobs = audit_at_spool(at_dir, now, report, uid_names)
        if users:
            wanted = {a[1] for a in accounts}
            jobs = [j for j in jobs if j["job_uid"] in wanted]
        findings += jobs
    budget = [MAX_WALK_ENTRIES * max(1, len(accounts))]
    seen_homes = set()
    for name, uid, home in accounts:
        if runtime_root:
            findings += audit_runtime(name, uid, runtime_root, now, report, budget)
        if not home or home == "/" or home in seen_homes:
            continue
        seen_homes.add(home)
        findings += audit_home(name, home, now, report, budget)
    findings += audit_tmp(tmp_dir, tmp_patterns, now, report, uid_names)
    report["users"] = sorted(set(spool_users))
    return findings


def audit(accounts=None, users=None, tmp_dir=TMP_DIR, tmp_patterns=DEFAULT_TMP_PATTERNS, spool_dir=SPOOL_DIR,
          min_age=0, now=None, at_spool_dirs=AT_SPOOL_DIRS, runtime_root=RUNTIME_ROOT, baseline=None):
    """Audit the host; return the report dict.

    *accounts* is a list of (name, uid, home), by default root and the regular accounts
    of the password database; *users* (names) narrows it (without *accounts*, each named
    account is looked up, whatever its uid). Tables in the spool whose user is not in
    *accounts* are audited too unless *users* is given. Every job of an audited table is a
    finding, so a caller that removes what is found (leaks_remove) should name the accounts
    that run agents (audit.agent_accounts), never rely on this default. Findings younger than
    *min_age* seconds are left out (an agent still running is not a leak yet). With
    *baseline* (a :func:`snapshot` taken before the run), only what was added or changed
    since is reported, each with ``change`` (``added``/``modified``), the ``ssh_file`` and
    ``shell_rc`` kinds included; without one those two kinds are not reported.

    Report (the envelope of :mod:`report`): ``findings`` (each with ``kind``, ``path``,
    ``reason``, ``age`` in seconds, ``mtime``, ``uid``, ``user`` and kind-specific fields),
    ``counts`` per kind (and ``errors``), ``leaks`` (the total), ``users`` audited,
    ``errors`` (``{path, op, error}``), ``warnings``, ``complete`` (False when an error may
    have hidden something), ``changed`` (always False), ``roots`` and ``elapsed``.
    """
    started = time.monotonic()
    now = time.time() if now is None else now
    accounts = _accounts(accounts, users)
    roots = [spool_dir, *at_spool_dirs, tmp_dir, *sorted({a[2] for a in accounts if a[2]})]
    report = envelope.new_report(roots, findings=[], leaks=0, users=[])
    findings = _collect(accounts, users, tmp_dir, tmp_patterns, spool_dir, at_spool_dirs, runtime_root, now, report)
    findings = [f for f in findings if f["age"] >= min_age]
    if baseline is None:
        findings = [f for f in findings if f["kind"] not in BASELINE_ONLY_KINDS]
    else:
        findings = compare(findings, baseline)
    findings.sort(key=_sort_key)
    for item in findings:
        item.pop("_sig", None)
        item.pop("_key", None)
    counts = dict.fromkeys(KINDS, 0)
    for item in findings:
        counts[item["kind"]] += 1
    counts.update({k: v for k, v in report["counts"].items() if k not in counts})
    report.update(findings=findings, counts=counts, leaks=len(findings), complete=not report["errors"])
    return envelope.finish(report, started)


def finding_lines(report):
    """One line per finding, ``kind path: reason`` (``[added]`` in baseline mode), for people and logs:
    the path through text.escape, the reason one line (text.one_line)."""
    lines = []
    for item in report.get("findings", ()):
        change = " [%s]" % item["change"] if item.get("change") else ""
        lines.append("%s %s%s: %s" % (item["kind"], escape(item["path"]), change, one_line(item.get("reason", ""))))
    return lines


def snapshot(accounts=None, users=None, tmp_dir=TMP_DIR, tmp_patterns=DEFAULT_TMP_PATTERNS, spool_dir=SPOOL_DIR,
             now=None, at_spool_dirs=AT_SPOOL_DIRS, runtime_root=RUNTIME_ROOT):
    """What the host holds now, for a later ``audit(baseline=...)``: a JSON-ready dict.

    ``{"schema", "created", "items": [{"key", "sig"}], "errors", "complete"}``; every kind is
    recorded, ``ssh_file`` and ``shell_rc`` included. A snapshot that is not complete (an
    unreadable table) would make the later audit report what it missed as added.
    """
    now = time.time() if now is None else now
    accounts = _accounts(accounts, users)
    report = envelope.new_report([])
    findings = _collect(accounts, users, tmp_dir, tmp_patterns, spool_dir, at_spool_dirs, runtime_root, now, report)
    items = sorted(({"key": f["_key"], "sig": f["_sig"]} for f in findings), key=lambda i: i["key"])
    return {"schema": BASELINE_SCHEMA, "created": int(now), "items": items, "errors": report["errors"],
            "complete": not report["errors"]}


def audit_with_baseline_file(path, mode="auto", **kwargs):
    """Baseline mode with the snapshot in a file, for the CLI and the module.

    *mode* ``write`` records a snapshot at *path* (replacing one) and returns the plain
    audit; ``compare`` reads it and returns only what was added or changed since;
    ``auto`` writes when *path* does not exist and compares when it does. The report's
    ``baseline`` says what happened: ``{path, action: written|compared, created, entries}``.
    """
    if mode not in BASELINE_MODES:
        raise LeakAuditError("baseline mode %r: use one of %s" % (mode, ", ".join(BASELINE_MODES)))
    if mode == "auto":
        mode = "compare" if os.path.lexists(path) else "write"
    audit_args = {k: v for k, v in kwargs.items() if k != "min_age"}
    if mode == "write":
        snap = snapshot(**audit_args)
        try:
            write_baseline(path, snap)
        except OSError as exc:
            raise LeakAuditError("baseline %s: cannot write it: %s" % (path, exc.strerror or exc)) from None
        report = audit(**kwargs)
        report["baseline"] = {"path": path, "action": "written", "created": snap["created"],
                              "entries": len(snap["items"])}
        return report
    snap = read_baseline(path)
    report = audit(baseline=snap, **kwargs)
    report["baseline"] = {"path": path, "action": "compared", "created": snap.get("created"),
                          "entries": len(snap["items"])}
    if not snap.get("complete", True):
        report["warnings"].append("baseline %s was incomplete when written (%d errors): what it missed is "
                                  "reported as added" % (path, len(snap.get("errors") or ())))
    return report
