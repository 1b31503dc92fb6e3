# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The fleet on a GitHub runner host (issue 21, item 5): a container job, emulated as in
test_runner_cleanup.py, leaves root-owned files, a setuid-root shell and a capability file in
the runner's work folder; the audit playbook (and audit_info under it) against the host,
given the runner directory as an AWX survey sends it (a comma string), names every file the
runner user does not own (``counts.not_runner_owned``, findings with reason ``owner``, the
paths lossless), and the fleet summary counts them; remediate gives them back to the runner
user and a second audit is clean."""
import base64
import json
import os
import subprocess
import sys

import pytest
from test_audit_playbooks import load, playbook
from test_runner_cleanup import (  # noqa: F401 - client and world are fixtures
    BUILD_STEP,
    client,
    make_runner,
    privileged_left,
    run_step,
    start_job,
    world,
)
from test_sweep_role import run_role, task_result

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

PYTHON = "/usr/bin/python3"
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python", "src")


@pytest.fixture
def runner_host(client, world, tmp_path):  # noqa: F811 - the fixtures imported above
    """A runner whose container job ran the build step (container removed: the job is over),
    and an inventory of one local host that is that runner host."""
    runner = make_runner(world)
    container = start_job(client, runner)
    try:
        run_step(container, BUILD_STEP, world)
    finally:
        container.remove(force=True)
    inventory = tmp_path / "inventory"
    inventory.write_text("[runners]\nrunner ansible_connection=local ansible_python_interpreter=%s\n" % PYTHON)
    return {"inventory": inventory, "tmp": tmp_path, "reports": tmp_path / "reports", "runner": runner,
            "work": runner + "/_work", "owner": (world.uid, world.gid)}


def _survey(host, **more):
    base = {"sandboxguard_hosts": "runners", "sandboxguard_report_dir": str(host["reports"]),
            "sandboxguard_github_runners": "%s, " % host["runner"], "sandboxguard_gitlab_config": "",
            "sandboxguard_docker": "never", "sandboxguard_budget": "60"}
    base.update(more)
    return base


def _names(finding):
    raw = finding.get("path_b64")
    return base64.b64decode(raw) if raw else finding["path"].encode()


def test_the_audit_names_the_files_the_runner_user_does_not_own_and_remediate_gives_them_back(runner_host):
    host = runner_host
    left = privileged_left(host["work"], host["owner"])
    foreign = sorted({line.rsplit(" owned by ", 1)[0] for line in left if " owned by " in line})  # dirs: twice
    assert len(foreign) > 10  # the build step's tree, /github/home

    rc, out = playbook(host, "audit", _survey(host), "--tags", "privileged")
    assert rc != 0, out["stats"]  # findings fail the gate after the reports are written
    report = load(host["reports"] / "boundary-audit.json")
    check = report["hosts"]["runner"]["checks"]["privileged_files"]
    assert check["status"] == "findings" and host["work"] in check["roots"]
    owned = [f for f in check["findings"] if f["reasons"] == ["owner"]]
    assert sorted(_names(f) for f in owned) == sorted(os.fsencode(p) for p in foreign)
    assert check["counts"]["not_runner_owned"] == len(foreign)
    assert all(f["owner"] == list(host["owner"]) for f in owned)
    evil = [f for f in owned if "path_b64" in f]  # dist/evil\nline\377: not UTF-8, lossless
    assert [_names(f).rsplit(b"/", 1)[1] for f in evil] == [b"evil\nline\xff"]
    setid = {os.path.basename(f["path"]) for f in check["findings"] if "setuid" in f["reasons"]}
    assert {"rootsh"} <= setid
    assert report["summary"]["runner_not_owned"] == {"files": len(foreign), "hosts": ["runner"]}
    assert out["global_custom_stats"]["sandboxguard_audit"]["runner_not_owned"]["files"] == len(foreign)
    junit = (host["reports"] / "boundary-audit.xml").read_text()
    assert "not the runner user's %d:%d" % host["owner"] in junit

    rc, out = playbook(host, "remediate", _survey(host), "--tags", "privileged")
    assert rc == 0, json.dumps(out["stats"])
    assert privileged_left(host["work"], host["owner"]) == []

    rc, out = playbook(host, "audit", _survey(host), "--tags", "privileged")
    assert rc == 0, out["stats"]
    check = load(host["reports"] / "boundary-audit.json")["hosts"]["runner"]["checks"]["privileged_files"]
    assert check["status"] == "clean" and check["counts"]["not_runner_owned"] == 0


def _role_vars(host, **more):
    tmp = host["tmp"]
    (tmp / "bin").mkdir(exist_ok=True)
    base = {"sandbox_sweep_github_runners": host["runner"] + ",",  # an AWX survey string, nothing else in scope
            "sandbox_sweep_timer": "false", "sandbox_sweep_watch_events": "false", "sandbox_sweep_guard": "false",
            "sandbox_sweep_docker_sdk": "none", "sandbox_sweep_python": sys.executable,
            "sandbox_sweep_install_dir": str(tmp / "lib"), "sandbox_sweep_cli_path": str(tmp / "bin" / "sandboxguard")}
    base.update(more)
    return base


def test_the_sandbox_sweep_role_sweeps_a_runner_work_folder_and_leaves_nosuid_and_the_guard_off(runner_host):
    host = runner_host
    assert privileged_left(host["work"], host["owner"])
    rc, _stats, out = run_role(host["tmp"], _role_vars(host))
    assert rc == 0, json.dumps(out["stats"])
    swept = task_result(out, "Sweep every in-scope sandbox now (ownership return, setid, caps)")
    assert [(s["path"], s["owner"]) for s in swept["sandboxes"]] == [(host["work"], list(host["owner"]))]
    assert privileged_left(host["work"], host["owner"]) == []
    facts = task_result(out, "Build the CLI's scope and method arguments")["ansible_facts"]
    assert "--github-runner=%s" % host["runner"] in facts["sandbox_sweep_cli_args"]
    guard = task_result(out, "Build the guard's scope arguments and the paths it may write in")["ansible_facts"]
    assert guard["sandbox_sweep_guard_args"] == [] and guard["sandbox_sweep_guard_rw_paths"] == []
    assert task_result(out, "Mount the sandbox roots nosuid,nodev").get("skipped")  # default off for _work
    with open("/proc/self/mountinfo") as f:
        assert host["work"] not in f.read()

    rc, _stats, out = run_role(host["tmp"], _role_vars(host, sandbox_sweep_runner_guard="true",
                                                      sandbox_sweep_nosuid_mount="false"), "--check")
    assert rc == 0, json.dumps(out["stats"])
    guard = task_result(out, "Build the guard's scope arguments and the paths it may write in")["ansible_facts"]
    assert guard["sandbox_sweep_guard_args"] == ["--github-runner=%s" % host["runner"]]
    assert guard["sandbox_sweep_guard_rw_paths"] == [host["runner"]]


def test_the_sweep_command_takes_the_runner_and_gives_its_work_folder_back(runner_host):
    host = runner_host
    cli = [sys.executable, "-m", "sandboxguard_cli", "sweep", "--github-runner", host["runner"], "--json"]
    env = dict(os.environ, PYTHONPATH=SRC, HERMES_HOME=str(host["tmp"] / "no-hermes"))
    dry = subprocess.run([*cli, "--dry-run"], capture_output=True, text=True, env=env, timeout=300, check=False)
    report = json.loads(dry.stdout)
    assert [(s["path"], s["owner"]) for s in report["sandboxes"]] == [(host["work"], list(host["owner"]))], dry.stderr
    assert report["changed"] and privileged_left(host["work"], host["owner"])  # a dry run changes nothing
    done = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert privileged_left(host["work"], host["owner"]) == []
