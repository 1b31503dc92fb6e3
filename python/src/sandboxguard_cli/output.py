# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The CLI side of the report envelope: one report -> --json or human output, and an exit code.

Every command that returns a library report ends with :func:`emit`, so ``--json`` always
prints the envelope (sandboxguard.report) and nothing else, warnings always go to stderr
as ``WARNING: ...`` lines in human mode, and the exit code follows one rule.

What does not end with :func:`emit`, on purpose: the event streams (``watch`` through
:func:`json_line`, ``guard``), which print one line per event for as long as they run;
``crontab`` (the shim's own messages and exit codes, as Debian's crontab) and
``home-env CMD`` (the command's exit status, as env(1)), which run something else; and
``bwrap-probe --print-apparmor-profile``, whose output is the profile file itself.
``tests/unit/test_cli_main.py`` fails when a command writes JSON by itself.

Both JSON writers pass the report through ``text.for_result`` (valid UTF-8 whatever a name
holds: a name that is not UTF-8 is carried escaped, its bytes in a ``<key>_b64``
sibling); every ``WARNING:`` line and every error line goes through ``text.one_line``.

Every JSON document the CLI prints (an envelope, or one line of an event stream) carries
``schema_version`` (:data:`SCHEMA_VERSION`); ``docs/schemas/cli-envelope.schema.json``
describes both, and a test validates every subcommand's ``--json`` against it. A change
that removes or renames a key, or changes its meaning, raises the version.
"""
import json
import sys

from sandboxguard import report as envelope
from sandboxguard._core.text import for_result, one_line

from .main import EXIT_FINDINGS, EXIT_OK

SCHEMA_VERSION = 1


def versioned(document):
    """``document`` with ``schema_version`` first (a new dict; the caller's is left alone)."""
    return dict({"schema_version": SCHEMA_VERSION}, **document)


def exit_code(report, findings=False):
    """1 when findings remain (the caller's rule), the report is partial, holds errors or warnings."""
    if findings or envelope.has_problems(report) or report.get("warnings"):
        return EXIT_FINDINGS
    return EXIT_OK


def emit(report, as_json, human, findings=False, out=None, err=None):
    """Print ``report`` (JSON, or ``human(report, out)`` plus warnings on ``err``); return the exit code."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if as_json:
        # one write, even unbuffered
        out.write(json.dumps(for_result(versioned(report)), indent=2, sort_keys=True) + "\n")
    else:
        human(report, out)
        for warning in report.get("warnings", ()):
            print("WARNING: %s" % one_line(warning), file=err)
    return exit_code(report, findings)


def json_line(event, out=None):
    """One JSON object on one line, flushed (the watcher's event stream)."""
    out = sys.stdout if out is None else out
    out.write(json.dumps(for_result(versioned(event)), sort_keys=True) + "\n")
    out.flush()


def warning_line(text, err=None, flush=False):
    """One ``WARNING:`` line on stderr (an event stream's warning), as emit prints them."""
    print("WARNING: %s" % one_line(text), file=sys.stderr if err is None else err, flush=flush)


def error_line(prefix, text, err=None, flush=False):
    """One error line, ``PREFIX: TEXT``, on stderr: the text through text.one_line."""
    print("%s: %s" % (prefix, one_line(text)), file=sys.stderr if err is None else err, flush=flush)
