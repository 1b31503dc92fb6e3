# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The role sandbox_prevent through ansible-playbook on this host (issue 28): check mode changes
nothing, a run switches the prevention on in each place (and the probe proves the Hermes
sandbox), a second run changes nothing, state absent gives every file back.

The places are real files in directories of the test (a Hermes home, a daemon.json and a
containers.conf in a root-only directory under /run); the machine's own Docker daemon is not
reconfigured or restarted (sandbox_prevent_restart_docker: false): its daemon-wide default
is proven in test_prevent_engines.py with the same profile."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

pytestmark = [pytest.mark.controller, pytest.mark.root, pytest.mark.docker, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = "sandboxguard/debian:12"
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: sandboxguard.boundary.sandbox_prevent
"""
CONFIG = ("# Hermes\nterminal:\n  backend: docker   # the sandbox\n  docker_extra_args:\n"
          "    - --shm-size=2g   # chromium\n")
CONF = '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n'
DAEMON = '{\n  "log-driver": "json-file"\n}\n'


def run_role(tmp_path, variables, *flags):
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           str(tmp_path / "play.yml"), "-e", "@" + str(tmp_path / "vars.json"), *flags],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    return proc.returncode, json.loads(proc.stdout)


def changed(out):
    return out["stats"]["localhost"]["changed"]


@pytest.fixture
def places(tmp_path):
    root = tempfile.mkdtemp(prefix="sg-prevent-role-", dir="/run")
    home = tmp_path / ".hermes"
    home.mkdir()
    (home / "config.yaml").write_text(CONFIG)
    os.makedirs(os.path.join(root, "docker"))
    os.makedirs(os.path.join(root, "containers"))
    files = {"config": str(home / "config.yaml"), "daemon": os.path.join(root, "docker", "daemon.json"),
             "conf": os.path.join(root, "containers", "containers.conf"), "profiles": os.path.join(root, "seccomp")}
    with open(files["daemon"], "w") as handle:
        handle.write(DAEMON)
    with open(files["conf"], "w") as handle:
        handle.write(CONF)
    variables = {"sandbox_prevent_hermes_homes": str(home), "sandbox_prevent_hermes_engine": "docker",
                 "sandbox_prevent_docker_daemon": "true", "sandbox_prevent_podman": "true",
                 "sandbox_prevent_image": IMAGE, "sandbox_prevent_profile_dir": files["profiles"],
                 "sandbox_prevent_daemon_json": files["daemon"], "sandbox_prevent_containers_conf": files["conf"],
                 "sandbox_prevent_restart_docker": False, "sandbox_prevent_probe": True}
    yield files, variables
    shutil.rmtree(root, ignore_errors=True)


def contents(files):
    return {key: open(path).read() for key, path in files.items() if key != "profiles"}


def test_the_role_switches_each_place_on_proves_it_and_takes_it_out_again(tmp_path, places):
    files, variables = places
    before = contents(files)
    rc, out = run_role(tmp_path, variables, "--check", "--diff")
    assert rc == 0, json.dumps(out)[-3000:]
    assert changed(out) >= 3 and contents(files) == before and not os.path.exists(files["profiles"])

    rc, out = run_role(tmp_path, variables)
    assert rc == 0, json.dumps(out)[-3000:]
    now = contents(files)
    docker_profile = os.path.join(files["profiles"], "docker.json")
    assert "seccomp=%s" % docker_profile in now["config"] and "# chromium" in now["config"]
    assert "--cap-drop" in now["config"] and "MKNOD" in now["config"] and "SETFCAP" in now["config"]
    daemon = json.loads(now["daemon"])
    assert daemon == {"log-driver": "json-file",
                      "seccomp-profile": os.path.join(files["profiles"], "docker-devices.json")}
    assert 'seccomp_profile = "%s"' % os.path.join(files["profiles"], "podman.json") in now["conf"]
    assert sorted(os.listdir(files["profiles"])) == ["docker-base.json", "docker-devices.json", "docker.json",
                                                     "podman-base.json", "podman.json"]

    rc, out = run_role(tmp_path, variables)
    assert rc == 0 and changed(out) == 0, json.dumps(out)[-3000:]

    rc, out = run_role(tmp_path, dict(variables, sandbox_prevent_state="absent"))
    assert rc == 0, json.dumps(out)[-3000:]
    after = contents(files)
    assert after["config"] == before["config"] and after["conf"] == before["conf"]
    assert json.loads(after["daemon"]) == json.loads(before["daemon"])
    assert os.listdir(files["profiles"]) == []
    rc, out = run_role(tmp_path, dict(variables, sandbox_prevent_state="absent"))
    assert rc == 0 and changed(out) == 0


def test_nothing_is_done_unless_asked(tmp_path, places):
    files, _variables = places
    before = contents(files)
    rc, out = run_role(tmp_path, {"sandbox_prevent_profile_dir": files["profiles"]})
    assert rc == 0 and changed(out) == 0 and contents(files) == before


def test_a_seccomp_option_added_later_is_replaced_and_the_probe_proves_the_sandbox_again(tmp_path, places):
    files, variables = places
    hermes_only = dict(variables, sandbox_prevent_docker_daemon=False, sandbox_prevent_podman=False)
    rc, _out = run_role(tmp_path, dict(hermes_only, sandbox_prevent_probe=False))
    assert rc == 0
    with open(files["config"], "a") as handle:
        handle.write("    - --security-opt\n    - seccomp:unconfined   # someone's debugging\n")
    rc, out = run_role(tmp_path, hermes_only)
    assert rc == 0 and changed(out) == 1, json.dumps(out)[-3000:]
    assert "unconfined" not in open(files["config"]).read()
    assert "replaced by sandboxguard's profile" in json.dumps(out)


def test_the_probe_fails_the_play_when_a_capability_is_added_back(tmp_path, places):
    files, variables = places
    hermes_only = dict(variables, sandbox_prevent_docker_daemon=False, sandbox_prevent_podman=False)
    rc, _out = run_role(tmp_path, dict(hermes_only, sandbox_prevent_probe=False))
    assert rc == 0
    with open(files["config"], "a") as handle:
        handle.write("    - --cap-add\n    - SETFCAP\n")
    rc, out = run_role(tmp_path, hermes_only)
    assert rc != 0
    assert "seccomp probe failed: setcap: allowed (expected denied)" in json.dumps(out)
