# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The library stays split along its seams (issue 20): no file over 600 lines but the
standalone crontab shim, no class over 300 lines. A file that grows past it is split into
its capability package (docs/architecture.md "Package layout"), not given an exception."""
import ast
import os

LIB = os.path.join(os.path.dirname(__file__), "..", "..", "python", "src", "sandboxguard")
MAX_FILE_LINES = 600
MAX_CLASS_LINES = 300
WHOLE = {"_terminal/crontab_shim.py": "the crontab shim runs standalone as one file (its text is the installed "
                                      "shim), so it is never split"}


def _files():
    for here, dirs, names in os.walk(LIB):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in sorted(names):
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(here, name), LIB), os.path.join(here, name)


def test_no_library_file_is_over_600_lines_but_the_standalone_shim():
    long = []
    for rel, path in _files():
        with open(path, encoding="utf-8") as handle:
            count = sum(1 for _ in handle)
        if count > MAX_FILE_LINES and rel not in WHOLE:
            long.append("%s: %d lines" % (rel, count))
    assert long == []


def test_no_class_is_over_300_lines():
    long = []
    for rel, path in _files():
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES:
                long.append("%s: class %s, %d lines" % (rel, node.name, node.end_lineno - node.lineno + 1))
    assert long == []
