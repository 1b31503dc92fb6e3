# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard sweep` and `sandboxguard watch`: Docker sandboxes, now and on container stop."""
import os
import shlex
import signal
import stat
import threading

from sandboxguard import docker_engine, owners
from sandboxguard import report as envelope
from sandboxguard import sweep as sweepmod
from sandboxguard._core import inputs
from sandboxguard._core.text import escape, one_line

from .. import flags, output, runner_options, textfile
from ..main import EXIT_FINDINGS, EXIT_OK, UsageError


def _owner(text):
    if text is None:
        return None
    try:
        return owners.parse_owner(text)
    except ValueError as exc:
        raise UsageError("--owner %s" % exc) from None


def _scope_args(parser):
    parser.add_argument("--hermes-home", action="append", default=[], metavar="DIR",
                        help="a HERMES_HOME (repeatable; default $HERMES_HOME or ~/.hermes of the invoking user)")
    parser.add_argument("--sandbox-dir", metavar="DIR", default=os.environ.get("TERMINAL_SANDBOX_DIR"),
                        help="TERMINAL_SANDBOX_DIR, when the agent sets one (default: from the environment)")
    parser.add_argument("--root", action="append", default=[], metavar="DIR",
                        help="an extra <sandbox>/docker root the operator names (repeatable)")
    runner_options.add(parser)
    parser.add_argument("--method", choices=sweepmod.METHODS, default=sweepmod.DEFAULT_METHOD,
                        help="native: walk on this host (needs root); container: a disposable hardened container")
    parser.add_argument("--image", help="image for --method container (needs find, chown, chmod, ls, sort, od, sh)")
    parser.add_argument("--owner", metavar="USER[:GROUP]",
                        help="ownership return target, names or ids; USER alone means its primary group "
                             "(default: each sandbox's owner)")
    parser.add_argument("--no-chown", action="store_true", help="skip ownership return")
    parser.add_argument("--budget-per-step", default=str(sweepmod.DEFAULT_BUDGET_PER_STEP_S), metavar="S",
                        help="seconds for each step (default %(default)s; 0 = none)")
    parser.add_argument("--docker-host", metavar="URL",
                        help="engine URL, Docker's or Podman's (default: every engine present: DOCKER_HOST, "
                             "%s, %s, rootless Podman's)" % (docker_engine.DOCKER_SOCKET, docker_engine.PODMAN_SOCKET))


def register(subparsers):
    sweep = subparsers.add_parser(
        "sweep", help="sweep the bind mounts of Docker sandboxes (ownership return, setid, caps)",
        description="Find every container's bind mounts below the host-derived <sandbox>/docker roots and sweep "
                    "them: ownership return, then setuid/setgid strip, then file capabilities, each step with "
                    "its own budget. Without --container, the task directories (<root>/<task>/home and "
                    "workspace) no container mounts any more are swept too. Nothing else under the roots is: "
                    "`sandboxguard scan ROOT` (or the fleet audit) checks all of a root. Exit 0 when every "
                    "sandbox was swept completely (or, with --dry-run, when nothing needs changing), 1 "
                    "otherwise, 2 on bad input.")
    _scope_args(sweep)
    sweep.add_argument("--container", action="append", default=[], metavar="NAME",
                       help="only these containers (repeatable; default all, stopped ones included)")
    sweep.add_argument("--running-only", action="store_true", help="leave stopped containers out")
    flags.add_dry_run(sweep, flags.DRY_RUN_HELP + " (exit 1 when something would)")
    flags.add_json(sweep, "print the JSON result and nothing else")
    textfile.add_option(sweep, "sweep")
    sweep.set_defaults(func=run_sweep)

    watch = subparsers.add_parser(
        "watch", help="sweep a container's sandbox mounts as soon as it stops or dies (Docker events)",
        description="Follow the engines' events and sweep a container's in-scope mounts when it stops or dies. "
                    "Prints one JSON line per sweep. An engine whose stream ends or fails is asked again with a "
                    "backoff (engine-lost, engine-back lines), and what stopped meanwhile is swept when it comes "
                    "back; the other engines go on. Runs until SIGTERM or SIGINT (exit 0); exits 1 only when no "
                    "engine socket is there at all.")
    _scope_args(watch)
    textfile.add_option(watch, "watch", long_running=True)
    watch.set_defaults(func=run_watch)


def _homes(args):
    if args.hermes_home:
        return args.hermes_home
    env = os.environ.get("HERMES_HOME")
    return [env] if env else [os.path.join(os.path.expanduser("~"), ".hermes")]


