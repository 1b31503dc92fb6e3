# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The fleet playbooks over 30 docker-connection hosts and 3 SSH hosts (issue 12, item 7).

One fleet for the whole module (tests/integration/fleet_fixtures.py): half the hosts carry
the seeds' attack in a Hermes sandbox workspace (a setuid root shell, a cap_net_raw=ep
file) and a leak (a cron job and its script under ~/.hermes/scripts). The phases build on
each other, each a module fixture run once: the audit (exits non-zero, finds exactly the
seeded hosts, writes the three reports), remediate, a second remediate (changed=0
everywhere, the controller included), the audit again (exits 0). The same audit runs
through ansible-runner the way AWX runs a job template, with survey-style string extravars.
"""
import json
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest
from fleet_fixtures import AGENT, AGENT_UID, EXTRA_ROOT, HERMES_HOME, ROOT_JOB, SANDBOXES, Fleet

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(TOP, ".venv", "bin")
DOCKER_HOSTS = 30
SSH_HOSTS = 3
FORKS = 16
PLAY_TIMEOUT = 600
HOME_MODE = "profile"


def ansible_env(**extra):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_CONFIG=os.path.join(TOP, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_HOST_KEY_CHECKING="1", ANSIBLE_PIPELINING="1",
               ANSIBLE_FORKS=str(FORKS), NO_COLOR="1")
    env.update(extra)
    return env


def playbook(fleet, name, variables, *flags):
    """ansible-playbook sandboxguard.boundary.NAME over the fleet: (returncode, json output)."""
    extra = os.path.join(fleet.dir, name + "-vars.json")
    with open(extra, "w") as handle:
        json.dump(variables, handle)
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "sandboxguard.boundary." + name,
                           "-i", fleet.inventory(), "-e", "@" + extra, *flags],
                          capture_output=True, text=True, env=ansible_env(), timeout=PLAY_TIMEOUT, check=False)
    with open(os.path.join(fleet.dir, name + ".log"), "a") as log:
        log.write(proc.stdout + proc.stderr)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        pytest.fail("ansible-playbook %s printed no JSON (rc %d): %s %s" % (
            name, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))


def play_vars(report_dir, **extra):
    variables = {"sandboxguard_paths": [SANDBOXES, EXTRA_ROOT], "sandboxguard_hermes_homes": [HERMES_HOME]}
    if report_dir:
        variables["sandboxguard_report_dir"] = report_dir
    return dict(variables, **extra)


def remediate_vars():
    return play_vars(None, sandboxguard_owner=AGENT, sandboxguard_home_mode=HOME_MODE)


def report(report_dir):
    with open(os.path.join(report_dir, "boundary-audit.json")) as handle:
        return json.load(handle)


def unreachable_or_failed(out):
    return {h: s for h, s in out["stats"].items() if s.get("unreachable") or s.get("failures")}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    fleet = Fleet(DOCKER_HOSTS, SSH_HOSTS, workdir=str(tmp_path_factory.mktemp("fleet"))).start()
    yield fleet
    fleet.stop()


@pytest.fixture(scope="module")
def first_audit(fleet):
    report_dir = os.path.join(fleet.dir, "reports-1")
    # the checks the fleet gives inputs for: without an agent user and a mode the others are not checked
    rc, out = playbook(fleet, "audit", play_vars(report_dir, sandboxguard_checks="privileged_files,leaks"))
    return rc, out, report_dir


def runner_job(fleet, ident, playbook_name, extravars):
    """What AWX does for a job template: a private data dir (project, inventory, env/extravars
    as a survey sends them) and `ansible-runner run`. Returns (status, rc, playbook_on_stats
    event data)."""
    data = os.path.join(fleet.dir, "runner")
    for sub in ("project", "inventory", "env"):
        os.makedirs(os.path.join(data, sub), exist_ok=True)
    with open(os.path.join(data, "project", playbook_name + ".yml"), "w") as handle:
        handle.write("- ansible.builtin.import_playbook: sandboxguard.boundary.%s\n" % playbook_name)
    fleet.inventory(os.path.join(data, "inventory", "hosts.yml"))
    with open(os.path.join(data, "env", "extravars"), "w") as handle:
        json.dump(extravars, handle)
    env = ansible_env()
    env.pop("ANSIBLE_STDOUT_CALLBACK")
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-runner"), "run", data, "-p", playbook_name + ".yml",
                           "--ident", ident, "--forks", str(FORKS)],
                          capture_output=True, text=True, env=env, timeout=PLAY_TIMEOUT, check=False)
    artifacts = os.path.join(data, "artifacts", ident)
    if not os.path.exists(os.path.join(artifacts, "status")):
        pytest.fail("ansible-runner wrote no status (rc %d): %s %s" % (proc.returncode, proc.stdout[-3000:],
                                                                      proc.stderr[-3000:]))
    with open(os.path.join(artifacts, "status")) as handle:
        status = handle.read().strip()
    with open(os.path.join(artifacts, "rc")) as handle:
        rc = int(handle.read())
    stats = None
    for name in os.listdir(os.path.join(artifacts, "job_events")):
        with open(os.path.join(artifacts, "job_events", name)) as handle:
            event = json.load(handle)
        if event.get("event") == "playbook_on_stats":
            stats = event["event_data"]
    assert stats is not None, "no playbook_on_stats event in %s" % artifacts
    return status, rc, stats


@pytest.fixture(scope="module")
def runner_audit(fleet, first_audit):
    """The audit as an AWX job template with a survey: every value a string, the path list
    comma-separated, blank optional fields sent as "" (on the seeded fleet)."""
    return runner_job(fleet, "survey-audit", "audit", {
        "sandboxguard_hosts": "",
        "sandboxguard_paths": "%s, %s" % (SANDBOXES, EXTRA_ROOT),
        "sandboxguard_hermes_homes": HERMES_HOME,
        "sandboxguard_budget": "",
        "sandboxguard_owner": "",
        "sandboxguard_home_mode": "",
        "sandboxguard_agent_user": "",
        "sandboxguard_fail_on_findings": "true",
        "sandboxguard_report_dir": os.path.join(fleet.dir, "reports-runner"),
    })


@pytest.fixture(scope="module")
def remediated(fleet, first_audit, runner_audit):
    """remediate twice (after both audits saw the seeded state): ownership returned to the
    agent, TERMINAL_HOME_MODE set to profile, leaks quarantined; the state of the seeded
    files before and after."""
    before = {h.name: h.inspect() for h in fleet.hosts if h.seeded}
    first = playbook(fleet, "remediate", remediate_vars())
    second = playbook(fleet, "remediate", remediate_vars())
    after = {h.name: h.inspect() for h in fleet.hosts}
    return before, first, second, after


@pytest.fixture(scope="module")
def final_audit(fleet, remediated):
    """The audit after remediate, now asking for the TERMINAL_HOME_MODE remediate set."""
    report_dir = os.path.join(fleet.dir, "reports-2")
    rc, out = playbook(fleet, "audit", play_vars(report_dir, sandboxguard_home_mode=HOME_MODE,
                                                 sandboxguard_checks=["privileged_files", "home_mode", "leaks"]))
    return rc, out, report_dir


def test_fleet_audit_reaches_every_host(fleet, first_audit):
    _, out, _ = first_audit
    assert set(out["stats"]) >= fleet.names
    assert not {h: s for h, s in out["stats"].items() if s.get("unreachable")}


def test_fleet_audit_with_findings_exits_non_zero(first_audit):
    rc, _, _ = first_audit
    assert rc != 0, "an audit with findings must fail the run (the gate)"


def test_fleet_audit_finds_exactly_the_seeded_hosts(fleet, first_audit):
    _, _, report_dir = first_audit
    data = report(report_dir)
    with_findings = {name for name, host in data["hosts"].items() if host["status"] == "findings"}
    assert with_findings == fleet.seeded
    assert {name for name, host in data["hosts"].items() if host["status"] == "clean"} == fleet.names - fleet.seeded
    assert data["summary"]["hosts_total"] == len(fleet.hosts)
    assert data["summary"]["hosts_with_findings"] == len(fleet.seeded)
    assert data["summary"]["hosts_error"] == 0


def test_fleet_audit_names_the_seeded_files_and_nothing_else(fleet, first_audit):
    _, _, report_dir = first_audit
    data = report(report_dir)
    for host in fleet.hosts:
        checks = data["hosts"][host.name]["checks"]
        paths = sorted(f["path"] for f in checks["privileged_files"]["findings"])
        expected = []
        if host.seeded:
            ws = "%s/task-%d/workspace" % (SANDBOXES, host.index)
            expected = [ws + "/.cache/rootsh", ws + "/ping"]
            if host.extra:
                expected.append("%s/job-%d/out/tool" % (EXTRA_ROOT, host.index))
        assert paths == sorted(expected), host.name
        leak_paths = sorted(f["path"] for f in checks["leaks"]["findings"])
        expected_leaks = []
        if host.seeded:
            expected_leaks = ["%s/scripts/keepalive.sh" % HERMES_HOME, "/var/spool/cron/crontabs/agent"]
        assert leak_paths == sorted(expected_leaks), host.name
        assert checks["privileged_files"]["status"] == ("findings" if host.seeded else "clean"), host.name
        assert checks["leaks"]["status"] == ("findings" if host.seeded else "clean"), host.name


def test_fleet_audit_leaves_root_s_own_cron_job_out(fleet, first_audit):
    """Every host has an operator's job in root's table: not an agent's leak. By default the
    leak check audits only the agents' accounts (here the Hermes home's owner), never root."""
    _, _, report_dir = first_audit
    data = report(report_dir)
    for host in fleet.hosts:
        leaks = data["hosts"][host.name]["checks"]["leaks"]
        assert leaks["users"] == [AGENT], host.name
        assert not [f for f in leaks["findings"] if f.get("user") == "root" or f["path"].endswith("/root")], host.name


def test_fleet_audit_writes_json_junit_and_html_reports(fleet, first_audit):
    _, _, report_dir = first_audit
    suites = ET.parse(os.path.join(report_dir, "boundary-audit.xml")).getroot()  # noqa: S314 - our own report
    by_host = {s.get("name"): s for s in suites.iter("testsuite")}
    assert set(by_host) == fleet.names
    failing = {name for name, suite in by_host.items() if suite.find("testcase/failure") is not None}
    assert failing == fleet.seeded
    html = open(os.path.join(report_dir, "boundary-audit.html")).read()
    for name in fleet.names:
        assert name in html
    for host in fleet.hosts:
        assert os.path.exists(os.path.join(report_dir, "hosts", host.name + ".json"))


def test_fleet_audit_changes_nothing(fleet, first_audit):
    _, out, _ = first_audit
    assert {h: s["changed"] for h, s in out["stats"].items() if s["changed"]} == {}


def test_fleet_audit_through_ansible_runner_fails_the_job_on_findings(fleet, runner_audit):
    status, rc, stats = runner_audit
    assert (status, rc != 0) == ("failed", True)
    assert set(stats["processed"]) >= fleet.names
    assert not stats.get("dark")


def test_fleet_audit_through_ansible_runner_publishes_the_aggregate(fleet, runner_audit):
    _, _, stats = runner_audit
    aggregate = stats["artifact_data"]["sandboxguard_audit"]
    assert aggregate["hosts_total"] == len(fleet.hosts)
    assert aggregate["hosts_with_findings"] == len(fleet.seeded)
    assert aggregate["hosts_error"] == 0


def test_fleet_audit_through_ansible_runner_reads_survey_strings(fleet, runner_audit):
    """The comma-separated path list reached every host: the setgid tool under the second
    root is in the report, as in the audit given real lists."""
    data = report(os.path.join(fleet.dir, "reports-runner"))
    for host in fleet.hosts:
        paths = {f["path"] for f in data["hosts"][host.name]["checks"]["privileged_files"]["findings"]}
        assert ("%s/job-%d/out/tool" % (EXTRA_ROOT, host.index) in paths) == (host.seeded and host.extra), host.name
    assert {n for n, h in data["hosts"].items() if h["status"] == "findings"} == fleet.seeded


def test_fleet_remediate_strips_the_seeded_files(fleet, remediated):
    before, (rc, out), _, after = remediated
    assert rc == 0, unreachable_or_failed(out)
    for host in fleet.hosts:
        state = after[host.name]
        if host.seeded:
            assert before[host.name][".cache/rootsh"]["mode"] == "0o4755"
            assert before[host.name]["ping"]["caps"]
            assert state[".cache/rootsh"]["mode"] == "0o755", host.name
            assert state[".cache/rootsh"]["uid"] == AGENT_UID, host.name
            assert state["ping"]["caps"] is None, host.name
            assert before[host.name]["leak_script"] and before[host.name]["cron_jobs"], host.name
            assert (state["leak_script"], state["cron_jobs"]) == (False, []), host.name
        # outside the scope, or not a regular file: untouched
        assert state["shared"]["mode"] == "0o2775", host.name
        assert state["/usr/bin/passwd"]["mode"] == "0o4755", host.name
        assert state["/usr/local/bin/sg-ping"]["caps"], host.name
    changed = {h for h, s in out["stats"].items() if s["changed"]}
    assert changed >= fleet.seeded


def test_fleet_remediate_keeps_root_s_own_cron_job(fleet, remediated):
    _, (rc, _), _, after = remediated
    assert rc == 0
    for host in fleet.hosts:
        assert after[host.name]["root_cron_jobs"] == [ROOT_JOB], host.name


def test_fleet_second_remediate_is_all_ok(remediated):
    _, _, (rc, out), _ = remediated
    assert rc == 0, unreachable_or_failed(out)
    assert {h: s["changed"] for h, s in out["stats"].items() if s["changed"]} == {}


def test_fleet_audit_after_remediate_exits_zero(fleet, final_audit):
    rc, out, report_dir = final_audit
    assert rc == 0, unreachable_or_failed(out)
    data = report(report_dir)
    assert {name for name, host in data["hosts"].items() if host["status"] != "clean"} == set()
    assert data["summary"]["hosts_with_findings"] == 0
