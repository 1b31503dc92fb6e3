# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Scope of a Docker sandbox sweep: only host-derived roots, decided on realpaths (pure)."""
import os

import pytest
from sandboxguard._privileged import sandboxes

HOME = "/home/agent/.hermes"
# A fake filesystem: symlinks as a table, existence as a set.
LINKS = {
    "/home/agent/.hermes/sandboxes": "/data/sb",                    # a symlinked sandbox dir
    "/data/sb/docker/t1/evil": "/etc/cron.d",                       # a bind source that is a symlink into /etc
    "/data/sb/docker/t1/up": "/data/sb/docker/t1/../../../../outside",  # a `..` trick through a link
}
EXISTING = {
    "/data/sb/docker/t1/workspace", "/data/sb/docker/t1/home", "/data/sb/docker/t1/evil", "/etc/cron.d",
    "/data/sb/docker/t1/up", "/outside", "/srv/other",
    "/home/agent/.hermes/profiles/work/sandboxes/docker/t9/workspace",
    "/home/agent/.hermes/profiles/lab/sandboxes/docker/t9/home", "/data/sb/docker",
    "/data/sb/docker/t1/workspace/sub",
}


def realpath(path):
    parts = path.split("/")
    out = ""
    for part in parts[1:]:
        out = out + "/" + part
        for _hop in range(10):
            if out in LINKS:
                target = LINKS[out]
                out = target if target.startswith("/") else out.rsplit("/", 1)[0] + "/" + target
            else:
                break
        # normalise .. and .
        stack = []
        for p in out.split("/"):
            if p in ("", "."):
                continue
            if p == "..":
                if stack:
                    stack.pop()
            else:
                stack.append(p)
        out = "/" + "/".join(stack)
    return out or "/"


def exists(path):
    if realpath(path) in EXISTING or path in EXISTING:
        return "dir"
    return "other" if path in FILES else "missing"


FILES = {"/data/sb/docker/t1/docker.sock"}


@pytest.fixture
def roots():
    """The roots scope.derive gives for this layout (with the sandbox dir named by its real path)."""
    return [{"path": path, "realpath": path, "source": "test", "owner": None}
            for path in ("/data/sb/docker", HOME + "/profiles/work/sandboxes/docker",
                         HOME + "/profiles/lab/sandboxes/docker")]


def bind(source, dest="/workspace", kind="bind"):
    return {"Type": kind, "Source": source, "Destination": dest, "RW": True}


def test_a_bind_source_through_a_symlink_is_decided_on_its_realpath(roots):
    assert roots[0]["realpath"] == "/data/sb/docker"
    decision = sandboxes.mount_scope(bind("/data/sb/docker/t1/workspace"), roots, realpath, exists)
    assert decision["in_scope"] and decision["root"] == "/data/sb/docker"
    via_link = sandboxes.mount_scope(bind(HOME + "/sandboxes/docker/t1/home"), roots, realpath, exists)
    assert via_link["in_scope"] and via_link["realpath"] == "/data/sb/docker/t1/home"


def test_a_bind_source_that_is_a_symlink_into_etc_is_out(roots):
    decision = sandboxes.mount_scope(bind("/data/sb/docker/t1/evil"), roots, realpath, exists)
    assert not decision["in_scope"] and decision["realpath"] == "/etc/cron.d"
    assert "system path /etc/cron.d" in decision["reason"]


def test_dotdot_tricks_are_decided_on_the_realpath(roots):
    textual = sandboxes.mount_scope(bind("/data/sb/docker/t1/../../../../srv/other"), roots, realpath, exists)
    assert not textual["in_scope"] and "outside" in textual["reason"]
    linked = sandboxes.mount_scope(bind("/data/sb/docker/t1/up"), roots, realpath, exists)
    assert not linked["in_scope"] and linked["realpath"] == "/outside"


def test_missing_source_is_skipped_never_recreated(roots):
    decision = sandboxes.mount_scope(bind("/data/sb/docker/t2/workspace"), roots, realpath, exists)
    assert not decision["in_scope"] and "never recreated" in decision["reason"]


def test_a_source_that_is_not_a_directory_is_skipped_with_that_reason(roots):
    decision = sandboxes.mount_scope(bind("/data/sb/docker/t1/docker.sock"), roots, realpath, exists)
    assert not decision["in_scope"] and "not a directory" in decision["reason"]


def test_task_dirs_no_container_mounts_become_targets(roots):
    inspect = {"Id": "c" * 12, "Mounts": [bind("/data/sb/docker/t1/workspace")]}
    task_dirs = [("/data/sb/docker/t1/workspace", "/data/sb/docker"), ("/data/sb/docker/gone/home", "/data/sb/docker")]
    targets = sandboxes.scope_containers([inspect], roots, realpath, exists, task_dirs)[1]
    assert [(t["realpath"], t["containers"]) for t in targets] == [
        ("/data/sb/docker/gone/home", []), ("/data/sb/docker/t1/workspace", ["cccccccccccc"])]


