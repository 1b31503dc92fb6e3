# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""``--textfile PATH`` of ``sweep``, ``watch`` and ``guard``: a node_exporter textfile.

node_exporter's textfile collector reads every ``*.prom`` file in its directory (Debian's
prometheus-node-exporter: ``/var/lib/prometheus/node-exporter``) in Prometheus' text
exposition format. What each command writes there, every sample labelled with its
``command`` so the three can share one directory (node_exporter merges the files; a
metric family must have one HELP text in all of them, so the texts are constants here):

``sandboxguard_last_success_timestamp_seconds``
    Unix time of the last success, carried over from the file when this run failed (0:
    never). sweep: a run that answered from every engine asked and swept every sandbox
    completely, without errors or warnings. watch, guard: the last time the process was
    doing its job (following the engine's events with its last sweep complete; guarding
    its roots), written at start, after each sweep and every interval.
``sandboxguard_last_run_timestamp_seconds``
    Unix time the command last wrote the file, success or not.
``sandboxguard_findings{kind}``
    Privileged artifacts found (and, unless a dry run, fixed): ``setid``, ``caps``,
    ``chown`` (files given back by ownership return), ``device`` (device nodes made
    root-owned 0000) where the walk counts them. sweep: by this run; watch: by its last sweep; guard: since it started.
    Absent when nothing was checked (no engine answered, the watcher has not swept yet):
    never a 0 that nobody measured.
``sandboxguard_errors_total{kind}``
    Errors since the process started (a sweep run is one process), by kind, every kind of
    the command present from the start (a counter that appears at 1 is missed by
    ``increase()``): ``file`` (a file or directory the walk could not read or fix),
    ``warning`` (a sandbox not swept completely, an engine that failed while others
    answered), ``engine`` (no engine answered, the watcher lost its events, a container
    could not be inspected); the guard's ``file``, ``other`` (a sweep job or an event it
    could not handle) and ``fanotify`` (it could not start).
``sandboxguard_engine_up{engine}``
    1 for each engine that answered, 0 for one that did not (sweep, watch).
``sandboxguard_dry_run``
    1 when the command only reports (``--dry-run``): findings stay in place.

