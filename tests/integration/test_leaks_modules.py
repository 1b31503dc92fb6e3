# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""leaks_info and leaks_remove as Ansible runs them (issue 19 item 6): by default they look at
the accounts that run agents, as the fleet audit does, and root's own cron job is never
touched unless root is named; with nothing to go on they say so and change nothing."""
import json
import os
import pwd
import subprocess
import sys
import uuid

import pytest

pytestmark = [pytest.mark.controller, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")
ROOT_JOB = "17 3 * * * /usr/local/sbin/backup-etc"
AGENT_JOB = "*/5 * * * * /home/agent/.hermes/scripts/keepalive.sh"


def run_module(module, args, *flags):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([ANSIBLE, "localhost", "-m", "sandboxguard.boundary." + module, "-a", json.dumps(args),
                           "-e", "ansible_python_interpreter=/usr/bin/python3", *flags],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    out = json.loads(proc.stdout)
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.fixture
def host(tmp_path):
    """A throwaway agent owning a Hermes home; a spool with root's own job and the agent's."""
    if os.geteuid() != 0:
        pytest.fail("these tests create a user: run them as root")
    name = "sgq" + uuid.uuid4().hex[:6]
    subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                    "--home-dir", "/nonexistent", name], check=True, capture_output=True)
    try:
        entry = pwd.getpwnam(name)
        hermes = tmp_path / "agent" / ".hermes"
        (hermes / "profiles" / "work").mkdir(parents=True)
        for path in (hermes, hermes / "profiles", hermes / "profiles" / "work"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        spool = tmp_path / "spool"
        spool.mkdir()
        (spool / "root").write_text(ROOT_JOB + "\n")
        (spool / name).write_text(AGENT_JOB + "\n")
        os.chown(spool / name, entry.pw_uid, entry.pw_gid)
        (tmp_path / "tmp").mkdir()
        common = {"spool_dir": str(spool), "tmp_dir": str(tmp_path / "tmp"), "at_spool_dirs": [],
                  "runtime_root": str(tmp_path / "run")}
        yield {"name": name, "hermes": str(hermes), "spool": spool, "common": common,
               "quarantine": str(tmp_path / "quarantine")}
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def test_leaks_info_defaults_to_the_hermes_homes_owner_and_never_root(host):
    result = run_module("leaks_info", dict(host["common"], hermes_home=[host["hermes"]]))
    assert not result.get("failed"), result
    assert [f["entry"] for f in result["findings"]] == [AGENT_JOB]
    assert result["users"] == [host["name"]]
    assert "owner of the Hermes home %s" % host["hermes"] in result["scope"][host["name"]]
    assert result["findings"][0]["ino"] == os.stat(host["spool"] / host["name"]).st_ino


def test_leaks_remove_by_default_takes_only_the_agents_job_and_keeps_roots(host):
    args = dict(host["common"], hermes_home=[host["hermes"]], quarantine_dir=host["quarantine"])
    check = run_module("leaks_remove", args, "--check")
    assert check["changed"] and [r["entry"] for r in check["removed"]] == [AGENT_JOB]
    assert AGENT_JOB in (host["spool"] / host["name"]).read_text()
    done = run_module("leaks_remove", args)
    assert done["changed"] and not done.get("failed"), done
    assert AGENT_JOB not in (host["spool"] / host["name"]).read_text()
    assert (host["spool"] / "root").read_text() == ROOT_JOB + "\n", "root's own job stays"
    assert not run_module("leaks_remove", args)["changed"], "a second run changes nothing"


def test_leaks_remove_with_the_agent_user_alone_takes_its_job(host):
    args = dict(host["common"], agent_user=host["name"], quarantine_dir=host["quarantine"])
    done = run_module("leaks_remove", args)
    assert [r["user"] for r in done["removed"]] == [host["name"]]
    assert done["scope"] == {host["name"]: ["the agent user"]}
    assert (host["spool"] / "root").read_text() == ROOT_JOB + "\n"


@pytest.mark.parametrize("module", ["leaks_info", "leaks_remove"])
def test_with_no_agent_account_and_no_users_the_module_says_so_and_changes_nothing(host, module):
    result = run_module(module, dict(host["common"], quarantine_dir=host["quarantine"]) if module == "leaks_remove"
                        else host["common"])
    assert result.get("failed") and "no agent account known" in result["msg"], result
    assert "hermes_home, sandbox_dir or agent_user" in result["msg"] and "users" in result["msg"]
    assert (host["spool"] / "root").read_text() == ROOT_JOB + "\n"
    assert AGENT_JOB in (host["spool"] / host["name"]).read_text()
    assert not os.path.exists(host["quarantine"])


def test_root_only_when_named(host):
    args = dict(host["common"], users=["root"], quarantine_dir=host["quarantine"])
    done = run_module("leaks_remove", args)
    assert [r["entry"] for r in done["removed"]] == [ROOT_JOB] and done["scope"] == {"root": ["named in users"]}
    assert ROOT_JOB not in (host["spool"] / "root").read_text()
    assert AGENT_JOB in (host["spool"] / host["name"]).read_text()
