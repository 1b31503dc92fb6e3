# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The options several commands share, each written once: ``--json`` (what output.emit
prints), ``--dry-run`` (the library's ``dry_run``) and the walk's ``--no-caps`` and
``--no-setid`` (the actions left out). A command's own wording, where its output differs, is
the ``text`` it passes."""

JSON_HELP = "print the JSON report and nothing else"
DRY_RUN_HELP = "report what would change; change nothing"


def add_json(parser, text=JSON_HELP):
    parser.add_argument("--json", action="store_true", help=text)


def add_dry_run(parser, text=DRY_RUN_HELP):
    parser.add_argument("--dry-run", action="store_true", help=text)


def add_walk_actions(parser, leave="alone"):
    """``--no-caps`` and ``--no-setid``: *leave* says what the command does with what it leaves
    out ("alone" for a command that changes files, "out" for one that only reports)."""
    parser.add_argument("--no-caps", action="store_true", help="leave file capabilities %s" % leave)
    parser.add_argument("--no-setid", action="store_true", help="leave setuid/setgid bits %s" % leave)
