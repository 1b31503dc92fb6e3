# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""python/README.md names the library's public API; every name it lists exists."""
import importlib
import os
import re

import pytest

README = os.path.join(os.path.dirname(__file__), "..", "..", "python", "README.md")


def _table():
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    section = text.split("## Public API", 1)[1]
    rows = re.findall(r"^\| `(sandboxguard\.[a-z_]+)` \| (.+) \|$", section, re.MULTILINE)
    return [(module, re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", names)) for module, names in rows]


def test_the_readme_lists_the_api_the_issue_names():
    listed = {module: names for module, names in _table()}
    assert {"protected_homes", "is_in_protected_home"} <= set(listed["sandboxguard.home_mode"])
    assert {"scan", "strip", "run"} <= set(listed["sandboxguard.strip"])
    assert "watch" in listed["sandboxguard.sweep"] and "new_report" in listed["sandboxguard.report"]


@pytest.mark.parametrize(("module", "names"), _table(), ids=[m for m, _ in _table()])
def test_every_public_name_exists(module, names):
    mod = importlib.import_module(module)
    missing = [name for name in names if not hasattr(mod, name)]
    assert not missing, "%s lacks %s (python/README.md lists them)" % (module, missing)
