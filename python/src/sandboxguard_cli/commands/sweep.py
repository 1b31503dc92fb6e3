# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard sweep` and `sandboxguard watch`: Docker sandboxes, now and on container stop."""
import json
import os
import sys
import time

from sandboxguard import docker_engine, sandboxes
from sandboxguard import sweep as sweepmod

from ..main import EXIT_FINDINGS, EXIT_OK, UsageError


def _owner(text):
    if text is None:
        return None
    uid, sep, gid = text.partition(":")
    if not (uid.isdigit() and sep and gid.isdigit()):
        raise UsageError("--owner %r: give numeric UID:GID, e.g. 1000:1000" % text)
    return int(uid), int(gid)


def _scope_args(parser):
    parser.add_argument("--hermes-home", action="append", default=[], metavar="DIR",
                        help="a HERMES_HOME (repeatable; default $HERMES_HOME or ~/.hermes of the invoking user)")
    parser.add_argument("--sandbox-dir", metavar="DIR", default=os.environ.get("TERMINAL_SANDBOX_DIR"),
                        help="TERMINAL_SANDBOX_DIR, when the agent sets one (default: from the environment)")
    parser.add_argument("--root", action="append", default=[], metavar="DIR",
                        help="an extra <sandbox>/docker root the operator names (repeatable)")
    parser.add_argument("--method", choices=sweepmod.METHODS, default="native",
                        help="native: walk on this host (needs root); container: a disposable hardened container")
    parser.add_argument("--image", help="image for --method container (needs find, chown, chmod, ls, sort, sh)")
    parser.add_argument("--owner", metavar="UID:GID", help="ownership return target (default: each sandbox's owner)")
    parser.add_argument("--no-chown", action="store_true", help="skip ownership return")
    parser.add_argument("--budget-per-step", type=float, default=sweepmod.DEFAULT_BUDGET_PER_STEP_S, metavar="S",
                        help="seconds for each step (default %(default)s; 0 = none)")
    parser.add_argument("--docker-host", metavar="URL", help="engine URL (default: DOCKER_HOST or the local socket)")


def register(subparsers):
    sweep = subparsers.add_parser(
        "sweep", help="sweep the bind mounts of Docker sandboxes (ownership return, setid, caps)",
        description="Find every container's bind mounts below the host-derived <sandbox>/docker roots and sweep "
                    "them: ownership return, then setuid/setgid strip, then file capabilities, each step with "
                    "its own budget. Exit 0 when every sandbox was swept completely, 1 otherwise.")
    _scope_args(sweep)
    sweep.add_argument("--container", action="append", default=[], metavar="NAME",
                       help="only these containers (repeatable; default all, stopped ones included)")
    sweep.add_argument("--running-only", action="store_true", help="leave stopped containers out")
    sweep.add_argument("--dry-run", action="store_true", help="report; change nothing")
    sweep.add_argument("--json", action="store_true", help="print the JSON result and nothing else")
    sweep.set_defaults(func=run_sweep)

    watch = subparsers.add_parser(
        "watch", help="sweep a container's sandbox mounts as soon as it stops or dies (Docker events)",
        description="Follow the engine's events and sweep a container's in-scope mounts when it stops or dies. "
                    "Prints one JSON line per sweep. Runs until interrupted; exits 1 when the engine goes away "
                    "(run it under systemd with Restart=on-failure).")
    _scope_args(watch)
    watch.set_defaults(func=run_watch)


def _homes(args):
    if args.hermes_home:
        return args.hermes_home
    env = os.environ.get("HERMES_HOME")
    return [env] if env else [os.path.join(os.path.expanduser("~"), ".hermes")]


def _connect(args):
    try:
        return docker_engine.connect(args.docker_host)
    except docker_engine.EngineError as exc:
        print("sandboxguard %s: %s" % (args.command, exc), file=sys.stderr)
        return None


def _check(args):
    if args.method == "container" and not args.image:
        raise UsageError("--method container needs --image (busybox or a Debian slim image you trust)")


def run_sweep(args):
    _check(args)
    client = _connect(args)
    if client is None:
        return EXIT_FINDINGS
    result = sweepmod.sweep(
        client, _homes(args), args.sandbox_dir, args.root, args.container or None, not args.running_only,
        args.method, args.image, _owner(args.owner), args.budget_per_step, args.dry_run, not args.no_chown)
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2, sort_keys=True) + "\n")  # one write, even unbuffered
    else:
        print_human(result, sys.stdout)
    for warning in result["warnings"]:
        if not args.json:
            print("WARNING: %s" % warning, file=sys.stderr)
    return EXIT_FINDINGS if result["warnings"] else EXIT_OK


