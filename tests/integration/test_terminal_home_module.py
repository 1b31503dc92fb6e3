# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""terminal_home and leaks_info as Ansible runs them, on a real user's home.

terminal_home: check mode changes nothing, diff shows each file, a second run reports no
change, files and the profile home belong to the home's owner, and the installed shim
works for that user. leaks_info: a job installed with the real crontab, a
script, a user unit with its timer enabled and a /tmp/ab-* run dir are each found.
"""
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import time
import uuid

import pytest

pytestmark = [pytest.mark.controller, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")
CONFIG = "# agent config\nmodel: x   # keep me\nterminal:\n  backend: local\n"


def run_module(module, args, *flags):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([ANSIBLE, "localhost", "-m", "sandboxguard.boundary." + module, "-a", json.dumps(args),
                           *flags], capture_output=True, text=True, env=env, timeout=120, check=False)
    out = json.loads(proc.stdout)
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.fixture()
def agent():
    if os.geteuid() != 0:
        pytest.fail("these tests create a user: run them as root")
    name = "sgth" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
    entry = pwd.getpwnam(name)
    hermes = os.path.join(entry.pw_dir, ".hermes")
    for sub in ("", "profiles/work", "profiles/dev"):
        os.makedirs(os.path.join(hermes, sub), exist_ok=True)
        os.chown(os.path.join(hermes, sub), entry.pw_uid, entry.pw_gid)
    os.chown(os.path.join(hermes, "profiles"), entry.pw_uid, entry.pw_gid)
    with open(os.path.join(hermes, "config.yaml"), "w") as handle:
        handle.write(CONFIG)
    os.chown(os.path.join(hermes, "config.yaml"), entry.pw_uid, entry.pw_gid)
    bin_dir = "/tmp/sg-th-bin-" + name
    try:
        yield {"name": name, "uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir, "hermes": hermes,
               "bin": bin_dir}
    finally:
        subprocess.run(["crontab", "-u", name, "-r"], check=False, capture_output=True)
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)
        shutil.rmtree(bin_dir, ignore_errors=True)


def test_check_mode_reports_changes_and_writes_nothing(agent):
    result = run_module("terminal_home", {"hermes_home": agent["hermes"], "where": "both"}, "--check", "--diff")
    assert result["changed"] is True
    assert result["mode"] == "profile"
    assert len(result["diff"]) == 6
    with open(os.path.join(agent["hermes"], "config.yaml")) as handle:
        assert handle.read() == CONFIG
    assert not os.path.exists(os.path.join(agent["hermes"], "home"))


def test_converge_then_idempotent_with_owner_kept(agent):
    first = run_module("terminal_home", {"hermes_home": agent["hermes"], "mode": "isolated", "where": "both"})
    assert first["changed"] is True and first["previous"] is None
    second = run_module("terminal_home", {"hermes_home": agent["hermes"], "mode": "profile-home", "where": "both"})
    assert second["changed"] is False
    assert second["previous"] == "profile"
    with open(os.path.join(agent["hermes"], "config.yaml")) as handle:
        assert handle.read() == CONFIG.replace("terminal:\n", "terminal:\n  home_mode: profile\n")
    for sub in ("", "profiles/work", "profiles/dev"):
        base = os.path.join(agent["hermes"], sub)
        for path, mode in (("config.yaml", 0o600), (".env", 0o600), ("home", 0o700)):
            info = os.stat(os.path.join(base, path))
            assert (info.st_uid, info.st_gid) == (agent["uid"], agent["gid"])
            if sub:
                assert stat.S_IMODE(info.st_mode) == mode


def test_unknown_mode_fails_naming_the_accepted_values(agent):
    result = run_module("terminal_home", {"hermes_home": agent["hermes"], "mode": "jail"})
    assert result.get("failed") is True
    assert "auto, real, profile" in result["msg"]


def test_refused_config_fails_with_the_line_and_is_left_alone(agent):
    path = os.path.join(agent["hermes"], "config.yaml")
    with open(path, "w") as handle:
        handle.write("terminal: {backend: local}\n")
    result = run_module("terminal_home", {"hermes_home": agent["hermes"], "profiles": False})
    assert result.get("failed") is True
    assert "line 1" in result["msg"] and "flow mapping" in result["msg"]
    with open(path) as handle:
        assert handle.read() == "terminal: {backend: local}\n"


def test_a_refused_profile_fails_the_module_after_every_other_home_was_configured(agent):
    fifo = os.path.join(agent["hermes"], "profiles", "dev", "config.yaml")
    os.mkfifo(fifo)
    os.chown(fifo, agent["uid"], agent["gid"])
    started = time.monotonic()
    result = run_module("terminal_home", {"hermes_home": agent["hermes"]})
    assert time.monotonic() - started < 60
    assert result.get("failed") is True
    assert fifo in result["msg"] and "FIFO" in result["msg"] and "\n" not in result["msg"]
    by_name = {os.path.basename(home["hermes_home"]): home for home in result["homes"]}
    assert by_name["dev"]["error"] and by_name["work"]["error"] is None and by_name["work"]["config_changed"]
    with open(os.path.join(agent["hermes"], "profiles", "work", "config.yaml")) as handle:
        assert "home_mode: profile" in handle.read()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_eval_isolation_installs_a_shim_the_agent_user_can_run(agent):
    result = run_module("terminal_home", {"hermes_home": agent["hermes"], "eval_isolation": True,
                                          "bin_dir": agent["bin"]})
    assert result["shim"]["changed"] is True
    again = run_module("terminal_home", {"hermes_home": agent["hermes"], "eval_isolation": True,
                                         "bin_dir": agent["bin"]})
    assert again["changed"] is False
    run = os.path.join(agent["home"], "run1")
    proc = subprocess.run([result["shim"]["wrapper"], run, "/bin/sh", "-c",
                           "echo '@daily x' | crontab - && crontab -l && echo $HOME"],
                          user=agent["uid"], group=agent["gid"], extra_groups=[], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": agent["home"]}, cwd="/", timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["@daily x", run + "/home"]
    assert os.path.exists(os.path.join(run, "crontab"))
    assert not os.path.exists("/var/spool/cron/crontabs/" + agent["name"])


def test_leak_audit_finds_each_planted_item(agent):
    name, home = agent["name"], agent["home"]
    subprocess.run(["crontab", "-u", name, "-"], input=b"0 2 * * * %s/.hermes/scripts/backup.sh\n" % home.encode(),
                   check=True)
    scripts = os.path.join(home, ".hermes", "scripts")
    os.makedirs(scripts)
    with open(os.path.join(scripts, "backup.sh"), "w") as handle:
        handle.write("#!/bin/sh\n")
    units = os.path.join(home, ".config", "systemd", "user")
    os.makedirs(os.path.join(units, "timers.target.wants"))
    for unit in ("backup.service", "backup.timer"):
        with open(os.path.join(units, unit), "w") as handle:
            handle.write("[Unit]\n")
    os.symlink(os.path.join(units, "backup.timer"), os.path.join(units, "timers.target.wants", "backup.timer"))
    run_dir = "/tmp/ab-" + uuid.uuid4().hex[:8]
    os.mkdir(run_dir)
    os.chown(run_dir, agent["uid"], agent["gid"])
    old = time.time() - 3 * 86400
    os.utime(run_dir, (old, old))
    try:
        result = run_module("leaks_info", {"users": [name]}, "--check")
    finally:
        os.rmdir(run_dir)
    assert result["changed"] is False
    mine = [f for f in result["findings"] if f.get("user") == name]
    kinds = sorted(f["kind"] for f in mine)
    assert kinds == ["cron_job", "enabled_timer", "hermes_script", "tmp_run_dir", "user_unit", "user_unit"]
    job = next(f for f in mine if f["kind"] == "cron_job")
    assert job["path"] == "/var/spool/cron/crontabs/" + name
    assert job["entry"] == "0 2 * * * %s/.hermes/scripts/backup.sh" % home
    tmp = next(f for f in mine if f["kind"] == "tmp_run_dir")
    assert tmp["path"] == run_dir and tmp["age"] >= 3 * 86400 - 60


def test_leak_audit_can_gate_on_leaks(agent):
    subprocess.run(["crontab", "-u", agent["name"], "-"], input=b"@daily x\n", check=True)
    result = run_module("leaks_info", {"users": agent["name"], "fail_on_leaks": True})
    assert result.get("failed") is True
    assert "cron_job=1" in result["msg"]


def test_old_module_name_still_works_through_the_redirect_and_warns(agent):
    old = run_module("boundary_leaks_info", {"users": [agent["name"]]}, "--check")
    new = run_module("leaks_info", {"users": [agent["name"]]}, "--check")
    assert "failed" not in old and old["leaks"] == new["leaks"]
    assert old["users"] == [agent["name"]]
    [deprecation] = [d for d in old["deprecations"] if d["collection_name"] == "sandboxguard.boundary"]
    assert deprecation["version"] == "2.0.0"
    assert "boundary_leaks_info" in deprecation["msg"] and "sandboxguard.boundary.leaks_info" in deprecation["msg"]
    assert not new.get("deprecations")  # nothing else in the result is deprecated either


def test_old_module_name_works_in_a_playbook_and_warns(agent, tmp_path):
    playbook = tmp_path / "old-name.yml"
    playbook.write_text(
        "- hosts: localhost\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - sandboxguard.boundary.boundary_leaks_info:\n"
        "        users: [%s]\n"
        "      register: audit\n"
        "    - ansible.builtin.assert:\n"
        "        that: [audit.leaks == 0, \"audit.users == ['%s']\"]\n" % (agent["name"], agent["name"]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(TOP, ".venv", "bin", "ansible-playbook"),
                           str(playbook)], capture_output=True, text=True, env=env, timeout=180, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    output = " ".join((proc.stdout + proc.stderr).split())
    assert "[DEPRECATION WARNING]: sandboxguard.boundary.boundary_leaks_info has been deprecated" in output
    assert "renamed sandboxguard.boundary.leaks_info" in output


def test_leak_audit_baseline_reports_only_what_a_run_added_even_in_check_mode(agent, tmp_path):
    name, home = agent["name"], agent["home"]
    subprocess.run(["crontab", "-u", name, "-"], input=b"@daily /usr/bin/true\n", check=True)
    baseline = str(tmp_path / "before.json")
    before = run_module("leaks_info", {"users": [name], "baseline": baseline, "baseline_mode": "write"}, "--check")
    assert before["baseline"]["action"] == "written" and before["changed"] is False
    assert before["counts"]["cron_job"] == 1
    # the run: a second job through the real crontab, a key written by ssh-keygen, an autostart entry
    subprocess.run(["crontab", "-u", name, "-"], input=b"@daily /usr/bin/true\n0 3 * * * /tmp/evil\n", check=True)
    ssh = os.path.join(home, ".ssh")
    os.makedirs(ssh, exist_ok=True)
    with open(os.path.join(ssh, "id_ed25519"), "w") as handle:
        handle.write("key\n")
    os.makedirs(os.path.join(home, ".config", "autostart"))
    with open(os.path.join(home, ".config", "autostart", "x.desktop"), "w") as handle:
        handle.write("[Desktop Entry]\n")
    after = run_module("leaks_info", {"users": [name], "baseline": baseline, "fail_on_leaks": True})
    assert after.get("failed") is True
    got = sorted((f["kind"], f["change"], f.get("entry")) for f in after["findings"])
    assert got == [("autostart", "added", "x.desktop"), ("cron_job", "added", "0 3 * * * /tmp/evil"),
                   ("ssh_file", "added", None)]
    assert after["baseline"]["action"] == "compared"


def test_leak_audit_with_a_bad_baseline_fails_in_one_line(agent, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{}")
    result = run_module("leaks_info", {"users": [agent["name"]], "baseline": str(path), "baseline_mode": "compare"})
    assert result.get("failed") is True
    assert str(path) in result["msg"] and "\n" not in result["msg"]
