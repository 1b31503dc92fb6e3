# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The audit, remediate and site playbooks through ansible-playbook, over a small fleet.

The fleet: local-connection hosts, each with its own Hermes home (one seeded with the
seeds' attack, one clean, one whose paths do not exist), and a host nobody answers for
(ssh to a closed port on 127.0.0.1). Inputs are given the way an AWX survey sends them.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

try:
    import jsonschema
except ImportError:
    jsonschema = None

pytestmark = [pytest.mark.root, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(TOP, "docs", "schemas", "boundary-audit.schema.json")
PYTHON = "/usr/bin/python3"


def seed(home, attack):
    """A Hermes home; with *attack*, the seeds' setuid root shell, a cap_net_raw file and a leak."""
    ws = home / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    spool = home.parent / "spool"
    (home.parent / "tmp").mkdir()
    spool.mkdir()
    (home / "config.yaml").write_text("# operator's comment\nterminal:\n  home_mode: real\n")
    if attack:
        shell = ws / "rootshell"
        shell.write_bytes(open("/bin/true", "rb").read())
        os.chown(shell, 0, 0)
        os.chmod(shell, 0o4755)
        ping = ws / "ping"
        ping.write_bytes(b"\x7fELF")
        subprocess.run(["setcap", "cap_net_raw=ep", str(ping)], check=True)
        (spool / "root").write_text("*/5 * * * * /root/.hermes/scripts/beacon.sh\n")
        (home.parent / "tmp" / "ab-1234").mkdir()
    return ws


@pytest.fixture
def fleet(tmp_path):
    """An inventory of four hosts and their homes; returns a dict of paths."""
    homes = {name: tmp_path / name / ".hermes" for name in ("dirty", "clean")}
    seed(homes["dirty"], True)
    seed(homes["clean"], False)
    lines = ["[agents]"]
    # Each host's leak audit looks at its own spool and temp directory, for root only.
    leak_vars = "sandboxguard_leak_users=root sandboxguard_leak_spool_dir=%s sandboxguard_leak_tmp_dir=%s"
    for name, home in homes.items():
        lines.append("%s ansible_connection=local ansible_python_interpreter=%s sandboxguard_hermes_homes=%s %s"
                     % (name, PYTHON, home, leak_vars % (home.parent / "spool", home.parent / "tmp")))
    lines.append("missing ansible_connection=local ansible_python_interpreter=%s sandboxguard_hermes_homes=%s %s"
                 % (PYTHON, tmp_path / "missing" / ".hermes",
                    leak_vars % (tmp_path / "missing" / "spool", tmp_path / "missing" / "tmp")))
    lines.append("gone ansible_host=127.0.0.1 ansible_port=1 ansible_connection=ssh ansible_ssh_timeout=5")
    inventory = tmp_path / "inventory"
    inventory.write_text("\n".join(lines) + "\n")
    return {"inventory": inventory, "homes": homes, "tmp": tmp_path, "reports": tmp_path / "reports"}


def playbook(fleet, name, extra, *flags, limit=None):
    """ansible-playbook sandboxguard.boundary.NAME; returns (rc, json output)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_SHOW_CUSTOM_STATS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_HOST_KEY_CHECKING="0")
    # The running venv's ansible-playbook: the controllers layer runs the `controller` tests on each ansible-core.
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(fleet["inventory"]),
            "sandboxguard.boundary." + name, "-e", json.dumps(extra), *flags]
    if limit:
        argv += ["--limit", limit]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False,
                          cwd=str(fleet["tmp"]))
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        pytest.fail("ansible-playbook printed no JSON (rc %d): %s %s" % (proc.returncode, proc.stdout, proc.stderr))


def load(path):
    with open(path) as f:
        return json.load(f)


def audit_vars(fleet, **more):
    base = {"sandboxguard_report_dir": str(fleet["reports"]), "sandboxguard_home_mode": "profile",
            "sandboxguard_quarantine_dir": str(fleet["tmp"] / "quarantine")}
    base.update(more)
    return base


@pytest.mark.controller
def test_findings_fail_the_play_after_every_report_is_written(fleet):
    rc, out = playbook(fleet, "audit", audit_vars(fleet))
    assert rc != 0
    report = load(fleet["reports"] / "boundary-audit.json")
    statuses = {name: host["status"] for name, host in report["hosts"].items()}
    # missing: its Hermes home is not on the host and no agent user was given: covered nothing, never clean
    assert statuses == {"dirty": "findings", "clean": "findings", "missing": "not_audited", "gone": "unreachable"}
    assert next(iter(report["hosts"])) == "gone", "worst first: the unreachable host leads"
    dirty = report["hosts"]["dirty"]["checks"]["privileged_files"]
    assert {os.path.basename(f["path"]) for f in dirty["findings"]} == {"rootshell", "ping"}
    assert report["hosts"]["clean"]["checks"]["privileged_files"]["status"] == "clean"
    leaks = report["hosts"]["dirty"]["checks"]["leaks"]["findings"]
    assert {f["kind"] for f in leaks} == {"cron_job", "tmp_run_dir"}
    assert report["hosts"]["clean"]["checks"]["leaks"]["status"] == "clean"
    assert report["hosts"]["clean"]["checks"]["home_mode"]["findings"][0]["mode"] == "real"
    missing = report["hosts"]["missing"]["checks"]
    assert str(fleet["tmp"] / "missing" / ".hermes") in missing["home_mode"]["absent"]
    assert missing["privileged_files"]["absent"] and missing["privileged_files"]["status"] == "not_checked"
    assert report["hosts"]["missing"]["not_checked"] == ["privileged_files", "home_mode", "bwrap", "runtime"]
    if jsonschema is not None:  # in the dev venv; the other controllers' venvs lack it
        with open(SCHEMA) as f:
            jsonschema.validate(report, json.load(f))
    junit = ET.parse(fleet["reports"] / "boundary-audit.xml").getroot()  # noqa: S314
    suites = {s.get("name"): s for s in junit.findall("testsuite")}
    assert set(suites) == {"dirty", "clean", "missing", "gone"}
    failure = suites["dirty"].find("testcase[@name='privileged_files']/failure")
    assert "rootshell" in failure.get("message")
    assert suites["gone"].find("testcase/error") is not None
    page = (fleet["reports"] / "boundary-audit.html").read_text()
    assert "gone" in page and "rootshell" in page
    assert sorted(os.listdir(fleet["reports"] / "hosts")) == ["clean.json", "dirty.json", "gone.json", "missing.json"]
    stats = out["global_custom_stats"]["sandboxguard_audit"]
    assert stats["hosts_total"] == 4 and stats["hosts_with_findings"] == 2 and stats["hosts_error"] == 1
    assert stats["hosts_not_audited"] == 1 and stats["hosts_not_checked"] == 3
    assert stats["checks"]["privileged_files"]["findings"] == 1
    assert (fleet["homes"]["dirty"] / "sandboxes/docker/t1/workspace/rootshell").stat().st_mode & 0o4000, \
        "the audit changed a file"


def test_a_clean_fleet_exits_zero(fleet):
    """Every selected check looked at something and found nothing: clean, exit 0."""
    rc, out = playbook(fleet, "audit", audit_vars(fleet, sandboxguard_home_mode="",
                                                  sandboxguard_checks="privileged_files, leaks"), limit="clean")
    assert rc == 0, out["stats"]
    report = load(fleet["reports"] / "boundary-audit.json")
    assert {h["status"] for h in report["hosts"].values()} == {"clean"}
    assert {c["status"] for c in report["hosts"]["clean"]["checks"].values()} == {"clean", "skipped"}


def test_a_check_name_that_is_not_one_fails_the_play_naming_the_choices(fleet):
    """``sandboxguard_checks: privileged`` (the tag's name, not the check's) selected nothing and
    the hosts came out not audited; the name is refused before any host is asked."""
    rc, out = playbook(fleet, "audit", audit_vars(fleet, sandboxguard_checks="privileged"), limit="clean")
    assert rc != 0, out["stats"]
    said = json.dumps(out)
    assert "names privileged: not a check; choose from privileged_files, home_mode, leaks, bwrap, runtime" in said


def test_a_host_whose_hermes_home_is_not_there_is_not_audited_and_fails_unless_allowed(fleet):
    rc, out = playbook(fleet, "audit", audit_vars(fleet, sandboxguard_checks="privileged_files,home_mode"),
                       limit="missing")
    assert rc != 0, out["stats"]
    host = load(fleet["reports"] / "boundary-audit.json")["hosts"]["missing"]
    assert host["status"] == "not_audited" and host["not_checked"] == ["privileged_files", "home_mode"]
    assert "sandboxguard_hermes_homes" in host["checks"]["home_mode"]["reason"]
    rc, out = playbook(fleet, "audit", audit_vars(fleet, sandboxguard_checks="privileged_files,home_mode",
                                                  sandboxguard_allow_not_checked="true"), limit="missing")
    assert rc == 0, out["stats"]
    assert load(fleet["reports"] / "boundary-audit.json")["hosts"]["missing"]["status"] == "not_audited"


def test_fail_on_findings_false_reports_only(fleet):
    rc, out = playbook(fleet, "audit", audit_vars(fleet, sandboxguard_fail_on_findings="false",
                                                  sandboxguard_allow_not_checked="true"), limit="dirty,clean")
    assert rc == 0, out["stats"]
    assert load(fleet["reports"] / "boundary-audit.json")["summary"]["hosts_with_findings"] == 2


def test_awx_survey_strings_blank_means_unset(fleet):
    survey = {"sandboxguard_hosts": "", "sandboxguard_paths": "", "sandboxguard_budget": "",
              "sandboxguard_agent_user": "", "sandboxguard_sandbox_dir": "", "sandboxguard_docker": "",
              "sandboxguard_home_mode": "", "sandboxguard_fail_on_findings": "false", "sandboxguard_checks": "",
              "sandboxguard_allow_not_checked": "true", "sandboxguard_report_dir": str(fleet["reports"])}
    rc, out = playbook(fleet, "audit", survey, limit="dirty,clean,missing")
    assert rc == 0, out["stats"]
    report = load(fleet["reports"] / "boundary-audit.json")
    assert report["hosts"]["dirty"]["status"] == "findings"
    assert report["hosts"]["dirty"]["checks"]["home_mode"]["status"] == "not_checked"
    rc, out = playbook(fleet, "audit", dict(survey, sandboxguard_allow_not_checked="false"), limit="clean")
    assert rc != 0, "a check not checked fails the gate even when findings only report"


def test_comma_separated_paths_and_a_missing_one(fleet):
    dirty_ws = fleet["homes"]["dirty"] / "sandboxes" / "docker"
    rc, _out = playbook(fleet, "audit", audit_vars(
        fleet, sandboxguard_paths="%s, %s" % (dirty_ws, fleet["tmp"] / "nowhere"), sandboxguard_hermes_homes=""),
        limit="clean")
    assert rc != 0
    check = load(fleet["reports"] / "boundary-audit.json")["hosts"]["clean"]["checks"]["privileged_files"]
    assert check["status"] == "findings" and check["absent"] == [str(fleet["tmp"] / "nowhere")]


def test_tags_select_checks_and_the_rest_is_skipped(fleet):
    rc, _out = playbook(fleet, "audit", audit_vars(fleet), "--tags", "privileged", limit="clean")
    assert rc == 0
    checks = load(fleet["reports"] / "boundary-audit.json")["hosts"]["clean"]["checks"]
    assert checks["privileged_files"]["status"] == "clean"
    assert {checks[c]["status"] for c in ("home_mode", "leaks", "bwrap")} == {"skipped"}


@pytest.mark.controller
def test_remediate_fixes_what_the_audit_found_and_a_second_run_changes_nothing(fleet):
    survey = {"sandboxguard_home_mode": "profile", "sandboxguard_owner": "", "sandboxguard_budget": "",
              "sandboxguard_quarantine_dir": str(fleet["tmp"] / "quarantine"), "sandboxguard_leak_min_age": ""}
    rc, out = playbook(fleet, "remediate", survey, limit="dirty,clean,missing")
    assert rc == 0, out["stats"]
    assert out["stats"]["dirty"]["changed"] > 0
    shell = fleet["homes"]["dirty"] / "sandboxes/docker/t1/workspace/rootshell"
    assert not shell.stat().st_mode & 0o6000
    assert "# operator's comment" in (fleet["homes"]["clean"] / "config.yaml").read_text()
    assert "beacon" not in (fleet["tmp"] / "dirty" / "spool" / "root").read_text()
    quarantined = [os.path.join(d, f) for d, _dirs, files in os.walk(fleet["tmp"] / "quarantine") for f in files]
    assert any(p.endswith("/crontab/root") for p in quarantined)
    rc, out = playbook(fleet, "remediate", survey, limit="dirty,clean,missing")
    assert rc == 0
    assert {name: s["changed"] for name, s in out["stats"].items()} == {"dirty": 0, "clean": 0, "missing": 0}
    rc, out = playbook(fleet, "audit", audit_vars(fleet), "--tags", "privileged,home,leaks", limit="dirty,clean")
    assert rc == 0, out["stats"]
    assert load(fleet["reports"] / "boundary-audit.json")["summary"]["hosts_clean"] == 2


def test_playbooks_leave_the_become_method_to_the_inventory():
    for name in ("audit.yml", "remediate.yml", "site.yml"):
        with open(os.path.join(TOP, "playbooks", name)) as f:
            assert "become_method" not in f.read(), name


def test_audit_in_check_mode_still_writes_the_reports_and_changes_nothing(fleet):
    rc, _out = playbook(fleet, "audit", audit_vars(fleet), "--check", limit="dirty")
    assert rc != 0
    assert load(fleet["reports"] / "boundary-audit.json")["hosts"]["dirty"]["status"] == "findings"
    assert (fleet["homes"]["dirty"] / "sandboxes/docker/t1/workspace/rootshell").stat().st_mode & 0o4000


def test_site_applies_terminal_home_from_survey_strings_and_a_second_run_changes_nothing(fleet):
    survey = {"sandboxguard_hermes_homes": str(fleet["homes"]["clean"]), "sandboxguard_agent_user": "",
              "sandboxguard_sandbox_dir": "", "terminal_home_audit": "false"}
    rc, out = playbook(fleet, "site", survey, "--tags", "home", limit="clean")
    assert rc == 0, out["stats"]
    assert out["stats"]["clean"]["changed"] > 0
    assert "home_mode: profile" in (fleet["homes"]["clean"] / "config.yaml").read_text()
    rc, out = playbook(fleet, "site", survey, "--tags", "home", limit="clean")
    assert rc == 0 and out["stats"]["clean"]["changed"] == 0


def test_sliced_runs_merge_into_the_report_of_the_whole_fleet(fleet):
    slices = []
    for i, hosts in enumerate(("dirty,gone", "clean,missing")):
        out_dir = fleet["tmp"] / ("slice-%d" % i)
        rc, _out = playbook(fleet, "audit", audit_vars(fleet, sandboxguard_report_dir=str(out_dir)), limit=hosts)
        assert rc != 0
        slices.append(str(out_dir))
    merged = fleet["tmp"] / "merged"
    proc = subprocess.run([os.path.join(TOP, ".venv", "bin", "sandboxguard"), "report", "merge", "--out", str(merged),
                           *slices], capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 1, proc.stderr
    report = load(merged / "boundary-audit.json")
    assert {n: h["status"] for n, h in report["hosts"].items()} == {
        "gone": "unreachable", "dirty": "findings", "clean": "findings", "missing": "not_audited"}
    assert report["summary"]["hosts_total"] == 4 and report["merged_from"] == slices
    assert sorted(os.listdir(merged / "hosts")) == ["clean.json", "dirty.json", "gone.json", "missing.json"]


def test_remediate_in_check_mode_says_what_would_change_and_changes_nothing(fleet):
    survey = {"sandboxguard_home_mode": "profile", "sandboxguard_quarantine_dir": str(fleet["tmp"] / "quarantine")}
    config = (fleet["homes"]["clean"] / "config.yaml").read_text()
    rc, out = playbook(fleet, "remediate", survey, "--check", limit="dirty,clean")
    assert rc == 0, out["stats"]
    assert out["stats"]["dirty"]["changed"] > 0 and out["stats"]["clean"]["changed"] > 0
    assert (fleet["homes"]["dirty"] / "sandboxes/docker/t1/workspace/rootshell").stat().st_mode & 0o4000
    assert "beacon" in (fleet["tmp"] / "dirty" / "spool" / "root").read_text()
    assert (fleet["homes"]["clean"] / "config.yaml").read_text() == config
    assert not (fleet["tmp"] / "quarantine").exists()


# Every variable each playbook reads from a survey (the playbook header lists them): AWX sends
# "" for a blank optional field, so each must mean unset.
SURVEY_VARS = {
    "audit": ("sandboxguard_hosts", "sandboxguard_paths", "sandboxguard_hermes_homes", "sandboxguard_sandbox_dir",
              "sandboxguard_github_runners", "sandboxguard_gitlab_config", "sandboxguard_docker",
              "sandboxguard_home_mode", "sandboxguard_agent_user", "sandboxguard_leak_users",
              "sandboxguard_leak_min_age", "sandboxguard_leak_tmp_dir", "sandboxguard_leak_spool_dir",
              "sandboxguard_budget", "sandboxguard_report_dir", "sandboxguard_fail_on_findings",
              "sandboxguard_allow_not_checked", "sandboxguard_checks"),
    "remediate": ("sandboxguard_hosts", "sandboxguard_paths", "sandboxguard_hermes_homes", "sandboxguard_sandbox_dir",
                  "sandboxguard_github_runners", "sandboxguard_gitlab_config", "sandboxguard_docker",
                  "sandboxguard_owner", "sandboxguard_group", "sandboxguard_budget",
                  "sandboxguard_home_mode", "sandboxguard_agent_user", "sandboxguard_leak_users",
                  "sandboxguard_leak_min_age", "sandboxguard_leak_tmp_dir", "sandboxguard_leak_spool_dir",
                  "sandboxguard_quarantine_dir"),
    "site": ("sandboxguard_hosts", "sandboxguard_hermes_homes", "sandboxguard_sandbox_dir", "sandboxguard_agent_user"),
}


def test_survey_variables_are_every_variable_the_playbooks_read():
    import re

    for name, names in SURVEY_VARS.items():
        with open(os.path.join(TOP, "playbooks", name + ".yml")) as f:
            read = set(re.findall(r"\b(sandboxguard_[a-z][a-z_]*) \| default", f.read()))
        assert read == set(names), name


def test_audit_with_every_survey_variable_blank_audits_with_the_defaults(fleet):
    """Every field blank: no paths or homes to look under, no mode, no agent account or user:
    every check not checked, with the reason naming what to set (the leak check never falls
    back on root's table), the reports in the default directory (relative to the run's
    directory), the host not audited and the gate failing on it (issue 27: it said clean)."""
    rc, out = playbook(fleet, "audit", dict.fromkeys(SURVEY_VARS["audit"], ""), limit="dirty")
    assert rc != 0, out["stats"]
    report = load(fleet["tmp"] / "boundary-audit" / "boundary-audit.json")
    checks = report["hosts"]["dirty"]["checks"]
    assert {name: c["status"] for name, c in checks.items()} == dict.fromkeys(checks, "not_checked")
    assert report["hosts"]["dirty"]["status"] == "not_audited"
    assert "no agent account known" in checks["leaks"]["reason"]
    for check, variable in (("privileged_files", "sandboxguard_hermes_homes"), ("home_mode", "sandboxguard_home_mode"),
                            ("leaks", "sandboxguard_leak_users"), ("bwrap", "sandboxguard_agent_user")):
        assert variable in checks[check]["reason"], check


def test_audit_reads_comma_separated_homes_and_leak_users(fleet):
    homes = "%s, %s" % (fleet["homes"]["dirty"], fleet["homes"]["clean"])
    rc, _out = playbook(fleet, "audit", audit_vars(fleet, sandboxguard_hermes_homes=homes,
                                                   sandboxguard_leak_users="root, sg-no-such-user",
                                                   sandboxguard_fail_on_findings="false",
                                                   sandboxguard_allow_not_checked="yes"), limit="clean")
    assert rc == 0
    checks = load(fleet["reports"] / "boundary-audit.json")["hosts"]["clean"]["checks"]
    assert {h["hermes_home"] for h in checks["home_mode"]["homes"]} >= {
        str(fleet["homes"]["dirty"]), str(fleet["homes"]["clean"])}
    assert {os.path.basename(f["path"]) for f in checks["privileged_files"]["findings"]} == {"rootshell", "ping"}
    assert checks["leaks"]["users"] == ["root"]
    assert set(checks["leaks"]["scope"]) == {"root", "sg-no-such-user"}


def test_remediate_with_every_survey_variable_blank_changes_nothing(fleet):
    shell = fleet["homes"]["dirty"] / "sandboxes/docker/t1/workspace/rootshell"
    spool = (fleet["tmp"] / "dirty" / "spool" / "root").read_text()
    rc, out = playbook(fleet, "remediate", dict.fromkeys(SURVEY_VARS["remediate"], ""), limit="dirty")
    assert rc == 0, out["stats"]
    assert out["stats"]["dirty"]["changed"] == 0
    assert shell.stat().st_mode & 0o4000, "no scope given: nothing is stripped"
    assert (fleet["tmp"] / "dirty" / "spool" / "root").read_text() == spool


def test_site_with_every_survey_variable_blank_installs_nothing(fleet):
    config = (fleet["homes"]["clean"] / "config.yaml").read_text()
    rc, out = playbook(fleet, "site", dict.fromkeys(SURVEY_VARS["site"], ""), limit="clean")
    assert rc == 0, out["stats"]
    assert out["stats"]["clean"]["changed"] == 0
    assert (fleet["homes"]["clean"] / "config.yaml").read_text() == config


def test_every_playbook_has_the_tag_of_every_capability(fleet):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"))
    for name in SURVEY_VARS:
        proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                               str(fleet["inventory"]), "sandboxguard.boundary." + name, "--list-tags"],
                              capture_output=True, text=True, env=env, check=False, timeout=120)
        assert proc.returncode == 0, proc.stderr
        tags = set()
        for line in proc.stdout.splitlines():
            if "TAGS: [" in line:
                tags |= {t.strip() for t in line.split("TAGS: [", 1)[1].rstrip("]").split(",") if t.strip()}
        assert tags >= {"privileged", "home", "leaks", "bwrap"}, (name, tags)


def test_remediate_tag_home_leaves_the_privileged_files_alone(fleet):
    shell = fleet["homes"]["dirty"] / "sandboxes/docker/t1/workspace/rootshell"
    rc, out = playbook(fleet, "remediate", {"sandboxguard_home_mode": "profile"}, "--tags", "home", limit="dirty")
    assert rc == 0, out["stats"]
    assert "home_mode: profile" in (fleet["homes"]["dirty"] / "config.yaml").read_text()
    assert shell.stat().st_mode & 0o4000
    assert "beacon" in (fleet["tmp"] / "dirty" / "spool" / "root").read_text()


# Importing a top-level sandboxguard package (the pip-installed library or CLI) on the
# controller fails under this sitecustomize: the controller side must use the collection's
# module_utils only (an AWX execution environment or a CI venv has ansible-core and the
# collection, nothing else).
BLOCKER = '''
import sys
class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sandboxguard", "sandboxguard_cli"):
            raise ImportError("controller imported the pip-installed %s (use the collection's module_utils)" % name)
sys.meta_path.insert(0, _Blocker())
'''


@pytest.mark.controller
def test_controller_side_needs_no_pip_installed_sandboxguard(fleet, tmp_path_factory, monkeypatch):
    site = tmp_path_factory.mktemp("blocker")
    (site / "sitecustomize.py").write_text(BLOCKER)
    probe = subprocess.run([sys.executable, "-c", "import sandboxguard"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(site)), check=False)
    assert probe.returncode != 0 and "controller imported" in probe.stderr, "the blocker must work"
    monkeypatch.setenv("PYTHONPATH", str(site))  # ansible-playbook, its workers and the modules
    rc, _out = playbook(fleet, "audit", audit_vars(fleet), limit="dirty,gone")
    assert rc != 0  # the gate: findings
    report = load(fleet["reports"] / "boundary-audit.json")  # the action plugin and the filters ran
    assert report["hosts"]["dirty"]["status"] == "findings" and report["hosts"]["gone"]["status"] == "unreachable"
    assert set(os.listdir(fleet["reports"])) >= {"boundary-audit.json", "boundary-audit.xml", "boundary-audit.html"}


def test_no_controller_plugin_imports_a_top_level_sandboxguard():
    """Imports read as Python reads them (ast), not a text search: a template the library
    writes out (the runner helper's ``from sandboxguard_cli.main import main``) is not one."""
    import ast

    bad = []
    for sub in ("action", "filter", "modules", "module_utils"):
        for root, _dirs, files in os.walk(os.path.join(TOP, "plugins", sub)):
            for name in files:
                if name.endswith(".py"):
                    with open(os.path.join(root, name), encoding="utf-8") as handle:
                        tree = ast.parse(handle.read())
                    for node in ast.walk(tree):
                        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                        if any(n.split(".")[0] in ("sandboxguard", "sandboxguard_cli") for n in names):
                            bad.append("%s:%d" % (os.path.join(root, name), node.lineno))
    assert bad == []


def test_playbooks_and_their_roles_leave_the_become_method_to_the_inventory():
    for base in ("playbooks", "roles"):
        for root, _dirs, files in os.walk(os.path.join(TOP, base)):
            for name in files:
                if name.endswith((".yml", ".yaml")):
                    with open(os.path.join(root, name)) as f:
                        assert "become_method" not in f.read(), os.path.join(root, name)


def test_audit_without_an_inventory_reports_the_implicit_localhost(tmp_path):
    """`ansible-playbook sandboxguard.boundary.audit` with no inventory audits the implicit
    localhost, which is in no hostvars: its record comes from its own variables, it is not
    reported unreachable."""
    ws = tmp_path / "sandboxes" / "docker" / "t1"
    ws.mkdir(parents=True)
    shell = ws / "rootshell"
    shell.write_bytes(b"\x7fELF")
    os.chmod(shell, 0o4755)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    env.pop("ANSIBLE_INVENTORY", None)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           "sandboxguard.boundary.audit", "-e", json.dumps({
                               "sandboxguard_hosts": "localhost", "sandboxguard_paths": str(tmp_path / "sandboxes"),
                               "sandboxguard_docker": "never",
                               "sandboxguard_report_dir": str(tmp_path / "reports")})],
                          capture_output=True, text=True, env=env, check=False, timeout=300, cwd=str(tmp_path))
    assert proc.returncode != 0, proc.stdout[-2000:]
    report = load(tmp_path / "reports" / "boundary-audit.json")
    assert report["hosts"]["localhost"]["status"] == "findings", report["hosts"]["localhost"].get("reason")
    assert [f["path"] for f in report["hosts"]["localhost"]["checks"]["privileged_files"]["findings"]] == [str(shell)]


@pytest.fixture
def refused_fleet(tmp_path):
    """Two hosts: ``refused``, whose Hermes home belongs to a throwaway agent user that made
    ``<home>/home`` a symlink to a root directory and left a cron job in the host's spool,
    and ``clean``. No leak users are given: the agent's account is in scope as the home's owner."""
    user = "sgq%s" % os.urandom(3).hex()
    subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                    "--home-dir", "/nonexistent", user], check=True, capture_output=True)
    try:
        import pwd

        entry = pwd.getpwnam(user)
        homes = {name: tmp_path / name / ".hermes" for name in ("refused", "clean")}
        seed(homes["refused"], False)
        seed(homes["clean"], False)
        for path in (homes["refused"].parent, homes["refused"]):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        rootdir = tmp_path / "rootdir"
        rootdir.mkdir()
        (rootdir / "keep").write_text("root's\n")
        os.symlink(str(rootdir), str(homes["refused"] / "home"))
        table = homes["refused"].parent / "spool" / user
        table.write_text("*/5 * * * * /home/%s/.hermes/scripts/keepalive.sh\n" % user)
        os.chown(table, entry.pw_uid, entry.pw_gid)
        os.chmod(table, 0o600)
        lines = ["[agents]"]
        for name, home in homes.items():
            lines.append("%s ansible_connection=local ansible_python_interpreter=%s sandboxguard_hermes_homes=%s "
                         "sandboxguard_leak_spool_dir=%s sandboxguard_leak_tmp_dir=%s"
                         % (name, PYTHON, home, home.parent / "spool", home.parent / "tmp"))
        inventory = tmp_path / "inventory"
        inventory.write_text("\n".join(lines) + "\n")
        yield {"inventory": inventory, "homes": homes, "tmp": tmp_path, "user": user, "table": table,
               "rootdir": rootdir}
    finally:
        subprocess.run(["userdel", user], check=False, capture_output=True)


