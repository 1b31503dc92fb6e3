# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The meta-tests' one scanner reads every form of import (by string too). What it finds of the
files and the API table, the meta-tests pin themselves (test_public_api's pins name a table row
it missed; the PRIVATE notice test counts the private files)."""
import repo_scan as scan


def test_imports_include_imports_by_string_and_name_computed_ones(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import os, json as j\nfrom . import sibling\nfrom ..pkg.mod import name\nfrom x import *\n"
                      "import importlib\nX = importlib.import_module('sandboxguard._terminal.eval_tools')\n"
                      "Y = __import__('pwd')\nZ = importlib.import_module('%s.%s' % ('a', 'b'))\n")
    assert sorted(scan.imports(str(source))) == [
        (1, "json"), (1, "os"), (2, ".sibling"), (3, "..pkg.mod.name"), (4, "x"),
        (5, "importlib"), (6, "sandboxguard._terminal.eval_tools"), (7, "pwd")]
    assert scan.computed_imports(str(source)) == [8]
    assert [scan.below(d, "_bwrap") for d in ("..text", ".b.x", ".", "sandboxguard.strip.run", "os")] == [
        "text", "_bwrap.b.x", "_bwrap", "strip.run", None]
