#!/usr/bin/env python3
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The extra checks antsibull-nox does not make (tools/extra-checks.sh runs both).

    python3 tools/extra_checks.py tarball [TARBALL]   # what the built collection carries
    python3 tools/extra_checks.py crlf                # no carriage return in any text file

``tarball`` builds the collection from this checkout, as a release does (``ansible-galaxy
collection build`` of the working tree, caches and all), unless given one, and fails on:

* a member under a path the collection never ships (NEVER_SHIPPED: caches, venvs, the test
  harness, benchmarks and their results, build tooling), whatever galaxy.yml's build_ignore says;
* a member whose name says it is an editor's, a merge's or Python's leftover (UNWANTED_NAMES);
* a file git ignores or does not know (``git ls-files -co --exclude-standard``), except the
  MANIFEST.json and FILES.json the build writes.

``crlf``: every file git knows, not binary (no NUL byte), has Unix line ends only (the
antsibull-nox checks read files with universal newlines and so never see a CR).
"""
import argparse
import fnmatch
import os
import subprocess
import sys
import tarfile
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_FILES = ("MANIFEST.json", "FILES.json")
# Paths (a file or a directory and all below it) that belong to the repository, never to the collection.
NEVER_SHIPPED = (
    ".venv", ".cache", ".git", ".nox", ".tox", ".ci", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".ansible",
    "build", "dist", "benchmarks", "images", "tools", "requirements", "molecule", "tests/unit", "tests/integration",
    "tests/docs", "tests/installed", "tests/output", "tests/conftest.py", "python/build", "python/dist",
    "noxfile.py", "antsibull-nox.toml", "Makefile", "ansible.cfg", "pytest.ini", "ruff.toml", ".ansible-lint",
    ".gitignore",
)
# Names no release should carry, wherever they are (matched against each path component).
UNWANTED_NAMES = (
    "__pycache__", "*.pyc", "*.pyo", "*.egg-info", "node_modules", ".idea", ".vscode", ".DS_Store", "Thumbs.db",
    "*.swp", "*.swo", "*~", ".#*", "#*#", "*.orig", "*.rej", "*.bak", "*.tmp", "*.tar.gz", "*.retry", ".coverage",
    "coverage.xml", "htmlcov",
)


def never_shipped(name):
    return any(name == p or name.startswith(p + "/") for p in NEVER_SHIPPED)


def unwanted_name(name):
    return any(fnmatch.fnmatchcase(part, pattern) for part in name.split("/") for pattern in UNWANTED_NAMES)


def tarball_problems(members, known):
    """members: (name, is_file) of the tarball; known: the paths git knows. One message per bad member."""
    problems = []
    for name, is_file in members:
        if name.startswith("./"):
            name = name[2:]
        if not name:
            continue
        if never_shipped(name):
            problems.append("%s: never part of the collection (tools/extra_checks.py NEVER_SHIPPED); add it to "
                            "galaxy.yml build_ignore" % name)
        elif unwanted_name(name):
            problems.append("%s: an unwanted file (cache, editor or merge leftover); delete it or add it to "
                            "galaxy.yml build_ignore" % name)
        elif is_file and name not in BUILD_FILES and name not in known:
            problems.append("%s: a file git ignores or does not know; the build took it from the working tree" % name)
    return problems


def git_files():
    out = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=TOP, capture_output=True,
                         check=True).stdout
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def build(out):
    galaxy = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
    subprocess.run([galaxy if os.path.exists(galaxy) else "ansible-galaxy", "collection", "build", "--output-path",
                    out, TOP], check=True, stdout=subprocess.DEVNULL)
    [name] = [n for n in os.listdir(out) if n.endswith(".tar.gz")]
    return os.path.join(out, name)


def check_tarball(path=None):
    with tempfile.TemporaryDirectory(prefix="sgextra-") as out:
        tarball = path or build(out)
        with tarfile.open(tarball) as tar:
            members = [(m.name, m.isfile()) for m in tar.getmembers()]
        problems = tarball_problems(members, git_files())
    print("tarball: %d members, %d problem(s)" % (len(members), len(problems)))
    return problems


def crlf_problems(paths, root=TOP):
    problems = []
    for path in sorted(paths):
        full = os.path.join(root, path)
        if not os.path.isfile(full) or os.path.islink(full):
            continue
        with open(full, "rb") as handle:
            data = handle.read()
        if b"\0" in data or b"\r" not in data:
            continue
        line = data[:data.index(b"\r")].count(b"\n") + 1
        problems.append("%s:%d: carriage return (CRLF or CR line end); save it with LF line ends" % (path, line))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tar = sub.add_parser("tarball", help="build the collection (or take TARBALL) and check what it carries")
    tar.add_argument("tarball", nargs="?")
    sub.add_parser("crlf", help="no carriage return in a text file git knows")
    args = parser.parse_args(argv)
    problems = check_tarball(args.tarball) if args.command == "tarball" else crlf_problems(git_files())
    for problem in problems:
        print("ERROR: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
