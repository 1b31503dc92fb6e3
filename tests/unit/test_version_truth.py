# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""One version truth: the tested controllers, requires_ansible, min_ansible_version, README.

tools/support_matrix.py derives the claim from the requirements files that make the
controller venvs; these tests fail when any of the other places says something else.
"""
import os
import re
import subprocess

import pytest
import repo_scan as scan

TOP = scan.TOP
sm = scan.tool("support_matrix")


def test_requires_ansible_roles_and_readme_agree_with_the_tested_controllers():
    assert sm.problems() == []


def test_the_range_has_an_upper_bound_and_covers_exactly_the_tested_cores():
    cores = [c[0] for c in sm.controllers()]
    assert cores[0] == "2.19" and len(cores) >= 3
    assert sm.requires_ansible() == ">=%s.0,<2.%d" % (cores[0], int(cores[-1].split(".")[1]) + 1)


def test_venv_is_the_controller_dev_txt_names():
    python = os.path.join(TOP, ".venv", "bin", "python")
    if not os.path.exists(python):
        pytest.skip("no .venv (make setup)")
    core, version = sm.controllers()[0][:2]
    probe = "import sys; from ansible.release import __version__ as v; print(v, '%d.%d' % sys.version_info[:2])"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True)
    have_core, have_python = done.stdout.split()
    assert have_core.startswith(core + ".") and have_python == version


def with_file(monkeypatch, name, text):
    real = sm.read

    def fake(*parts):
        return text if os.path.join(*parts) == name else real(*parts)
    monkeypatch.setattr(sm, "read", fake)


@pytest.mark.parametrize("claim", [">=2.19.0", ">=2.19.0,<2.21", ">=2.18.0,<2.22", ">=2.19.0,<2.23"])
def test_a_range_that_claims_more_or_less_than_was_tested_is_named(monkeypatch, claim):
    with_file(monkeypatch, os.path.join("meta", "runtime.yml"), 'requires_ansible: "%s"\n' % claim)
    assert [p for p in sm.problems() if p.startswith("meta/runtime.yml")] == [
        "meta/runtime.yml: requires_ansible is %r, the tested controllers give '>=2.19.0,<2.22'" % claim]


@pytest.mark.parametrize(("name", "change", "named"), [
    (os.path.join(TOP, "roles", "bwrap", "meta", "main.yml"),
     lambda _text: 'galaxy_info:\n  min_ansible_version: "2.15"\n',
     "roles/bwrap/meta/main.yml: min_ansible_version is 2.15"),
    ("README.md", lambda text: text.replace(sm.row(), "| ansible-core (controller) | 2.19 on Python 3.11 | x |"),
     "README.md: the support matrix"),
    ("requirements/controller-2.21.txt", lambda text: text.replace("ansible-core==2.21.", "ansible-core==2.20."),
     "requirements/controller-2.21.txt: header says ansible-core 2.21, pin is 2.20."),
], ids=["role-min-version", "readme-row", "pin-header"])
def test_a_stale_place_is_named(monkeypatch, name, change, named):
    with_file(monkeypatch, name, change(sm.read(name)))
    assert any(p.startswith(named) for p in sm.problems())


def test_readme_pins_one_version_the_newest_release_once_there_is_one():
    readme = sm.read("README.md") + sm.read("docs", "awx.md")
    pins = re.findall(r"^ *version: (\S+)$", readme, re.M) + re.findall(
        r"sandboxguard-boundary-(\d+\.\d+\.\d+)\.tar\.gz", readme)
    assert pins and len(set(pins)) == 1, pins
    assert "main" not in pins
    releases = re.findall(r"^  ['\"]?(\d+\.\d+\.\d+)['\"]?:$", sm.read("changelogs", "changelog.yaml"), re.M)
    if releases:
        assert pins[0] == max(releases, key=sm.key)
    else:  # before the first release the pin names it (tools/release.sh rewrites the pins)
        assert sm.key(pins[0]) > sm.key(re.search(r"^version: (\S+)$", sm.read("galaxy.yml"), re.M).group(1))