def _connect(args, watching=False):
    """The engines (each asked on its own), or None after saying on stderr (and, for sweep
    --json, in an envelope on stdout: --json always prints one) that none can be used. The
    watcher keeps an engine that did not answer yet: it asks it again later."""
    try:
        if watching:
            return docker_engine.engines_present(args.docker_host, docker_engine.DEFAULT_TIMEOUT_S)
        return docker_engine.connect_engines(args.docker_host, docker_engine.DEFAULT_TIMEOUT_S)
    except docker_engine.EngineError as exc:
        output.error_line("sandboxguard %s" % args.command, str(exc))
        if getattr(args, "json", False):
            report = envelope.new_report([], complete=False, dry_run=bool(args.dry_run), counts={"errors": 1},
                                         errors=[envelope.error_entry(args.docker_host or "auto", "engine", str(exc))])
            output.emit(report, True, None)
        return None


def _check(args):
    """The options sweep and watch share, checked before anything runs (--budget-per-step by the
    library's budget rule, made a number here)."""
    if args.method == "container" and not args.image:
        raise UsageError("--method container needs --image (busybox or a Debian slim image you trust)")
    args.budget_per_step = inputs.budget(args.budget_per_step, "--budget-per-step")


def _engine(args, metrics, watching=False):
    """The engine client, or None once an engine that did not answer is in the textfile (if any)."""
    client = _connect(args, watching=watching)
    if client is None and metrics is not None:
        metrics.state["errors"]["engine"] = 1
        metrics.state["engines"] = {args.docker_host or "auto": 0}
        _write(metrics, args.command)
    return client


def run_sweep(args):
    _check(args)
    metrics = textfile.open_for(args, "sweep")
    client = _engine(args, metrics)
    if client is None:
        return EXIT_FINDINGS
    result = sweepmod.sweep(
        client, _homes(args), args.sandbox_dir, args.root, args.container or None, not args.running_only,
        args.method, args.image, _owner(args.owner), args.budget_per_step, dry_run=args.dry_run,
        chown=not args.no_chown, providers=runner_options.providers(args))
    result["covers"] = coverage(result)
    # a dry run that would change something leaves findings: exit 1, as scan and strip --dry-run
    code = output.emit(result, args.json, print_human, findings=bool(result["dry_run"] and result["changed"]))
    if metrics is not None:
        _record_sweep(metrics, result, textfile.engines_up(result.get("engines") or ()))
        if not _write(metrics, args.command):
            code = EXIT_FINDINGS
    return code


def _record_sweep(metrics, result, engines=None):
    """One sweep's findings, errors and engines into the textfile's state; a complete sweep
    without errors or warnings is a success."""
    state = metrics.state
    state["findings"] = textfile.findings_of(result.get("counts") or {})
    textfile.add_errors(state["errors"], result)
    state["dry_run"] = bool(result.get("dry_run"))
    if engines is not None:
        state["engines"] = engines
    ok = result.get("complete") and not result.get("errors") and not result.get("warnings") \
        and not (result.get("counts") or {}).get("errors")
    if ok:
        metrics.succeeded()
    return bool(ok)


def _write(metrics, command):
    """Write the textfile; False (and one line on stderr) when it could not be written."""
    error = metrics.write()
    if error:
        output.error_line("sandboxguard %s" % command, error, flush=True)
        return False
    return True


def coverage(result):
    """What a sweep walked and what it did not: the sweep is not a scan of its roots.

    ``container_mounts``: in-scope bind mounts of containers; ``task_dirs``: task directories
    no container mounts; ``roots``: the roots that exist (their other files are not swept);
    ``scan``: the command that checks all of them (None when no root exists). Reads only
    whether each root is a directory (a hint for people; nothing is done by that path).
    """
    mounted = [t for t in result["targets"] if t["containers"]]
    roots = [root for root in result["roots"] if _is_dir(root)]
    return {"container_mounts": len(mounted), "task_dirs": len(result["targets"]) - len(mounted),
            "containers": len({c for t in mounted for c in t["containers"]}), "roots": roots,
            "scan": "sandboxguard scan %s" % " ".join(shlex.quote(escape(root)) for root in roots) if roots else None}


