# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Issue 27 item 2: role variables set in the inventory (group_vars, host_vars) are honoured by
the bundled playbooks. A sandboxguard_* input is passed to a role only when it is given (not
blank); a blank one (unset, or an AWX survey field left blank: "") leaves the role's own
variable as the inventory set it. Before, the playbooks mapped every input onto the role
variables as task or play vars, which beat group_vars and host_vars: the audit said "1 clean"
with ``roots []`` and ``site --tags privileged`` skipped the whole role, exit 0.

The hosts are local-connection hosts with their own Hermes homes under a temporary directory;
the inventory is a directory with ``hosts``, ``group_vars/`` and ``host_vars/``.
"""
import json
import os

import pytest
import yaml
from test_audit_playbooks import PYTHON, SURVEY_VARS, _task_results, load, playbook, seed

pytestmark = [pytest.mark.root, pytest.mark.slow]


def write_yaml(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def inventory(tmp_path):
    """Two hosts: ``dirty`` (a setuid-root shell in its Hermes home's sandbox), ``clean``; the
    audit role's variables for both in group_vars, each host's own Hermes home in host_vars."""
    homes = {name: tmp_path / name / ".hermes" for name in ("dirty", "clean")}
    seed(homes["dirty"], True)
    seed(homes["clean"], False)
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "hosts").write_text("[agents]\n" + "".join(
        "%s ansible_connection=local ansible_python_interpreter=%s\n" % (name, PYTHON) for name in homes))
    write_yaml(inv / "group_vars" / "agents.yml", {
        "boundary_audit_home_mode": "profile", "boundary_audit_leak_users": ["root"],
        "boundary_audit_checks": ["privileged_files", "home_mode", "leaks"], "boundary_audit_docker": "never",
        "boundary_audit_fail_on_findings": False, "boundary_audit_report_dir": str(tmp_path / "reports")})
    for name, home in homes.items():
        write_yaml(inv / "host_vars" / (name + ".yml"), {
            "boundary_audit_hermes_homes": [str(home)],
            "boundary_audit_leak_spool_dir": str(home.parent / "spool"),
            "boundary_audit_leak_tmp_dir": str(home.parent / "tmp")})
    return {"inventory": inv, "homes": homes, "tmp": tmp_path, "reports": tmp_path / "reports"}


def role_of(task_name):
    """The role a task (as the json callback names it, ``[fqcn.]role : name``) belongs to, or None."""
    return task_name.split(" : ", 1)[0].rsplit(".", 1)[-1] if " : " in task_name else None


def audited(fleet):
    return load(fleet["reports"] / "boundary-audit.json")["hosts"]


def test_audit_honours_the_role_variables_of_group_vars_and_host_vars(inventory):
    rc, out = playbook(inventory, "audit", {})
    assert rc == 0, out["stats"]  # findings only report (group_vars), every selected check looked at something
    hosts = audited(inventory)
    dirty = hosts["dirty"]["checks"]
    assert dirty["privileged_files"]["roots"] == [str(inventory["homes"]["dirty"] / "sandboxes" / "docker")]
    assert {os.path.basename(f["path"]) for f in dirty["privileged_files"]["findings"]} == {"rootshell", "ping"}
    assert dirty["home_mode"]["wanted"] == "profile" and dirty["leaks"]["users"] == ["root"]
    assert hosts["clean"]["checks"]["privileged_files"]["roots"] == [
        str(inventory["homes"]["clean"] / "sandboxes" / "docker")]
    assert hosts["dirty"]["checks"]["bwrap"]["status"] == "skipped", "boundary_audit_checks from group_vars"


def test_audit_with_every_survey_field_blank_leaves_the_inventory_s_role_variables_alone(inventory):
    rc, out = playbook(inventory, "audit", dict.fromkeys(SURVEY_VARS["audit"], ""))
    # the report directory is the role's (group_vars), not the default: the blank input left it alone
    assert rc == 0, out["stats"]
    hosts = audited(inventory)
    assert hosts["dirty"]["status"] == "findings" and hosts["dirty"]["checks"]["privileged_files"]["roots"]
    assert hosts["dirty"]["checks"]["home_mode"]["wanted"] == "profile"
    assert not (inventory["tmp"] / "boundary-audit").exists()


def test_an_input_given_beats_the_inventory_s_role_variable(inventory):
    clean_home = str(inventory["homes"]["clean"])
    rc, out = playbook(inventory, "audit", {"sandboxguard_hermes_homes": clean_home, "sandboxguard_home_mode": "",
                                            "sandboxguard_checks": "privileged_files",
                                            "sandboxguard_fail_on_findings": "true"})
    assert rc == 0, out["stats"]
    hosts = audited(inventory)
    assert hosts["dirty"]["checks"]["privileged_files"]["roots"] == [clean_home + "/sandboxes/docker"]
    assert hosts["dirty"]["status"] == "clean" and hosts["dirty"]["checks"]["home_mode"]["status"] == "skipped"


def test_remediate_takes_the_audit_role_s_scope_from_the_inventory_and_blank_fields_leave_it(inventory):
    """remediate works under the audit's own scope: with boundary_audit_* in group_vars and
    host_vars (and every survey field blank) it would strip the dirty host's shell and set
    TERMINAL_HOME_MODE; given inputs win."""
    shell = inventory["homes"]["dirty"] / "sandboxes/docker/t1/workspace/rootshell"
    survey = dict.fromkeys(SURVEY_VARS["remediate"], "")
    survey["sandboxguard_quarantine_dir"] = str(inventory["tmp"] / "quarantine")
    rc, out = playbook(inventory, "remediate", survey, "--check", limit="dirty")
    assert rc == 0, out["stats"]
    [fixes] = [r["fixes"] for name, r in _task_results(out, "dirty") if "fixes" in r]
    assert [os.path.basename(f["path"]) for f in fixes["setid"]["files"]] == ["rootshell"]
    assert fixes["home_mode"]["status"] == "changed" and fixes["home_mode"]["dry_run"] is True
    assert shell.stat().st_mode & 0o4000, "check mode changed the host"
    rc, out = playbook(inventory, "remediate", dict(survey, sandboxguard_hermes_homes=str(inventory["homes"]["clean"])),
                       "--check", limit="dirty")
    assert rc == 0, out["stats"]
    [fixes] = [r["fixes"] for name, r in _task_results(out, "dirty") if "fixes" in r]
    assert fixes["setid"]["files"] == [], "the input given names another home: the dirty one is out of scope"


def test_remediate_runs_the_bwrap_role_for_bwrap_agent_user_in_group_vars(inventory):
    """bwrap_agent_user in the inventory: the Bubblewrap block runs (it was skipped unless
    sandboxguard_agent_user was given, and the include's vars replaced the inventory's value)."""
    write_yaml(inventory["inventory"] / "group_vars" / "all.yml", {"bwrap_agent_user": "sg-inv-agent"})
    rc, out = playbook(inventory, "remediate", {"sandboxguard_agent_user": ""}, "--check", "--tags", "bwrap",
                       limit="clean")
    [given] = [r for name, r in _task_results(out, "clean") if name.startswith("Give the bwrap role the agent user")]
    assert given.get("skipped"), "bwrap_agent_user from the inventory is left alone"
    ran = [name for name, r in _task_results(out, "clean") if role_of(name) == "bwrap" and not r.get("skipped")]
    assert ran, "the bwrap role ran for the inventory's agent user: %s" % json.dumps(out["stats"])
    del rc  # the role may fail in check mode on this host (no such user): what matters is that it ran


def test_site_honours_terminal_home_hermes_homes_in_group_vars_with_blank_survey_fields(inventory):
    home = inventory["homes"]["clean"]
    write_yaml(inventory["inventory"] / "group_vars" / "all.yml", {
        "terminal_home_hermes_homes": [str(home)], "terminal_home_audit": False})
    rc, out = playbook(inventory, "site", dict.fromkeys(SURVEY_VARS["site"], ""), "--tags", "home", limit="clean")
    assert rc == 0, out["stats"]
    assert out["stats"]["clean"]["changed"] > 0, "the role ran for the inventory's Hermes home"
    assert "home_mode: profile" in (home / "config.yaml").read_text()


def test_site_runs_sandbox_sweep_for_sandbox_sweep_hermes_homes_in_host_vars(inventory):
    """The issue's replay: sandbox_sweep_hermes_homes in the inventory, site --tags privileged
    skipped the whole role (ok=0, exit 0). In check mode here: the role's first task runs."""
    write_yaml(inventory["inventory"] / "host_vars" / "clean.yml", {
        "sandbox_sweep_hermes_homes": [str(inventory["homes"]["clean"])]})
    _rc, out = playbook(inventory, "site", {"sandboxguard_hermes_homes": ""}, "--check", "--tags", "privileged",
                        limit="clean")
    role_tasks = [(name, r) for name, r in _task_results(out, "clean") if role_of(name) == "sandbox_sweep"]
    assert role_tasks and not role_tasks[0][1].get("skipped"), role_tasks[:1]