The file is replaced atomically (a temporary file beside it that the ``*.prom`` glob does
not match, fsync, rename: atomicfile.write_at) under a directory opened component by
component without following any symlink (safefs.open_dir), mode 0644 so node_exporter's
own user reads it. Label values are escaped as the format says (backslash, double quote,
newline).
"""
import math
import os
import re
import time

from sandboxguard._core import atomicfile, safefs
from sandboxguard._core.text import escape, one_line

from .main import UsageError

SUFFIX = ".prom"
MODE = 0o644
MAX_PREVIOUS_BYTES = 1 << 20  # the previous file is read only for its last success
DEFAULT_DIRECTORY = "/var/lib/prometheus/node-exporter"  # Debian's prometheus-node-exporter
FINDING_KINDS = ("setid", "caps", "chown")
OPTIONAL_FINDING_KINDS = ("device",)

LAST_SUCCESS = "sandboxguard_last_success_timestamp_seconds"
LAST_RUN = "sandboxguard_last_run_timestamp_seconds"
FINDINGS = "sandboxguard_findings"
ERRORS = "sandboxguard_errors_total"
ENGINE_UP = "sandboxguard_engine_up"
DRY_RUN = "sandboxguard_dry_run"

# (name, type, HELP): one text per family whichever command writes it (node_exporter
# refuses a family whose HELP differs between two files of its directory).
FAMILIES = (
    (LAST_SUCCESS, "gauge", "Unix time of the last successful sandboxguard run (sweep), or the last time a "
                            "long-running one (watch, guard) was doing its job; 0: never."),
    (LAST_RUN, "gauge", "Unix time sandboxguard last wrote this file, success or not."),
    (FINDINGS, "gauge", "Privileged artifacts sandboxguard found (and fixed unless dry_run is 1), by kind: "
                        "by the last run (sweep), the last sweep (watch), since start (guard)."),
    (ERRORS, "counter", "Errors sandboxguard met since the process started (a sweep run is one process), by kind."),
    (ENGINE_UP, "gauge", "Whether a container engine answered sandboxguard (1) or not (0)."),
    (DRY_RUN, "gauge", "1 when sandboxguard only reports (--dry-run) and leaves what it finds in place."),
)


def label_value(text):
    """A label value as the exposition format writes it: backslash, double quote and line
    feed escaped (one line whatever ``text`` holds; non-printable characters and bytes
    that are not UTF-8 first made printable by text.one_line/escape)."""
    text = one_line(escape(text) if isinstance(text, bytes) else text)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def sample(name, labels, value):
    """One sample line: ``name{k="v",...} value`` (labels in the order given)."""
    inner = ",".join('%s="%s"' % (key, label_value(val)) for key, val in labels)
    return "%s{%s} %s" % (name, inner, number(value))


def number(value):
    """A sample value: integers as integers, floats with enough digits, NaN/Inf as the format spells them."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(command, state):
    """The textfile for ``command`` from ``state`` (a dict: last_success, last_run,
    findings {kind: n}, errors {kind: n}, engines {name: up}, dry_run); pure."""
    base = [("command", command)]
    rows = {
        LAST_SUCCESS: [sample(LAST_SUCCESS, base, state.get("last_success") or 0)],
        LAST_RUN: [sample(LAST_RUN, base, state["last_run"])],
        FINDINGS: [sample(FINDINGS, [*base, ("kind", kind)], n)
                   for kind, n in sorted((state.get("findings") or {}).items())],
        ERRORS: [sample(ERRORS, [*base, ("kind", kind)], n) for kind, n in sorted(state["errors"].items())],
        ENGINE_UP: [sample(ENGINE_UP, [*base, ("engine", name)], up) for name, up in sorted(state["engines"].items())],
        DRY_RUN: [sample(DRY_RUN, base, bool(state.get("dry_run")))],
    }
    lines = []
    for name, kind, text in FAMILIES:
        if not rows[name]:
            continue
        lines.append("# HELP %s %s" % (name, text))
        lines.append("# TYPE %s %s" % (name, kind))
        lines.extend(rows[name])
    return "\n".join(lines) + "\n"


def findings_of(counts):
    """{kind: n} of a report's counts: every kind in FINDING_KINDS, and the optional ones it counts."""
    found = {kind: int(counts.get(kind, 0) or 0) for kind in FINDING_KINDS}
    for kind in OPTIONAL_FINDING_KINDS:
        if kind in counts:
            found[kind] = int(counts[kind] or 0)
    return found


ERROR_KINDS = {"sweep": ("engine", "file", "warning"), "watch": ("engine", "file", "warning"),
               "guard": ("fanotify", "file", "other")}


def add_errors(errors, report):
    """Add a report's errors (``file``: every one it counted, listed or not) and its warnings
    (``warning``) to ``errors`` ({kind: n}); return it."""
    counted = max(int((report.get("counts") or {}).get("errors", 0) or 0), len(report.get("errors") or ()))
    errors["file"] = errors.get("file", 0) + counted
    errors["warning"] = errors.get("warning", 0) + len(report.get("warnings") or ())
    return errors


