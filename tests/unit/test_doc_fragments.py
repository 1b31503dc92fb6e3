# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Options shared by several modules are documented once, in a doc fragment (the roots options
in sandboxguard.boundary.sandboxes.roots, the engine options in sandboxguard.boundary.sandboxes,
the leak options in sandboxguard.boundary.leaks), and a module that extends a fragment writes none
of its options itself. That each module's documentation states its argument spec's defaults and choices is
ansible-test sanity's (validate-modules)."""
import pytest
import repo_scan as scan

pytest.importorskip("yaml")


def fragment(name):
    """The options of the fragment sandboxguard.boundary.NAME (NAME.PART: a part, sandboxes.roots)."""
    module, _, part = name.partition(".")
    return scan.literal("%s/%s.py" % (scan.DOC_FRAGMENTS, module), (part or "documentation").upper())["options"]


def test_a_module_writes_none_of_the_options_of_a_fragment_it_extends():
    users = {}
    for module in scan.module_names():
        doc = scan.literal("%s/%s.py" % (scan.MODULES, module))
        for name in [f[len(scan.FQCN):] for f in doc.get("extends_documentation_fragment") or ()
                     if f.startswith(scan.FQCN)]:
            users.setdefault(name, []).append(module)
            assert not set(fragment(name)) & set(doc.get("options") or {}), (module, name)
    assert {"nosuid_mount", "sandbox_sweep", "sandbox_mounts_info"} <= set(users["sandboxes.roots"])
    assert {"sandbox_sweep", "sandbox_mounts_info"} <= set(users["sandboxes"])
    assert {"leaks_info", "leaks_remove"} <= set(users["leaks"])
    assert not set(fragment("sandboxes")) & set(fragment("sandboxes.roots")), "an option written in both parts"
