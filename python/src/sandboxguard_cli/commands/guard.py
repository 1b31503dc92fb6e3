# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard guard`: strip setuid/setgid and file capabilities under the roots as they appear."""
import os
import signal
import sys
import time

from sandboxguard._core.text import escape, one_line
from sandboxguard._guard import fanotify, guard_scope
from sandboxguard._guard import guard as guardmod
from sandboxguard.roots import RootRefused, check_root

from .. import flags, output, runner_options, textfile
from ..main import EXIT_FINDINGS, EXIT_OK, UsageError


def register(subparsers):
    parser = subparsers.add_parser(
        "guard", help="strip setuid/setgid and file capabilities under the sandbox roots as they appear (fanotify)",
        description="Watch the roots with fanotify (root only) and strip every regular file made setuid, setgid "
                    "or given file capabilities there: created, chmod-ed, setcap-ed, moved in, or inside a tree "
                    "moved in. Sweeps every root at start, on queue overflow and when a root appears or changes. "
                    "Prints one line per fixed file (--json: one JSON object per line); logs go to stderr. "
                    "Runs until SIGTERM or SIGINT (exit 0). Without fanotify it exits 1 and names the fallback.")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="explicit roots (refused like strip refuses them: /, system paths, symlinks)")
    parser.add_argument("--hermes-home", action="append", default=[], metavar="DIR",
                        help="a HERMES_HOME whose <home>/sandboxes/docker and profiles' sandboxes/docker are guarded "
                             "(repeatable; default without PATH: $HERMES_HOME or ~/.hermes)")
    parser.add_argument("--sandbox-dir", metavar="DIR", default=os.environ.get("TERMINAL_SANDBOX_DIR"),
                        help="TERMINAL_SANDBOX_DIR: <DIR>/docker is guarded (default: from the environment)")
    parser.add_argument("--root", action="append", default=[], metavar="DIR",
                        help="an extra root the operator names that may not exist yet (repeatable; guarded once "
                             "it does; refused like PATH when it is a system path)")
    runner_options.add(parser)
    parser.add_argument("--docker-host", metavar="URL",
                        help="engine URL, Docker's or Podman's (default: every engine present); asked at every "
                             "rescan for bind mounts below the roots that are other filesystems, which need a mark of "
                             "their own")
    parser.add_argument("--no-engine", action="store_true", help="never ask a Docker engine")
    parser.add_argument("--probe", action="store_true",
                        help="only check that fanotify works here: exit 0, or 1 with the reason and the fallback")
    flags.add_walk_actions(parser)
    flags.add_dry_run(parser, "report what would be stripped; change nothing")
    parser.add_argument("--rescan-interval", type=float, default=guardmod.RESCAN_INTERVAL_S, metavar="S",
                        help="seconds between looks for new or changed roots (default %(default)s)")
    flags.add_json(parser, "one JSON object per fixed file on stdout")
    textfile.add_option(parser, "guard", long_running=True)
    parser.set_defaults(func=run_guard)


class _GuardMetrics:
    """The guard's textfile: findings by kind and errors since start. Written at start, when
    it stops, and at its rescans (every --rescan-interval) once --textfile-interval has
    passed or a file was fixed since the last write; each rescan is the guard's loop doing
    its job, so it is a success."""

    def __init__(self, metrics, interval, dry_run, clock=time.monotonic):
        self.metrics, self.interval, self.clock = metrics, interval, clock
        self.metrics.state["dry_run"] = dry_run
        self.metrics.state["findings"] = {"setid": 0, "caps": 0, "device": 0}  # guarding from the start
        self.file_errors = 0
        self.dirty = True
        self.written = None

    def on_record(self, record):
        state = self.metrics.state
        if record.get("error"):
            self.file_errors += 1
        else:
            actions = set(record.get("actions") or ())
            for kind, hit in (("setid", bool({"setuid", "setgid"} & actions)), ("caps", "caps" in actions),
                              ("device", "device" in actions)):
                if hit:
                    state["findings"][kind] = state["findings"].get(kind, 0) + 1
        self.dirty = True

    def beat(self, stats, force=False):
        """A rescan ran (or the guard starts or stops): maybe write, with the guard's error counts."""
        errors = self.metrics.state["errors"]
        errors["file"] = self.file_errors
        errors["other"] = max(0, stats.get("errors", 0) - self.file_errors)
        now = self.clock()
        if force or self.dirty or self.written is None or now - self.written >= self.interval:
            self.metrics.succeeded()
            error = self.metrics.write()
            if error:
                print("sandboxguard guard: %s" % one_line(error), file=sys.stderr, flush=True)
            self.dirty, self.written = False, now

    def failed(self, kind):
        self.metrics.state["errors"][kind] = self.metrics.state["errors"].get(kind, 0) + 1
        error = self.metrics.write()
        if error:
            print("sandboxguard guard: %s" % one_line(error), file=sys.stderr, flush=True)


