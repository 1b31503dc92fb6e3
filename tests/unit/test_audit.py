# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The audit on one host: each check's status, absent paths, errors that never read as clean."""
import os
import subprocess

import engine_group
import pytest
from sandboxguard._fleet import audit

NEVER = {"docker": "never"}  # the privileged check with no engine asked: host-derived roots only


@pytest.fixture
def no_engine_here(monkeypatch):
    """No engine socket on this host, whatever the machine runs (auto mode then asks none)."""
    from sandboxguard import docker_engine

    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(docker_engine, "engine_urls", lambda *args, **kwargs: [])


@pytest.fixture
def hermes(tmp_path):
    """A Hermes home with one persistent sandbox holding a setuid file and a plain file."""
    home = tmp_path / "hermes"
    ws = home / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    (ws / "plain").write_text("x")
    suid = ws / "sh"
    suid.write_text("#!/bin/sh\n")
    os.chmod(suid, 0o4755)
    return home


def test_setuid_file_in_a_hermes_sandbox_is_a_finding_naming_its_path(hermes):
    result = audit.check_privileged_files(hermes_homes=[str(hermes)], **NEVER)
    assert result["status"] == "findings"
    assert [f["path"] for f in result["findings"]] == [str(hermes / "sandboxes/docker/t1/workspace/sh")]
    assert result["findings"][0]["mode"] == "04755" and result["findings"][0]["reasons"] == ["setuid"]
    assert oct(os.stat(result["findings"][0]["path"]).st_mode & 0o7777) == "0o4755", "the audit changed a file"


@pytest.mark.root
def test_file_capabilities_are_findings(hermes):
    target = hermes / "sandboxes/docker/t1/workspace/plain"
    if subprocess.run(["setcap", "cap_net_raw=ep", str(target)], check=False).returncode:
        pytest.skip("setcap is not available")
    result = audit.check_privileged_files(paths=[str(hermes)], **NEVER)
    caps = [f for f in result["findings"] if f["caps"]]
    assert caps and caps[0]["path"] == str(target) and caps[0]["reasons"] == ["caps"]


def test_missing_paths_are_absent_for_this_host_and_the_rest_is_still_audited(hermes, tmp_path):
    missing = str(tmp_path / "not-here")
    result = audit.check_privileged_files(paths=[missing], hermes_homes=[str(hermes), str(tmp_path / "gone")],
                                          **NEVER)
    assert result["status"] == "findings"
    assert missing in result["absent"] and str(tmp_path / "gone/sandboxes/docker") in result["absent"]
    assert not result["errors"]


def test_only_missing_paths_is_not_checked_naming_them_and_the_variables(tmp_path):
    """Nothing given exists on this host: no root was walked, so the check covered nothing
    (issue 27: it said clean)."""
    result = audit.check_privileged_files(paths=[str(tmp_path / "nope")], hermes_homes=[str(tmp_path / "gone")],
                                          **NEVER)
    assert result["status"] == "not_checked" and result["complete"] is False
    assert {str(tmp_path / "nope"), str(tmp_path / "gone/sandboxes/docker")} <= set(result["absent"])
    assert "exist" in result["reason"] and str(tmp_path / "nope") in result["reason"]
    assert "sandboxguard_hermes_homes" in result["reason"] and "sandboxguard_paths" in result["reason"]


def test_a_hermes_home_without_a_sandbox_yet_is_clean_with_the_reason(tmp_path):
    """The home is there (Hermes runs here) and no sandbox was ever made: looked, nothing there."""
    home = tmp_path / "hermes"
    home.mkdir()
    result = audit.check_privileged_files(hermes_homes=[str(home)], **NEVER)
    assert result["status"] == "clean" and "no sandbox directory under %s yet" % home in result["reason"]


def test_a_refused_root_is_an_error_naming_it_never_clean(tmp_path):
    result = audit.check_privileged_files(paths=["/usr"], **NEVER)
    assert result["status"] == "error"
    assert result["errors"][0]["path"] == "/usr" and "system" in result["reason"]


def test_an_engine_asked_for_that_does_not_answer_is_an_error(hermes):
    closed = "tcp://127.0.0.1:1"  # nothing listens there: the connection is refused at once
    result = audit.check_privileged_files(hermes_homes=[str(hermes)], docker="always", docker_host=closed)
    assert any(e["op"] == "engine" for e in result["errors"])
    clean_home = hermes.parent / "empty-home"
    clean_home.mkdir()
    result = audit.check_privileged_files(hermes_homes=[str(clean_home)], docker="always", docker_host=closed)
    assert result["status"] == "error" and "127.0.0.1:1" in result["reason"]


