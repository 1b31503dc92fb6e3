# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The role runner_cleanup through ansible-playbook on this host, for a real runner user:
check mode changes nothing (also with sudo missing), the install is idempotent, and
runner_cleanup_state: absent gives the operator's hook back and removes everything the role
installed, idempotently and with check mode. molecule/runner_cleanup runs it under systemd
in a container without sudo to begin with."""
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest
from racing import RaceWorld
from sandboxguard._privileged import runner_hooks as rh
from sandboxguard._privileged import runner_texts

pytestmark = [pytest.mark.controller, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: sandboxguard.boundary.runner_cleanup
"""


def run_role(tmp_path, variables, *flags):
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           str(tmp_path / "play.yml"), "-e", "@" + str(tmp_path / "vars.json"), *flags],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        pytest.fail("ansible-playbook printed no JSON (rc %d): %s %s" % (proc.returncode, proc.stdout, proc.stderr))
    return proc.returncode, out["stats"].get("localhost", {}), out


def task(out, name):
    for play in out["plays"]:
        for entry in play["tasks"]:
            if entry["task"]["name"].split(" : ")[-1] == name and "localhost" in entry["hosts"]:
                return entry["hosts"]["localhost"]
    raise AssertionError("task %r did not run" % name)


@pytest.fixture
def host():
    """A runner user and its runner directory (the operator's completed hook in .env), and
    role variables that install below a root-only directory of this test."""
    base = "/var/lib/sgrc-%s" % uuid.uuid4().hex[:8]
    os.mkdir(base, 0o755)
    os.mkdir(base + "/sbin", 0o755)
    with RaceWorld("sgrc") as world:
        runner = world.agent_dir("actions-runner")
        world.agent_file("actions-runner/.runner", b'{"workFolder": "_work"}')
        env = world.agent_file("actions-runner/.env", b"LANG=C.UTF-8\nACTIONS_RUNNER_HOOK_JOB_COMPLETED=/opt/op.sh\n")
        variables = {"runner_cleanup_runners": runner + ",",  # an AWX survey string
                     "runner_cleanup_install_dir": base + "/lib", "runner_cleanup_cli_path": base + "/sandboxguard",
                     "runner_cleanup_hook_dir": base + "/hooks",
                     "runner_cleanup_helper_path": base + "/sbin/sandboxguard-runner-cleanup"}
        yield {"world": world, "runner": runner, "env": env, "base": base, "vars": variables,
               "dropin": "/etc/sudoers.d/" + rh.DROPIN_PREFIX + rh.runner_name(runner)}
        try:
            rh.ensure_hooks(runner, state="absent", hook_dir=base + "/hooks")
        finally:
            shutil.rmtree(base, ignore_errors=True)
            if os.path.lexists("/etc/sudoers.d/" + rh.DROPIN_PREFIX + rh.runner_name(runner)):
                os.unlink("/etc/sudoers.d/" + rh.DROPIN_PREFIX + rh.runner_name(runner))


def test_check_mode_without_sudo_says_what_it_would_do_and_changes_nothing(tmp_path, host):
    # sudo and visudo "missing" (paths that do not exist); the role may install sudo
    variables = dict(host["vars"], runner_cleanup_sudo_path="/nonexistent/sudo",
                     runner_cleanup_visudo_path="/nonexistent/visudo")
    before = open(host["env"], "rb").read()
    rc, stats, out = run_role(tmp_path, variables, "--check")
    assert rc == 0 and stats["failures"] == 0, out
    looped = task(out, "Install the hooks of each runner, chaining the operator's own")
    hooks = looped["results"][0]
    assert hooks["changed"] and hooks["env_changed"] and hooks["chained"]["completed"] == "/opt/op.sh"
    warnings = json.dumps([looped.get("warnings"), hooks.get("warnings")])
    assert "/nonexistent/visudo is not there yet" in warnings, looped
    assert task(out, "Say the runner reads .env when it starts")["results"][0]["msg"].startswith(
        "check mode: would change %s" % host["env"])
    assert open(host["env"], "rb").read() == before
    assert sorted(os.listdir(host["base"])) == ["sbin"] and not os.path.exists(host["dropin"])


def test_install_then_again_then_absent_then_again(tmp_path, host):
    original = open(host["env"], "rb").read()
    rc, stats, out = run_role(tmp_path, host["vars"])
    assert rc == 0, out
    helper = host["vars"]["runner_cleanup_helper_path"]
    assert open(helper).read() == runner_texts.helper_script("/usr/bin/python3", host["base"] + "/lib", helper)
    assert rh.env_value(open(host["env"], "rb").read(), rh.ENV_VARS["completed"]).startswith(host["base"] + "/hooks/")
    assert os.path.exists(host["dropin"]) and os.path.isfile(host["base"] + "/lib/sandboxguard/strip.py")
    counted = task(out, "Count the library and CLI files that were or would be copied")
    assert counted.get("skipped")  # only in check or diff mode
    rc, stats, out = run_role(tmp_path, host["vars"])
    assert rc == 0 and stats["changed"] == 0, [t["task"]["name"] for p in out["plays"] for t in p["tasks"]
                                              if t["hosts"].get("localhost", {}).get("changed")]

    absent = dict(host["vars"], runner_cleanup_state="absent")
    rc, stats, out = run_role(tmp_path, absent, "--check")
    assert rc == 0 and stats["changed"] > 0, out
    assert os.path.exists(helper) and os.path.exists(host["dropin"]) and open(host["env"], "rb").read() != original
    rc, stats, out = run_role(tmp_path, absent)
    assert rc == 0, out
    assert open(host["env"], "rb").read() == original  # the operator's hook is back
    assert sorted(os.listdir(host["base"])) == ["sbin"] and os.listdir(host["base"] + "/sbin") == []
    assert not os.path.exists(host["dropin"])
    said = task(out, "Say what was removed")["msg"]
    assert said.startswith("gave back the hooks of 1 runner(s) (%s: restart" % host["runner"]), said
    assert "library and CLI removed from %s/lib" % host["base"] in said
    rc, stats, out = run_role(tmp_path, absent)
    assert rc == 0 and stats["changed"] == 0, out


def test_absent_keeps_the_library_the_sandbox_sweep_role_uses_and_finds_runners_no_longer_listed(tmp_path, host):
    assert run_role(tmp_path, host["vars"])[0] == 0
    cli = host["vars"]["runner_cleanup_cli_path"]
    with open(cli, "w") as handle:  # as if the sandbox_sweep role had written it
        handle.write("#!/usr/bin/python3 -I\n# Managed by Ansible (role sandboxguard.boundary.sandbox_sweep)\n")
    rc, _stats, out = run_role(tmp_path, dict(host["vars"], runner_cleanup_state="absent", runner_cleanup_runners=[]))
    assert rc == 0, out
    assert b"/opt/op.sh" in open(host["env"], "rb").read() and not os.path.exists(host["dropin"])
    assert os.path.isfile(host["base"] + "/lib/sandboxguard/strip.py") and os.path.exists(cli)
    assert "library kept (the sandbox_sweep role uses it)" in task(out, "Say what was removed")["msg"]