@pytest.mark.parametrize("kind", ["volume", "tmpfs", "npipe", ""])
def test_only_bind_mounts_are_in_scope(roots, kind):
    decision = sandboxes.mount_scope(bind("/data/sb/docker/t1/workspace", kind=kind), roots, realpath, exists)
    assert not decision["in_scope"] and "not a bind mount" in decision["reason"]


def test_the_root_itself_is_not_a_target(roots):
    decision = sandboxes.mount_scope(bind("/data/sb/docker"), roots, realpath, exists)
    assert not decision["in_scope"] and "itself" in decision["reason"]


def test_labels_claiming_another_root_add_nothing(roots):
    inspect = {
        "Id": "abc123def4567890", "Name": "/hermes-t1",
        "Config": {"Image": "img", "Labels": {
            "hermes-agent": "1", "hermes-task-id": "t1", "hermes-profile": "/srv/other", "sandbox-root": "/srv"}},
        "State": {"Status": "running"},
        "Mounts": [bind("/srv/other", "/data")],
    }
    containers, targets = sandboxes.scope_containers([inspect], roots, realpath, exists)
    assert targets == []
    assert containers[0]["hermes"] and containers[0]["profile"] == "/srv/other"
    assert "outside every host-derived sandbox root" in containers[0]["mounts"][0]["reason"]


def test_two_profiles_sharing_one_container_give_two_targets(roots):
    inspect = {
        "Id": "0123456789abcdef", "Name": "/shared", "Config": {}, "State": {},
        "Mounts": [bind(HOME + "/profiles/work/sandboxes/docker/t9/workspace"),
                   bind(HOME + "/profiles/lab/sandboxes/docker/t9/home", "/root"),
                   bind("/srv/other", "/mnt")],
    }
    containers, targets = sandboxes.scope_containers([inspect], roots, realpath, exists)
    assert [t["realpath"] for t in targets] == [
        HOME + "/profiles/lab/sandboxes/docker/t9/home",
        HOME + "/profiles/work/sandboxes/docker/t9/workspace",
    ]
    assert all(t["containers"] == ["0123456789ab"] for t in targets)
    assert [m["in_scope"] for m in containers[0]["mounts"]] == [True, True, False]


def test_nested_targets_fold_into_their_parent(roots):
    mounts = [bind("/data/sb/docker/t1/workspace"), bind("/data/sb/docker/t1/workspace/sub")]
    targets = sandboxes.scope_containers([{"Id": "x" * 12, "Mounts": mounts}], roots, realpath, exists)[1]
    assert [t["realpath"] for t in targets] == ["/data/sb/docker/t1/workspace"]


def test_engine_facts_plain_linux():
    facts = sandboxes.engine_facts({"OSType": "linux", "SecurityOptions": ["name=seccomp,profile=builtin"]})
    assert facts["sweepable"] and not facts["rootless"] and not facts["userns_remap"]
    assert sandboxes.chown_from_uids(facts) == (0,)


def test_engine_facts_rootless():
    options = ["name=seccomp,profile=default", "name=rootless", "name=cgroupns"]
    facts = sandboxes.engine_facts({"OSType": "linux", "SecurityOptions": options})
    assert facts["rootless"] and facts["sweepable"] and "no ownership" in facts["reason"]
    assert sandboxes.chown_from_uids(facts) == ()


def test_engine_facts_userns_remap_names_the_remapped_root():
    facts = sandboxes.engine_facts({"OSType": "linux", "SecurityOptions": ["name=userns"],
                                    "DockerRootDir": "/var/lib/docker/165536.165536"})
    assert facts["userns_remap"] and facts["remap_root"] == (165536, 165536)
    assert sandboxes.chown_from_uids(facts) == (165536,)


def test_engine_facts_windows_engine_is_skipped():
    facts = sandboxes.engine_facts({"OSType": "windows"})
    assert not facts["sweepable"] and "windows" in facts["reason"]


@pytest.mark.parametrize("name,profile", [("work", True), ("a-b_9", True), ("9lives", True), ("x" * 64, True),
                                          ("x" * 65, False), (".deleted", False), (".git", False), ("", False),
                                          ("default", False), ("Work", False), ("-x", False), ("_x", False),
                                          ("p\nforged", False), ("a b", False), ("caf\u00e9", False)])
def test_profile_names_are_hermes_agents_own_ids(name, profile):
    assert sandboxes.is_profile_name(name) is profile


def test_profile_listing_keeps_only_real_directories_with_profile_ids(tmp_path):
    profiles = tmp_path / "profiles"
    for name in ("work", "lab", ".deleted", "Upper", "default"):
        (profiles / name).mkdir(parents=True)
    (profiles / "file").write_text("")
    os.symlink(str(tmp_path), str(profiles / "linked"))
    fd = os.open(str(profiles), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert sandboxes.profile_names_at(fd) == ["lab", "work"]
    finally:
        os.close(fd)
    assert sandboxes.list_profile_names(str(tmp_path)) == ["lab", "work"]
