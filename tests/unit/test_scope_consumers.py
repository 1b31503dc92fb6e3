# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Every consumer of scope gets the same roots from the same inputs, and refuses a symlinked
component the same way, with the same reason: the sweep (derive_roots, mounts_info), the
guard, the audit's privileged_files, the nosuid mounts and the leak accounts."""
import importlib.util
import os
import pwd

import pytest
from sandboxguard import sweep
from sandboxguard._fleet import audit
from sandboxguard._guard import guard_scope
from sandboxguard._privileged import nosuid, runners, sandboxes, scope

OTHER = "daemon"  # an account that owns what the agent's symlinks point to


class NoEngine:
    """The engine calls mounts_info makes, answering "no containers"."""

    @staticmethod
    def engine_info(_client):
        return {"OSType": "linux", "SecurityOptions": []}

    @staticmethod
    def inspect_containers(_client, _names, _include_stopped):
        return []


@pytest.fixture
def layout(tmp_path):
    """Three Hermes homes, a sandbox dir and operator roots:

    - ``good``: ``sandboxes/docker`` and two profiles (``work`` with its ``sandboxes/docker``,
      ``lab`` without: a root that does not exist yet), plus names that are no profile;
    - ``linked-sandboxes``: ``sandboxes`` is a symlink to another account's tree;
    - ``linked-profiles``: ``profiles`` is a symlink to another account's tree of profiles;
    - operator roots: a directory, one through a symlink, a relative one, a system path.
    """
    good = tmp_path / "good"
    (good / "sandboxes" / "docker").mkdir(parents=True)
    (good / "profiles" / "work" / "sandboxes" / "docker").mkdir(parents=True)
    (good / "profiles" / "lab").mkdir(parents=True)
    (good / "profiles" / ".deleted" / "sandboxes" / "docker").mkdir(parents=True)
    (good / "profiles" / "Upper" / "sandboxes" / "docker").mkdir(parents=True)
    victim = tmp_path / "victim"
    (victim / "docker").mkdir(parents=True)
    (victim / "profiles" / "evil" / "sandboxes" / "docker").mkdir(parents=True)
    linked_sandboxes = tmp_path / "linked-sandboxes"
    linked_sandboxes.mkdir()
    os.symlink(str(victim), str(linked_sandboxes / "sandboxes"))
    linked_profiles = tmp_path / "linked-profiles"
    (linked_profiles / "sandboxes" / "docker").mkdir(parents=True)
    os.symlink(str(victim / "profiles"), str(linked_profiles / "profiles"))
    sandbox_dir = tmp_path / "sb"
    (sandbox_dir / "docker").mkdir(parents=True)
    (tmp_path / "ci").mkdir()
    os.symlink(str(victim), str(tmp_path / "ci-link"))
    if os.geteuid() == 0:
        uid = pwd.getpwnam(OTHER).pw_uid
        for top, _dirs, _files in os.walk(str(victim)):
            os.chown(top, uid, uid)
    homes = [str(good), str(linked_sandboxes), str(linked_profiles)]
    extra = [str(tmp_path / "ci"), str(tmp_path / "ci-link" / "docker"), "rel", "/etc"]
    expected_roots = [str(sandbox_dir / "docker"), str(good / "sandboxes" / "docker"),
                      str(good / "profiles" / "lab" / "sandboxes" / "docker"),
                      str(good / "profiles" / "work" / "sandboxes" / "docker"),
                      str(linked_profiles / "sandboxes" / "docker"), str(tmp_path / "ci")]
    link_reason = "goes through a symlink, %s (to %s), and symlinks are not followed here"
    expected_refused = {
        str(linked_sandboxes / "sandboxes" / "docker"): link_reason % (linked_sandboxes / "sandboxes", victim),
        str(linked_profiles / "profiles"): link_reason % (linked_profiles / "profiles", victim / "profiles"),
        str(tmp_path / "ci-link" / "docker"): link_reason % (tmp_path / "ci-link", victim),
        "rel": scope.REASON_RELATIVE,
        "/etc": "refusing a system path (/etc and everything under it)",
    }
    return {"homes": homes, "sandbox_dir": str(sandbox_dir), "extra": extra, "roots": expected_roots,
            "refused": expected_refused, "missing": [str(good / "profiles" / "lab" / "sandboxes" / "docker")]}


def _reasons(refused):
    return {item["path"]: item["reason"] for item in refused}


