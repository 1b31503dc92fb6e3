# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The role sandbox_sweep documents what it declares: README table, defaults and argument specs agree."""
import json
import os
import re

import yaml

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE = os.path.join(TOP, "roles", "sandbox_sweep")


def load(*parts):
    with open(os.path.join(ROLE, *parts)) as f:
        return yaml.safe_load(f)


def options():
    return load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def variables_table():
    """The README's variable table, generated from meta/argument_specs.yml."""
    def text(markup):
        return re.sub(r"[COVM]\(([^)]*)\)", r"`\1`", markup).replace("|", "\\|")

    rows = ["| variable | type | default | description |", "| --- | --- | --- | --- |"]
    for name, spec in options().items():
        kind = spec["type"] + ("/" + spec["elements"] if "elements" in spec else "")
        if spec.get("choices"):
            kind += " (" + ", ".join(spec["choices"]) + ")"
        default = spec.get("default")
        default = (default or '""') if isinstance(default, str) else json.dumps(default)
        desc = spec["description"]
        desc = " ".join(desc) if isinstance(desc, list) else desc
        rows.append("| `%s` | %s | `%s` | %s |" % (name, kind, default, text(desc)))
    return "\n".join(rows)


def test_readme_table_is_the_one_argument_specs_generates():
    with open(os.path.join(ROLE, "README.md")) as f:
        readme = f.read()
    match = re.search(r"<!-- BEGIN VARIABLES[^>]*-->\n(.*?)\n<!-- END VARIABLES -->", readme, re.S)
    assert match, "README.md lacks the BEGIN/END VARIABLES markers"
    assert match.group(1) == variables_table(), "regenerate the table:\n" + variables_table()


def test_every_default_is_declared_with_the_same_value():
    defaults = load("defaults", "main.yml")
    declared = {name: spec.get("default") for name, spec in options().items()}
    assert defaults == declared


def test_every_variable_has_the_role_prefix_a_type_and_a_description():
    for name, spec in options().items():
        assert name.startswith("sandbox_sweep_"), name
        assert spec.get("type") and spec.get("description"), name