def _task_results(out, host):
    """(task name, that host's result) for every task of the play, in order."""
    for play in out["plays"]:
        for task in play["tasks"]:
            if host in task["hosts"]:
                yield task["task"]["name"], task["hosts"][host]


@pytest.mark.controller
def test_remediate_a_refused_home_still_quarantines_the_leaks_and_fails_the_host_at_the_end(refused_fleet):
    """A symlink at <home>/home fails terminal_home: the cron job the agent left is quarantined
    all the same, the other host is fixed, and the host fails at the end naming terminal_home."""
    fleet = refused_fleet
    quarantine = fleet["tmp"] / "quarantine"
    rc, out = playbook(fleet, "remediate", {"sandboxguard_home_mode": "profile",
                                            "sandboxguard_quarantine_dir": str(quarantine)})
    assert rc != 0
    assert "keepalive" not in fleet["table"].read_text(), "the agent's cron job survived the refused home"
    assert out["stats"]["refused"]["failures"] == 1, out["stats"]
    assert out["stats"]["clean"]["failures"] == 0 and out["stats"]["clean"]["changed"] > 0, out["stats"]
    results = list(_task_results(out, "refused"))
    assert results[-1][0] == "Fail the host when a fix failed (every other fix ran)"
    final = results[-1][1]
    assert final.get("failed") and "terminal_home" in final["msg"], final
    saved = [os.path.join(d, f) for d, _dirs, files in os.walk(quarantine) for f in files]
    assert any(p.endswith("/crontab/" + fleet["user"]) for p in saved), saved
    assert sorted(os.listdir(fleet["rootdir"])) == ["keep"], "nothing landed through the symlink"
    assert os.path.islink(fleet["homes"]["refused"] / "home")
    assert "home_mode: profile" in (fleet["homes"]["clean"] / "config.yaml").read_text()
    # the one remediate call failed with every fix's section: home_mode failed, the leaks were quarantined
    [call] = [r for name, r in results if "fixes" in r]
    assert call["failed"] and call["failed_fixes"] == ["home_mode"], call.get("msg")
    assert call["fixes"]["leaks"]["status"] == "changed" and "terminal_home" in call["msg"]


