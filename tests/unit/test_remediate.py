# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""remediate.remediate_host: every fix in one call, each with its own section (status, check
mode, diff, result); a fix that is refused or fails does not stop the others (issue 22, item 4)."""
import os
import subprocess

import pytest
from sandboxguard._fleet import audit, leaks_remove, remediate
from sandboxguard.errors import InputError

pytestmark = pytest.mark.root


def _setcap(path):
    if os.geteuid() != 0:
        pytest.skip("setting a file capability needs root")
    done = subprocess.run(["setcap", "cap_net_raw=ep", str(path)], check=False, capture_output=True, text=True)
    # libcap2-bin is installed by tools/setup.sh (tools/apt-packages.txt): a failure is a broken setup
    assert done.returncode == 0, "setcap failed (%s): install libcap2-bin" % done.stderr.strip()


@pytest.fixture
def host(tmp_path):
    """A Hermes home whose sandbox holds a setuid root file, a file with cap_net_raw and a
    root-owned plain file, with TERMINAL_HOME_MODE real, and root's leaks in a private spool
    and temp directory (a cron job and a run directory)."""
    home = tmp_path / ".hermes"
    ws = home / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    (home / "config.yaml").write_text("# kept\nterminal:\n  home_mode: real\n")
    shell = ws / "rootshell"
    shell.write_bytes(b"\x7fELF")
    os.chmod(shell, 0o4755)
    ping = ws / "ping"
    ping.write_bytes(b"\x7fELF")
    _setcap(ping)
    (ws / "plain").write_text("root's\n")
    spool, tmp = tmp_path / "spool", tmp_path / "tmp"
    spool.mkdir()
    tmp.mkdir()
    (spool / "root").write_text("*/5 * * * * /root/.hermes/scripts/beacon.sh\n")
    (tmp / "ab-1234").mkdir()
    return {"home": home, "ws": ws, "shell": shell, "ping": ping, "plain": ws / "plain", "spool": spool,
            "tmp": tmp, "quarantine": tmp_path / "quarantine"}


def run(host, **kwargs):
    args = dict(hermes_homes=[str(host["home"])], docker="never", owner=(1000, 1000), home_mode="profile",
                leak_users=["root"], leak_spool_dir=str(host["spool"]), leak_tmp_dir=str(host["tmp"]),
                quarantine_dir=str(host["quarantine"]))
    args.update(kwargs)
    return remediate.remediate_host(**args)


def state(host):
    return {"shell": os.lstat(host["shell"]).st_mode & 0o7777, "ping": os.listxattr(host["ping"]),
            "owner": os.lstat(host["plain"]).st_uid, "config": (host["home"] / "config.yaml").read_text(),
            "cron": (host["spool"] / "root").read_text(), "tmp": sorted(os.listdir(host["tmp"])),
            "quarantine": host["quarantine"].exists()}


def test_check_mode_gives_each_fix_its_own_section_saying_what_would_change_and_changes_nothing(host):
    before = state(host)
    result = run(host, dry_run=True)
    fixes = result["fixes"]
    assert set(fixes) == set(remediate.FIXES)
    for name in ("ownership", "setid", "caps", "home_mode", "leaks"):
        assert (fixes[name]["status"], fixes[name]["changed"], fixes[name]["dry_run"]) == ("changed", True, True), name
        assert fixes[name]["module"] == remediate.MODULE_OF[name]
    assert fixes["sandboxes"]["status"] == "skipped" and "docker: never" in fixes["sandboxes"]["reason"]
    # each walk fix lists the files that needed it, and only those
    assert [os.path.basename(f["path"]) for f in fixes["setid"]["files"]] == ["rootshell"]
    assert [os.path.basename(f["path"]) for f in fixes["caps"]["files"]] == ["ping"]
    assert {os.path.basename(f["path"]) for f in fixes["ownership"]["files"]} >= {"plain", "rootshell", "ping"}
    assert (fixes["setid"]["counts"]["setid"], fixes["caps"]["counts"]["caps"]) == (1, 1)
    assert [h["config_changed"] for h in fixes["home_mode"]["homes"]] == [True]
    assert fixes["home_mode"]["diff"][0]["after"].endswith("home_mode: profile\n")
    assert sorted(r["kind"] for r in fixes["leaks"]["removed"]) == ["cron_job", "tmp_run_dir"]
    assert "beacon.sh" in fixes["leaks"]["diff"][0]["before"]
    assert (result["status"], result["changed"], result["failed"]) == ("changed", True, [])
    assert state(host) == before, "check mode changed the host"


def test_the_fixes_change_what_they_said_and_a_second_run_changes_nothing(host):
    first = run(host)
    assert first["status"] == "changed" and first["failed"] == [], first["errors"]
    after = state(host)
    assert after["shell"] & 0o6000 == 0 and after["ping"] == [] and after["owner"] == 1000
    assert "home_mode: profile" in after["config"] and "# kept" in after["config"]
    assert "beacon" not in after["cron"] and after["tmp"] == []
    again = run(host)
    assert (again["status"], again["changed"], again["failed"]) == ("ok", False, [])
    assert {name: s["status"] for name, s in again["fixes"].items()} == {
        "ownership": "ok", "setid": "ok", "caps": "ok", "sandboxes": "skipped", "home_mode": "ok", "leaks": "ok"}
    assert state(host) == after


def test_a_refused_home_fails_its_fix_and_every_other_fix_still_runs(host, tmp_path):
    """<home>/home is a symlink to a root directory (issue 19): home_mode fails, naming it; the
    privileged files are fixed and the leaks quarantined all the same; the host is failed."""
    target = tmp_path / "rootdir"
    target.mkdir()
    os.symlink(str(target), str(host["home"] / "home"))
    result = run(host)
    fixes = result["fixes"]
    assert fixes["home_mode"]["status"] == "failed" and fixes["home_mode"]["errors"], fixes["home_mode"]
    assert str(host["home"] / "home") in fixes["home_mode"]["reason"]
    assert {name: fixes[name]["status"] for name in ("ownership", "setid", "caps", "leaks")} == dict.fromkeys(
        ("ownership", "setid", "caps", "leaks"), "changed")
    assert result["failed"] == ["home_mode"] and result["status"] == "failed" and not result["complete"]
    text = remediate.failure_text(result)
    assert "1 fix(es) failed" in text and "home_mode (terminal_home)" in text
    after = state(host)
    assert after["shell"] & 0o6000 == 0 and "beacon" not in after["cron"]
    assert os.listdir(target) == [] and os.path.islink(host["home"] / "home"), "nothing went through the link"


def test_a_fix_that_raises_is_failed_and_the_others_still_run(host, monkeypatch):
    def broken(*_args, **_kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(leaks_remove, "remove", broken)
    result = run(host)
    assert result["fixes"]["leaks"]["status"] == "failed" and "Input/output" in result["fixes"]["leaks"]["reason"]
    assert result["fixes"]["setid"]["status"] == "changed" and result["fixes"]["home_mode"]["status"] == "changed"
    assert result["failed"] == ["leaks"]


def test_a_refused_root_fails_the_walk_fixes_only(host):
    result = run(host, paths=["/usr"], hermes_homes=[], home_mode=None, leak_users=[])
    for name in ("ownership", "setid", "caps"):
        section = result["fixes"][name]
        assert section["status"] == "failed" and section["errors"][0]["path"] == "/usr", section
    assert result["fixes"]["home_mode"]["status"] == "skipped"
    assert len(result["errors"]) == 1, "the walk's error is listed once for the host"


def test_without_an_owner_ownership_is_skipped_and_nothing_is_given_away(host):
    result = run(host, owner=None, fixes=["ownership", "setid"])
    assert result["fixes"]["ownership"]["status"] == "skipped" and "owner" in result["fixes"]["ownership"]["reason"]
    assert result["fixes"]["setid"]["status"] == "changed"
    assert {result["fixes"][n]["status"] for n in ("caps", "home_mode", "leaks")} == {"skipped"}
    assert os.lstat(host["plain"]).st_uid == 0 and os.listxattr(host["ping"]), "an unselected fix ran"


def test_root_as_the_owner_skips_ownership_so_a_second_run_is_still_clean(host):
    run(host, owner=(0, 0))
    again = run(host, owner=(0, 0))
    assert again["fixes"]["ownership"]["status"] == "skipped" and "root" in again["fixes"]["ownership"]["reason"]
    assert (again["status"], again["changed"]) == ("ok", False)


def test_nothing_given_changes_nothing_and_fails_nothing():
    result = remediate.remediate_host(docker="never")
    assert (result["status"], result["failed"]) == ("ok", [])
    assert {s["status"] for s in result["fixes"].values()} == {"skipped"}
    assert result["fixes"]["setid"]["reason"] == audit.NOTHING_GIVEN


def test_unknown_fix_and_bad_owner_are_refused_before_anything_changes(host):
    with pytest.raises(InputError, match="unknown fix"):
        run(host, fixes=["setid", "chmod"])
    with pytest.raises(InputError, match="chown_to"):
        run(host, owner=("x", 1))
    assert os.lstat(host["shell"]).st_mode & 0o4000


def test_every_section_and_the_host_are_the_one_envelope(host):
    from sandboxguard import report

    result = run(host, dry_run=True)
    for section in [result, *result["fixes"].values()]:
        assert set(report.ENVELOPE_KEYS) <= set(section), section
        assert section["status"] in remediate.STATUSES


def test_one_remediate_call_derives_its_scope_once_and_connects_to_the_engines_once(host, monkeypatch):
    """Proof held, not re-derived (issue 25): the walk fixes, the sandboxes fix and the leak
    accounts share one scope.Scope, derived once, with one connection to the engines."""
    from sandboxguard import docker_engine
    from sandboxguard._privileged import scope

    derived, connected = [], []
    real_derive = scope.derive
    task = {"Id": "c0ffee" * 8, "Name": "/hermes-t1", "Config": {"Labels": {}}, "State": {"Status": "exited"},
            "Mounts": [{"Type": "bind", "Source": str(host["ws"]), "Destination": "/workspace", "RW": True}]}

    def derive(*args, **kwargs):
        derived.append(1)
        return real_derive(*args, **kwargs)

    def engines_present(base_url=None, timeout=60, urls=None):
        connected.append(base_url)
        return docker_engine.Engines([docker_engine.Engine("docker", "unix:///sg-fake.sock", object(), "docker",
                                                           "20.10")])

    monkeypatch.setattr(scope, "derive", derive)
    monkeypatch.setattr(docker_engine, "engine_urls", lambda *args, **kwargs: ["unix:///sg-fake.sock"])
    monkeypatch.setattr(docker_engine, "engines_present", engines_present)
    monkeypatch.setattr(docker_engine, "connect_engines", lambda *args, **kwargs: pytest.fail("a second connection"))
    monkeypatch.setattr(docker_engine, "engine_info", lambda client: {"OSType": "linux", "SecurityOptions": []})
    monkeypatch.setattr(docker_engine, "inspect_containers", lambda client, names, include_stopped: [task])
    before = state(host)
    result = run(host, docker="auto", dry_run=True)
    assert (len(derived), len(connected)) == (1, 1), (derived, connected)
    assert result["fixes"]["sandboxes"]["status"] == "changed", result["fixes"]["sandboxes"]
    assert [s["path"] for s in result["fixes"]["sandboxes"]["sandboxes"]] == [str(host["ws"])]
    assert result["fixes"]["setid"]["status"] == "changed" and result["fixes"]["leaks"]["status"] == "changed"
    assert state(host) == before, "a dry run changed something"
