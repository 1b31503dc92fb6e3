# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Every consumer of scope gets the same roots from the same inputs, and refuses a symlinked
component the same way, with the same reason: the sweep (derive_roots, mounts_info), the
guard, the audit's privileged_files, the nosuid mounts and the leak accounts."""
import os
import pwd

import pytest
from sandboxguard import sweep
from sandboxguard._fleet import audit
from sandboxguard._guard import guard_scope
from sandboxguard._privileged import nosuid, scope

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
    link_reason = "goes through a symlink (%s -> %s); a derived root is never followed through one"
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
    found = scope.derive(homes, sandbox_dir, extra)
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
    guard_roots, guard_refused = guard_scope.sources((), homes, sandbox_dir, extra, engine=False)[0]()
    assert [path for path, _source in guard_roots] == roots and _reasons(guard_refused) == refused

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
    accounts = scope.derive(homes, sandbox_dir)["accounts"]
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