@pytest.fixture
def two_engines(monkeypatch):
    """Docker answering with the containers put in the returned list, and a user's rootless
    socket whose every answer is an HTTP 500 (tests/engine_group.py)."""
    docs = []
    engine_group.install(monkeypatch, docs)
    return docs


def test_an_engine_the_audit_could_not_ask_is_an_error_of_the_host_and_the_others_targets_are_walked(
        tmp_path, two_engines):
    """Issue 26: a user's engine that fails is that engine's error; the healthy engine's targets are walked."""
    home = tmp_path / "hermes"
    mounted = home / "sandboxes" / "docker" / "t1" / "workspace"
    mounted.mkdir(parents=True)
    (mounted / "suid").write_text("x")
    os.chmod(mounted / "suid", 0o4755)
    two_engines.append(engine_group.bind_doc("c1" * 32, mounted))
    result = audit.check_privileged_files(hermes_homes=[str(home)], docker="auto")
    assert result["status"] == "findings" and [f["path"] for f in result["findings"]] == [str(mounted / "suid")]
    assert result["engine"]["targets"] == [str(mounted)]
    [error] = [e for e in result["errors"] if e["op"] == "engine"]
    assert error["path"] == engine_group.BAD_URL
    assert "podman-rootless-1001" in error["error"] and "HTTP 500" in error["error"]
    rows = {row["name"]: row for row in result["engine"]["engines"]}
    assert rows["docker"]["error"] is None and "HTTP 500" in rows["podman-rootless-1001"]["error"]
    os.chmod(mounted / "suid", 0o755)  # nothing found: still never clean
    result = audit.check_privileged_files(hermes_homes=[str(home)], docker="auto")
    assert result["status"] == "error" and "HTTP 500" in result["reason"]


def test_engine_sockets_present_that_none_answer_are_an_error_even_in_auto(monkeypatch, hermes, tmp_path):
    """1.1.0 warned and called the host clean; an engine the audit could not ask is an error."""
    from sandboxguard import docker_engine

    sock = tmp_path / "docker.sock"
    sock.write_text("")  # present, not a socket: refused
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(docker_engine, "engine_urls", lambda base_url=None, **kw: ["unix://%s" % sock])
    os.chmod(hermes / "sandboxes/docker/t1/workspace/sh", 0o755)  # nothing found on the host: still not clean
    result = audit.check_privileged_files(hermes_homes=[str(hermes)], docker="auto")
    assert result["status"] == "error" and result["engine"]["answered"] is False
    [row] = result["engine"]["engines"]
    assert "not a socket" in row["error"]
    assert [e for e in result["errors"] if e["op"] == "engine" and "not a socket" in e["error"]]


def test_no_engine_in_auto_mode_is_a_warning_not_an_error(hermes, no_engine_here):
    result = audit.check_privileged_files(hermes_homes=[str(hermes)])
    assert result["engine"]["answered"] is False and "no container engine here" in result["warnings"][0]


def test_nothing_to_look_under_is_not_checked_naming_what_to_set():
    result = audit.check_privileged_files(**NEVER)
    assert result["status"] == "not_checked" and result["complete"] is False
    for name in ("sandboxguard_hermes_homes", "sandboxguard_paths", "sandboxguard_sandbox_dir",
                 "boundary_audit_hermes_homes"):
        assert name in result["reason"], name


def test_nested_roots_are_walked_once(hermes):
    result = audit.check_privileged_files(paths=[str(hermes), str(hermes / "sandboxes/docker/t1")],
                                          hermes_homes=[str(hermes)], **NEVER)
    assert result["roots"] == [str(hermes)]
    assert len(result["findings"]) == 1


def test_walk_budget_cut_short_without_findings_is_an_error(tmp_path):
    tree = tmp_path / "big"
    for i in range(200):
        (tree / str(i)).mkdir(parents=True)
    result = audit.check_privileged_files(paths=[str(tree)], budget=1e-9, **NEVER)
    assert result["status"] == "error" and "budget" in result["reason"]


