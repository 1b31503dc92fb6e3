# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The seeds' attack on a real engine, and the sweep that undoes it (native and container)."""
import hashlib
import io
import multiprocessing
import os
import shutil
import stat
import tarfile
import time

import pytest
from docker_sdk import sdk_client
from sandboxguard import caps as capsmod
from sandboxguard import docker_engine, sweep
from sandboxguard._privileged.sweep_steps import sweep_container, sweep_native

pytestmark = [pytest.mark.docker, pytest.mark.root]

IMAGE = "sandboxguard/debian:12"
BUSYBOX_IMAGE = "sandboxguard/busybox:test"
AGENT = (1000, 1000)
ATTACK = r"""
import os, shutil, stat, struct
os.makedirs("/workspace/dist", exist_ok=True)
os.mknod("/workspace/disk", 0o666 | stat.S_IFBLK, os.makedev(8, 0))
shutil.copy("/bin/true", "/workspace/dist/suid"); os.chmod("/workspace/dist/suid", 0o4755)
open("/workspace/dist/sgid", "w").write("data\n"); os.chmod("/workspace/dist/sgid", 0o2644)
shutil.copy("/bin/true", "/workspace/dist/ping")
os.setxattr("/workspace/dist/ping", "security.capability", struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0))
shutil.copy("/bin/true", "/outside/suid"); os.chmod("/outside/suid", 0o4755)
"""


@pytest.fixture(scope="module")
def client():
    try:
        return docker_engine.connect()
    except docker_engine.EngineError as exc:
        pytest.fail("%s (make test starts one: tools/docker-engine.sh)" % exc, pytrace=False)


@pytest.fixture(scope="module")
def sdk():
    return sdk_client()


@pytest.fixture(scope="module")
def busybox_image(sdk):
    """A from-scratch image holding only Debian's busybox-static: busybox find, no stat(1)."""
    with open("/bin/busybox", "rb") as handle:
        data = handle.read()
    applets = ("sh", "find", "chown", "chmod", "ls", "awk", "sort", "wc", "echo", "sleep", "od", "cat")
    digest = hashlib.sha256(data + " ".join(applets).encode()).hexdigest()[:16]
    try:
        if sdk.images.get(BUSYBOX_IMAGE).labels.get("sandboxguard.busybox") == digest:
            return BUSYBOX_IMAGE
    except Exception:  # noqa: S110 - not built yet
        pass
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("bin", "tmp", "sweep"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
        for applet in applets:
            link = tarfile.TarInfo("bin/" + applet)
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
    sdk.api.import_image_from_data(buf.getvalue(), repository="sandboxguard/busybox", tag="test",
                                   changes=["LABEL sandboxguard.busybox=%s" % digest])
    assert sdk.images.get(BUSYBOX_IMAGE)
    return BUSYBOX_IMAGE


@pytest.fixture
def hermes(tmp_path):
    """A Hermes home owned by the agent, a task dir the engine created as root, and an outside dir."""
    home = tmp_path / "hermes"
    sandbox = home / "sandboxes"
    workspace = sandbox / "docker" / "task1" / "workspace"
    workspace.mkdir(parents=True)
    for path in (home, sandbox):
        os.chown(path, *AGENT)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(tmp_path, 0o755)
    return {"home": str(home), "workspace": str(workspace), "outside": str(outside)}


@pytest.fixture
def attacked(sdk, hermes):
    """Run the attack in a root container with default capabilities; keep it (stopped) for inspection."""
    container = sdk.containers.run(
        IMAGE, ["python3", "-c", ATTACK], detach=True, network_mode="none",
        volumes={hermes["workspace"]: {"bind": "/workspace", "mode": "rw"},
                 hermes["outside"]: {"bind": "/outside", "mode": "rw"}},
        labels={"hermes-agent": "1", "hermes-task-id": "task1", "hermes-profile": hermes["outside"]})
    try:
        assert container.wait(timeout=60)["StatusCode"] == 0, container.logs()
        dist = os.path.join(hermes["workspace"], "dist")
        assert stat.S_IMODE(os.lstat(os.path.join(dist, "suid")).st_mode) == 0o4755
        assert capsmod.XATTR_NAME in os.listxattr(os.path.join(dist, "ping"))
        digests = {n: hashlib.sha256(open(os.path.join(dist, n), "rb").read()).hexdigest() for n in os.listdir(dist)}
        yield dict(hermes, container=container.name, digests=digests)
    finally:
        container.remove(force=True)


def assert_swept(attacked, caps_checked=True):
    dist = os.path.join(attacked["workspace"], "dist")
    for name, digest in attacked["digests"].items():
        path = os.path.join(dist, name)
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == AGENT, name
        assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID), name
        if caps_checked:
            assert capsmod.XATTR_NAME not in os.listxattr(path), name
        assert hashlib.sha256(open(path, "rb").read()).hexdigest() == digest, name
    for d in (attacked["workspace"], dist):
        assert os.lstat(d).st_uid == AGENT[0], d
    disk = os.lstat(os.path.join(attacked["workspace"], "disk"))  # a block node: root's, 0000, never given away
    assert (disk.st_uid, disk.st_gid, stat.S_IMODE(disk.st_mode)) == (0, 0, 0) and stat.S_ISBLK(disk.st_mode)
    outside = os.path.join(attacked["outside"], "suid")
    assert stat.S_IMODE(os.lstat(outside).st_mode) == 0o4755 and os.lstat(outside).st_uid == 0


