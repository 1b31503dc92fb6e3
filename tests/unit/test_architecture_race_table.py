# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""docs/architecture.md lists every root-side operation on an agent-writable location with
its race test: every test it names exists (a renamed or dropped test fails here)."""
import os
import re

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _table():
    with open(os.path.join(TOP, "docs", "architecture.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.index("### Every root-side operation on an agent-writable location")
    return text[start:text.index("\n## ", start)]


def test_every_race_test_the_table_names_exists():
    table = _table()
    named = re.findall(r"`(test_\w+\.py)::(test_\w+?)(?:\.\.\.|\[[\w-]+\])?`", table)
    assert len(named) > 20
    missing = []
    for filename, test in named:
        with open(os.path.join(TOP, "tests", "integration", filename), encoding="utf-8") as handle:
            source = handle.read()
        if not re.search(r"^def %s" % re.escape(test), source, re.M):
            missing.append("%s::%s" % (filename, test))
    assert missing == []


def test_every_race_test_file_is_in_the_table():
    table = _table()
    files = sorted(n for n in os.listdir(os.path.join(TOP, "tests", "integration")) if n.startswith("test_race_"))
    assert files and [f for f in files if f not in table] == []
