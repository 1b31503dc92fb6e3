# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard seccomp-profile`: the engine's default made into a profile that stops setid files; --check."""
import sys

from sandboxguard import docker_engine
from sandboxguard._core.text import escape, one_line
from sandboxguard._prevent import bases, profile, seccomp

from .. import flags, output
from ..main import EXIT_FINDINGS, EXIT_OK


def register(subparsers):
    parser = subparsers.add_parser(
        "seccomp-profile", help="write a seccomp profile that stops setuid/setgid files, made from the engine's own "
                                "default; or check one (--check)",
        description="Print, as JSON on stdout, the running engine's own default seccomp profile with the mode "
                    "syscalls (chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mkdir, mkdirat, mknod, "
                    "mknodat) allowed only without setuid/setgid bits (EPERM otherwise), openat2 refused with ENOSYS "
                    "(libc falls back to openat) and io_uring_* with EPERM; everything else the default denies "
                    "stays denied. Docker's default is read from a throwaway container's OCI runtime spec (--image: "
                    "a local image with sleep), Podman's from %s. With --check PROFILE: verify a profile in effect "
                    "(the setid rules present, every syscall the engine's default denies still denied, made from "
                    "this engine's default); exit 1 with the problems. Exit 2 on bad input (a base that is not a "
                    "default-deny profile)." % bases.PODMAN_DEFAULT_PROFILE)
    parser.add_argument("--engine", choices=bases.ENGINE_CHOICES, default="auto",
                        help="whose default (default: Docker when its socket or DOCKER_HOST is there, else Podman)")
    parser.add_argument("--base", metavar="FILE", help="the default profile to start from, instead of the engine's")
    parser.add_argument("--image", metavar="IMAGE",
                        help="a local image with sleep, for the throwaway container Docker's default is read from")
    parser.add_argument("--docker-host", metavar="URL", help="the Docker engine (default: DOCKER_HOST or its socket)")
    parser.add_argument("--devices", action="store_true",
                        help="mknod and mknodat make no character or block device either (for a daemon-wide default, "
                             "where --cap-drop MKNOD cannot be set)")
    parser.add_argument("--check", metavar="PROFILE", help="check this profile instead of writing one")
    flags.add_json(parser, "with --check: " + flags.JSON_HELP)
    parser.set_defaults(func=run)


def run(args):
    try:
        if args.check:
            report = profile.check(args.check, args.engine, args.base, args.image, args.docker_host)
            return output.emit(report, args.json, _print_check, findings=not report["ok"])
        made = profile.make(args.engine, args.base, args.image, args.docker_host, args.devices)
    except docker_engine.EngineError as exc:
        output.error_line("sandboxguard seccomp-profile", "%s (or give the base with --base FILE)" % exc)
        return EXIT_FINDINGS
    sys.stdout.write(seccomp.profile_text(made))
    return EXIT_OK


def _print_check(report, out):
    source = profile.describe_source(report["base"])
    out.write("seccomp profile %s: %s (engine %s; base %s)\n" % (
        escape(report["roots"][0]), "OK" if report["ok"] else "PROBLEMS", report["engine"] or "unknown", source))
    made = report["made_by"]
    if made:
        out.write("  made by sandboxguard %s from %s\n" % (one_line(str(made.get("version"))),
                                                           profile.describe_source(made.get("base"))))
    for line in profile.problem_lines(report):
        out.write("  PROBLEM %s\n" % one_line(line))
    for note in report["notes"]:
        out.write("  note: %s\n" % one_line(note))
    devices = "denied by the profile" if report["devices_denied"] else "not denied by the profile (drop CAP_MKNOD)"
    out.write("  device nodes: %s\n" % devices)