def out_of_scope_reported(result, outside):
    mounts = [m for c in result["containers"] for m in c["mounts"]]
    [decision] = [m for m in mounts if m["source"] == outside]
    return not decision["in_scope"] and "outside every host-derived sandbox root" in decision["reason"]


def test_native_sweep_undoes_the_attack(client, attacked):
    result = sweep.sweep(client, [attacked["home"]], names=[attacked["container"]], method="native")
    assert result["warnings"] == []
    [sandbox] = result["sandboxes"]
    assert sandbox["path"] == os.path.dirname(attacked["workspace"]) or sandbox["path"] == attacked["workspace"]
    assert [s["step"] for s in sandbox["steps"]] == ["chown", "setid", "caps"]
    assert all(s["complete"] for s in sandbox["steps"])
    assert_swept(attacked)
    assert out_of_scope_reported(result, attacked["outside"])
    again = sweep.sweep(client, [attacked["home"]], names=[attacked["container"]], method="native")
    assert again["changed"] is False


def test_container_sweep_with_gnu_find_undoes_the_attack(client, attacked):
    result = sweep.sweep(client, [attacked["home"]], names=[attacked["container"]], method="container",
                         image=IMAGE)
    assert result["warnings"] == [], result["warnings"]
    assert_swept(attacked)
    assert out_of_scope_reported(result, attacked["outside"])


def test_container_sweep_with_busybox_and_no_stat_undoes_the_attack(client, attacked, busybox_image):
    result = sweep.sweep(client, [attacked["home"]], names=[attacked["container"]], method="container",
                         image=busybox_image)
    assert result["warnings"] == [], result["warnings"]
    assert_swept(attacked)


def test_container_caps_step_clears_capabilities_on_agent_owned_files(client, hermes, busybox_image):
    f = os.path.join(hermes["workspace"], "agent-owned-ping")
    shutil.copy("/bin/true", f)
    os.chown(f, *AGENT)
    os.setxattr(f, capsmod.XATTR_NAME, capsmod.encode_vfs_cap(permitted={13}, effective=True))
    steps = sweep_container(client, hermes["workspace"], AGENT, (0,), 30, busybox_image, steps=("caps",))
    assert steps[0]["error"] is None
    assert capsmod.XATTR_NAME not in os.listxattr(f)
    assert (os.lstat(f).st_uid, os.lstat(f).st_gid) == AGENT


def test_ownership_return_alone_clears_setuid_and_caps_but_not_setgid_without_group_exec(attacked):
    """The kernel rule the order relies on: chown clears what it can, the strip does the rest."""
    dist = os.path.join(attacked["workspace"], "dist")
    sweep_native(attacked["workspace"], AGENT, (0,), 10, steps=("chown",))
    assert stat.S_IMODE(os.lstat(os.path.join(dist, "suid")).st_mode) == 0o755
    assert capsmod.XATTR_NAME not in os.listxattr(os.path.join(dist, "ping"))
    assert stat.S_IMODE(os.lstat(os.path.join(dist, "sgid")).st_mode) == 0o2644
    sweep_native(attacked["workspace"], AGENT, (0,), 10, steps=("setid",))
    assert stat.S_IMODE(os.lstat(os.path.join(dist, "sgid")).st_mode) == 0o644


class _VisitClock:
    """walk's ``time`` with a monotonic clock that also moves ``per_visit`` seconds at each
    directory visit, in every process (shared memory: the forked walkers move it too): a
    budget spent by counted visits, not by a machine's speed or load."""

    def __init__(self, per_visit):
        self.per_visit = per_visit
        self.moved = multiprocessing.get_context("fork").Value("d", 0.0)

    def visit(self):
        with self.moved.get_lock():
            self.moved.value += self.per_visit

    def monotonic(self):
        return time.monotonic() + self.moved.value

    def __getattr__(self, name):
        return getattr(time, name)