# --- hostile names (issue 19 item 5) --------------------------------------------------------

@pytest.mark.controller
def test_audit_and_remediate_with_hostile_names(tmp_path):
    """A setuid-root shell beside a setuid file named b"bad\\xff\\xfe" (ansible-core 2.19+ refused the
    whole audit result: the host was an error and neither file was named, and remediate failed on
    its first task), a profile's task directory whose name is not UTF-8 with a setgid file in it
    (remediate must still strip it), names with ESC, BEL, a newline, markup and ']]>', and a cron
    line that is not UTF-8: the audit names every one and remediate fixes them. A directory under
    profiles/ whose name is no Hermes profile id is no root: its setgid file is left alone."""
    from sandboxguard._core.text import from_result

    home = tmp_path / ".hermes"
    ws = os.path.join(os.fsencode(str(home)), b"sandboxes/docker/t1/workspace")
    profile_ws = os.path.join(os.fsencode(str(home)), b"profiles/work/sandboxes/docker/t2\xff/workspace")
    # a directory under profiles/ whose name is no Hermes profile id: no root, its files not audited
    not_profile_ws = os.path.join(os.fsencode(str(home)), b"profiles/p\xff\xfe/sandboxes/docker/t3/workspace")
    os.makedirs(ws)
    os.makedirs(profile_ws)
    os.makedirs(not_profile_ws)
    (home / "config.yaml").write_text("terminal:\n  home_mode: real\n")
    planted = [os.path.join(ws, b"rootshell"), os.path.join(ws, b"bad\xff\xfe"),
               os.path.join(ws, b"esc\x1b[2J\x07<script>alert(1)<!--&amp;]]>\nx"),
               os.path.join(profile_ws, b"setgid-\xff")]
    outside = os.path.join(not_profile_ws, b"setgid")
    for path in [*planted, outside]:
        with open(path, "wb") as handle:
            handle.write(open("/bin/true", "rb").read())
        os.chmod(path, 0o6755 if b"setgid" not in path else 0o2755)
    spool, tmp = tmp_path / "spool", tmp_path / "tmp"
    spool.mkdir()
    tmp.mkdir()
    (spool / "root").write_bytes(b"*/5 * * * * /root/.hermes/scripts/beacon\xff.sh \x1b]0;x\x07 <b>]]>\n")
    inventory = tmp_path / "inventory"
    inventory.write_text(
        "[agents]\nsgnames ansible_connection=local ansible_python_interpreter=%s sandboxguard_hermes_homes=%s "
        "sandboxguard_leak_users=root sandboxguard_leak_spool_dir=%s sandboxguard_leak_tmp_dir=%s\n"
        % (PYTHON, home, spool, tmp))
    fleet = {"inventory": inventory, "tmp": tmp_path, "reports": tmp_path / "reports"}
    rc, out = playbook(fleet, "audit", audit_vars(fleet))
    assert rc != 0
    report = load(fleet["reports"] / "boundary-audit.json")
    host = report["hosts"]["sgnames"]
    assert host["status"] == "findings", host
    if jsonschema is not None:
        with open(SCHEMA) as f:
            jsonschema.validate(report, json.load(f))
    checks = from_result(host)["checks"]
    found = sorted(os.fsencode(f["path"]) for f in checks["privileged_files"]["findings"])
    assert found == sorted(planted)
    assert os.path.dirname(os.path.dirname(profile_ws)) in [os.fsencode(r) for r in checks["privileged_files"]["roots"]]
    [job] = checks["leaks"]["findings"]
    assert os.fsencode(job["entry"]) == b"*/5 * * * * /root/.hermes/scripts/beacon\xff.sh \x1b]0;x\x07 <b>]]>"
    junit = ET.parse(fleet["reports"] / "boundary-audit.xml").getroot()  # noqa: S314
    message = junit.find("testsuite/testcase[@name='privileged_files']/failure").get("message")
    assert "bad\\xff\\xfe" in message and "rootshell" in message and "\\x1b[2J\\x07<script>" in message
    page = (fleet["reports"] / "boundary-audit.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;!--&amp;amp;]]&gt;\\nx" in page and "<script>" not in page
    assert os.stat(planted[0]).st_mode & 0o4000, "the audit changed a file"

    survey = {"sandboxguard_home_mode": "profile", "sandboxguard_quarantine_dir": str(tmp_path / "quarantine")}
    rc, out = playbook(fleet, "remediate", survey)
    assert rc == 0, out["stats"]
    for path in planted:
        assert not os.stat(path).st_mode & 0o6000, path
    assert os.stat(outside).st_mode & 0o2000, "remediate changed a file outside every root"
    assert b"beacon" not in (spool / "root").read_bytes()
    assert "home_mode: profile" in (home / "config.yaml").read_text()
    rc, out = playbook(fleet, "audit",
                       audit_vars(fleet, sandboxguard_checks=["privileged_files", "home_mode", "leaks"]))
    assert rc == 0, out["stats"]
    assert load(fleet["reports"] / "boundary-audit.json")["hosts"]["sgnames"]["status"] == "clean"


def test_audit_of_a_hermes_home_under_a_symlinked_path_prints_the_real_path_to_give(tmp_path):
    """The home is reached through a link in a directory another user owns (refused since
    issue 19): the audit's summary names the host, the check and the real path to give."""
    agent = tmp_path / "agent"
    real = agent / "real" / ".hermes"
    (real / "sandboxes" / "docker" / "t1").mkdir(parents=True)
    (real / "config.yaml").write_text("terminal:\n  home_mode: real\n")
    (agent / "link").symlink_to("real")
    for path in (agent, agent / "link", agent / "real", real):
        os.chown(path, 65534, 65534, follow_symlinks=False)
    (tmp_path / "spool").mkdir()
    (tmp_path / "tmp").mkdir()
    inventory = tmp_path / "inventory"
    inventory.write_text("[agents]\nlinked ansible_connection=local ansible_python_interpreter=%s "
                         "sandboxguard_hermes_homes=%s sandboxguard_leak_spool_dir=%s sandboxguard_leak_tmp_dir=%s\n"
                         % (PYTHON, agent / "link" / ".hermes", tmp_path / "spool", tmp_path / "tmp"))
    fleet = {"inventory": inventory, "tmp": tmp_path, "reports": tmp_path / "reports"}
    rc, out = playbook(fleet, "audit", audit_vars(fleet, sandboxguard_docker="never"))
    assert rc != 0
    [summary] = [result["msg"] for name, result in _task_results(out, "linked")
                 if name.endswith("Show the fleet summary")]
    assert "linked home_mode: " in summary and "it leads to %s now" % real in summary, summary
    assert "linked privileged_files: " in summary and "it leads to %s/sandboxes/docker now" % real in summary, summary
    record = load(fleet["reports"] / "boundary-audit.json")["hosts"]["linked"]
    assert record["status"] == "error" and "it leads to %s now" % real in record["checks"]["home_mode"]["reason"]


REMEDIATE_TASK = ("Return ownership, strip setid bits and caps, sweep sandboxes, set TERMINAL_HOME_MODE, "
                  "quarantine leaks (one call)")


def _remediate_result(out, host):
    [result] = [r for name, r in _task_results(out, host) if name == REMEDIATE_TASK]
    return result


@pytest.mark.controller
def test_remediate_is_one_module_call_per_host_with_a_section_per_fix(fleet):
    """Check mode with --diff: one remediate call on the host, each fix its own section saying
    what would change (and its diff), nothing changed; then the fixes; then nothing to do."""
    survey = {"sandboxguard_home_mode": "profile", "sandboxguard_owner": "65534",
              "sandboxguard_quarantine_dir": str(fleet["tmp"] / "quarantine"), "sandboxguard_docker": "never"}
    shell = fleet["homes"]["dirty"] / "sandboxes/docker/t1/workspace/rootshell"
    rc, out = playbook(fleet, "remediate", survey, "--check", "--diff", limit="dirty")
    assert rc == 0, out["stats"]
    modules = [name for name, r in _task_results(out, "dirty") if "fixes" in r]
    assert modules == [REMEDIATE_TASK], "one module call per host does every fix"
    fixes = _remediate_result(out, "dirty")["fixes"]
    for name in ("ownership", "setid", "caps", "home_mode", "leaks"):
        assert (fixes[name]["status"], fixes[name]["changed"], fixes[name]["dry_run"]) == ("changed", True, True), name
        assert fixes[name]["diff"], name
    assert fixes["sandboxes"]["status"] == "skipped"
    assert [os.path.basename(f["path"]) for f in fixes["setid"]["files"]] == ["rootshell"]
    assert [os.path.basename(f["path"]) for f in fixes["caps"]["files"]] == ["ping"]
    assert shell.stat().st_mode & 0o4000 and not (fleet["tmp"] / "quarantine").exists(), "check mode changed the host"
    rc, out = playbook(fleet, "remediate", survey, limit="dirty")
    assert rc == 0, out["stats"]
    result = _remediate_result(out, "dirty")
    assert result["changed"] and result["failed_fixes"] == [] and "diff" not in result["fixes"]["home_mode"]
    assert not shell.stat().st_mode & 0o6000
    rc, out = playbook(fleet, "remediate", survey, limit="dirty")
    assert rc == 0 and out["stats"]["dirty"]["changed"] == 0, out["stats"]
    assert {n: s["status"] for n, s in _remediate_result(out, "dirty")["fixes"].items()} == {
        "ownership": "ok", "setid": "ok", "caps": "ok", "sandboxes": "skipped", "home_mode": "ok", "leaks": "ok"}


# --- issue 27: an audit that checked nothing never says clean ---------------------------------

@pytest.mark.controller
def test_an_audit_with_the_scope_forgotten_is_not_audited_fails_and_is_amber(tmp_path):
    """The issue's replay: a host holding a setuid-root shell in its Hermes home, audited with
    the scope forgotten (no Hermes home, paths or sandbox directory, no mode, no agent user).
    It said every check skipped, "1 clean", exit 0 and a green banner. Now every check is
    not checked with the variable to set, the host is not audited in JSON, JUnit, HTML (amber),
    SARIF, the summary line and set_stats, and the play fails."""
    home = tmp_path / ".hermes"
    ws = home / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    shell = ws / "rootshell"
    shell.write_bytes(open("/bin/true", "rb").read())
    os.chown(shell, 0, 0)
    os.chmod(shell, 0o4755)
    (tmp_path / "spool").mkdir()
    inventory = tmp_path / "inventory"
    inventory.write_text("[agents]\nforgot ansible_connection=local ansible_python_interpreter=%s "
                         "sandboxguard_leak_spool_dir=%s\n" % (PYTHON, tmp_path / "spool"))
    fleet = {"inventory": inventory, "tmp": tmp_path, "reports": tmp_path / "reports"}
    rc, out = playbook(fleet, "audit", {"sandboxguard_report_dir": str(fleet["reports"])})
    assert rc != 0, "an audit that checked nothing must fail the run"
    report = load(fleet["reports"] / "boundary-audit.json")
    host = report["hosts"]["forgot"]
    assert host["status"] == "not_audited"
    assert {name: c["status"] for name, c in host["checks"].items()} == dict.fromkeys(host["checks"], "not_checked")
    assert report["summary"]["hosts_clean"] == 0 and report["summary"]["hosts_not_audited"] == 1
    if jsonschema is not None:
        with open(SCHEMA) as f:
            jsonschema.validate(report, json.load(f))
    junit = ET.parse(fleet["reports"] / "boundary-audit.xml").getroot()  # noqa: S314
    errors = junit.findall("testsuite/testcase/error")
    assert len(errors) == 5 and {e.get("type") for e in errors} == {"not_checked"}
    assert junit.find("testsuite/properties/property[@name='status']").get("value") == "not_audited"
    page = (fleet["reports"] / "boundary-audit.html").read_text()
    assert '<div class="verdict warn">' in page and "not audited" in page and "all 1 host(s) clean" not in page
    sarif = json.loads((fleet["reports"] / "boundary-audit.sarif").read_text())
    invocation = sarif["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert len([n for n in invocation["toolExecutionNotifications"] if n["descriptor"]["id"] == "not_checked"]) == 5
    summary = [r["msg"] for name, r in _task_results(out, "forgot") if name.endswith("Show the fleet summary")]
    assert summary and "1 not audited" in summary[0] and "0 clean" in summary[0]
    assert "sandboxguard_hermes_homes" in summary[0], summary[0]
    stats = out["global_custom_stats"]["sandboxguard_audit"]
    assert stats["hosts_not_audited"] == 1 and stats["hosts_clean"] == 0
    [gate] = [r for name, r in _task_results(out, "forgot") if "not audited" in str(r.get("msg", ""))
              and r.get("failed")]
    assert "sandboxguard_allow_not_checked" in gate["msg"]
    assert shell.stat().st_mode & 0o4000, "the audit changed a file"

    # the scope given: the shell is found, and the three other checks not checked still fail the run
    rc, _out = playbook(fleet, "audit", {"sandboxguard_report_dir": str(fleet["reports"]),
                                         "sandboxguard_hermes_homes": str(home), "sandboxguard_checks": "",
                                         "sandboxguard_fail_on_findings": "false"})
    host = load(fleet["reports"] / "boundary-audit.json")["hosts"]["forgot"]
    assert host["status"] == "findings" and rc != 0, "findings only report, the checks not checked still fail"
    assert host["not_checked"] == ["home_mode", "leaks", "bwrap", "runtime"], (
        "a home owned by root names no agent account")


def test_engine_discovery_off_is_a_warning_of_the_host_on_the_console_and_in_every_report(fleet):
    rc, out = playbook(fleet, "audit", audit_vars(fleet, sandboxguard_docker="never",
                                                  sandboxguard_checks="privileged_files"), limit="clean")
    assert rc == 0, out["stats"]
    report = load(fleet["reports"] / "boundary-audit.json")
    [warning] = report["hosts"]["clean"]["warnings"]
    assert "container engine discovery off or failed" in warning and "docker: never" in warning
    assert report["summary"]["hosts_with_warnings"] == 1
    junit = ET.parse(fleet["reports"] / "boundary-audit.xml").getroot()  # noqa: S314
    assert "docker: never" in junit.find("testsuite/system-err").text
    assert "docker: never" in (fleet["reports"] / "boundary-audit.html").read_text()
    notes = json.loads((fleet["reports"] / "boundary-audit.sarif").read_text())["runs"][0]["invocations"][0][
        "toolExecutionNotifications"]
    assert [n["level"] for n in notes if n["descriptor"]["id"] == "engine_discovery"] == ["warning"]
    audit_task = [r for name, r in _task_results(out, "clean") if "record" in r]
    assert any("docker: never" in w for w in audit_task[0].get("warnings", [])), "the per-host console warning"
    summary = [r["msg"] for name, r in _task_results(out, "clean") if name.endswith("Show the fleet summary")]
    assert "warnings: clean: container engine discovery" in summary[0]
