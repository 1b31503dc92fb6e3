# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Options shared by several modules are documented once, in a doc fragment, and the modules
write none of them themselves: the roots options (fragment sandboxguard.boundary.sandboxes,
whose ROOTS part nosuid_mount uses) and the leak options (sandboxguard.boundary.leaks). That
each module's documentation states its argument spec's defaults and choices is ansible-test
sanity's (validate-modules)."""
import ast

import pytest
import repo_scan as scan

pytest.importorskip("yaml")
ROOTS = ("hermes_home", "sandbox_dir", "roots", "github_runners", "gitlab_config")
LEAKS = ("users", "hermes_home", "sandbox_dir", "agent_user", "tmp_dir", "tmp_patterns", "spool_dir", "min_age",
         "at_spool_dirs", "runtime_root")


def test_the_roots_part_is_the_first_options_of_the_whole_fragment_word_for_word():
    # ansible-test reads each fragment variable as one string literal: the ROOTS part cannot be
    # built from the whole one, so the two are compared here
    for node in ast.walk(scan.parse(scan.DOC_FRAGMENTS + "/sandboxes.py")):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in ("DOCUMENTATION", "ROOTS"):
            assert isinstance(node.value, ast.Constant), "ansible-test reads it as one string literal"
    whole = scan.literal(scan.DOC_FRAGMENTS + "/sandboxes.py")["options"]
    roots = scan.literal(scan.DOC_FRAGMENTS + "/sandboxes.py", "ROOTS")["options"]
    assert tuple(roots) == ROOTS and {name: whole[name] for name in ROOTS} == roots


@pytest.mark.parametrize("fragment, modules, shared", [
    ("sandboxes.roots", ("nosuid_mount",), ROOTS),
    ("leaks", ("leaks_info", "leaks_remove"), LEAKS),
])
def test_the_modules_write_none_of_the_shared_options_themselves(fragment, modules, shared):
    for module in modules:
        doc = scan.literal("%s/%s.py" % (scan.MODULES, module))
        assert scan.FQCN + fragment in doc["extends_documentation_fragment"], module
        assert not set(shared) & set(doc.get("options") or {}), module
    name, _, var = fragment.partition(".")
    options = scan.literal("%s/%s.py" % (scan.DOC_FRAGMENTS, name), (var or "documentation").upper())["options"]
    assert tuple(options) == shared
