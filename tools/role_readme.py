#!/usr/bin/env python3
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Each role's README variable table, generated from its meta/argument_specs.yml.

    python3 tools/role_readme.py            # rewrite the table in every roles/*/README.md
    python3 tools/role_readme.py --check    # exit 1 naming each README whose table differs
    python3 tools/role_readme.py bwrap      # only these roles

The table sits between the lines ``<!-- BEGIN VARIABLES (generated from
meta/argument_specs.yml) -->`` and ``<!-- END VARIABLES -->``; a README without them gets
them appended under a ``## Variables`` heading. tests/unit/test_role_readmes.py runs the
check for every role, so a new role or option is covered without touching the test.
"""
import argparse
import json
import os
import re
import sys

import yaml

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROLES = os.path.join(TOP, "roles")
BEGIN = "<!-- BEGIN VARIABLES (generated from meta/argument_specs.yml) -->"
END = "<!-- END VARIABLES -->"
BLOCK = re.compile(r"<!-- BEGIN VARIABLES[^>]*-->\n(.*?)\n?<!-- END VARIABLES -->", re.S)


def roles():
    """Names of the roles under roles/ (a directory with meta/argument_specs.yml)."""
    return sorted(name for name in os.listdir(ROLES)
                  if os.path.isfile(os.path.join(ROLES, name, "meta", "argument_specs.yml")))


def load(role, *parts):
    with open(os.path.join(ROLES, role, *parts)) as handle:
        return yaml.safe_load(handle)


def options(role):
    """The ``main`` entry point's options, in their declared order."""
    return load(role, "meta", "argument_specs.yml")["argument_specs"]["main"].get("options") or {}


def markup(text):
    """ansible-doc markup (C(), O(), V(), M(), I(), B(), L(), U()) as Markdown; cells stay one line."""
    # O(fqcn#type:option) names another plugin's option: `option` of `fqcn`
    text = re.sub(r"O\(([\w.]+)#\w+:([^)]*)\)", r"`\2` of `\1`", text)
    text = re.sub(r"[COVMP]\(([^)]*)\)", r"`\1`", text)
    text = re.sub(r"I\(([^)]*)\)", r"*\1*", text)
    text = re.sub(r"B\(([^)]*)\)", r"**\1**", text)
    text = re.sub(r"L\(([^,)]*),\s*([^)]*)\)", r"[\1](\2)", text)
    text = re.sub(r"U\(([^)]*)\)", r"<\1>", text)
    return text.replace("|", "\\|").replace("\n", " ")


def default_text(spec):
    if "default" not in spec:
        return "required" if spec.get("required") else "(none)"
    value = spec["default"]
    if isinstance(value, str):
        return "`%s`" % (value or '""')
    return "`%s`" % json.dumps(value)


def table(role):
    """The Markdown table for one role."""
    rows = ["| variable | type | default | description |", "| --- | --- | --- | --- |"]
    for name, spec in options(role).items():
        kind = spec.get("type", "str") + ("/" + spec["elements"] if "elements" in spec else "")
        if spec.get("choices"):
            kind += " (" + ", ".join(str(c) for c in spec["choices"]) + ")"
        desc = spec.get("description") or ""
        desc = " ".join(desc) if isinstance(desc, list) else desc
        rows.append("| `%s` | %s | %s | %s |" % (name, kind, default_text(spec), markup(desc)))
    return "\n".join(rows)


def rendered(role):
    """(current README text, README text with the generated table)."""
    path = os.path.join(ROLES, role, "README.md")
    with open(path) as handle:
        text = handle.read()
    block = "%s\n%s\n%s" % (BEGIN, table(role), END)
    if BLOCK.search(text):
        return text, BLOCK.sub(lambda _m: block, text, count=1)
    return text, text.rstrip("\n") + "\n\n## Variables\n\n" + block + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table is stale")
    parser.add_argument("role", nargs="*", help="roles (default: every role)")
    args = parser.parse_args(argv)
    stale = []
    for role in args.role or roles():
        old, new = rendered(role)
        if old == new:
            continue
        stale.append(role)
        if not args.check:
            with open(os.path.join(ROLES, role, "README.md"), "w") as handle:
                handle.write(new)
            print("rewrote roles/%s/README.md" % role)
    if args.check and stale:
        for role in stale:
            print("roles/%s/README.md: variable table differs from meta/argument_specs.yml; "
                  "run python3 tools/role_readme.py %s" % (role, role), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
