# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Entry point of the `sandboxguard` command.

Exit codes for every subcommand: 0 clean or fully fixed; 1 findings remain; 2 usage or
bad input. Errors go to stderr as one line naming the path or option and the fix.
"""
import argparse
import importlib
import pkgutil
import sys

from sandboxguard import __version__
from sandboxguard._core.text import one_line
from sandboxguard.errors import InputError

from . import commands

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


# Which module under commands/ registers each subcommand, so `sandboxguard scan` imports
# only the walker (start-up time counts when a timer or a harness runs it often). Any
# other first argument (--help, a typo) imports every module. A test keeps this table
# equal to what the modules register.
COMMAND_MODULES = {
    "scan": "strip", "strip": "strip", "sweep": "sweep", "watch": "sweep",
    "bwrap-probe": "bwrap_probe", "crontab": "crontab", "fetch": "fetch", "home-env": "home_env",
    "guard": "guard", "report": "report", "leaks": "leaks", "runner-cleanup": "runner_cleanup",
    "seccomp-profile": "seccomp_profile", "seccomp-probe": "seccomp_probe",
}


class UsageError(InputError):
    """Bad input found by the CLI itself; like every library InputError it is printed as one
    line on stderr with exit code 2."""


def command_module_names():
    return sorted(info.name for info in pkgutil.iter_modules(commands.__path__))


def build_parser(argv=None):
    """The argument parser; with argv naming a known command, only its module is imported."""
    parser = argparse.ArgumentParser(
        prog="sandboxguard",
        description="Close the holes an AI agent sandbox leaves in its host.",
    )
    parser.add_argument("--version", action="version", version="%(prog)s " + __version__)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    first = argv[0] if argv else None
    names = [COMMAND_MODULES[first]] if first in COMMAND_MODULES else command_module_names()
    for name in names:
        module = importlib.import_module("%s.%s" % (commands.__name__, name))
        module.register(subparsers)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:  # UsageError, and every refusal of the library (errors.InputError)
        print("sandboxguard %s: %s" % (args.command, one_line(str(exc))), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("sandboxguard %s: interrupted" % args.command, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
