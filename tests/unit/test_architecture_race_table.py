# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""docs/architecture.md lists every root-side operation on an agent-writable location with
its race test: every test it names exists (a renamed or dropped test fails here)."""
import os
import re

import repo_scan as scan


def _table():
    text = scan.read("docs/architecture.md")
    start = text.index("### Every root-side operation on an agent-writable location")
    return text[start:text.index("\n## ", start)]


def test_every_race_test_the_table_names_exists():
    named = re.findall(r"`(test_\w+\.py)::(test_\w+?)(?:\.\.\.|\[[\w-]+\])?`", _table())
    assert len(named) > 20
    missing = ["%s::%s" % (filename, test) for filename, test in named
               if not re.search(r"^def %s" % re.escape(test), scan.read("tests/integration/" + filename), re.M)]
    assert missing == []


def test_every_race_test_file_is_in_the_table():
    table = _table()
    files = sorted(n for n in os.listdir(scan.path("tests/integration")) if n.startswith("test_race_"))
    assert files and [f for f in files if f not in table] == []
