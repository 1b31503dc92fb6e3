# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The docs site's Playbooks page says what the playbooks read: docs/docsite/inputs.yml
declares each playbook's sandboxguard_* inputs, and the generated pages are current.

The playbooks are found on disk and their variables read from their YAML (comments do not
count), so a new playbook or a new input fails here until it is documented.
"""
import os

import pytest
import repo_scan as scan

pytest.importorskip("yaml")  # the pythons layer's venvs carry only pytest

docsite = scan.tool("docsite")
PLAYBOOKS = [os.path.basename(rel)[:-4] for rel in scan.playbooks()]
SPEC = docsite.load_inputs()


def test_every_playbook_is_documented():
    assert sorted(SPEC["playbooks"]) == PLAYBOOKS


@pytest.mark.parametrize("name", PLAYBOOKS)
def test_documented_inputs_are_the_variables_the_playbook_reads(name):
    read = docsite.playbook_reads(scan.path("playbooks/%s.yml" % name))
    documented = set(SPEC["playbooks"].get(name, {}).get("inputs", []))
    assert sorted(read - documented) == [], "read by playbooks/%s.yml, not in docs/docsite/inputs.yml" % name
    assert sorted(documented - read) == [], "documented for %s, not read by playbooks/%s.yml" % (name, name)


def test_every_listed_input_is_declared_once_with_type_default_and_description():
    listed = {i for play in SPEC["playbooks"].values() for i in play["inputs"]}
    assert sorted(listed ^ set(SPEC["inputs"])) == []
    for name, item in SPEC["inputs"].items():
        assert {"type", "default", "description"} <= set(item), name


def test_comments_and_registered_results_are_not_inputs(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(
        "# sandboxguard_in_a_comment is not read\n"
        "- hosts: \"{{ sandboxguard_hosts | default('all') }}\"\n"
        "  vars:\n"
        "    sandboxguard__internal: \"{{ sandboxguard_paths | default([]) }}\"\n"
        "    sandboxguard_set_here: 1\n"
        "  tasks:\n"
        "    - ansible.builtin.command: \"echo {{ sandboxguard_set_here }}\"\n"
        "      register: sandboxguard_result\n"
        "    - ansible.builtin.debug:\n"
        "        var: sandboxguard_result\n")
    assert docsite.playbook_reads(str(play)) == {"sandboxguard_hosts", "sandboxguard_paths"}


def test_generated_pages_are_current():
    stale = docsite.generate(check=True)
    assert stale == [], "run python3 tools/docsite.py generate"


def test_markup_becomes_rst_and_plain_text_is_escaped():
    text = docsite.rst("C(a) O(sandboxguard.boundary.bwrap#role:main:bwrap_agent_user) "
                       "M(sandboxguard.boundary.setid_strip) "
                       "R(bwrap,ansible_collections.sandboxguard.boundary.bwrap_role) O(sandboxguard_owner) x*y name_")
    assert text == ("``a`` :ansopt:`sandboxguard.boundary.bwrap#role:main:bwrap_agent_user` "
                    ":ansplugin:`sandboxguard.boundary.setid_strip#module` "
                    ":ref:`bwrap <ansible_collections.sandboxguard.boundary.bwrap_role>` ``sandboxguard_owner`` "
                    "x\\*y name\\_")
