# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The audit and remediate playbooks over docker-connection hosts and a host whose Docker engine answers.

Hosts: two containers of our Debian image over community.docker.docker (one seeded inside
with the seeds' attack and a cron job leak, one clean), and this machine over the local
connection with the venv's Python (it has the Docker SDK), where an exited root container
left a setuid shell and a cap_net_raw file in the bind mount of a Hermes sandbox. The audit
finds exactly the seeded hosts (the engine's in-scope mounts included), remediate fixes
them, a second remediate changes nothing, and the audit afterwards exits 0.
"""
import json
import os
import subprocess
import uuid

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = "sandboxguard/debian:12"
AGENT = 1000
HOME_IN_BOX = "/srv/hermes/.hermes"
SEED_BOX = ("set -e; ws=%s/sandboxes/docker/t1/workspace; mkdir -p $ws; cp /bin/sh $ws/rootshell; "
            "chmod 4755 $ws/rootshell; cp /bin/true $ws/ping; setcap cap_net_raw+ep $ws/ping; "
            "mkdir -p /var/spool/cron/crontabs; echo '*/5 * * * * /root/.hermes/scripts/beacon.sh' "
            "> /var/spool/cron/crontabs/root; chmod 600 /var/spool/cron/crontabs/root" % HOME_IN_BOX)
DROP = ("cp /bin/true /workspace/suid && chmod 4755 /workspace/suid && "
        "cp /bin/true /workspace/caps && setcap cap_net_raw+ep /workspace/caps")


def docker(*args, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=120)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("audit-docker")
    tag = uuid.uuid4().hex[:8]
    boxes = {"box-dirty": "sgaudit-%s-dirty" % tag, "box-clean": "sgaudit-%s-clean" % tag}
    home = tmp / "engine" / ".hermes"
    ws = home / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    for p in (home, home / "sandboxes", home / "sandboxes" / "docker", ws.parent, ws):
        os.chown(p, AGENT, AGENT)
    orphan = "sgaudit-%s-orphan" % tag
    try:
        for name in boxes.values():
            docker("run", "-d", "--name", name, "--network", "none", IMAGE, "sleep", "infinity")
        docker("exec", boxes["box-dirty"], "sh", "-c", SEED_BOX)
        # the clean box has a Hermes home too (one not on the host would be not checked, never clean)
        docker("exec", boxes["box-clean"], "mkdir", "-p", HOME_IN_BOX + "/sandboxes/docker/t1/workspace")
        docker("run", "--name", orphan, "--network", "none", "-v", "%s:/workspace" % ws, IMAGE, "sh", "-c", DROP)
        (tmp / "engine" / "spool").mkdir()
        (tmp / "engine" / "tmp").mkdir()
        # The boxes' agent runs as root (its Hermes home is root's): the leak audit never takes root
        # unless the operator names it, so the inventory does, as on the engine host.
        lines = ["[boxes]"]
        lines += ["%s ansible_connection=community.docker.docker ansible_host=%s "
                  "ansible_python_interpreter=/usr/bin/python3 sandboxguard_hermes_homes=%s "
                  "sandboxguard_leak_users=root"
                  % (host, name, HOME_IN_BOX) for host, name in boxes.items()]
        lines += ["[engine]",
                  "engine-host ansible_connection=local ansible_python_interpreter=%s sandboxguard_hermes_homes=%s "
                  "sandboxguard_leak_users=root sandboxguard_leak_spool_dir=%s sandboxguard_leak_tmp_dir=%s"
                  % (os.path.join(TOP, ".venv", "bin", "python"), home, tmp / "engine" / "spool",
                     tmp / "engine" / "tmp")]
        (tmp / "inventory").write_text("\n".join(lines) + "\n")
        yield {"tmp": tmp, "boxes": boxes, "ws": ws, "orphan": orphan}
    finally:
        for name in [*boxes.values(), orphan]:
            docker("rm", "-f", name, check=False)


def playbook(fleet, name, extra):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_SHOW_CUSTOM_STATS="1",
               ANSIBLE_LOCALHOST_WARNING="0")
    proc = subprocess.run([os.path.join(TOP, ".venv", "bin", "ansible-playbook"), "-i",
                           str(fleet["tmp"] / "inventory"), "-f", "5", "sandboxguard.boundary." + name,
                           "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=600, check=False, cwd=str(fleet["tmp"]))
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        pytest.fail("ansible-playbook printed no JSON (rc %d): %s %s" % (proc.returncode, proc.stdout, proc.stderr))


def task_hosts(out, name):
    for play in out["plays"]:
        for task in play["tasks"]:
            if task["task"]["name"].split(" : ")[-1] == name:
                return task["hosts"]
    return {}


def test_audit_remediate_audit_over_docker_hosts_and_the_engine(fleet):
    reports = fleet["tmp"] / "reports"
    audit_vars = {"sandboxguard_report_dir": str(reports), "sandboxguard_budget": "",
                  "sandboxguard_fail_on_findings": "true", "sandboxguard_checks": "privileged_files,leaks"}
    rc, _out = playbook(fleet, "audit", audit_vars)
    assert rc != 0
    with open(reports / "boundary-audit.json") as f:
        report = json.load(f)
    statuses = {name: host["status"] for name, host in report["hosts"].items()}
    assert statuses == {"box-dirty": "findings", "box-clean": "clean", "engine-host": "findings"}
    box = report["hosts"]["box-dirty"]["checks"]
    assert {os.path.basename(f["path"]) for f in box["privileged_files"]["findings"]} == {"rootshell", "ping"}
    assert [f["kind"] for f in box["leaks"]["findings"]] == ["cron_job"]
    engine = report["hosts"]["engine-host"]["checks"]["privileged_files"]
    assert engine["engine"]["answered"] is True and str(fleet["ws"]) in engine["engine"]["targets"]
    assert {os.path.basename(f["path"]) for f in engine["findings"]} == {"suid", "caps"}
    # the runtime check (issue 28) reads the container that bound the sandbox: default options, no no-new-privileges
    # (its own run on the engine host: the boxes hold no Hermes config, so there it would be not checked)
    rc, _out = playbook(fleet, "audit", dict(audit_vars, sandboxguard_checks="runtime",
                                             sandboxguard_hosts="engine-host",
                                             sandboxguard_report_dir=str(fleet["tmp"] / "runtime-reports")))
    with open(fleet["tmp"] / "runtime-reports" / "boundary-audit.json") as f:
        runtime = json.load(f)["hosts"]["engine-host"]["checks"]["runtime"]
    assert rc != 0 and [(f["rule"], f["where"]) for f in runtime["findings"]] == [
        ("no-new-privileges-off", "container %s" % fleet["orphan"])]

    survey = {"sandboxguard_owner": "", "sandboxguard_budget": "", "sandboxguard_home_mode": "",
              "sandboxguard_quarantine_dir": str(fleet["tmp"] / "quarantine")}
    rc, out = playbook(fleet, "remediate", survey)
    assert rc == 0, out["stats"]
    # the one remediate call per host: its sandboxes section is the sweep (sandbox_sweep's library call)
    calls = task_hosts(out, "Return ownership, strip setid bits and caps, sweep sandboxes, set TERMINAL_HOME_MODE, "
                            "quarantine leaks (one call)")
    sweep = {name: result["fixes"]["sandboxes"] for name, result in calls.items()}
    assert sweep["engine-host"]["status"] == "changed", "the engine answered: its sandboxes are swept"
    assert sweep["engine-host"]["module"] == "sandbox_sweep" and sweep["engine-host"]["sandboxes"]
    # no engine in the box: its persistent task directories are still swept (host-derived, no container needed)
    assert sweep["box-dirty"]["status"] in ("ok", "changed") and sweep["box-dirty"]["engines"] == []
    st = os.stat(fleet["ws"] / "suid")
    assert not st.st_mode & 0o6000 and st.st_uid == AGENT, "stripped and given back to the sandbox's owner"
    rc, out = playbook(fleet, "remediate", survey)
    assert rc == 0
    assert {name: s["changed"] for name, s in out["stats"].items()} == dict.fromkeys(
        ("box-dirty", "box-clean", "engine-host"), 0)
    docker("rm", "-f", fleet["orphan"])  # remediate fixes files, never containers: the operator removes it
    rc, out = playbook(fleet, "audit", audit_vars)
    assert rc == 0, out["stats"]
    assert out["global_custom_stats"]["sandboxguard_audit"]["hosts_clean"] == 3