class Textfile:
    """One command's textfile: the state to write and where.

    Opening it checks the path (absolute, a ``*.prom`` name, its directory reached with no
    symlink followed) and reads the last success from the file already there, so a run
    that fails keeps the time of the last one that did not. Raises UsageError on a bad
    path; :meth:`write` returns an error text (or None) rather than raising, so a metrics
    file that cannot be written never hides what the command did.
    """

    def __init__(self, path, command, clock=time.time):
        self.path = os.fsdecode(path)
        self.command = command
        self.clock = clock
        directory, self.name = os.path.split(self.path)
        if not self.path.startswith("/"):
            raise UsageError("--textfile %s: give an absolute path (e.g. %s/sandboxguard-%s%s)"
                             % (escape(self.path), DEFAULT_DIRECTORY, command, SUFFIX))
        if not self.name.endswith(SUFFIX) or self.name == SUFFIX or self.name.startswith("."):
            raise UsageError("--textfile %s: node_exporter reads only files named *%s (not starting with a dot); "
                             "name it e.g. sandboxguard-%s%s" % (escape(self.path), SUFFIX, command, SUFFIX))
        self.directory = directory or "/"
        try:
            with self._open_dir() as held:
                previous = self._read_previous(held.fd)
        except (OSError, safefs.PathRefused) as exc:
            raise UsageError("--textfile %s: %s; give a directory that exists, reached without symlinks "
                             "(node_exporter's --collector.textfile.directory)"
                             % (escape(self.path), _why(exc))) from None
        self.state = {"last_success": previous, "last_run": 0, "findings": None,
                      "errors": {kind: 0 for kind in ERROR_KINDS[command]}, "engines": {}, "dry_run": False}

    def _open_dir(self):
        return safefs.open_dir(self.directory, follow_trusted_links=False)

    def _read_previous(self, dir_fd):
        """The last success this command wrote into the file already there, or None."""
        try:
            data, _st = safefs.read_at(dir_fd, self.name, limit=MAX_PREVIOUS_BYTES)
        except (OSError, safefs.PathRefused):
            return None  # not ours to read (a FIFO, a symlink, too large): the file is replaced whole anyway
        return previous_success(data.decode("utf-8", "replace"), self.command) if data is not None else None

    def succeeded(self):
        self.state["last_success"] = self.clock()

    def write(self):
        """Write the file now; None, or the error text (the caller says it on stderr)."""
        self.state["last_run"] = self.clock()
        text = render(self.command, self.state)
        try:
            with self._open_dir() as held:
                atomicfile.write_at(held.fd, self.name, text, mode=MODE)
        except (OSError, safefs.PathRefused) as exc:
            return "--textfile %s: not written: %s" % (escape(self.path), _why(exc))
        return None


def _why(exc):
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


_SUCCESS_LINE = re.compile(r'^%s\{command="([^"\\]*)"\} ([0-9.e+]+)$' % LAST_SUCCESS)


def previous_success(text, command):
    """The last success ``command`` wrote in a textfile's ``text`` (None when absent, 0 or
    not a finite number; pure)."""
    for line in text.splitlines():
        match = _SUCCESS_LINE.match(line)
        if match and match.group(1) == command:
            try:
                value = float(match.group(2))
            except ValueError:
                return None
            return value if math.isfinite(value) and value > 0 else None
    return None


DEFAULT_INTERVAL_S = 60.0  # how often watch and guard rewrite the file while they run


def add_option(parser, command, long_running=False):
    """``--textfile PATH`` (and, for watch and guard, ``--textfile-interval S``) on ``parser``."""
    parser.add_argument("--textfile", metavar="PATH",
                        help="write a node_exporter textfile here, atomically (a *.prom file in node_exporter's "
                             "textfile directory, e.g. %s/sandboxguard-%s.prom): last success, findings and "
                             "errors by kind" % (DEFAULT_DIRECTORY, command))
    if long_running:
        parser.add_argument("--textfile-interval", type=float, default=DEFAULT_INTERVAL_S, metavar="S",
                            help="seconds between rewrites of the textfile while running (default %(default)s)")


def open_for(args, command):
    """The Textfile ``args.textfile`` names for ``command``, or None when not asked for."""
    if not getattr(args, "textfile", None):
        return None
    interval = getattr(args, "textfile_interval", DEFAULT_INTERVAL_S)
    if not (math.isfinite(interval) and interval > 0):
        raise UsageError("--textfile-interval %s: give a positive number of seconds" % interval)
    return Textfile(args.textfile, command)


def engines_up(rows):
    """{engine: 1 when it answered, 0 when it did not} of a result's ``engines`` rows
    ({name, error}: the sweep's, or the watcher's)."""
    return {row.get("name") or row.get("url") or "unknown": 0 if row.get("error") else 1 for row in rows}
