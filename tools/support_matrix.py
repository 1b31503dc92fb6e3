#!/usr/bin/env python3
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Which ansible-core controllers we test, in one place, and the README row that says so.

The tested controllers are the requirements files that make their venvs: ``requirements/dev.txt``
(.venv) and ``requirements/controller-X.Y.txt`` (the `controllers` layer of tools/run-tests.sh).
Each starts with ``# controller: ansible-core X.Y on Python A.B`` and pins ``ansible-core==X.Y.Z``.
``meta/runtime.yml``'s requires_ansible must be exactly the range they span
(``>=LOW.0,<HIGH+1``), every role's ``min_ansible_version`` its lower bound, and the README
support matrix's controller row the one this script prints.

    python3 tools/support_matrix.py            # print the README row
    python3 tools/support_matrix.py --write    # put it into README.md
    python3 tools/support_matrix.py --check    # exit 1 naming what disagrees
"""
import argparse
import glob
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = re.compile(r"^# controller: ansible-core (\d+\.\d+) on Python (\d+\.\d+)\b", re.M)
PIN = re.compile(r"^ansible-core==(\d+)\.(\d+)\.(\d+)\s*$", re.M)
ROW = re.compile(r"^\| ansible-core \(controller\) \|.*\|$", re.M)
RANGE = re.compile(r"^>=(\d+)\.(\d+)\.0,<(\d+)\.(\d+)$")


def read(*parts):
    with open(os.path.join(TOP, *parts)) as handle:
        return handle.read()


def controllers():
    """[(core X.Y, python A.B, requirements path, pinned X.Y.Z)], oldest core first."""
    found = []
    for path in ["requirements/dev.txt", *sorted(glob.glob(os.path.join(TOP, "requirements", "controller-*.txt")))]:
        rel = os.path.relpath(os.path.join(TOP, path), TOP)
        text = read(rel)
        header, pin = HEADER.search(text), PIN.search(text)
        if not header or not pin:
            raise ValueError("%s: needs a '# controller: ansible-core X.Y on Python A.B' line and an "
                             "ansible-core==X.Y.Z pin" % rel)
        found.append((header.group(1), header.group(2), rel, ".".join(pin.groups())))
    return sorted(found, key=lambda c: tuple(int(n) for n in c[0].split(".")))


def key(version):
    return tuple(int(n) for n in version.split("."))


def requires_ansible():
    match = re.search(r"^requires_ansible:\s*['\"]?([^'\"\n]+)['\"]?\s*$", read("meta", "runtime.yml"), re.M)
    return match.group(1).strip() if match else None


def expected_range(found=None):
    found = found or controllers()
    low, high = key(found[0][0]), key(found[-1][0])
    return ">=%d.%d.0,<%d.%d" % (low[0], low[1], high[0], high[1] + 1)


def row(found=None):
    found = found or controllers()
    tested = ", ".join("%s on Python %s" % (core, python) for core, python, _path, _pin in found)
    notes = ("`meta/runtime.yml` requires `%s`; each core runs ansible-test sanity and the module-level "
             "integration tests in `make test`" % expected_range(found))
    return "| ansible-core (controller) | %s | %s |" % (tested, notes)


def problems():
    """One line per disagreement; empty when everything says the same."""
    found = controllers()
    out = []
    for core, _python, path, pin in found:
        if not pin.startswith(core + "."):
            out.append("%s: header says ansible-core %s, pin is %s" % (path, core, pin))
    cores = [c[0] for c in found]
    if len(set(cores)) != len(cores):
        out.append("two requirements files test the same ansible-core: %s" % cores)
    # the tested cores must be consecutive minors: a gap would be claimed untested
    for older, newer in zip(cores, cores[1:]):
        if key(newer) != (key(older)[0], key(older)[1] + 1):
            out.append("ansible-core %s and %s are tested but not what lies between" % (older, newer))
    want = expected_range(found)
    have = requires_ansible()
    if have != want:
        out.append("meta/runtime.yml: requires_ansible is %r, the tested controllers give %r" % (have, want))
    low = cores[0]
    for meta in sorted(glob.glob(os.path.join(TOP, "roles", "*", "meta", "main.yml"))):
        match = re.search(r"^\s*min_ansible_version:\s*['\"]?([0-9.]+)['\"]?\s*$", read(meta), re.M)
        if not match or match.group(1) != low:
            out.append("%s: min_ansible_version is %s, requires_ansible's lower bound is %s" % (
                os.path.relpath(meta, TOP), match.group(1) if match else "missing", low))
    readme = ROW.findall(read("README.md"))
    if readme != [row(found)]:
        out.append("README.md: the support matrix's ansible-core row is %r; run python3 tools/support_matrix.py --write"
                   % (readme[0] if readme else None))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true")
    group.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    if args.write:
        path = os.path.join(TOP, "README.md")
        text = read("README.md")
        if not ROW.search(text):
            print("README.md has no '| ansible-core (controller) |' row to replace", file=sys.stderr)
            return 1
        with open(path, "w") as handle:
            handle.write(ROW.sub(lambda _m: row(), text, count=1))
        return 0
    if args.check:
        bad = problems()
        for line in bad:
            print(line, file=sys.stderr)
        return 1 if bad else 0
    print(row())
    return 0


if __name__ == "__main__":
    sys.exit(main())
