# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The role bwrap with bwrap_state: absent through ansible-playbook on this host: what the
role installed (the AppArmor profile, the sysctl drop-in, a bwrap its source build put in
the prefix and the build directory) goes, with check mode first and a second run that
changes nothing; another bwrap in the prefix, the distribution's packages and the Hermes
config stay. The install itself is molecule/bwrap's and molecule/bwrap_debian12's."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

pytestmark = [pytest.mark.controller, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: sandboxguard.boundary.bwrap
"""


def run_role(tmp_path, variables, *flags):
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           str(tmp_path / "play.yml"), "-e", "@" + str(tmp_path / "vars.json"), *flags],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    return proc.returncode, json.loads(proc.stdout)


def task(out, name):
    for play in out["plays"]:
        for entry in play["tasks"]:
            if entry["task"]["name"].split(" : ")[-1] == name:
                return entry["hosts"]["localhost"]
    raise AssertionError("task %r did not run" % name)


@pytest.fixture
def installed(tmp_path):
    """What a run of the role with install method source and both remediations leaves, below a
    root-only directory of this test."""
    base = "/run/sgbwrap-rm-%s" % uuid.uuid4().hex[:8]
    for sub in ("apparmor.d", "sysctl.d", "prefix/bin", "build/build-0123456789abcdef/build"):
        os.makedirs(os.path.join(base, sub))
    binary = b"\x7fELF built by the role\n"
    with open(base + "/prefix/bin/bwrap", "wb") as handle:
        handle.write(binary)
    with open(base + "/build/build-0123456789abcdef/installed", "w") as handle:
        handle.write(hashlib.sha256(binary).hexdigest() + "\n")
    with open(base + "/apparmor.d/sandboxguard-bwrap", "w") as handle:
        handle.write("abi <abi/4.0>,\nprofile sandboxguard-bwrap /usr/local/bin/bwrap flags=(unconfined) {\n"
                     "  userns,\n}\n")
    with open(base + "/sysctl.d/60-sandboxguard-userns.conf", "w") as handle:
        handle.write("# Managed by sandboxguard (role bwrap, bwrap_userns_remediation: sysctl):\n"
                     "kernel.unprivileged_userns_clone = 1\n")
    config = tmp_path / "hermes" / "config.yaml"
    config.parent.mkdir()
    config.write_text("terminal:\n  backend: bubblewrap\n")
    variables = {"bwrap_state": "absent", "bwrap_apparmor_profile_path": base + "/apparmor.d/sandboxguard-bwrap",
                 "bwrap_sysctl_file": base + "/sysctl.d/60-sandboxguard-userns.conf",
                 "bwrap_source_prefix": base + "/prefix", "bwrap_source_build_dir": base + "/build",
                 "bwrap_hermes_config": str(config)}
    yield {"base": base, "vars": variables, "config": config}
    shutil.rmtree(base, ignore_errors=True)


def test_absent_removes_what_the_role_installed_with_check_mode_then_changes_nothing(tmp_path, installed):
    base, variables = installed["base"], installed["vars"]
    rc, out = run_role(tmp_path, variables, "--check")
    assert rc == 0, out
    said = task(out, "Say what was removed")["msg"]
    assert said.startswith("check mode: would remove %s/apparmor.d/sandboxguard-bwrap, "
                           "%s/sysctl.d/60-sandboxguard-userns.conf, %s/prefix/bin/bwrap, %s/build"
                           % (base, base, base, base)), said
    assert "the running kernel keeps kernel.unprivileged_userns_clone = 1 until the next boot" in said
    assert os.path.exists(base + "/prefix/bin/bwrap") and os.path.exists(base + "/apparmor.d/sandboxguard-bwrap")

    rc, out = run_role(tmp_path, variables)
    assert rc == 0, out
    assert task(out, "Sum up the removal")["ansible_facts"]["bwrap_removal_changed"] is True
    for sub in ("apparmor.d", "sysctl.d", "prefix/bin"):
        assert os.listdir(os.path.join(base, sub)) == [], sub
    assert not os.path.exists(base + "/build")
    assert installed["config"].read_text() == "terminal:\n  backend: bubblewrap\n"  # the operator's config stays
    assert shutil.which("bwrap")  # the distribution's package stays

    rc, out = run_role(tmp_path, variables)
    assert rc == 0 and out["stats"]["localhost"]["changed"] == 0, out
    assert task(out, "Say what was removed")["msg"].startswith("removed nothing;")


def test_absent_leaves_a_bwrap_in_the_prefix_that_no_build_of_the_role_recorded(tmp_path, installed):
    base = installed["base"]
    with open(base + "/prefix/bin/bwrap", "wb") as handle:
        handle.write(b"\x7fELF the operator's own build\n")
    rc, out = run_role(tmp_path, installed["vars"])
    assert rc == 0, out
    assert task(out, "Remove the bwrap a build of this role installed").get("skipped")
    assert open(base + "/prefix/bin/bwrap", "rb").read() == b"\x7fELF the operator's own build\n"
    assert not os.path.exists(base + "/build")
