# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""fdmount and staging on real mounts: binds made from descriptors keep the flags of the mount
they come from, on every kernel interface (the new mount API, without mount_setattr, without
open_tree); flags added and unmounts made only on the descriptor's own mount; the boot program;
the sweep's staging bind (made, checked, undone, leftovers cleaned) and the container's inode check."""
import contextlib
import errno
import os
import shutil
import subprocess
import uuid

import pytest
from sandboxguard._core import fdmount, mountinfo
from sandboxguard._privileged import staging
from sandboxguard._privileged.sweep_steps import sweep_container
from sandboxguard.roots import RootRefused

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_fdmount.py must run as root (mount)", pytrace=False)

IMAGE = "sandboxguard/debian:12"


def options_at(path):
    stack = [m for m in mountinfo.read_mountinfo() if m["mount_point"] == os.fsencode(path)]
    return set(stack[-1]["options"]) if stack else None


@pytest.fixture
def base():
    top = "/var/tmp/sgmnt-fd-%s" % uuid.uuid4().hex[:8]
    os.makedirs(top + "/ro/d")
    os.chmod(top, 0o755)
    # a read-only, noexec bind the directories below lie on: what every new bind must keep
    subprocess.run(["mount", "--bind", top + "/ro", top + "/ro"], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro,noexec", top + "/ro"], check=True)
    yield top
    with open("/proc/self/mountinfo", "rb") as handle:
        points = [line.split(b" ")[4].decode("utf-8", "surrogateescape") for line in handle]
    for point in reversed(points):
        if point.startswith(top + "/"):
            subprocess.run(["umount", "-l", point], check=False)
    shutil.rmtree(top, ignore_errors=True)


def _enosys(name):
    def fail(*_args, **_kwargs):
        raise OSError(errno.ENOSYS, "%s: Function not implemented" % name)
    return fail


def _open(path):
    return os.open(path, fdmount.DIR_FLAGS)


@pytest.mark.parametrize("missing,how", [((), "open_tree"), (("mount_setattr",), "open_tree+remount"),
                                         (("open_tree",), "mount(2)")])
def test_a_bind_from_a_descriptor_keeps_the_flags_of_its_mount_on_every_kernel_interface(base, monkeypatch,
                                                                                       missing, how):
    for name in missing:
        monkeypatch.setattr(fdmount, name, _enosys(name))
    path = base + "/ro/d"
    fd = _open(path)
    try:
        mount_fd, used = fdmount.bind_nosuid(fd, reopen=lambda: _open(path))
        os.close(mount_fd)
    finally:
        os.close(fd)
    assert used == how
    assert {"ro", "noexec", "nosuid", "nodev"} <= options_at(path), options_at(path)


def test_the_mount2_way_leaves_the_bind_alone_when_the_directory_it_finds_again_is_another(base, monkeypatch):
    monkeypatch.setattr(fdmount, "open_tree", _enosys("open_tree"))
    path = base + "/ro/d"
    fd = _open(path)
    try:
        with pytest.raises(OSError) as caught:
            fdmount.bind_nosuid(fd, reopen=lambda: _open(base))  # the path changed meanwhile
    finally:
        os.close(fd)
    assert caught.value.errno == errno.EAGAIN and "run again" in str(caught.value)
    assert "nosuid" not in options_at(path)  # a plain bind of the directory itself, nothing else


def test_no_syscall_number_for_an_unknown_machine_means_the_mount2_way(base, monkeypatch):
    monkeypatch.setattr(fdmount.platform, "machine", lambda: "alpha")
    assert not fdmount.has_unified_syscalls()
    path = base + "/ro/d"
    fd = _open(path)
    try:
        mount_fd, used = fdmount.bind_nosuid(fd, reopen=lambda: _open(path))
        os.close(mount_fd)
    finally:
        os.close(fd)
    assert used == "mount(2)" and {"ro", "nosuid", "nodev"} <= options_at(path)


@pytest.mark.parametrize("missing", [False, True])
def test_set_attr_changes_only_the_descriptors_own_mount_and_keeps_its_flags(base, monkeypatch, missing):
    if missing:
        monkeypatch.setattr(fdmount, "mount_setattr", _enosys("mount_setattr"))
    root_fd = _open(base + "/ro")
    inner = _open(base + "/ro/d")  # not a mount root: the kernel refuses it
    try:
        with pytest.raises(OSError) as caught:
            fdmount.set_attr(inner)
        assert caught.value.errno == errno.EINVAL
        assert fdmount.set_attr(root_fd) == ("remount" if missing else "mount_setattr")
    finally:
        os.close(root_fd)
        os.close(inner)
    assert {"ro", "noexec", "nosuid", "nodev"} <= options_at(base + "/ro")


def test_detach_takes_the_top_mount_at_the_descriptors_place_and_no_other(base):
    path = base + "/ro/d"
    fd = _open(path)
    mount_fd, _how = fdmount.bind_nosuid(fd, reopen=lambda: _open(path))
    mid = fdmount.mount_id(mount_fd)
    assert fdmount.is_mount_root(mount_fd) and not fdmount.is_mount_root(fd)
    fdmount.detach(mount_fd)
    os.close(mount_fd)
    os.close(fd)
    ids = {m["mount_id"] for m in mountinfo.read_mountinfo()}
    assert mid not in ids
    assert options_at(base + "/ro") is not None  # the mount below is still there
    assert options_at(path) is None


# -- the boot program ----------------------------------------------------------------
@pytest.fixture
def etc():
    top = "/run/sgmnt-etc-%s" % uuid.uuid4().hex[:8]
    os.makedirs(top)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def _program(etc, paths):
    program = etc + "/sandboxguard-nosuid"
    with open(program, "w") as handle:
        handle.write(fdmount.program_source())
    with open(etc + "/list", "w") as handle:
        handle.write(fdmount.list_text(paths))
    return program


def boot(program, etc):
    return subprocess.run(["/usr/bin/python3", "-I", program, "--paths-file", etc + "/list"], capture_output=True,
                          text=True, check=False)


def test_the_boot_program_mounts_what_it_proves_refuses_links_and_names_missing_roots(base, etc):
    good = base + "/good"
    os.makedirs(good)
    os.makedirs(base + "/real/docker")
    os.symlink(base + "/real", base + "/link")
    program = _program(etc, [good, base + "/link/docker", base + "/gone/docker"])
    proc = boot(program, etc)
    assert proc.returncode == 1, proc  # one refused: the unit fails, the others are mounted
    assert "%s: bound onto itself nosuid,nodev (open_tree)" % good in proc.stdout
    assert "%s/gone/docker: not mounted" % base in proc.stdout
    assert "%s/link/docker: REFUSED" % base in proc.stderr and "symlink" in proc.stderr
    assert {"nosuid", "nodev"} <= options_at(good)
    assert options_at(base + "/real/docker") is None
    again = boot(_program(etc, [good]), etc)
    assert again.returncode == 0 and "already nosuid,nodev" in again.stdout


def test_the_boot_program_reads_no_list_another_user_can_write(base, etc):
    program = _program(etc, [base + "/ro/d"])
    os.chmod(etc + "/list", 0o666)
    proc = boot(program, etc)
    assert proc.returncode == 2 and "writable by root only" in proc.stderr
    assert "nosuid" not in options_at(base + "/ro")


# -- the sweep's staging bind ------------------------------------------------------------
@pytest.fixture
def staging_dir():
    top = "/run/sgmnt-stage-%s" % uuid.uuid4().hex[:8]
    yield top + "/staging"
    with open("/proc/self/mountinfo", "rb") as handle:
        points = [line.split(b" ")[4].decode("utf-8", "surrogateescape") for line in handle]
    for point in reversed(points):
        if point.startswith(top + "/"):
            subprocess.run(["umount", "-l", point], check=False)
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def agent_dir(base):
    path = base + "/agent/ws"
    os.makedirs(path)
    os.chown(base + "/agent", 65534, 65534)  # another user's tree: the engine must not get its path
    os.chown(path, 65534, 65534)
    with open(path + "/f", "w") as handle:
        handle.write("x")
    return path


def test_staged_hands_a_root_only_clone_of_the_proven_directory_and_undoes_it(agent_dir, staging_dir):
    st = os.stat(agent_dir)
    with staging.staged(agent_dir, staging_dir) as (source, proven):
        assert source.startswith(staging_dir + "/") and source != agent_dir
        assert (proven.st_dev, proven.st_ino) == (st.st_dev, st.st_ino)
        assert os.stat(source).st_ino == st.st_ino and os.listdir(source) == ["f"]
        assert {"nosuid", "nodev", "noexec"} <= options_at(source)
        for parent in (staging_dir, os.path.dirname(staging_dir)):
            pst = os.stat(parent)
            assert pst.st_uid == 0 and not pst.st_mode & 0o022
    assert options_at(source) is None and not os.path.exists(source)


def test_staged_gives_a_path_only_root_can_change_as_it_is(etc, staging_dir):
    with staging.staged(etc, staging_dir) as (source, _st):
        assert source == etc
    assert not os.path.exists(staging_dir)


def test_staged_refuses_a_target_through_a_symlink(agent_dir, staging_dir):
    link = os.path.dirname(os.path.dirname(agent_dir)) + "/agentlink"
    os.symlink(os.path.dirname(agent_dir), link)
    with pytest.raises(RootRefused, match="symlink"), staging.staged(link + "/ws", staging_dir):
        pass


def test_staged_cleans_what_a_dead_run_left_and_leaves_a_live_runs_alone(agent_dir, staging_dir):
    with staging.staged(agent_dir, staging_dir) as (live, _st):
        dead = staging_dir + "/999999999.1.deadbeef"
        os.mkdir(dead)
        subprocess.run(["mount", "--bind", agent_dir, dead], check=True)
        with staging.staged(agent_dir, staging_dir) as (second, _st2):
            assert not os.path.exists(dead) and options_at(dead) is None
            assert options_at(live) is not None and second != live
    assert os.listdir(staging_dir) == []


@pytest.fixture
def client():
    from sandboxguard import docker_engine

    return docker_engine.connect()


def test_a_container_step_does_nothing_on_a_directory_that_is_not_the_proven_one(agent_dir, base, client):
    other = base + "/other"
    os.makedirs(other)
    with open(other + "/rootfile", "w") as handle:
        handle.write("root's")

    @contextlib.contextmanager
    def wrong_stage(target):
        yield other, os.stat(target)  # an engine that mounted something else under the name

    steps = sweep_container(client, agent_dir, (65534, 65534), (0,), 30, IMAGE, steps=("chown",),
                                  stage=wrong_stage)
    assert steps[0]["error"] and "not the directory the host proved" in steps[0]["error"], steps
    assert os.stat(other + "/rootfile").st_uid == 0 and os.stat(other).st_uid == 0