def print_human(result, out):
    engine = result["engine"]
    if engine["reason"]:
        out.write("engine: %s\n" % engine["reason"])
    for root in result["roots"]:
        out.write("root: %s (%s)\n" % (root["realpath"], root["source"]))
    for refused in result["refused_roots"]:
        out.write("refused root: %s: %s\n" % (refused["path"], refused["reason"]))
    for container in result["containers"]:
        for mount in container["mounts"]:
            mark = "IN " if mount["in_scope"] else "out"
            out.write("%s %s %s -> %s: %s\n" % (
                mark, container["name"] or container["id"], mount["source"], mount["destination"], mount["reason"]))
    for sandbox in result["sandboxes"]:
        parts = []
        for step in sandbox["steps"]:
            if not step["ran"]:
                parts.append("%s skipped (%s)" % (step["step"], step.get("skipped") or step["error"]))
                continue
            report = step["report"] or {}
            n = len(report.get("files", ()))
            state = "complete" if step["complete"] else "INCOMPLETE"
            parts.append("%s %s, %d listed" % (step["step"], state, n))
        out.write("swept %s [%s]: %s\n" % (sandbox["path"], sandbox["method"], "; ".join(parts) or "skipped"))
    out.write("%d sandbox(es) swept, %d warning(s)%s\n" % (
        len(result["sandboxes"]), len(result["warnings"]), "" if result["changed"] else ", nothing changed"))


def run_watch(args):
    _check(args)
    client = _connect(args)
    if client is None:
        return EXIT_FINDINGS
    homes = _homes(args)
    usable, refused = sweepmod.derive_roots(homes, args.sandbox_dir, args.root)
    for item in refused:
        print("sandboxguard watch: refused root %s: %s" % (item["path"], item["reason"]), file=sys.stderr)
    facts = sandboxes.engine_facts(docker_engine.engine_info(client))
    # Inspect documents of live containers, so a container started with --rm can still be
    # swept after it died and was removed.
    known = {doc["Id"]: doc for doc in docker_engine.inspect_containers(client, include_stopped=False)}
    since = int(time.time())
    print(json.dumps({"event": "watching", "roots": [r["realpath"] for r in usable], "containers": len(known)}),
          flush=True)
    try:
        for event in client.events(decode=True, since=since, filters={"type": "container"}):
            action, cid = event.get("Action") or event.get("status"), event.get("id")
            attributes = (event.get("Actor") or {}).get("Attributes") or {}
            if attributes.get("sandboxguard") == "sweep":
                # our own disposable strip containers (method container): sweeping when they
                # die would start more of them, for ever
                continue
            if action == "start":
                try:
                    known[cid] = client.api.inspect_container(cid)
                except Exception as exc:  # it may be gone already
                    print(json.dumps({"event": "inspect-failed", "id": cid, "error": str(exc)}), flush=True)
            elif action in ("die", "stop"):
                doc = known.get(cid)
                if doc is None:
                    try:
                        doc = client.api.inspect_container(cid)
                    except Exception as exc:  # removed before we saw it start: sweep every task dir
                        print(json.dumps({"event": "unknown-container", "id": cid, "error": str(exc)}), flush=True)
                        doc = {"Id": cid, "Mounts": []}
                        task_dirs = sandboxes.list_task_dirs(usable)
                    else:
                        task_dirs = ()
                else:
                    task_dirs = ()
                containers, targets = sandboxes.scope_containers([doc], usable, os.path.realpath,
                                                                 sandboxes.path_kind, task_dirs)
                if not targets:
                    continue
                info = {"engine": facts, "roots": usable, "refused_roots": refused, "containers": containers,
                        "targets": targets}
                result = sweepmod.sweep(client, method=args.method, image=args.image, owner=_owner(args.owner),
                                        budget_per_step=args.budget_per_step, chown=not args.no_chown, info=info)
                print(json.dumps({"event": action, "id": cid[:12], "swept": [s["path"] for s in result["sandboxes"]],
                                  "changed": result["changed"], "warnings": result["warnings"]}), flush=True)
                for warning in result["warnings"]:
                    print("WARNING: %s" % warning, file=sys.stderr, flush=True)
            elif action == "destroy":
                known.pop(cid, None)
    except KeyboardInterrupt:
        return EXIT_OK
    except Exception as exc:
        print("sandboxguard watch: lost the engine's event stream: %s" % exc, file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_FINDINGS
