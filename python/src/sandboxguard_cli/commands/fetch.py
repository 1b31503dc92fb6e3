# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard fetch`: bring one file back from a remote sandbox, guarded and sanitised."""
import os
import re

from sandboxguard import fetch as fetchlib
from sandboxguard._core.text import escape, one_line
from sandboxguard._fetch.policy import DEFAULT_MAX_BYTES, check_hermes_home, check_home
from sandboxguard.transport_docker import DockerExec
from sandboxguard.transport_local import LocalExec
from sandboxguard.transport_ssh import CONNECT_TIMEOUT_S, SSHExec, parse_target

from .. import flags, output
from ..main import EXIT_FINDINGS, UsageError

_SIZE = re.compile(r"^(\d+)([KMG]i?B?|B)?$", re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def parse_size(text):
    """``1048576``, ``512K``, ``50M``, ``1GiB`` -> bytes (binary units)."""
    match = _SIZE.match(text.strip())
    if not match:
        raise UsageError("--max-bytes %r: give a byte count such as 52428800, 512K or 50M" % text)
    unit = (match.group(2) or "")[:1].upper()
    return int(match.group(1)) * _UNITS[unit]


def register(subparsers):
    parser = subparsers.add_parser(
        "fetch", help="fetch one file from a remote sandbox (ssh, docker) with denylist and size checks",
        description="Fetch SRC from a sandbox reached over ssh (paramiko) or docker exec into DEST. The path is "
                    "checked against the denylist before any byte moves and again after readlink -f inside the "
                    "sandbox; only a regular file with one link, at most --max-bytes, is read, from the "
                    "descriptor that was checked; it lands atomically with mode 0644 (0600 with --private), "
                    "never setuid/setgid. Exit 0 when the file arrived, 1 when it was refused or the transport "
                    "failed, 2 on bad input.")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--ssh", metavar="[USER@]HOST[:PORT]", help="the sandbox is an SSH host (needs paramiko)")
    where.add_argument("--docker", metavar="CONTAINER",
                       help="the sandbox is a running container (its engine: DOCKER_HOST or the local socket)")
    where.add_argument("--local", action="store_true", help="the sandbox is this machine (sh runs locally)")
    src_help = "absolute, normalised path of the file inside the sandbox (or ~/PATH with --remote-home)"
    parser.add_argument("src", metavar="SRC", help=src_help)
    parser.add_argument("--dest", required=True, metavar="DIR", help="existing directory the file lands in")
    parser.add_argument("--name", metavar="NAME", help="file name in DIR (default: the basename of SRC, made safe)")
    parser.add_argument("--max-bytes", default=str(DEFAULT_MAX_BYTES), metavar="SIZE",
                        help="refuse files larger than this (default 50M; suffixes K, M, G are binary)")
    parser.add_argument("--remote-home", metavar="DIR",
                        help="the sandbox user's home; unknown by default, which matches credential names at "
                             "any depth and keeps /root denylisted")
    parser.add_argument("--remote-hermes-home", metavar="DIR",
                        help="the sandbox's HERMES_HOME when it is not ~/.hermes; its credential stores are refused "
                             "as those of every .hermes directory are")
    parser.add_argument("--strict", action="store_true", help="strict mode: never fetch (reports the refusal)")
    parser.add_argument("--private", action="store_true", help="land with mode 0600 instead of 0644")
    parser.add_argument("--executable", action="store_true", help="add execute bits (never setuid/setgid)")
    parser.add_argument("--no-overwrite", action="store_true", help="refuse when DIR/NAME already exists")
    parser.add_argument("--identity", "-i", metavar="FILE", help="ssh private key (default: ssh agent and ~/.ssh keys)")
    parser.add_argument("--known-hosts", metavar="FILE",
                        help="known_hosts with the sandbox's host key (default ~/.ssh/known_hosts; unknown hosts "
                             "are rejected)")
    parser.add_argument("--user", metavar="USER", help="docker: run as this user inside the container")
    parser.add_argument("--timeout", type=float, default=CONNECT_TIMEOUT_S, metavar="SECONDS",
                        help="ssh connect timeout (default %(default)s)")
    flags.add_json(parser)
    parser.set_defaults(func=run)


def _channel(args):
    if args.ssh:
        try:
            user, host, port = parse_target(args.ssh)
        except fetchlib.FetchError as exc:
            raise UsageError("--ssh: %s" % exc) from None
        return SSHExec(host, port=port, user=user, key_filename=args.identity, known_hosts=args.known_hosts,
                       timeout=args.timeout)
    if args.docker:
        return DockerExec(args.docker, user=args.user)
    return LocalExec()


def _print_human(report, out):
    if report["fetched"]:
        print("fetched %s -> %s (%d bytes, sha256 %s, mode %s%s)" % (
            escape(report["src"]), escape(report["dest"]), report["size"], report["sha256"], report["mode"],
            "" if report["changed"] else ", unchanged"), file=out)
        if report["remote_mode"] and int(report["remote_mode"], 8) & 0o6000:
            print("  note: the sandbox copy was %s; setuid/setgid were not carried" % report["remote_mode"], file=out)
    else:
        print("refused %s (%s, %s): %s" % (
            escape(report["src"]), report["stage"], report["refused_code"], one_line(report["refused"])), file=out)
    print("  %d bytes received from the sandbox in %.2fs" % (report["bytes_received"], report["elapsed"]), file=out)


def run(args):
    max_bytes = parse_size(args.max_bytes)
    if args.identity and not args.ssh:
        raise UsageError("--identity only applies to --ssh")
    if args.user and not args.docker:
        raise UsageError("--user only applies to --docker")
    try:
        check_home(args.remote_home)
    except fetchlib.FetchError as exc:
        raise UsageError("--remote-home: %s" % exc) from None
    try:
        check_hermes_home(args.remote_hermes_home)
    except fetchlib.FetchError as exc:
        raise UsageError("--remote-hermes-home: %s" % exc) from None
    if not args.strict and not os.path.isdir(args.dest):
        raise UsageError("--dest %s: no such directory; create it first" % escape(args.dest))
    channel = _channel(args)
    try:
        report = fetchlib.fetch(channel, args.src, args.dest, max_bytes=max_bytes, remote_home=args.remote_home,
                                remote_hermes_home=args.remote_hermes_home, strict=args.strict, name=args.name,
                                private=args.private,
                                executable=args.executable, overwrite=not args.no_overwrite)
    except fetchlib.TransportUnavailable as exc:
        raise UsageError(str(exc)) from None
    except fetchlib.FetchError as exc:
        output.error_line("sandboxguard fetch", str(exc))
        return EXIT_FINDINGS
    finally:
        close = getattr(channel, "close", None)
        if close is not None:
            close()
    return output.emit(report, args.json, _print_human, findings=not report["fetched"])
