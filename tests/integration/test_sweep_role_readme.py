# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The roles document what they declare: README table, defaults and argument specs agree.

Run it to print a role's table: ``python tests/integration/test_sweep_role_readme.py boundary_audit``.
"""
import json
import os
import re
import sys

import pytest
import yaml

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The roles whose README carries the generated table.
ROLES = ("sandbox_sweep", "boundary_audit")


def load(role, *parts):
    with open(os.path.join(TOP, "roles", role, *parts)) as f:
        return yaml.safe_load(f)


def options(role):
    return load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def variables_table(role):
    """The README's variable table, generated from meta/argument_specs.yml."""
    def text(markup):
        return re.sub(r"[COVM]\(([^)]*)\)", r"`\1`", markup).replace("|", "\\|")

    rows = ["| variable | type | default | description |", "| --- | --- | --- | --- |"]
    for name, spec in options(role).items():
        kind = spec["type"] + ("/" + spec["elements"] if "elements" in spec else "")
        if spec.get("choices"):
            kind += " (" + ", ".join(spec["choices"]) + ")"
        default = spec.get("default")
        default = (default or '""') if isinstance(default, str) else json.dumps(default)
        desc = spec["description"]
        desc = " ".join(desc) if isinstance(desc, list) else desc
        rows.append("| `%s` | %s | `%s` | %s |" % (name, kind, default, text(desc)))
    return "\n".join(rows)


@pytest.mark.parametrize("role", ROLES)
def test_readme_table_is_the_one_argument_specs_generates(role):
    with open(os.path.join(TOP, "roles", role, "README.md")) as f:
        readme = f.read()
    match = re.search(r"<!-- BEGIN VARIABLES[^>]*-->\n(.*?)\n<!-- END VARIABLES -->", readme, re.S)
    assert match, "README.md lacks the BEGIN/END VARIABLES markers"
    assert match.group(1) == variables_table(role), "regenerate the table:\n" + variables_table(role)


@pytest.mark.parametrize("role", ROLES)
def test_every_default_is_declared_with_the_same_value(role):
    defaults = load(role, "defaults", "main.yml")
    declared = {name: spec.get("default") for name, spec in options(role).items()}
    assert defaults == declared


@pytest.mark.parametrize("role", ROLES)
def test_every_variable_has_the_role_prefix_a_type_and_a_description(role):
    for name, spec in options(role).items():
        assert name.startswith(role + "_"), name
        assert spec.get("type") and spec.get("description"), name


if __name__ == "__main__":
    print(variables_table(sys.argv[1] if len(sys.argv) > 1 else ROLES[0]))
