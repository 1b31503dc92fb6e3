# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""leaks_info and leaks_remove document their shared options once (doc fragment sandboxguard.boundary.leaks)
and take them from one argument spec; ansible-doc shows both modules the same text."""
import ast
import json
import os
import subprocess
import sys

import pytest

# The pythons layer's venvs have only pytest: there this file is skipped, as test_role_readmes.py is.
yaml = pytest.importorskip("yaml")

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = ("users", "hermes_home", "sandbox_dir", "agent_user", "tmp_dir", "tmp_patterns", "spool_dir", "min_age",
          "at_spool_dirs", "runtime_root")


def _documentation(relpath):
    with open(os.path.join(TOP, relpath), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no DOCUMENTATION" % relpath)


def test_the_modules_write_none_of_the_shared_options_themselves():
    for module in ("leaks_info", "leaks_remove"):
        doc = _documentation("plugins/modules/%s.py" % module)
        assert "sandboxguard.boundary.leaks" in doc["extends_documentation_fragment"], module
        assert not set(SHARED) & set(doc.get("options") or {}), module
    fragment = _documentation("plugins/doc_fragments/leaks.py")
    assert tuple(fragment["options"]) == SHARED


def test_ansible_doc_shows_the_same_text_for_both_modules_and_the_spec_agrees():
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"))
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "--json", "-t", "module",
                           "sandboxguard.boundary.leaks_info", "sandboxguard.boundary.leaks_remove"],
                          capture_output=True, text=True, env=env, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    docs = json.loads(done.stdout)
    info = docs["sandboxguard.boundary.leaks_info"]["doc"]["options"]
    remove = docs["sandboxguard.boundary.leaks_remove"]["doc"]["options"]
    for name in SHARED:
        assert info[name] == remove[name], name
    # the documented defaults are the argument spec's (module_utils/leaks_module.py, from the library)
    from sandboxguard._leaks.atjobs import AT_SPOOL_DIRS
    from sandboxguard._leaks.cron import SPOOL_DIR
    from sandboxguard._leaks.home import DEFAULT_TMP_PATTERNS, RUNTIME_ROOT, TMP_DIR

    assert info["tmp_dir"]["default"] == TMP_DIR and info["spool_dir"]["default"] == SPOOL_DIR
    assert info["runtime_root"]["default"] == RUNTIME_ROOT
    assert tuple(info["at_spool_dirs"]["default"]) == AT_SPOOL_DIRS
    assert tuple(info["tmp_patterns"]["default"]) == DEFAULT_TMP_PATTERNS
