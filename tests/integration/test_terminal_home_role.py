# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The role terminal_home through ansible-playbook on this host: check mode says what a real run would do."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.controller, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: sandboxguard.boundary.terminal_home
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


def test_check_mode_ends_with_what_a_real_run_would_change(tmp_path):
    homes = [tmp_path / "a" / ".hermes", tmp_path / "b" / ".hermes"]
    for home in homes:
        home.mkdir(parents=True)
    (homes[1] / "config.yaml").write_text("terminal:\n  home_mode: profile\n")
    (homes[1] / "home").mkdir(mode=0o700)
    variables = {"terminal_home_hermes_homes": ",".join(str(h) for h in homes), "terminal_home_audit": False}
    rc, out = run_role(tmp_path, variables, "--check")
    assert rc == 0, out
    said = task(out, "Say what a real run would change")["msg"]
    assert said.startswith("check mode: a real run would change 1 of 2 Hermes home(s): %s;" % homes[0]), said
    assert said.endswith("the audit was off")
    assert not (homes[0] / "config.yaml").exists()
    rc, out = run_role(tmp_path, variables)
    assert rc == 0
    assert task(out, "Say what a real run would change").get("skipped")  # only in check mode
    rc, out = run_role(tmp_path, variables, "--check")
    assert task(out, "Say what a real run would change")["msg"].startswith(
        "check mode: a real run would change 0 of 2 Hermes home(s);")


def changed_tasks(out):
    return [entry["task"]["name"].split(" : ")[-1] for play in out["plays"] for entry in play["tasks"]
            if entry["hosts"].get("localhost", {}).get("changed")]


def test_state_absent_removes_the_eval_tools_keeps_the_mode_and_the_operators_files(tmp_path):
    home = tmp_path / "agent" / ".hermes"
    home.mkdir(parents=True)
    bin_dir = tmp_path / "eval-bin"
    variables = {"terminal_home_hermes_homes": [str(home)], "terminal_home_audit": False,
                 "terminal_home_eval_isolation": True, "terminal_home_bin_dir": str(bin_dir)}
    rc, out = run_role(tmp_path, variables)
    assert rc == 0, out
    assert sorted(os.listdir(bin_dir)) == ["crontab", "sandboxguard-eval-run"]
    (bin_dir / "operator-tool").write_text("#!/bin/sh\n")
    config = (home / "config.yaml").read_text()
    assert "home_mode: profile" in config
    absent = dict(variables, terminal_home_state="absent")

    rc, out = run_role(tmp_path, absent, "--check")
    assert rc == 0, out
    said = task(out, "Say what was removed")["msg"]
    assert said.startswith("check mode: would remove %s/crontab, %s/sandboxguard-eval-run;" % (bin_dir, bin_dir)), said
    assert sorted(os.listdir(bin_dir)) == ["crontab", "operator-tool", "sandboxguard-eval-run"]

    rc, out = run_role(tmp_path, absent)
    assert rc == 0, out
    assert changed_tasks(out) == ["Remove the crontab shim and the eval-run wrapper"]
    assert task(out, "Configure the homes and audit the host").get("skipped")
    assert os.listdir(bin_dir) == ["operator-tool"]  # the operator's file and so its directory stay
    assert (home / "config.yaml").read_text() == config  # the mode stays as set (terminal_home_state says why)
    assert (home / "home").is_dir()

    rc, out = run_role(tmp_path, absent)  # idempotent
    assert rc == 0 and changed_tasks(out) == [], out
    assert task(out, "Say what was removed")["msg"].startswith("removed nothing (not installed)")


def test_state_absent_leaves_a_crontab_it_did_not_write(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "crontab").write_text("#!/bin/sh\nexec /usr/bin/crontab \"$@\"\n")
    (bin_dir / "crontab").chmod(0o755)
    rc, out = run_role(tmp_path, {"terminal_home_state": "absent", "terminal_home_bin_dir": str(bin_dir)})
    assert rc == 0, out
    removed = task(out, "Remove the crontab shim and the eval-run wrapper")
    assert removed["changed"] is False and removed["removed"] == []
    assert any("crontab left in place: not written by sandboxguard" in w for w in removed["warnings"]), removed
    assert (bin_dir / "crontab").exists()
