# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""docs/architecture.md says what is true (issue 29): the claims a reader acts on, each
checked against the code so that a false one fails here. test_architecture_names.py checks
that what the page names exists; this file checks what it says about them."""
import argparse
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(TOP, "python", "src", "sandboxguard")
DOC = os.path.join(TOP, "docs", "architecture.md")
sys.path.insert(0, os.path.join(TOP, "python", "src"))


def section(title):
    """The text of the doc's ``## title`` section (up to the next ``## ``)."""
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    start = text.index("\n## %s\n" % title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def table_rows(title):
    """Each row of the first table of a section, as a list of cell texts (header and rule skipped)."""
    rows = [line for line in section(title).splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[2:]]


def ticked(cell):
    return re.findall(r"`([^`]+)`", cell)


def cli_commands():
    from sandboxguard_cli import main

    parser = main.build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    commands = set(sub.choices)
    for name, child in sub.choices.items():
        for nested in [a for a in child._actions if isinstance(a, argparse._SubParsersAction)]:
            commands |= {"%s %s" % (name, more) for more in nested.choices}
    return commands


CAPABILITIES = "Where each capability lives"


def test_every_module_command_and_role_has_its_capability_row_and_the_cli_column_is_true():
    rows = table_rows(CAPABILITIES)
    assert rows and all(len(row) == 5 for row in rows), "the capability table has five columns"
    modules = {n[:-3] for n in os.listdir(os.path.join(TOP, "plugins", "modules")) if n.endswith(".py")}
    roles = set(os.listdir(os.path.join(TOP, "roles")))
    commands = cli_commands()
    named_modules = {m for row in rows for m in ticked(row[2])}
    named_commands = {c for row in rows for c in ticked(row[3]) if not c.startswith("-") and "/" not in c}
    named_roles = {r for row in rows for r in ticked(row[4])}
    assert modules - named_modules == set(), "modules with no row in the capability table"
    assert {c for c in commands if c != "report"} - named_commands == set(), "CLI commands with no row"
    assert named_commands - commands == set(), "the CLI column names commands that do not exist"
    assert roles - named_roles == set(), "roles with no row in the capability table"


def test_path_containment_is_written_once():
    """'Path containment is pathnames.is_within': no library module writes it by hand."""
    hand_written = re.compile(r"startswith\([^()]*(?:\([^()]*\))?[^()]*\+\s*(?:\"/\"|'/'|os\.sep|sep)\s*\)")
    found = []
    for here, dirs, files in os.walk(LIB):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            path = os.path.join(here, name)
            if not name.endswith(".py") or path.endswith(os.path.join("_core", "pathnames.py")):
                continue
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    if hand_written.search(line):
                        found.append("%s:%d: %s" % (os.path.relpath(path, LIB), number, line.strip()))
    assert found == [], "containment written by hand; use _core.pathnames.is_within:\n" + "\n".join(found)


def test_the_package_table_lists_every_module_of_each_private_package():
    rows = {row[0].strip("`"): row for row in table_rows("Package layout")}
    packages = sorted(d for d in os.listdir(LIB) if d.startswith("_") and os.path.isdir(os.path.join(LIB, d))
                      and d != "__pycache__")
    assert sorted(rows) == packages, "the package table's rows are not the private packages"
    missing = []
    for package in packages:
        named = set(ticked(rows[package][1]))
        for name in sorted(os.listdir(os.path.join(LIB, package))):
            if name.endswith(".py") and name != "__init__.py" and name[:-3] not in named:
                missing.append("%s/%s" % (package, name))
    assert missing == [], "modules the package table does not list: %s" % ", ".join(missing)


def test_the_import_order_the_page_gives_is_the_one_the_direction_test_enforces():
    import test_import_direction

    [written] = re.findall(r"Imports point down, `([^`]+)`", section("Package layout").replace("\n", " "))
    assert tuple(p.strip() for p in written.split("<")) == test_import_direction.ORDER


def test_every_private_package_has_an_empty_init():
    """'a private capability package with an empty __init__.py' (AnsiballZ payloads stay small)."""
    for name in os.listdir(LIB):
        init = os.path.join(LIB, name, "__init__.py")
        if name.startswith("_") and os.path.exists(init):
            with open(init, encoding="utf-8") as handle:
                code = [line for line in handle if line.strip() and not line.startswith("#")]
            assert code == [], "%s/__init__.py is not empty" % name