def test_a_step_running_out_of_budget_does_not_starve_the_next(hermes, monkeypatch):
    from sandboxguard._walk import walk
    visit = walk.Walk._visit
    clock = _VisitClock(per_visit=1.0)  # 150 directories "take" 150 s: more than the 30 s step on any machine

    def slow_visit(self, node, pending):
        clock.visit()
        return visit(self, node, pending)

    monkeypatch.setattr(walk, "time", clock)
    monkeypatch.setattr(walk.Walk, "_visit", slow_visit)  # the forked walkers inherit both
    ws = hermes["workspace"]
    for d in range(150):
        sub = os.path.join(ws, "pkg%03d" % d)
        os.mkdir(sub)
        for f in range(100):
            open(os.path.join(sub, str(f)), "w").close()
    late = os.path.join(ws, "pkg149", "zz-suid")
    open(late, "w").close()
    os.chmod(late, 0o4755)
    os.chown(late, *AGENT)
    steps = sweep_native(ws, AGENT, (0,), 30)
    assert [s["step"] for s in steps] == ["chown", "setid", "caps"]
    assert steps[0]["complete"] is False
    assert all(s["ran"] for s in steps)
    assert steps[1]["report"]["counts"]["files"] > 0  # the setid step walked with its own budget


def test_a_sweep_that_cannot_run_warns_once_naming_the_sandbox(client, attacked):
    result = sweep.sweep(client, [attacked["home"]], names=[attacked["container"]], method="container",
                         image="sandboxguard/no-such-image:none")
    [warning] = result["warnings"]
    assert os.path.dirname(attacked["workspace"]) in warning or attacked["workspace"] in warning
    assert "could not run the strip container" in warning


def test_a_missing_source_is_skipped_and_not_recreated(client, sdk, hermes):
    gone = os.path.join(os.path.dirname(hermes["workspace"]), "home")
    os.mkdir(gone)
    container = sdk.containers.create(IMAGE, ["true"], network_mode="none",
                                         volumes={gone: {"bind": "/root", "mode": "rw"}})
    try:
        os.rmdir(gone)
        result = sweep.sweep(client, [hermes["home"]], names=[container.name])
        [mount] = result["containers"][0]["mounts"]
        assert not mount["in_scope"] and "never recreated" in mount["reason"]
        assert not os.path.exists(gone)
    finally:
        container.remove(force=True)


@pytest.mark.parametrize("kind", ["gnu", "busybox"])
def test_container_sweep_lists_names_with_newlines_and_bytes_that_are_not_utf8_exactly(client, hermes, busybox_image,
                                                                                      kind):
    workspace = os.fsencode(hermes["workspace"])
    names = [b"two\nlines", b"bad\xff\xfe", b"plain"]
    for name in names:
        with open(os.path.join(workspace, name), "wb") as handle:
            handle.write(b"x")
        os.chmod(os.path.join(workspace, name), 0o4755)
    image = IMAGE if kind == "gnu" else busybox_image
    [setid] = sweep_container(client, hermes["workspace"], AGENT, (0,), 60, image, steps=("setid",))
    assert setid["error"] is None, setid
    listed = sorted(os.fsencode(entry["path"]) for entry in setid["report"]["files"])
    assert listed == sorted(os.path.join(workspace, name) for name in names)  # one entry each, exact bytes
    for name in names:
        assert not os.lstat(os.path.join(workspace, name)).st_mode & stat.S_ISUID, name


@pytest.mark.parametrize("kind", ["gnu", "busybox"])
def test_container_ownership_return_keeps_multi_link_files_where_hard_links_are_not_protected(client, hermes,
                                                                                              busybox_image, kind):
    secret = os.path.join(hermes["outside"], "secret")
    with open(secret, "wb") as handle:
        handle.write(b"root only\n")
    os.chmod(secret, 0o600)
    os.link(secret, os.path.join(hermes["workspace"], "shadow"))  # what any user may do where the sysctl is 0
    out = os.path.join(hermes["workspace"], "out.txt")
    with open(out, "wb") as handle:
        handle.write(b"result\n")
    sysctl = "/proc/sys/fs/protected_hardlinks"
    with open(sysctl) as handle:
        old = handle.read().strip()
    try:
        with open(sysctl, "w") as handle:
            handle.write("0\n")
        [chown] = sweep_container(client, hermes["workspace"], AGENT, (0,), 60,
                                        IMAGE if kind == "gnu" else busybox_image, steps=("chown",))
    finally:
        with open(sysctl, "w") as handle:
            handle.write(old + "\n")
    assert chown["error"] is None, chown
    assert os.stat(secret).st_uid == 0, "the root file linked into the sandbox was given away"
    assert os.stat(out).st_uid == AGENT[0], "single-link files are still given back"
    assert any("fs.protected_hardlinks" in line for line in chown["report"]["warnings"])
