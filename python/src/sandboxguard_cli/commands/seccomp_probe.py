# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard seccomp-probe`: can a sandbox container still make a setuid file, a device node, a file capability?"""
from sandboxguard._core import defaults
from sandboxguard._core.text import escape, one_line
from sandboxguard._prevent import hermes, probe

from .. import flags, output
from ..main import UsageError


def register(subparsers):
    parser = subparsers.add_parser(
        "seccomp-probe", help="start a throwaway container the way the sandbox starts and try to make setid files, "
                              "device nodes and file capabilities in it",
        description="Start a container from a local IMAGE (with python3) the way the sandbox starts (--mode hermes: "
                    "Hermes Agent's docker arguments and terminal.docker_extra_args from --hermes-home or --extra-arg; "
                    "daemon: no options, the Docker daemon's default profile, as a CI job; podman: Podman's defaults) "
                    "and try chmod 4755, chmod 2755, install -m 4755, open(O_CREAT, 04755), fchmodat2, mknod c and "
                    "setcap (must be refused with EPERM), chmod 755, mkdir -p and a venv (must work), unshare -U, "
                    "keyctl and io_uring_setup (must stay denied where the engine's own default denies them). A "
                    "reference container with the engine's own default shows what the prevention changed. Exit 0 "
                    "when every attempt went as expected, 1 when one did not or the probe could not run, 2 on bad "
                    "input. Mounts nothing of the host; the network is none.")
    parser.add_argument("--image", required=True, metavar="IMAGE", help="a local image with python3")
    parser.add_argument("--mode", choices=probe.MODES, default=probe.DEFAULT_MODE,
                        help="how the container starts (default %(default)s)")
    parser.add_argument("--engine-url", metavar="URL",
                        help="the engine (default: DOCKER_HOST or Docker's socket; with --mode podman %s)"
                             % defaults.PODMAN_SOCKET)
    parser.add_argument("--hermes-home", metavar="DIR", help="read terminal.docker_extra_args from DIR/config.yaml")
    parser.add_argument("--extra-arg", action="append", default=[], metavar="ARG",
                        help="a docker run option as Hermes' docker_extra_args holds it (repeatable, after the "
                             "config's)")
    parser.add_argument("--timeout", type=float, default=probe.DEFAULT_TIMEOUT_S, metavar="SECONDS",
                        help="give up on a container after this many seconds (default %(default)s)")
    parser.add_argument("--no-reference", action="store_true",
                        help="skip the reference container with the engine's own default")
    flags.add_json(parser)
    parser.set_defaults(func=run)


def run(args):
    if args.timeout <= 0:
        raise UsageError("--timeout %s: the probe's seconds must be more than 0" % args.timeout)
    extra = []
    if args.hermes_home:
        settings, path = hermes.read_settings(args.hermes_home)
        if settings is None:
            raise UsageError("--hermes-home: %s does not exist; give the Hermes home that holds config.yaml"
                             % escape(path))
        extra = list(settings["extra_args"])
    url = args.engine_url or ("unix://" + defaults.PODMAN_SOCKET if args.mode == "podman" else None)
    report = probe.probe(args.mode, args.image, url, [*extra, *args.extra_arg], args.timeout,
                         reference=not args.no_reference)
    return output.emit(report, args.json, _print_human, findings=not report["ok"])


def _print_human(report, out):
    engine = report["engine"]
    out.write("seccomp probe (%s, %s %s, image %s): %s\n" % (
        report["mode"], engine["kind"] or "engine", one_line(str(engine["version"] or "")), escape(report["image"]),
        "PASS" if report["ok"] else "FAIL"))
    if report["seccomp"]:
        out.write("  profile    %s\n" % escape(report["seccomp"]))
    for row in report["results"]:
        mark = "ok  " if row["ok"] else "FAIL"
        default = " (default: %s)" % row["default"] if row["default"] else ""
        errno_text = " (%s)" % row["errno"] if row["errno"] else ""
        out.write("  [%s] %-17s %s, expected %s%s%s\n" % (mark, row["name"], row["outcome"], row["expect"],
                                                          errno_text, default))
        if row["fix"]:
            out.write("         fix: %s\n" % one_line(row["fix"]))
    for error in report["errors"]:
        out.write("  error: %s: %s\n" % (escape(error["path"] or ""), one_line(error["error"])))
    if report["reason"]:
        out.write("  reason: %s\n" % one_line(report["reason"]))
