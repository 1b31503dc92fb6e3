#!/usr/bin/env python3
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Copy python/src/sandboxguard/ into plugins/module_utils/sandboxguard/.

The library lives once, in python/src/sandboxguard/. Ansible modules import it as
module_utils, so this script writes a byte-for-byte copy of every .py file there and in
its private packages (``_bwrap/``, ``_guard/``, ...: every subdirectory, recursively),
preceded by one GENERATED line, and removes copies whose source is gone. File names are
relative paths (``_bwrap/checks.py``).

    python3 tools/sync_module_utils.py          # write the copy
    python3 tools/sync_module_utils.py --check  # exit 1 and name each drifted file

Symlinks are not an option: ansible-test skips symlinked files and its sanity test
rejects directory symlinks.
"""
import argparse
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(TOP, "python", "src", "sandboxguard")
TARGET = os.path.join(TOP, "plugins", "module_utils", "sandboxguard")
HEADER = "# GENERATED from python/src/sandboxguard/{name} by tools/sync_module_utils.py: edit the source, not this copy.\n"  # noqa: E501


def _tree(top):
    """{relative path: full path} of every .py file below top, packages included; the links
    found on the way ({relative path: full path}) apart (never followed)."""
    files, links = {}, {}
    for here, dirs, names in os.walk(top):
        rel_dir = os.path.relpath(here, top)
        for name in sorted(dirs):
            if os.path.islink(os.path.join(here, name)):
                links[os.path.normpath(os.path.join(rel_dir, name))] = os.path.join(here, name)
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not os.path.islink(os.path.join(here, d)))
        for name in sorted(names):
            path = os.path.join(here, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if os.path.islink(path):
                links[rel] = path
            elif name.endswith(".py") and os.path.isfile(path):
                files[rel] = path
    return files, links


def expected_copies(source=SOURCE):
    """Return {relative path: bytes} for every .py file of the library package and its packages."""
    copies = {}
    for rel, path in sorted(_tree(source)[0].items()):
        with open(path, "rb") as handle:
            copies[rel] = HEADER.format(name=rel).encode() + handle.read()
    return copies


def drift(source=SOURCE, target=TARGET):
    """Return a list of (file name, problem) pairs; empty when the copy is exact."""
    want = expected_copies(source)
    problems = []
    have = set()
    if os.path.isdir(target):
        files, links = _tree(target)
        problems.extend((name, "is a symlink") for name in sorted(links))
        for name, path in sorted(files.items()):
            have.add(name)
            if name not in want:
                problems.append((name, "has no source"))
            else:
                with open(path, "rb") as handle:
                    if handle.read() != want[name]:
                        problems.append((name, "differs from its source"))
    for name in sorted(set(want) - have):
        problems.append((name, "is missing"))
    return problems


def sync(source=SOURCE, target=TARGET):
    """Write the copy; return the names written or removed."""
    want = expected_copies(source)
    os.makedirs(target, exist_ok=True)
    touched = []
    files, links = _tree(target)
    for name, path in sorted({**files, **links}.items()):
        if name not in want:
            os.unlink(path)
            touched.append(name)
    for here, _dirs, _names in os.walk(target, topdown=False):
        if here != target and not os.listdir(here):
            os.rmdir(here)  # a package whose source is gone
    for name, data in want.items():
        path = os.path.join(target, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        current = None
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as handle:
                current = handle.read()
        if current != data:
            if os.path.islink(path):
                os.unlink(path)
            tmp = path + ".tmp"
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
            touched.append(name)
    return touched


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report drift and exit 1; write nothing")
    args = parser.parse_args(argv)
    if args.check:
        problems = drift()
        for name, problem in problems:
            print("plugins/module_utils/sandboxguard/%s %s" % (name, problem), file=sys.stderr)
        if problems:
            print("drift: run 'python3 tools/sync_module_utils.py' and commit the result", file=sys.stderr)
            return 1
        return 0
    for name in sync():
        print("synced %s" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