def _is_dir(path):
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def print_human(result, out):
    """The people's view of a sweep: every name through text.escape, every message one line."""
    engine = result["engine"]
    if engine["reason"]:
        out.write("engine: %s\n" % one_line(engine["reason"]))
    for row in result.get("engines") or ():
        if row["error"]:
            out.write("engine %s (%s) not asked: %s\n" % (one_line(row["name"]), one_line(row["url"] or "-"),
                                                          one_line(row["error"])))
    for root in result["root_sources"]:
        out.write("root: %s (%s)\n" % (escape(root["realpath"]), one_line(root["source"])))
    for refused in result["refused_roots"]:
        out.write("refused root: %s: %s\n" % (escape(refused["path"]), one_line(refused["reason"])))
    several = len(engine.get("engines") or ()) > 1
    for container in result["containers"]:
        who = escape(container["name"] or container["id"])
        if several and container.get("engine"):
            who += " (%s)" % one_line(container["engine"])  # auto asked several engines: say whose
        for mount in container["mounts"]:
            mark = "IN " if mount["in_scope"] else "out"
            out.write("%s %s %s -> %s: %s\n" % (
                mark, who, escape(mount["source"]),
                escape(mount["destination"]), one_line(mount["reason"])))
    for sandbox in result["sandboxes"]:
        parts = []
        for step in sandbox["steps"]:
            if not step["ran"]:
                parts.append("%s skipped (%s)" % (step["step"], one_line(step.get("skipped") or step["error"])))
                continue
            report = step["report"] or {}
            n = len(report.get("files", ()))
            state = "complete" if step["complete"] else "INCOMPLETE"
            parts.append("%s %s, %d listed" % (step["step"], state, n))
        out.write("swept %s [%s]: %s\n" % (escape(sandbox["path"]), sandbox["method"], "; ".join(parts) or "skipped"))
    if result["changed"]:
        outcome = ", changes needed, nothing changed (dry run)" if result.get("dry_run") else ", fixed"
    else:
        outcome = ", nothing to fix in what was swept"
    out.write("%d sandbox(es) swept, %d warning(s)%s\n" % (len(result["sandboxes"]), len(result["warnings"]), outcome))
    covers = result.get("covers")
    if covers:
        out.write("covered: %d in-scope mount(s) of %d container(s) and %d task directory(ies) no container "
                  "mounts; %s\n" % (
                      covers["container_mounts"], covers["containers"], covers["task_dirs"],
                      "the rest of the roots is not swept: `%s` (or the fleet audit, sandboxguard.boundary.audit) "
                      "checks all of it" % covers["scan"] if covers["scan"] else "no root exists"))


def _print_event(event):
    """One JSON line per event (without the full sweep report); warnings also on stderr."""
    output.json_line({k: v for k, v in event.items() if k not in ("report", "refused_roots")})
    for item in event.get("refused_roots", ()):
        output.error_line("sandboxguard watch", "refused root %s: %s" % (escape(item["path"]), item["reason"]))
    for warning in event.get("warnings", ()):
        output.warning_line(warning, flush=True)
    if event.get("event") == "engine-lost":
        output.warning_line("engine %s (%s): %s; asked again in %g s" % (
            event["engine"], event["url"], event["error"], event["retry_in"]), flush=True)


class _WatchMetrics:
    """The watcher's textfile: written at start, after each sweep, when it stops, and every
    ``interval`` seconds from a thread of its own while the last sweep (if any) succeeded."""

    def __init__(self, metrics, client, interval):
        self.metrics, self.client, self.interval = metrics, client, interval
        self.lock = threading.Lock()
        self.healthy = True
        self.stopped = threading.Event()

    def on_event(self, event):
        with self.lock:
            state = self.metrics.state
            if event.get("event") == "watching":
                state["engines"] = textfile.engines_up([{"name": name} for name in event.get("engines") or ()]
                                                       + list(event.get("failed") or ()))
                self.metrics.succeeded()
            elif "report" in event:
                self.healthy = _record_sweep(self.metrics, event["report"])
            elif event.get("event") == "engine-lost":  # its stream ended or failed: asked again with a backoff
                state["errors"]["engine"] += 1
                state["engines"][event.get("engine") or "auto"] = 0
            elif event.get("event") == "engine-back":
                state["engines"][event.get("engine") or "auto"] = 1
            elif event.get("error"):  # a container the engine could not inspect
                state["errors"]["engine"] += 1
            _write(self.metrics, "watch")

    def beat(self):
        while not self.stopped.wait(self.interval):
            with self.lock:
                if self.healthy:
                    self.metrics.succeeded()
                _write(self.metrics, "watch")

    def start(self):
        threading.Thread(target=self.beat, name="sandboxguard-textfile", daemon=True).start()

    def stop(self):
        self.stopped.set()
        with self.lock:
            _write(self.metrics, "watch")


def run_watch(args):
    _check(args)
    metrics = textfile.open_for(args, "watch")
    client = _engine(args, metrics, watching=True)
    if client is None:
        return EXIT_FINDINGS
    emit, watcher = _print_event, None
    if metrics is not None:
        watcher = _WatchMetrics(metrics, client, args.textfile_interval)

        def emit(event):
            watcher.on_event(event)  # first: once a line is out, the textfile says it too
            _print_event(event)
        watcher.start()
    stop = threading.Event()
    previous = {signum: signal.signal(signum, lambda *_: stop.set()) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        sweepmod.watch(client, _homes(args), args.sandbox_dir, args.root, method=args.method, image=args.image,
                       owner=_owner(args.owner), budget_per_step=args.budget_per_step, chown=not args.no_chown,
                       emit=emit, providers=runner_options.providers(args), stop=stop)
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if watcher is not None:
            watcher.stop()
    return EXIT_OK  # asked to stop: an engine's stream ending never ends the watcher
