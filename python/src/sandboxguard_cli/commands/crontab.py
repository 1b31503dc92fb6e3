# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard crontab ...`: the crontab shim (sandboxguard.crontab; its one file is _terminal/crontab_shim.py).

Everything after `crontab` is handed to the shim untouched, so it takes the real
crontab's options and prints the real crontab's messages and exit codes (the one
exception to the CLI's own exit-code rules). `--table FILE` first names the table;
otherwise EVAL_CRONTAB_FILE, then {HERMES_HOME}/crontab. `--install-shim DIR` writes
the shim as DIR/crontab, a standalone script for /usr/bin/python3 that any user can run.
"""
import argparse

from sandboxguard import crontab as shim
from sandboxguard import report as envelope
from sandboxguard.errors import InputError

from .. import output
from ..main import EXIT_OK, UsageError


def register(subparsers):
    parser = subparsers.add_parser(
        "crontab",
        help="a crontab that behaves like Debian's but keeps the table in the run directory",
        usage="%(prog)s [--table FILE] [-u USER] [-n] FILE | -e | -l | -r [-i]\n"
              "       %(prog)s --install-shim DIR [--python PYTHON]\n"
              "       %(prog)s --help",
        description="A crontab that behaves like Debian's (its options, messages and exit codes) but keeps "
                    "the table in the eval run's directory: --table FILE, else EVAL_CRONTAB_FILE, else "
                    "{HERMES_HOME}/crontab. --install-shim DIR writes the shim as DIR/crontab, a standalone "
                    "script for /usr/bin/python3 (or --python PYTHON) that any user can run. --help (this text) "
                    "exits 0; every other argument, -h included, goes to the shim, which answers as Debian's "
                    "crontab does.",
        epilog="crontab options, as Debian's crontab(1): FILE replaces the table (- for stdin), -n checks "
               "its syntax only, -l lists, -r deletes (-i asks first), -e edits with $VISUAL or $EDITOR; "
               "-u USER needs root, as in the real one.",
        add_help=False,
        prefix_chars="\0",  # hand every argument, options included, to the shim
    )
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARG", help="crontab's own arguments")
    parser.set_defaults(func=run, help_parser=parser)


def run(args):
    argv = list(args.args)
    if argv == ["--help"]:  # the CLI's own help (exit 0); the installed shim answers as Debian's crontab
        args.help_parser.print_help()
        return EXIT_OK
    table = None
    if argv[:1] == ["--install-shim"]:
        if len(argv) < 2:
            raise UsageError("--install-shim needs a directory: sandboxguard crontab --install-shim DIR")
        python = argv[3] if argv[2:3] == ["--python"] and len(argv) > 3 else None
        try:
            path, changed = shim.install_shim(argv[1], python=python)
        except InputError as exc:  # safefs.PathRefused: a directory reached through another user's symlink
            raise UsageError("--install-shim: %s" % exc) from None
        except OSError as exc:
            raise UsageError("--install-shim: %s: %s" % (exc.filename or argv[1], exc.strerror or exc)) from None
        report = envelope.new_report([path], changed=changed)
        return output.emit(report, False, lambda rep, out: out.write(
            "%s %s\n" % ("installed" if rep["changed"] else "unchanged", rep["roots"][0])))
    if argv[:1] == ["--table"]:
        if len(argv) < 2:
            raise UsageError("--table needs a file: sandboxguard crontab --table FILE [crontab options]")
        table = argv[1]
        argv = argv[2:]
    elif argv[:1] and argv[0].startswith("--table="):
        table = argv[0].split("=", 1)[1]
        argv = argv[1:]
    return shim.main(argv, table=table)
