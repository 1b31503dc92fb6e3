#!/usr/bin/env python3
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""List the functions, methods and classes longer than N lines in python/src and plugins.

    python3 tools/long_functions.py            # over 80 lines, longest first
    python3 tools/long_functions.py --over 60

plugins/module_utils/sandboxguard/ is left out: it is the generated copy of python/src/sandboxguard.
A function that reads better whole says why in a comment where it stands, within its first
lines: ``# Reads better whole: ...`` (issue 11 item 5); such a function is listed with "(whole)".
tests/unit/test_sizes.py keeps every other function at 80 lines or fewer.
"""
import argparse
import ast
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREES = ("python/src", "plugins")
GENERATED = os.path.join("plugins", "module_utils", "sandboxguard")


def long_functions(over=80, top=TOP):
    """[(lines, "path:line", qualified name)] for every def or class longer than *over* lines
    (a class is named ``class NAME``: its methods are listed on their own as well)."""
    found = []
    for tree in TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(top, tree)):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, top)
            if rel_dir == GENERATED or rel_dir.startswith(GENERATED + os.sep):
                dirnames[:] = []
                continue
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as handle:
                    source = handle.read()
                found.extend(_walk(ast.parse(source, path), os.path.relpath(path, top), "", over,
                                   source.splitlines()))
    return sorted(found, key=lambda row: (-row[0], row[1]))


WHOLE_MARK = "# Reads better whole:"


def _walk(node, path, prefix, over, lines):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qualname = prefix + child.name
            length = child.end_lineno - child.lineno + 1
            if length > over:
                if isinstance(child, ast.ClassDef):
                    qualname = "class " + qualname
                elif any(WHOLE_MARK in line for line in lines[child.lineno - 1:child.lineno + 12]):
                    qualname += " (whole)"
                yield (length, "%s:%d" % (path, child.lineno), qualname)
            yield from _walk(child, path, prefix + child.name + ".", over, lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--over", type=int, default=80, help="list what is longer than this (default 80)")
    args = parser.parse_args(argv)
    for length, where, name in long_functions(args.over):
        print("%4d  %-60s %s" % (length, where, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
