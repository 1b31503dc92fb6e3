# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The roots options (hermes_home, sandbox_dir, roots, github_runners, gitlab_config) are
documented the same way for the sweep's modules (fragment sandboxguard.boundary.sandboxes) and
for nosuid_mount (its ROOTS part), and taken from one argument spec."""
import ast
import os
import sys

import pytest

# The pythons layer's venvs have only pytest: there this file is skipped, as test_role_readmes.py is.
yaml = pytest.importorskip("yaml")

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROOTS = ("hermes_home", "sandbox_dir", "roots", "github_runners", "gitlab_config")


def _fragment(name):
    with open(os.path.join(TOP, "plugins", "doc_fragments", "sandboxes.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            assert isinstance(node.value, ast.Constant), "ansible-test reads %s as one string literal" % name
            return yaml.safe_load(node.value.value)
    raise AssertionError("no %s in the sandboxes fragment" % name)


def test_the_roots_part_is_the_first_options_of_the_whole_fragment_word_for_word():
    whole, roots = _fragment("DOCUMENTATION")["options"], _fragment("ROOTS")["options"]
    assert set(roots) == set(ROOTS)
    assert {name: whole[name] for name in ROOTS} == roots


def test_nosuid_mount_takes_the_roots_options_from_the_shared_spec():
    sys.path.insert(0, os.path.join(TOP, ".cache", "collections"))
    try:
        sandboxes_module = pytest.importorskip(
            "ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxes_module")
    finally:
        sys.path.pop(0)
    roots = _fragment("ROOTS")["options"]
    assert set(sandboxes_module.ROOTS_ARGUMENT_SPEC) == set(roots)
    for name, spec in sandboxes_module.ROOTS_ARGUMENT_SPEC.items():
        assert spec["type"] == roots[name]["type"]
        assert spec.get("default") == roots[name].get("default")
        assert set(spec) <= set(sandboxes_module.SANDBOX_ARGUMENT_SPEC[name])
