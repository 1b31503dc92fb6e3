# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""docs/architecture.md names only what exists and says what is true (issues 20 and 29).

- Every file or directory path it writes in backticks exists, and every library module
  (``safefs``, ``_core/safefs.py``, ``sandboxguard.report``) and ``module.name`` it names.
- The claims a reader acts on are checked against the code, so that a false one fails: the
  capability table, the package table, the import order, containment written once.
- Its table of root-side operations on agent-writable locations names race tests that exist,
  and every race test file is in it.
"""
import importlib
import os
import re

import repo_scan as scan
import test_import_direction

DOC = "docs/architecture.md"
CAPABILITIES = "## Where each capability lives"
RACES = "### Every root-side operation on an agent-writable location, and its race test"
CLI_MODULES = {os.path.basename(rel)[:-3] for rel in scan.python_files(scan.CLI, recursive=False)}
REPO_DIRS = ("python/", "plugins/", "roles/", "playbooks/", "tests/", "tools/", "docs/", "benchmarks/",
             "molecule/", "changelogs/", "meta/", "module_utils/", "sandboxguard/", "sandboxguard_cli/", "_")
FILE_RE = re.compile(r"[\w./-]+\.(?:py|yml|yaml|json|md|sh|j2|txt)")
NOT_OURS = {"_crypto/"}  # community.crypto's package, named as the pattern


def section(heading):
    """The text under a heading line of the doc (``## Package layout``), up to the next ``## ``."""
    text = scan.read(DOC)
    start = text.index("\n%s\n" % heading)
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def table_rows(heading):
    """Each row of the first table of a section, as a list of cell texts (header and rule skipped)."""
    rows = [line for line in section(heading).splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[2:]]


def ticked(text):
    return re.findall(r"`([^`\n]+)`", text)


# -- what the page names exists -----------------------------------------------------------------
def test_every_path_the_architecture_names_exists():
    """A repository file or directory named in backticks exists: a path from the top
    (plugins/modules/sweep.py), or a file name found at the end of some path (test_guard.py,
    tasks/nosuid.yml, _core/safefs.py). Host paths (RUN/home, sandboxes/docker) are not ours."""
    files = scan.repo_files()
    missing = []
    for token in ticked(scan.read(DOC)):
        token = token.split("::")[0].split(" ")[0]
        if "*" in token or token.startswith(("/", "~", "<", ".")) or token in NOT_OURS:
            continue
        if FILE_RE.fullmatch(token) or (token.startswith(REPO_DIRS) and "/" in token and "." not in token):
            want = token if FILE_RE.fullmatch(token) else token.rstrip("/") + "/"
            if not any(f == want or f.endswith("/" + want) for f in files):
                missing.append(token)
    assert missing == [], "docs/architecture.md names files that do not exist: %s" % sorted(set(missing))


def test_every_library_module_and_name_the_architecture_names_exists():
    modules = scan.library_modules()
    missing = []
    for token in ticked(scan.read(DOC)):
        if FILE_RE.fullmatch(token.split("::")[0]) or token.endswith((".service", ".json")) or "/" in token:
            continue
        for call in re.findall(r"(?<![\w./])([a-z_][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b", token):
            module, name = call
            if module == "sandboxguard" or module not in modules or module in CLI_MODULES:
                continue
            if not any(hasattr(importlib.import_module("sandboxguard." + d), name) or
                       os.path.exists(scan.path("%s/%s/%s.py" % (scan.LIBRARY, d.replace(".", "/"), name)))
                       for d in modules[module]):
                missing.append("%s.%s" % call)
        for dotted in re.findall(r"\bsandboxguard(?:\.[a-z_][a-z0-9_]*)+", token):
            parts = dotted.split(".")
            for cut in range(len(parts), 1, -1):
                try:
                    mod = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                if all(hasattr(mod, p) for p in parts[cut:cut + 1]):
                    break
            else:
                missing.append(dotted)
    assert missing == [], "docs/architecture.md names library modules or names that do not exist: %s" % sorted(
        set(missing))


def test_every_race_test_the_table_names_exists_and_every_race_test_file_is_in_it():
    table = section(RACES)
    named = re.findall(r"`(test_\w+\.py)::(test_\w+?)(?:\.\.\.|\[[\w-]+\])?`", table)
    assert len(named) > 20
    missing = ["%s::%s" % (filename, test) for filename, test in named
               if not re.search(r"^def %s" % re.escape(test), scan.read("tests/integration/" + filename), re.M)]
    files = sorted(n for n in os.listdir(scan.path("tests/integration")) if n.startswith("test_race_"))
    assert missing == [] and files and [f for f in files if f not in table] == []


# -- what the page says is true -----------------------------------------------------------------
def test_every_module_command_and_role_has_its_capability_row_and_the_cli_column_is_true():
    rows = table_rows(CAPABILITIES)
    assert rows and all(len(row) == 5 for row in rows), "the capability table has five columns"
    cli_docs = scan.tool("cli_docs")
    commands = {" ".join(words) for words, _child, _help in cli_docs.commands(cli_docs.load_parser())}
    named_modules = {m for row in rows for m in ticked(row[2])}
    named_commands = {c for row in rows for c in ticked(row[3]) if not c.startswith("-") and "/" not in c}
    named_roles = {r for row in rows for r in ticked(row[4])}
    assert set(scan.module_names()) - named_modules == set(), "modules with no row in the capability table"
    assert {c for c in commands if c != "report"} - named_commands == set(), "CLI commands with no row"
    assert named_commands - commands == set(), "the CLI column names commands that do not exist"
    assert set(scan.roles()) - named_roles == set(), "roles with no row in the capability table"


def test_path_containment_is_written_once():
    """'Path containment is pathnames.is_within': no library module writes it by hand."""
    hand_written = re.compile(r"startswith\([^()]*(?:\([^()]*\))?[^()]*\+\s*(?:\"/\"|'/'|os\.sep|sep)\s*\)")
    found = ["%s:%d: %s" % (rel, number, line.strip())
             for rel in scan.python_files(scan.LIBRARY) if not rel.endswith("/_core/pathnames.py")
             for number, line in enumerate(scan.read(rel).splitlines(), 1) if hand_written.search(line)]
    assert found == [], "containment written by hand; use _core.pathnames.is_within:\n" + "\n".join(found)


def test_the_package_table_lists_every_module_of_each_private_package():
    rows = {row[0].strip("`"): set(ticked(row[1])) for row in table_rows("## Package layout")}
    modules = [name.split(".") for name in scan.library_files() if name.startswith("_")]
    assert sorted(rows) == sorted({parts[0] for parts in modules}), "the package table's rows are not the packages"
    missing = ["%s/%s.py" % tuple(parts) for parts in modules if len(parts) == 2 and parts[1] not in rows[parts[0]]]
    assert missing == [], "modules the package table does not list: %s" % ", ".join(sorted(missing))


def test_the_import_order_the_page_gives_is_the_one_the_direction_test_enforces():
    [written] = re.findall(r"Imports point down, `([^`]+)`", section("## Package layout").replace("\n", " "))
    assert tuple(p.strip() for p in written.split("<")) == test_import_direction.ORDER