def test_every_consumer_gets_the_roots_and_the_refusals_scope_derives(layout):
    homes, sandbox_dir, extra = layout["homes"], layout["sandbox_dir"], layout["extra"]
    found = scope.derive(scope.Request(homes, sandbox_dir, extra))
    roots = [r["realpath"] for r in found["roots"]]
    refused = _reasons(found["refused"])
    assert roots == layout["roots"]
    assert sorted(refused) == sorted(layout["refused"])
    for path, start in layout["refused"].items():
        assert refused[path].startswith(start), (path, refused[path])

    # the sweep, its public wrapper and the report the watcher and mounts_info give
    usable, sweep_refused = sweep.derive_roots(homes, sandbox_dir, extra)
    assert [r["realpath"] for r in usable] == roots and _reasons(sweep_refused) == refused
    info = sweep.mounts_info(None, homes, sandbox_dir, extra, engine=NoEngine)
    assert info["roots"] == roots and _reasons(info["refused_roots"]) == refused
    assert info["root_sources"] == found["roots"]

    # the guard, at start and at every rescan
    guard_roots, guard_refused, guard_absent = guard_scope.sources((), homes, sandbox_dir, extra, engine=False)[0]()
    try:  # the held descriptors the scope proved: the guard never opens a root by path
        assert sorted([held.path for held, _source in guard_roots] + guard_absent) == sorted(roots)
        assert guard_absent == layout["missing"] and _reasons(guard_refused) == refused
    finally:
        for held, _source in guard_roots:
            held.close()

    # the audit: every root that exists is walked, the others are absent, each refusal is an error
    check = audit.check_privileged_files(extra, homes, sandbox_dir, docker="never", budget=0)
    assert sorted(check["roots"] + check["absent"]) == sorted(roots)
    assert check["absent"] == layout["missing"]
    assert {e["path"]: e["error"] for e in check["errors"] if e["op"] == "root"} == refused

    # the nosuid mounts (dry run: nothing mounted, nothing persisted)
    mounts = nosuid.ensure([], "mounted", "none", dry_run=True, hermes_homes=homes, sandbox_dir=sandbox_dir,
                           extra_roots=extra)
    assert sorted(mounts["roots"] + mounts["missing"]) == sorted(roots)
    assert mounts["missing"] == layout["missing"] and _reasons(mounts["refused"]) == refused


def test_the_leak_accounts_are_the_owners_scope_finds_never_through_a_symlink(layout):
    homes, sandbox_dir = layout["homes"], layout["sandbox_dir"]
    accounts = scope.derive(scope.Request(homes, sandbox_dir))["accounts"]
    _names, sources = audit.agent_accounts(homes, sandbox_dir)
    assert sources == accounts
    whys = [why for found in accounts.values() for why in found]
    good = homes[0]
    assert "owner of the profile %s/profiles/work" % good in whys
    assert "owner of the profile %s/profiles/lab" % good in whys
    assert not [why for why in whys if "victim" in why or "evil" in why or ".deleted" in why or "Upper" in why]
    if os.geteuid() == 0:
        assert OTHER not in accounts  # owns everything behind the symlinks
        _users, whose, _reason = audit.leak_scope((), homes, sandbox_dir, agent_user="hermes")
        assert OTHER not in whose and whose["hermes"] == ["the agent user"]


RUNNER_UID = 4242  # the runner user (no account needed: ownership is numbers)


