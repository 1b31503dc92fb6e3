# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The meta-tests' one scanner finds what they rely on: every file, every import (by string
too), the API table."""
import repo_scan as scan


def test_imports_include_imports_by_string_and_name_computed_ones(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import os, json as j\nfrom . import sibling\nfrom ..pkg.mod import name\n"
                      "import importlib\nX = importlib.import_module('sandboxguard._terminal.eval_tools')\n"
                      "Y = __import__('pwd')\nZ = importlib.import_module('%s.%s' % ('a', 'b'))\n")
    assert sorted(scan.imports(str(source))) == [
        (1, "json"), (1, "os"), (2, "."), (2, ".sibling"), (3, "..pkg.mod"), (3, "..pkg.mod.name"),
        (4, "importlib"), (5, "sandboxguard._terminal.eval_tools"), (6, "pwd")]
    assert scan.computed_imports(str(source)) == [7]


def test_the_library_files_are_found_whole_without_caches():
    files = scan.python_files(scan.LIBRARY)
    assert scan.LIBRARY + "/__init__.py" in files and scan.LIBRARY + "/_core/safefs.py" in files
    assert not [f for f in files if "__pycache__" in f]
    assert scan.library_modules()["safefs"] == ["_core.safefs"]
    assert not [f for f in scan.python_files(scan.MODULE_UTILS, skip=("sandboxguard",)) if "/sandboxguard/" in f]


def test_the_api_table_is_read_row_by_row():
    table = scan.api_table()
    assert table["sandboxguard.errors"] == ["InputError"]
    assert "DEFAULT_BUDGET_S" in table["sandboxguard.strip"] and len(table) > 10
