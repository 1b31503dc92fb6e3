# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""No function in python/src or plugins is over 80 lines unless it says why it reads better whole."""
import repo_scan as scan


def _tool():
    return scan.tool("long_functions")


def test_every_function_is_80_lines_or_says_why_it_reads_better_whole():
    rows = _tool().long_functions(80)
    too_long = [row for row in rows if not row[2].startswith("class ") and not row[2].endswith("(whole)")]
    assert too_long == [], "split these or mark them '# Reads better whole: why' (tools/long_functions.py)"


def test_the_lister_finds_long_functions_nested_methods_and_the_mark(tmp_path):
    src = tmp_path / "python" / "src" / "pkg"
    src.mkdir(parents=True)
    (tmp_path / "plugins" / "module_utils" / "sandboxguard").mkdir(parents=True)
    body = "".join("    x%d = %d\n" % (i, i) for i in range(90))
    (src / "m.py").write_text("def long():\n" + body + "\n\nclass K:\n    def method(self):\n" +
                              body.replace("    x", "        x") + "\n\ndef kept():\n"
                              "    # Reads better whole: one state machine\n" + body)
    (tmp_path / "plugins" / "module_utils" / "sandboxguard" / "copy.py").write_text("def long():\n" + body)
    rows = {name: length for length, _where, name in _tool().long_functions(80, top=str(tmp_path))}
    assert rows == {"long": 91, "class K": 92, "K.method": 91, "kept (whole)": 92}
