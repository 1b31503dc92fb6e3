# GENERATED from python/src/sandboxguard/report.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The one report envelope every operation returns (see docs/architecture.md).

Every library operation (strip, sweep, fetch, home_mode, crontab, leaks, ...) builds its
result from :func:`new_report`, so the CLI's ``--json``, a module's registered result and a
role's aggregation read the same names::

    {"roots": [str], "changed": bool, "complete": bool,
     "errors": [{"path": str, "op": str, "error": str}], "warnings": [str],
     "counts": {name: int}, "elapsed": float, ...operation-specific keys}

- ``roots``: what the operation was asked to look at, as strings (``os.fsdecode``).
- ``changed``: something changed, or, in a dry run (check mode), something *would* change;
  the same rule as Ansible's check mode, for every operation and every sweep method.
- ``complete``: False when a budget ran out or a step could not run: the result is partial.
- ``errors``: per-path failures, always ``{path, op, error}``; ``counts["errors"]`` counts
  them all even when the list is capped.
- ``warnings``: one line each, naming the path and what to do (add_warning makes each one
  printable line: text.one_line; a name in it is text.escape-d where it is built).
- ``elapsed``: seconds, rounded to milliseconds.

Pure functions over plain dicts: no I/O, standard library only.
"""
import errno
import os
import stat
import time
import warnings

from ._core.text import one_line

__all__ = [
    "ENVELOPE_KEYS",
    "add_error",
    "add_warning",
    "error_entry",
    "error_text",
    "finish",
    "has_problems",
    "merge",
    "mode_text",
    "new_report",
]

ENVELOPE_KEYS = ("roots", "changed", "complete", "errors", "warnings", "counts", "elapsed")


def _text(path):
    if isinstance(path, bytes):
        return os.fsdecode(path)
    return str(path)


def new_report(roots, **extra):
    """An empty envelope for ``roots`` (one path or a list of paths, str or bytes).

    ``extra`` adds operation-specific keys or overrides a default (``counts={...}``).
    """
    if isinstance(roots, (str, bytes, os.PathLike)):
        roots = [roots]
    report = {"roots": [_text(os.fspath(r)) for r in (roots or ())], "changed": False, "complete": True,
              "errors": [], "warnings": [], "counts": {}, "elapsed": 0.0}
    report.update(extra)
    return report


def error_text(error):
    """One line for an error: a str as it is; an OSError as ``ENOENT: No such file...``.

    EPERM adds the usual cause, because root gets it on immutable or append-only files.
    """
    if isinstance(error, str):
        return error
    code = getattr(error, "errno", None)
    if isinstance(error, OSError) and code:
        text = "%s: %s" % (errno.errorcode.get(code, "E%d" % code), error.strerror or error)
        if code == errno.EPERM:
            text += " (immutable or append-only? check lsattr; or not root)"
        return text
    detail = str(error)
    return "%s: %s" % (type(error).__name__, detail) if detail else type(error).__name__


def error_entry(path, op, error):
    """One error as the envelope lists it: ``{path, op, error}`` (``error`` is error_text of
    a str or an exception, as one printable line). The one place such a dict is made:
    :func:`add_error` records one; a result that is not an envelope (a sweep step, an audit
    check before its verdict) lists them."""
    return {"path": _text(path) if path is not None else None, "op": op, "error": one_line(error_text(error))}


def add_error(report, path, op, error, max_listed=None):
    """Record one error as ``{path, op, error}``; counted always, listed up to ``max_listed``."""
    counts = report.setdefault("counts", {})
    counts["errors"] = counts.get("errors", 0) + 1
    errors = report.setdefault("errors", [])
    entry = error_entry(path, op, error)
    if max_listed is None or len(errors) < max_listed:
        errors.append(entry)
    return entry


def add_warning(report, text):
    """Add one warning line (text.one_line of it; a repeat of the same line is not added twice)."""
    text = one_line(text)
    warnings = report.setdefault("warnings", [])
    if text not in warnings:
        warnings.append(text)
    return text


def mode_text(mode):
    """The permission bits (setid and sticky included) as octal text with a leading zero.

    ``0644``, ``0755``, ``04755``, ``02755``, ``0000``: what ``stat -c %a`` prints with a
    ``0`` in front, and what chmod(1) and Ansible's ``mode`` accept back. File type bits
    are dropped, so an ``st_mode`` can be passed as it is.
    """
    return "0%03o" % stat.S_IMODE(mode)


def dry_run_arg(dry_run, check, where, alias="check"):
    """The one name for "change nothing, report what would change" is ``dry_run`` (every
    operation of the library that changes the system). ``check`` (``alias``: the old name,
    ``check_mode`` for nosuid.ensure) is its deprecated alias: given, it wins and a
    DeprecationWarning names ``where``."""
    if check is None:
        return bool(dry_run)
    warnings.warn("%s: %s= is deprecated, use dry_run=" % (where, alias), DeprecationWarning, stacklevel=3)
    return bool(check)


def finish(report, started):
    """Set ``elapsed`` from a ``time.monotonic()`` start; return the report."""
    report["elapsed"] = round(time.monotonic() - started, 3)
    return report


def merge(report, sub, max_listed=None):
    """Fold ``sub`` into ``report`` (parallel walkers, the steps of a sweep); return ``report``.

    ``changed`` is any, ``complete`` is all, numeric ``counts`` add up, roots are united in
    order, ``errors``/``warnings`` and every other list both hold are extended. ``files`` and
    ``errors`` stay within ``max_listed``; files left out add to ``counts["unlisted"]``.
    ``elapsed`` is left alone: the caller measures its own wall time.
    """
    report["changed"] = bool(report.get("changed")) or bool(sub.get("changed"))
    report["complete"] = bool(report.get("complete", True)) and bool(sub.get("complete", True))
    for root in sub.get("roots", ()):
        if root not in report.setdefault("roots", []):
            report["roots"].append(root)
    counts = report.setdefault("counts", {})
    for key, value in sub.get("counts", {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            counts[key] = counts.get(key, 0) + value
    for key, value in sub.items():
        if key == "roots" or not isinstance(value, list):
            continue
        into = report.setdefault(key, [])
        if not isinstance(into, list):
            continue
        if key == "warnings":
            for line in value:
                add_warning(report, line)
            continue
        if max_listed is not None and key in ("files", "errors"):
            room = max(0, max_listed - len(into))
            into.extend(value[:room])
            if key == "files" and len(value) > room:
                counts["unlisted"] = counts.get("unlisted", 0) + len(value) - room
            continue
        into.extend(value)
    return report


def has_problems(report):
    """True when the report is partial or holds errors: what makes a CLI exit 1."""
    return not report.get("complete", True) or bool(report.get("errors")) or bool(
        report.get("counts", {}).get("errors"))
