# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The CLI's command table: every subcommand found, each imported alone when named."""
import importlib
import os

from sandboxguard_cli import main


def registered_commands(module_name):
    import argparse

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    importlib.import_module("sandboxguard_cli.commands." + module_name).register(sub)
    return set(sub.choices)


def test_table_names_exactly_what_the_modules_register():
    found = {}
    for name in main.command_module_names():
        for command in registered_commands(name):
            found[command] = name
    assert found == main.COMMAND_MODULES


def test_a_named_command_builds_a_parser_with_only_its_module():
    parser = main.build_parser(["scan", "/x"])
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == {"scan", "strip"}


def test_help_lists_every_command():
    parser = main.build_parser(["--help"])
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == set(main.COMMAND_MODULES)


def test_no_command_writes_json_or_decides_its_exit_code_from_a_report_by_itself():
    # --json and the exit code of a report are output.emit's (issue 11 item 2); the event
    # streams (`watch`, `guard`) print one JSON line per event through output.json_line.
    import re

    from sandboxguard_cli import commands

    found = []
    for name in sorted(os.listdir(commands.__path__[0])):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(commands.__path__[0], name), encoding="utf-8") as handle:
            text = handle.read()
        if re.search(r"\bjson\.dumps?\(", text):
            found.append("%s writes JSON" % name)
        if re.search(r"return EXIT_(OK|FINDINGS) if ", text):
            found.append("%s decides an exit code from a report" % name)
    assert found == []
