# Copyright: sandboxguard contributors
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

from . import commands

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input: printed as one line on stderr, exit code 2."""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="sandboxguard",
        description="Close the holes an AI agent sandbox leaves in its host.",
    )
    parser.add_argument("--version", action="version", version="%(prog)s " + __version__)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        module = importlib.import_module("%s.%s" % (commands.__name__, info.name))
        module.register(subparsers)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print("sandboxguard %s: %s" % (args.command, exc), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("sandboxguard %s: interrupted" % args.command, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