@pytest.fixture
def runner_layout(tmp_path):
    """A GitHub runner directory (``.runner``, ``_work`` owned by the runner user, a root-owned
    tree and file a container job left in it), a GitLab config.toml binding one host
    directory, a directory that is no runner, and a Hermes home beside them."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the runner's files belong to another uid")
    runner = tmp_path / "actions-runner"
    work = runner / "_work"
    (work / "repo" / "repo" / "dist").mkdir(parents=True)
    (runner / ".runner").write_text('{"agentName": "r1", "workFolder": "_work"}')
    for top, _dirs, files in os.walk(str(runner)):
        os.chown(top, RUNNER_UID, RUNNER_UID)
        for name in files:
            os.chown(os.path.join(top, name), RUNNER_UID, RUNNER_UID)
    left = work / "repo" / "repo" / "dist" / "out.bin"
    left.write_bytes(b"built as root")  # root-owned, what a root container step leaves
    odd = work / "repo" / "na\nme"
    odd.write_bytes(b"")
    os.chown(str(odd), RUNNER_UID, 0)  # the gid alone is foreign: the next checkout fails too
    cache = tmp_path / "gitlab-cache"
    cache.mkdir()
    config = tmp_path / "config.toml"
    config.write_text('[[runners]]\n  name = "g1"\n  executor = "docker"\n  [runners.docker]\n'
                      '    volumes = ["%s:/cache", "certs:/certs"]\n' % cache)
    not_runner = tmp_path / "not-a-runner"
    not_runner.mkdir()
    os.chown(str(not_runner), RUNNER_UID, RUNNER_UID)
    home = tmp_path / "hermes"
    (home / "sandboxes" / "docker").mkdir(parents=True)
    return {"runner": str(runner), "work": str(work), "cache": str(cache), "config": str(config),
            "not_runner": str(not_runner), "home": str(home),
            "hermes_root": str(home / "sandboxes" / "docker"),
            "foreign": sorted([str(work / "repo" / "repo" / "dist" / "out.bin"), str(work / "repo" / "na\nme")])}


def test_runner_providers_give_exactly_their_roots_with_owner_and_source_to_every_consumer(runner_layout):
    lay = runner_layout
    providers = runners.runner_providers([lay["runner"], lay["not_runner"]], lay["config"])
    found = scope.derive(scope.Request([lay["home"]], None, (), providers=providers))
    runner_root = {"path": lay["work"], "realpath": lay["work"], "source": "GitHub runner %s" % lay["runner"],
                   "owner": (RUNNER_UID, RUNNER_UID)}
    gitlab_root = {"path": lay["cache"], "realpath": lay["cache"], "source": "GitLab runner g1 volume",
                   "owner": None}
    # GitLab's config.toml needs tomllib (Python >= 3.11); without it the provider says so, no root
    have_toml = importlib.util.find_spec("tomllib") is not None
    assert found["roots"] == [
        {"path": lay["hermes_root"], "realpath": lay["hermes_root"], "source": found["roots"][0]["source"],
         "owner": None}, runner_root, *([gitlab_root] if have_toml else [])]
    [refused] = [r for r in found["refused"] if r["path"] == lay["not_runner"]]
    assert refused["reason"].startswith(lay["not_runner"] + "/.runner: does not exist")
    assert "not a configured GitHub runner" in refused["reason"]
    assert [o["what"] for o in found["out_of_scope"]] == (["volume certs:/certs"] if have_toml else [])
    if not have_toml:  # the GitLab provider is refused with the fix, the others still count
        [gitlab] = [r for r in found["refused"] if r["path"] != lay["not_runner"]]
        assert "tomllib" in gitlab["reason"] and "operator roots" in gitlab["reason"], gitlab
    roots = [r["realpath"] for r in found["roots"]]

    usable, refused = sweep.derive_roots([lay["home"]], None, (), providers)
    assert usable == found["roots"] and refused == found["refused"]
    info = sweep.mounts_info(None, [lay["home"]], None, (), engine=NoEngine, providers=providers)
    assert info["root_sources"] == found["roots"]
    # no container mounts it any more (the job is over): the work folder is a target, whole
    assert [t["realpath"] for t in info["targets"]] == [lay["work"]]

    guard_roots = guard_scope.sources((), [lay["home"]], None, (), engine=False, providers=providers)[0]()[0]
    assert [held.path for held, _source in guard_roots] == roots
    for held, _source in guard_roots:
        held.close()

    check = audit.check_privileged_files((), [lay["home"]], None, docker="never", budget=0, providers=providers)
    assert sorted(check["roots"]) == sorted(roots)
    assert check["counts"]["not_runner_owned"] == 2
    owned = sorted(f["path"] for f in check["findings"] if f["reasons"] == ["owner"])
    assert owned == lay["foreign"]
    assert all(f["owner"] == [RUNNER_UID, RUNNER_UID] for f in check["findings"] if f["reasons"] == ["owner"])

    mounts = nosuid.ensure([], "mounted", "none", dry_run=True, hermes_homes=[lay["home"]], providers=providers)
    assert sorted(mounts["roots"]) == sorted(roots)


def test_a_runner_root_is_swept_whole_and_its_files_go_back_to_the_runner_user(runner_layout):
    lay = runner_layout
    planted = os.path.join(lay["hermes_root"], "task", "workspace")
    os.makedirs(planted)
    os.chown(lay["hermes_root"], 0, 0)
    providers = runners.runner_providers([lay["runner"]])
    result = sweep.sweep(None, [lay["home"]], None, (), engine=NoEngine, providers=providers)
    by_path = {s["path"]: s for s in result["sandboxes"]}
    assert by_path[lay["work"]]["owner"] == [RUNNER_UID, RUNNER_UID]
    assert by_path[planted]["owner"] == [0, 0]  # a Hermes root: its sandbox directory's owner, as before
    for path in lay["foreign"]:
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == (RUNNER_UID, RUNNER_UID), path
    check = audit.check_privileged_files((), (), None, docker="never", budget=0, providers=providers)
    assert check["counts"]["not_runner_owned"] == 0 and check["status"] == "clean"


def test_a_container_binding_the_work_folder_itself_puts_it_in_scope_a_hermes_root_stays_out():
    work = {"path": "/w", "realpath": "/w", "source": "GitHub runner /r", "owner": (5, 5)}
    hermes = {"path": "/h", "realpath": "/h", "source": "HERMES_HOME /x", "owner": None}
    mount = {"Type": "bind", "Source": "/w", "Destination": "/__w"}
    decided = sandboxes.mount_scope(mount, [work], lambda p: p, lambda p: "dir")
    assert decided["in_scope"] and decided["root"] == "/w"
    decided = sandboxes.mount_scope(dict(mount, Source="/h"), [hermes], lambda p: p, lambda p: "dir")
    assert not decided["in_scope"]


def test_the_watcher_sweeps_a_job_container_binding_the_work_folder_and_gives_it_to_the_runner_user(runner_layout):
    from test_sweep_watch import FakeEngine, _run_watch

    lay = runner_layout
    job = {"Id": "job1", "Name": "/job1", "Config": {"Image": "img", "Labels": {}}, "State": {"Status": "exited"},
           "Mounts": [{"Type": "bind", "Source": lay["work"], "Destination": "/__w", "RW": True}]}
    engine = FakeEngine({"job1": job}, [{"Action": "start", "id": "job1"}, {"Action": "die", "id": "job1"}])
    events = _run_watch(engine, {"home": lay["home"]}, providers=runners.runner_providers([lay["runner"]]))
    assert lay["work"] in events[0]["roots"]
    [swept] = [e for e in events if e["event"] == "die"]
    assert swept["swept"] == [lay["work"]]
    assert swept["report"]["sandboxes"][0]["owner"] == [RUNNER_UID, RUNNER_UID]
    for path in lay["foreign"]:
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == (RUNNER_UID, RUNNER_UID), path


def test_remediate_gives_the_work_folder_to_the_runner_user_whatever_owner_the_other_roots_get(runner_layout):
    from sandboxguard._fleet import remediate

    lay = runner_layout
    planted = os.path.join(lay["hermes_root"], "t1", "workspace", "made-by-root")
    os.makedirs(os.path.dirname(planted))
    with open(planted, "wb"):
        pass
    other = (4343, 4343)
    dry = remediate.remediate_host(remediate.WALK_FIXES, hermes_homes=[lay["home"]], docker="never", owner=other,
                                   github_runners=[lay["runner"]], dry_run=True)
    listed = sorted(e["path"] for e in dry["fixes"]["ownership"]["files"])
    assert listed == sorted([*lay["foreign"], planted, os.path.dirname(planted),
                             os.path.dirname(os.path.dirname(planted)), lay["hermes_root"]])
    assert os.lstat(lay["foreign"][1]).st_uid == 0  # out.bin: a dry run changes nothing
    done = remediate.remediate_host(remediate.WALK_FIXES, hermes_homes=[lay["home"]], docker="never", owner=other,
                                    github_runners=[lay["runner"]])
    assert done["fixes"]["ownership"]["status"] == "changed" and not done["failed"]
    for path in lay["foreign"]:
        assert (os.lstat(path).st_uid, os.lstat(path).st_gid) == (RUNNER_UID, RUNNER_UID), path
    assert (os.lstat(planted).st_uid, os.lstat(planted).st_gid) == other
    # without an owner, the runner's work folder still goes back to the runner user
    os.chown(lay["foreign"][0], 0, 0)
    again = remediate.remediate_host(remediate.WALK_FIXES, docker="never", github_runners=[lay["runner"]])
    assert again["fixes"]["ownership"]["status"] == "changed"
    assert os.lstat(lay["foreign"][0]).st_uid == RUNNER_UID