def test_home_mode_differing_from_what_was_asked_is_a_finding(tmp_path):
    home = tmp_path / "h"
    (home / "profiles" / "p1").mkdir(parents=True)
    (home / "config.yaml").write_text("# mine\nterminal:\n  home_mode: real\n")
    (home / "home").mkdir(mode=0o700)
    result = audit.check_home_mode([str(home)], "profile", create_profile_home=False)
    assert result["status"] == "findings"
    assert {f["path"] for f in result["findings"]} == {str(home), str(home / "profiles" / "p1")}
    assert result["findings"][0]["mode"] == "real" and result["findings"][0]["wanted"] == "profile"
    assert (home / "config.yaml").read_text() == "# mine\nterminal:\n  home_mode: real\n"


def test_home_mode_as_asked_is_clean_and_aliases_count(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text("terminal:\n  home_mode: profile\n")
    (home / "home").mkdir(mode=0o700)
    assert audit.check_home_mode([str(home)], "isolated")["status"] == "clean"


def test_home_mode_without_a_wanted_mode_is_not_checked_and_lists_what_it_read(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text("terminal:\n  home_mode: real\n")
    result = audit.check_home_mode([str(home)], "")
    assert result["status"] == "not_checked" and result["homes"][0]["mode"] == "real"
    assert "sandboxguard_home_mode" in result["reason"]


def test_home_mode_without_a_hermes_home_is_not_checked_naming_the_variable():
    result = audit.check_home_mode([], "profile")
    assert result["status"] == "not_checked" and "sandboxguard_hermes_homes" in result["reason"]
    assert "sandboxguard_home_mode" not in result["reason"]
    assert "sandboxguard_home_mode" in audit.check_home_mode([], "")["reason"], "both missing: both named"


def test_home_mode_of_a_missing_home_is_absent_and_not_checked(tmp_path):
    result = audit.check_home_mode([str(tmp_path / "nope")], "profile")
    assert result["status"] == "not_checked" and result["absent"] == [str(tmp_path / "nope")]
    assert str(tmp_path / "nope") in result["reason"] and "sandboxguard_hermes_homes" in result["reason"]


def test_home_mode_of_one_missing_home_beside_a_found_one_is_a_verdict(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text("terminal:\n  home_mode: profile\n")
    (home / "home").mkdir(mode=0o700)
    result = audit.check_home_mode([str(home), str(tmp_path / "nope")], "profile")
    assert result["status"] == "clean" and result["absent"] == [str(tmp_path / "nope")]


def test_bad_home_mode_is_an_error_naming_it(tmp_path):
    result = audit.audit_host(checks=["home_mode"], hermes_homes=[str(tmp_path)], home_mode="sideways")
    assert result["checks"]["home_mode"]["status"] == "error"
    assert "sideways" in result["checks"]["home_mode"]["reason"]


def test_leaks_are_findings(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "root").write_text("0 2 * * * /root/.hermes/scripts/backup.sh\n")
    tmp = tmp_path / "tmp"
    (tmp / "ab-123").mkdir(parents=True)
    result = audit.check_leaks(users=["root"], tmp_dir=str(tmp), spool_dir=str(spool))
    assert result["status"] == "findings"
    assert {"cron_job", "tmp_run_dir"} <= {f["kind"] for f in result["findings"]}


def test_bwrap_without_an_agent_user_is_not_checked_naming_the_variable():
    result = audit.check_bwrap("")
    assert result["status"] == "not_checked" and "agent user" in result["reason"]
    assert "sandboxguard_agent_user" in result["reason"] and "boundary_audit_agent_user" in result["reason"]


def test_bwrap_with_an_unknown_agent_user_is_an_error_not_a_finding():
    result = audit.check_bwrap("no-such-user-sandboxguard")
    assert result["status"] == "error" and "no such user" in result["reason"]


def test_unselected_checks_are_skipped_and_a_crashing_check_does_not_hide_the_others(tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(audit, "check_leaks", boom)
    record = audit.audit_host(checks=["leaks", "bwrap"], paths=[str(tmp_path)])
    assert record["checks"]["leaks"]["status"] == "error" and "boom" in record["checks"]["leaks"]["reason"]
    assert record["checks"]["bwrap"]["status"] == "not_checked", "selected, no agent user"
    assert record["checks"]["privileged_files"]["status"] == "skipped", "not selected"
    assert record["status"] == "error"


def test_unknown_check_is_refused():
    with pytest.raises(ValueError, match="unknown check"):
        audit.audit_host(checks=["everything"])


def test_every_check_result_is_the_one_report_envelope(hermes):
    from sandboxguard import report

    record = audit.audit_host(paths=["/usr", str(hermes)], hermes_homes=[str(hermes)], home_mode="profile",
                              docker="never")
    for name, result in record["checks"].items():
        assert set(report.ENVELOPE_KEYS) <= set(result), name
        assert result["changed"] is False, name
        assert all(set(e) == {"path", "op", "error"} for e in result["errors"]), name
    privileged = record["checks"]["privileged_files"]
    assert privileged["roots"] == [str(hermes)] and privileged["complete"] is False
    assert privileged["counts"]["errors"] == 1 and privileged["counts"]["setid"] == 1


def test_a_missing_temp_directory_or_spool_is_absent_not_an_error(tmp_path):
    result = audit.check_leaks(users=["root"], tmp_dir=str(tmp_path / "no-tmp"), spool_dir=str(tmp_path / "no-spool"))
    assert result["status"] in ("clean", "findings"), result
    assert str(tmp_path / "no-tmp") in result["absent"] and not result["errors"]


@pytest.mark.root
def test_bwrap_probed_as_a_real_unprivileged_user_is_a_verdict_not_an_error():
    result = audit.check_bwrap("nobody", timeout=10)
    assert result["status"] in ("findings", "clean"), result["reason"]
    if result["status"] == "findings":
        assert result["findings"][0]["reason"] and result["findings"][0]["message"]
    assert result["user"] == "nobody" and result["min_version"] == "0.9.0"


def test_bwrap_probe_errors_make_an_error_and_its_findings_become_the_checks_findings(monkeypatch):
    from sandboxguard import bwrap, report

    def failed_probe(finding=None, error=None):
        rep = report.new_report(["/usr/bin/bwrap"], ok=False, message="bwrap failed", min_version="0.9.0",
                                bwrap={"path": "/usr/bin/bwrap", "version": "0.11.0"}, isolation=[],
                                remediation_text="read the stderr", findings=[finding] if finding else [])
        if error:
            report.add_error(rep, "/usr/bin/bwrap", "probe", error)
        return rep

    errored = failed_probe(error="could not run the probe: ENOEXEC")
    monkeypatch.setattr(bwrap, "probe", lambda *_a, **_k: errored)
    result = audit.check_bwrap("agent")
    assert result["status"] == "error" and result["reason"] == "could not run the probe: ENOEXEC"
    assert result["errors"] == errored["errors"] and result["findings"] == []
    finding = {"path": "/usr/bin/bwrap", "reason": "timeout", "remediation": "investigate", "message": "slow"}
    monkeypatch.setattr(bwrap, "probe", lambda *_a, **_k: failed_probe(finding))
    result = audit.check_bwrap("agent")
    assert result["status"] == "findings" and result["findings"] == [finding]


def _owned_home(tmp_path, uid):
    home = tmp_path / ("hermes-%d" % uid)
    (home / "sandboxes" / "docker" / "t1").mkdir(parents=True)
    for path in (home, home / "sandboxes", home / "sandboxes" / "docker"):
        os.chown(path, uid, uid)
    return home


def _two_tables(tmp_path, agent):
    """A spool with root's own job and the agent's leaked one."""
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "root").write_text("17 3 * * * /usr/local/sbin/backup-etc\n")
    (spool / agent).write_text("*/5 * * * * /home/%s/.hermes/scripts/keepalive.sh\n" % agent)
    (tmp_path / "tmp").mkdir()
    return spool


@pytest.mark.root
def test_leak_default_audits_the_hermes_home_owner_and_never_root(tmp_path):
    """Root's own cron job is not an agent's leak: by default only the accounts that run
    agents are audited (here the owner of the Hermes home), so only the agent's job is found."""
    import pwd

    from sandboxguard import leaks

    regular = [a for a in leaks.local_accounts() if a[1] != 0]
    if not regular:  # a bare CI machine: make a regular account to own the Hermes home
        subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", "sgleakagent"], check=True)
        regular = [a for a in leaks.local_accounts() if a[0] == "sgleakagent"]
    agent, uid = regular[0][0], regular[0][1]
    assert pwd.getpwuid(uid).pw_name == agent
    home = _owned_home(tmp_path, uid)
    spool = _two_tables(tmp_path, agent)
    result = audit.check_leaks(tmp_dir=str(tmp_path / "tmp"), spool_dir=str(spool), hermes_homes=[str(home)])
    assert result["status"] == "findings"
    assert [f["path"] for f in result["findings"]] == [str(spool / agent)]
    assert result["users"] == [agent]
    assert "owner of the Hermes home %s" % home in result["scope"][agent]


@pytest.mark.root
def test_leak_default_never_takes_root_from_a_root_owned_home_and_says_so(tmp_path):
    home = _owned_home(tmp_path, 0)
    spool = _two_tables(tmp_path, "nobody")
    result = audit.check_leaks(tmp_dir=str(tmp_path / "tmp"), spool_dir=str(spool), hermes_homes=[str(home)])
    assert result["status"] == "not_checked" and result["findings"] == []
    assert "owned by root" in result["reason"] and "sandboxguard_leak_users" in result["reason"]


def test_leak_default_without_any_agent_account_is_not_checked_with_the_fix(tmp_path):
    spool = _two_tables(tmp_path, "nobody")
    result = audit.check_leaks(tmp_dir=str(tmp_path / "tmp"), spool_dir=str(spool))
    assert result["status"] == "not_checked"
    assert "no agent account known" in result["reason"] and "sandboxguard_leak_users" in result["reason"]
    assert "sandboxguard_agent_user" in result["reason"]


def test_leak_users_none_of_which_exists_here_is_not_checked(tmp_path):
    spool = _two_tables(tmp_path, "nobody")
    result = audit.check_leaks(users=["sg-no-such-user"], tmp_dir=str(tmp_path / "tmp"), spool_dir=str(spool))
    assert result["status"] == "not_checked" and "sg-no-such-user" in result["reason"]
    assert "sandboxguard_leak_users" in result["reason"]


def test_leak_users_naming_root_audits_root(tmp_path):
    spool = _two_tables(tmp_path, "nobody")
    result = audit.check_leaks(users=["root"], tmp_dir=str(tmp_path / "tmp"), spool_dir=str(spool))
    assert [f["path"] for f in result["findings"]] == [str(spool / "root")]
    assert result["scope"] == {"root": ["named in sandboxguard_leak_users (boundary_audit_leak_users)"]}


def test_leak_default_takes_the_agent_user_and_not_a_task_directory_owner(tmp_path):
    """The agent user is in scope; a task directory's owner is not (a root container can chown its bind mount)."""
    home = tmp_path / "hermes"
    task = home / "sandboxes" / "docker" / "t1"
    task.mkdir(parents=True)
    names, sources = audit.agent_accounts([str(home)], None, "sgagent-x")
    assert "sgagent-x" in names and sources["sgagent-x"] == ["the agent user"]
    assert not any(str(task) in why for whys in sources.values() for why in whys)


def test_leak_default_passes_over_a_symlinked_hermes_home(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    names, sources = audit.agent_accounts([str(link)], None, None)
    # the target (owned by whoever runs the test) would be in sources had the link been followed
    assert (names, sources) == ([], {})


def test_bwrap_without_an_agent_user_never_imports_the_probe(monkeypatch):
    """The skip comes before the probe's import: its code is not compiled on a host with no agent user."""
    import sys

    monkeypatch.delitem(sys.modules, "sandboxguard.bwrap", raising=False)
    result = audit.check_bwrap(None)
    assert result["status"] == "not_checked"
    assert "sandboxguard.bwrap" not in sys.modules


def test_no_engine_socket_answers_without_importing_the_docker_sdk(hermes, no_engine_here, monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "docker", raising=False)
    result = audit.check_privileged_files(hermes_homes=[str(hermes)])
    assert result["engine"]["answered"] is False and "no container engine here" in result["engine"]["reason"]
    assert "docker" not in sys.modules
    always = audit.check_privileged_files(hermes_homes=[str(hermes)], docker="always")
    assert any(e["op"] == "engine" for e in always["errors"])


def test_the_audit_module_side_imports_no_report_writer():
    """audit (what runs on every host) imports the small audit_record, not audit_report's
    JSON/JUnit/HTML writers (AnsiballZ ships and compiles every module it imports)."""
    import ast

    tree = ast.parse(open(audit.__file__).read())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "audit_report" not in imported and "audit_record" in imported


@pytest.mark.root
def test_agent_accounts_never_follows_a_symlinked_profiles_or_profile(tmp_path):
    """A ``profiles`` (or one profile) made a symlink to a directory of other users' homes
    brings none of them into scope: owners come from descriptors opened O_NOFOLLOW."""
    home = _owned_home(tmp_path, 65534)  # nobody: an agent account that is not root
    people = tmp_path / "people"
    (people / "daemon").mkdir(parents=True)
    os.chown(people / "daemon", 1, 1)
    os.symlink(str(people), str(home / "profiles"))
    names, sources = audit.agent_accounts([str(home)])
    assert names == ["nobody"] and "daemon" not in sources
    os.unlink(home / "profiles")
    (home / "profiles").mkdir()
    os.symlink(str(people / "daemon"), str(home / "profiles" / "daemon"))
    names, _sources = audit.agent_accounts([str(home)])
    assert names == ["nobody"]
    (home / "profiles" / "work" / "sandboxes").mkdir(parents=True)
    os.symlink(str(people / "daemon"), str(home / "profiles" / "work" / "sandboxes" / "docker"))
    os.chown(home / "profiles" / "work", 1, 1)
    names, sources = audit.agent_accounts([str(home)])
    assert names == ["daemon", "nobody"], "the profile directory's own owner counts, its linked docker does not"
    assert sources["daemon"] == ["owner of the profile %s" % (home / "profiles" / "work")]


@pytest.mark.root
def test_leak_scope_takes_an_agent_account_below_uid_1000(tmp_path):
    """A service account (uid below 1000) that owns the Hermes home is audited, not dropped."""
    from sandboxguard import leaks

    home = _owned_home(tmp_path, 1)  # daemon
    spool = _two_tables(tmp_path, "daemon")
    result = audit.check_leaks(tmp_dir=str(tmp_path / "tmp"), spool_dir=str(spool), hermes_homes=[str(home)])
    assert result["users"] == ["daemon"] and [f["path"] for f in result["findings"]] == [str(spool / "daemon")]
    assert leaks.named_accounts(["daemon", "sg-no-such-user", "daemon"]) == [("daemon", 1, pwd_home("daemon"))]


def pwd_home(name):
    import pwd

    return pwd.getpwnam(name).pw_dir


@pytest.fixture
def home_under_a_link(tmp_path):
    """A Hermes home reached through a symlink in a directory another user owns (issue 19
    refuses it): ``<agent>/link -> real``, the home ``<agent>/link/.hermes``."""
    agent = tmp_path / "agent"
    real = agent / "real" / ".hermes"
    (real / "sandboxes" / "docker" / "t1").mkdir(parents=True)
    (real / "config.yaml").write_text("terminal:\n  home_mode: real\n")
    (agent / "link").symlink_to("real")
    for path in (agent, agent / "link", agent / "real", real):
        os.chown(path, 65534, 65534, follow_symlinks=False)
    return {"given": str(agent / "link" / ".hermes"), "real": str(real)}


@pytest.mark.root
def test_a_hermes_home_under_a_symlinked_path_names_the_real_path_in_every_check(home_under_a_link):
    """Each check refuses the home and says which path to give instead (its real path now)."""
    record = audit.audit_host(checks=["privileged_files", "home_mode", "leaks"], docker="never",
                              hermes_homes=[home_under_a_link["given"]], home_mode="profile")
    real = home_under_a_link["real"]
    privileged = record["checks"]["privileged_files"]
    assert privileged["status"] == "error"
    assert "it leads to %s/sandboxes/docker now" % real in privileged["reason"], privileged["reason"]
    home = record["checks"]["home_mode"]
    assert home["status"] == "error" and "it leads to %s now" % real in home["reason"], home["reason"]
    leaks = record["checks"]["leaks"]
    assert leaks["status"] == "not_checked" and "it leads to %s now" % real in leaks["reason"], leaks["reason"]


def test_a_root_through_a_symlink_is_refused_with_where_it_leads(tmp_path):
    from sandboxguard.roots import RootRefused, check_root

    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to("real")
    for given in (tmp_path / "link", tmp_path / "link" / "sub"):
        words = "goes through a symlink"
        with pytest.raises(RootRefused) as caught:
            check_root(str(given))
        real = os.path.realpath(str(given))
        assert words in str(caught.value) and "it leads to %s now" % real in str(caught.value)
        assert caught.value.real_path == real