def run_guard(args):
    if args.no_caps and args.no_setid:
        raise UsageError("--no-caps with --no-setid leaves nothing to strip; drop one of them")
    if args.rescan_interval <= 0:
        raise UsageError("--rescan-interval %s: give a positive number of seconds" % args.rescan_interval)
    paths = []
    for path in args.paths:
        try:
            paths.append(check_root(path))
        except RootRefused as exc:
            raise UsageError(str(exc)) from None

    def log(text):
        # one line whatever a name holds (the guard escapes the names it puts in a line)
        print("sandboxguard guard: %s" % one_line(text), file=sys.stderr, flush=True)

    metrics = textfile.open_for(args, "guard")
    watcher = None if metrics is None else _GuardMetrics(metrics, args.textfile_interval, dry_run=args.dry_run)

    def emit(record):
        if watcher is not None:
            watcher.on_record(record)
        if args.json:
            output.json_line(record)  # text.for_result: valid UTF-8, names lossless
            return
        sys.stdout.write(one_line(guardmod.human_line(record)) + "\n")
        sys.stdout.flush()

    roots, engine = guard_scope.sources(paths, args.hermes_home, args.sandbox_dir, args.root, args.docker_host,
                                        engine=not args.no_engine, providers=runner_options.providers(args))
    guard = None
    if watcher is not None:
        derive = roots

        def roots():  # called at start and at every rescan, from the guard's loop
            found = derive()
            if guard is not None and guard.fan_fd is not None:
                watcher.beat(guard.stats)
            return found
    guard = guardmod.Guard(roots, emit, log,
                           dry_run=args.dry_run, caps=not args.no_caps, setuid=not args.no_setid,
                           setgid=not args.no_setid, rescan_interval=args.rescan_interval, engine_source=engine)
    try:
        guard.open()
    except fanotify.FanotifyUnavailable as exc:
        log("no real-time strip: %s; falling back: %s" % (exc.strerror or exc, guardmod.FALLBACK))
        if watcher is not None and not args.probe:
            watcher.failed("fanotify")
        return EXIT_FINDINGS
    if args.probe:
        tried, failures = guard.probe_roots()
        guard.close()
        if failures:
            log("no real-time strip for %s; falling back: %s" % (
                "; ".join("%s: fanotify_mark: %s" % (escape(path), why) for path, why in failures), guardmod.FALLBACK))
            return EXIT_FINDINGS
        log("fanotify works here (filesystem marks with file handles and names%s)" % (
            " on " + ", ".join(escape(path) for path in tried) if tried else "; no root exists yet to try"))
        return EXIT_OK
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, guard.stop)
    try:
        guard.run(wake_fd=wake_r)
    finally:
        if watcher is not None:
            watcher.beat(guard.stats, force=True)
        guard.close()
        signal.set_wakeup_fd(-1)
        os.close(wake_r)
        os.close(wake_w)
    stats = guard.stats
    log("stopped: %d fixed, %d events in %d batches (%d directories outside the roots), %d sweeps, %d overflows, "
        "%d errors" % (stats["fixed"], stats["events"], stats["batches"], stats["filtered"], stats["sweeps"],
                       stats["overflows"], stats["errors"]))
    return EXIT_OK
