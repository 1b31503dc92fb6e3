# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Fetch one file back from a remote sandbox: guarded, size-capped, sanitised on arrival.

The sandbox is reached through an *exec channel*: any callable
``exec_fn(argv) -> (rc, stdout_bytes, stderr_bytes)`` that runs ``argv`` (always
``["/bin/sh", "-c", PROGRAM]``) inside the sandbox. Transports: ``transport_ssh``
(paramiko), ``transport_docker`` (the Engine API's exec, standard library), ``transport_local`` (subprocess),
and the ``safe_fetch`` action plugin (the task's Ansible connection). String-based
channels turn the argv into one command line with :func:`shell_join`.

The protocol, in order; a refusal at any step ends it with nothing written:

1. strict mode: refused before anything else; the channel is never used.
2. pass 1 (controller, pure): the requested path must be absolute, normalised, free of
   control characters and outside the denylist (:func:`check_path`).
3. resolve (sandbox): ``readlink -f``; an unresolvable or missing path fails closed.
4. pass 2 (controller, pure): the resolved path passes the same :func:`check_path`, against
   the home as given and as resolved in the sandbox (a home behind a symlink).
5. read (sandbox), on the resolved path only: refuse a symlink, a FIFO or anything but a
   regular file *before* opening it (opening a FIFO would block); open it once on
   descriptor 3 under a watchdog (a FIFO swapped in between the test and the open kills
   the program after ``open_timeout`` seconds instead of hanging); prove through the
   descriptor that the opened file *is* the validated path (``readlink /proc/self/fd/3``
   must equal it, so a name swapped after pass 2 cannot change what is read) and that it
   is a regular file with one link (``stat -L`` on the descriptor); refuse a size over
   ``max_bytes``; then ``head -c max_bytes+1`` from that same descriptor, base64, every
   line tagged with a random token so login-shell noise cannot be mistaken for payload.
6. decode (controller): strict base64; more than ``max_bytes`` or a length other than the
   size the descriptor reported is refused.
7. land (controller): temp file in the destination directory, fsync, chmod 0644 (0600
   with ``private``; execute bits only with ``executable``; never setid), rename, fsync of
   the directory. A fresh file carries no xattrs of the original.

What this does not protect against: a sandbox whose own tools lie (a replaced ``head``
or ``readlink``). The controller-side guarantees hold regardless: names are checked
before any byte moves, at most ``output_limit(max_bytes)`` bytes are accepted by our
transports, decoding is strict, and what lands is a plain non-setid file.

Where the pieces live (the private package ``_fetch``): ``policy`` (what may be fetched, the
limits, the error classes), ``program`` (what runs in the sandbox), ``output`` (reading what it
printed), ``landing`` (writing the file on the controller). This module is the protocol.
"""
import hashlib
import os
import stat
import time

from . import report as envelope
from ._core.text import escape
from ._fetch.landing import land_file, make_dest_dir
from ._fetch.output import decode_payload, parse_output
from ._fetch.policy import (
    DEFAULT_MAX_BYTES,
    DEFAULT_OPEN_TIMEOUT_S,
    FetchError,
    TransportUnavailable,
    check_hermes_home,
    check_home,
    check_path,
    expand_home,
    output_limit,
    safe_name,
)
from ._fetch.program import new_token, read_program, resolve_program

__all__ = ["FetchError", "TransportUnavailable", "check_path", "expand_home", "fetch"]


def _report(src, dest_dir, max_bytes, home, hermes_home, strict):
    """The report envelope (report.new_report) with the fetch's own keys; a refusal is
    also its one error, {path: src, op: stage, error: reason}."""
    return envelope.new_report(
        [src] if isinstance(src, (str, bytes)) else [],
        src=src, path=None, resolved=None, dest=None, dest_dir=dest_dir, fetched=False, refused=None,
        refused_code=None, stage=None, size=None, sha256=None, mode=None, remote_mode=None, max_bytes=max_bytes,
        remote_home=home, resolved_home=None, remote_hermes_home=hermes_home, resolved_hermes_home=None,
        strict=bool(strict), bytes_received=0, noise_lines=0,
    )


class _Refused(Exception):
    """One step refused; carries (stage, code, reason) up to :func:`fetch`."""


def _refuse(report, stage, code, reason, started):
    report.update(refused=reason, refused_code=code, stage=stage, elapsed=round(time.monotonic() - started, 3))
    envelope.add_error(report, report["src"] if isinstance(report["src"], (str, bytes)) else "", stage, reason)
    return report


def _first_line(stderr):
    text = stderr.decode("utf-8", "replace").strip().splitlines() if stderr else []
    return (", stderr: %s" % text[0][:200]) if text else ""


def _run(exec_fn, argv, report):
    rc, out, err = exec_fn(argv)
    out = out or b""
    report["bytes_received"] += len(out) + len(err or b"")
    return rc, out, err or b""


def _parse(out, token, stage, report):
    try:
        parsed = parse_output(out, token)
    except ValueError as exc:
        raise _Refused(stage, "protocol", "malformed sandbox output: %s" % exc) from None
    report["noise_lines"] += parsed["noise"]
    return parsed


def _resolve_step(exec_fn, path, home, hermes_home, report):
    """Step 3: ``readlink -f`` of the path and of the homes in the sandbox; returns the homes to check against."""
    token = new_token()
    rc, out, err = _run(exec_fn, resolve_program(path, token, home, hermes_home), report)
    parsed = _parse(out, token, "resolve", report)
    if parsed["refuse_code"]:
        raise _Refused("resolve", parsed["refuse_code"], "%s: %s" % (escape(path), parsed["refuse_reason"]))
    if parsed["resolved"] is None or not parsed["done"]:
        raise _Refused("resolve", "protocol", "the sandbox did not report a resolved path (exit status %s%s)"
                       % (rc, _first_line(err)))
    report["resolved"] = parsed["resolved"].decode("utf-8", "surrogateescape")
    # A home may itself be (or lie under) a symlink, /home/agent -> /data/agent: the resolved
    # path must then pass the check against the resolved home as well.
    homes, hermes_homes = [home], [hermes_home]
    for given, key, checker, found in ((home, "resolved_home", check_home, homes),
                                       (hermes_home, "resolved_hermes_home", check_hermes_home, hermes_homes)):
        if given is None:
            continue
        if parsed[key] is None:
            raise _Refused("resolve", "protocol", "the sandbox did not report its resolved %s"
                           % ("home" if key == "resolved_home" else "Hermes home"))
        resolved = parsed[key].decode("utf-8", "surrogateescape")
        report[key] = resolved
        try:
            found.append(checker(resolved))
        except FetchError as exc:
            raise _Refused("pass2", "denylisted", "%s resolves to %s: %s"
                           % (escape(given), escape(resolved), exc)) from None
    return homes, [h for h in hermes_homes if h is not None]


def _pass2(resolved, homes, hermes_homes):
    """Step 4: the resolved path against every spelling of the homes."""
    for candidate in homes:
        problem = check_path(resolved, candidate, hermes_homes)
        if problem:
            raise _Refused("pass2", problem[0], "resolved to %s: %s" % (escape(resolved), problem[1]))


def _read_step(exec_fn, resolved, max_bytes, open_timeout, report):
    """Steps 5 and 6: read through the checked descriptor, verify and decode; returns the bytes."""
    token = new_token()
    rc, out, err = _run(exec_fn, read_program(resolved, token, max_bytes, open_timeout), report)
    if len(out) > output_limit(max_bytes):
        raise _Refused("read", "too_large", "the sandbox sent %d bytes, more than max_bytes=%d allows"
                       % (len(out), max_bytes))
    parsed = _parse(out, token, "read", report)
    if parsed["stat"]:
        report["remote_mode"] = envelope.mode_text(parsed["mode"])
    if parsed["refuse_code"]:
        raise _Refused("read", parsed["refuse_code"], "%s: %s" % (escape(resolved), parsed["refuse_reason"]))
    if not (parsed["stat"] and parsed["begin"] and parsed["end"] and parsed["done"]):
        raise _Refused("read", "protocol",
                       "the sandbox program ended early (exit status %s%s; -9/137 means the open watchdog killed it)"
                       % (rc, _first_line(err)))
    mode_bits, nlink, size = parsed["mode"], parsed["nlink"], parsed["size"]
    # The same decisions as inside the sandbox, on the values the sandbox reported.
    if not stat.S_ISREG(mode_bits):
        raise _Refused("read", "not_regular", "%s: not a regular file" % escape(resolved))
    if nlink != 1:
        raise _Refused("read", "hard_link", "%s: %d hard links" % (escape(resolved), nlink))
    if size > max_bytes:
        raise _Refused("read", "too_large", "%s: %d bytes > max_bytes=%d" % (escape(resolved), size, max_bytes))
    try:
        data = decode_payload(parsed["data"])
    except ValueError as exc:
        raise _Refused("decode", "decode", "%s: %s" % (escape(resolved), exc)) from None
    if len(data) > max_bytes:
        raise _Refused("decode", "too_large", "%s: more than max_bytes=%d bytes arrived although the size said %d"
                       % (escape(resolved), max_bytes, size))
    if len(data) != size:
        raise _Refused("decode", "changed", "%s: %d bytes arrived but the descriptor said %d (file changed while "
                       "read?)" % (escape(resolved), len(data), size))
    return data


def fetch(exec_fn, src, dest_dir, *, max_bytes=DEFAULT_MAX_BYTES, remote_home=None, remote_hermes_home=None,
          strict=False, name=None, private=False, executable=False, overwrite=True,
          open_timeout=DEFAULT_OPEN_TIMEOUT_S, dry_run=False, create_dest=False, after_pass2=None):
    """Fetch ``src`` from the sandbox behind ``exec_fn`` into ``dest_dir``; return a report.

    ``exec_fn(argv) -> (rc, stdout, stderr)`` runs ``argv`` in the sandbox. ``src`` is an
    absolute path, or ``~/...`` when ``remote_home`` is known (refused when it is not); the
    report's ``path`` is the absolute path asked for. ``remote_hermes_home`` is the
    sandbox's HERMES_HOME when known: its credential stores are refused as those of
    ``~/.hermes`` are. The report has ``fetched`` and ``changed`` (bools), ``dest``,
    ``size``, ``sha256``, ``mode`` of what landed, ``remote_mode`` (octal string, setid
    bits shown but never carried), ``refused`` (a sentence, or None) with ``refused_code``
    and ``stage`` (strict, pass1, resolve, pass2, read, decode, done), and
    ``bytes_received`` (every stdout+stderr byte the channel delivered). A channel with a
    ``max_output`` attribute (ours) gets it set to ``output_limit(max_bytes)``.
    ``after_pass2`` is a hook called between pass 2 and the read (tests use it to swap
    names in). ``dry_run`` (check mode) runs every check and the transfer, reports whether
    the destination would change, and writes nothing (``fetched`` false). A missing
    ``dest_dir`` is an error unless ``create_dest``: then it is created only when a file
    is about to land, so a refusal or a dry run writes nothing at all. Bad input (a
    malformed home, a missing destination) raises FetchError; so do our transports when
    the channel fails; other exceptions of ``exec_fn`` propagate.
    """
    started = time.monotonic()
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0:
        raise FetchError("max_bytes must be a non-negative integer, got %r" % (max_bytes,))
    if hasattr(exec_fn, "max_output"):
        # Our transports stop reading there; see output_limit().
        exec_fn.max_output = output_limit(max_bytes)
    home = check_home(remote_home)
    hermes_home = check_hermes_home(remote_hermes_home)
    report = _report(src, dest_dir, max_bytes, home, hermes_home, strict)
    if strict:
        return _refuse(report, "strict", "strict", "strict mode: remote files are never fetched", started)
    if not os.path.isdir(dest_dir) and not ((create_dest or dry_run) and not os.path.lexists(dest_dir)):
        raise FetchError("destination directory %s does not exist; create it first" % dest_dir)
    path = expand_home(src, home)
    report["path"] = path if isinstance(path, str) and path.startswith("/") else None
    target_name = safe_name(name if name else path if isinstance(path, str) else "")
    try:
        problem = check_path(path, home, [hermes_home])
        if problem:
            raise _Refused("pass1", problem[0], problem[1])
        homes, hermes_homes = _resolve_step(exec_fn, path, home, hermes_home, report)
        _pass2(report["resolved"], homes, hermes_homes)
        if after_pass2 is not None:
            after_pass2(report["resolved"])
        data = _read_step(exec_fn, report["resolved"], max_bytes, open_timeout, report)
    except _Refused as refusal:
        return _refuse(report, *refusal.args, started)
    held = make_dest_dir(dest_dir) if create_dest and not dry_run else None
    try:
        dest, mode, changed = land_file(data, dest_dir, target_name, private=private, executable=executable,
                                        overwrite=overwrite, dry_run=dry_run, held=held)
    finally:
        if held is not None:
            held.close()
    report.update(dest=dest, fetched=not dry_run, changed=changed, size=len(data),
                  sha256=hashlib.sha256(data).hexdigest(), mode=envelope.mode_text(mode), stage="done",
                  elapsed=round(time.monotonic() - started, 3))
    return report
