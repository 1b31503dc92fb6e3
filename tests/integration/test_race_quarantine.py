# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Leak removal and the leak scope raced by an unprivileged attacker swapping components of
its own tree (tests/integration/racing.py; issue 19, rows ``leaks_remove._move`` and
``audit.agent_accounts``), and the quarantine's move across file systems."""
import os
import pwd
import stat
import subprocess
import uuid

import pytest
from racing import RaceWorld, exchange
from sandboxguard import leaks
from sandboxguard._core import atomicfile, safefs
from sandboxguard._fleet import audit, leaks_remove

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_race_quarantine.py must run as root", pytrace=False)

UNIT = b"[Timer]\nOnCalendar=*:0/5\n"
ROOT_UNIT = b"[Unit]\nDescription=root's own unit, same name\n"


@pytest.fixture
def world():
    # these operations never mount: only mounts below the world's own directory are compared
    with RaceWorld("sgq") as made:
        yield made


def _root_dir(world, name, files):
    """A root-owned 0755 directory beside the agent's tree holding ``files`` ({name: bytes})."""
    path = os.path.join(world.base, name)
    os.mkdir(path)
    os.chmod(path, 0o755)
    for file_name, data in files.items():
        with open(os.path.join(path, file_name), "wb") as handle:
            handle.write(data)
    return path


def _quarantine(world):
    path = os.path.join(world.base, "quarantine")
    os.mkdir(path, 0o700)
    return path


def _empty_dirs(world):
    spool = _root_dir(world, "spool", {})
    tmp = _root_dir(world, "tmp", {})
    return spool, tmp


def _mount_tmpfs(path):
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "sgq-tmpfs", path], check=True,
                   capture_output=True)


@pytest.mark.parametrize("across", [False, True], ids=["same-fs", "across-fs"])
def test_leaks_remove_never_moves_a_root_file_through_a_swapped_directory(world, across):
    """The attacker swaps ``~/.config/systemd/user`` for a symlink to a root directory holding
    a file of the same name as its leaked unit: the root file stays (by rename on one file
    system; across file systems, the copy and the removal of the source)."""
    top = world.agent
    if across:  # the home on a tmpfs of its own, the quarantine on the disk: EXDEV
        top = world.agent_dir("fs")
        _mount_tmpfs(top)
    home = os.path.join(top, "home")
    os.mkdir(home)
    os.chown(home, world.uid, world.gid)
    units = home
    for part in (".config", "systemd", "user"):
        units = os.path.join(units, part)
        os.mkdir(units)
        os.chown(units, world.uid, world.gid)
    root_units = os.path.join(top, "rootunits") if across else os.path.join(world.base, "rootunits")
    os.mkdir(root_units)
    os.chmod(root_units, 0o755)
    atomicfile.write(os.path.join(root_units, "beacon.timer"), ROOT_UNIT, mode=0o644)
    world.add_victim(root_units)
    spool, tmp = _empty_dirs(world)
    quarantine = _quarantine(world)
    accounts = [(world.user, world.uid, home)]

    def plant():
        """The agent's leak, written through a proven descriptor (never through the swapped link)."""
        try:
            with safefs.open_dir(units) as held:
                if safefs.lstat_at(held.fd, "beacon.timer") is None:
                    atomicfile.write_at(held.fd, "beacon.timer", UNIT, mode=0o644, owner=(world.uid, world.gid))
        except (OSError, ValueError):
            pass  # swapped right now: plant it after the next call

    plant()
    world.attack(exchange(units, root_units))
    moved, refused = [], []

    def remove():
        found = leaks.audit(accounts=accounts, users=[world.user], tmp_dir=tmp, spool_dir=spool, at_spool_dirs=(),
                            runtime_root=None)
        report = leaks_remove.remove(found["findings"], quarantine, crontab="")
        moved.extend(r for r in report["removed"] if r["kind"] == "user_unit")
        refused.extend(e["error"] for e in report["errors"])
        return report

    def met(_result):
        return bool(moved) and any("symlink" in why or "not what the audit saw" in why for why in refused)

    result = world.race(remove, after_call=lambda _outcome: plant(), until=met)
    print(result.describe())  # calls survived, for the record (pytest -rP)
    assert result.clean, result.describe()
    assert moved, "the agent's own unit was never quarantined: %s" % result.describe()
    assert any("symlink" in why or "not what the audit saw" in why for why in refused), refused[:5]  # met, not missed
    print("moved %d, refused %d: %s" % (len(moved), len(refused), sorted(set(refused))[:4]))
    with open(os.path.join(root_units, "beacon.timer"), "rb") as handle:
        assert handle.read() == ROOT_UNIT


@pytest.fixture
def other_user():
    """A second throwaway account, whose cron job must never be the agent's to remove."""
    name = "sgqo%s" % uuid.uuid4().hex[:6]
    subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                    "--home-dir", "/nonexistent", name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def test_agent_accounts_never_takes_an_owner_through_a_symlinked_profiles(world, other_user):
    """The attacker names a profile after another user and swaps ``profiles`` for a symlink to
    a root directory holding that user's directory: the other user never enters the leak
    scope, so remediation never removes its cron job."""
    hermes = world.agent_dir("hermes")
    profiles = world.agent_dir("hermes/profiles")
    world.agent_dir("hermes/profiles/" + other_user.pw_name)
    people = _root_dir(world, "people", {})
    theirs = os.path.join(people, other_user.pw_name)
    os.mkdir(theirs)
    os.chown(theirs, other_user.pw_uid, other_user.pw_gid)
    spool = _root_dir(world, "spool", {})
    table = os.path.join(spool, other_user.pw_name)
    with open(table, "w") as handle:
        handle.write("17 3 * * * /usr/local/bin/their-own-backup\n")
    os.chown(table, other_user.pw_uid, other_user.pw_gid)
    os.chmod(table, 0o600)
    world.add_victim(spool)
    tmp = _root_dir(world, "tmp", {})
    quarantine = _quarantine(world)
    world.attack(exchange(profiles, people))
    scopes = []

    def remediate():
        names, _sources = audit.agent_accounts([hermes])
        scopes.append(tuple(names))
        found = leaks.audit(users=names, tmp_dir=tmp, spool_dir=spool, at_spool_dirs=(), runtime_root=None)
        return leaks_remove.remove(found["findings"], quarantine, crontab="")

    result = world.race(remediate, until=lambda _r: (world.user,) in scopes)
    print(result.describe())  # calls survived, for the record (pytest -rP)
    assert result.clean, result.describe()
    assert (world.user,) in scopes, "the agent itself was never in scope: %s" % set(scopes)
    assert not any(other_user.pw_name in names for names in scopes)


# --- across file systems, without an attacker ------------------------------------------------

@pytest.fixture
def exdev(tmp_path_factory):
    """(a tmpfs mounted under /var/tmp/sgq-*, a root-owned quarantine on the disk); unmounted after."""
    base = "/var/tmp/sgq-exdev-%s" % uuid.uuid4().hex[:8]
    os.makedirs(base + "/tmpfs")
    os.mkdir(base + "/q", 0o700)
    _mount_tmpfs(base + "/tmpfs")
    try:
        yield base + "/tmpfs", base + "/q"
    finally:
        subprocess.run(["umount", base + "/tmpfs"], check=False, capture_output=True)
        subprocess.run(["rm", "-rf", "--one-file-system", base], check=False, capture_output=True)


def test_a_run_directory_on_another_file_system_is_copied_through_descriptors_then_removed(exdev):
    tmp, quarantine = exdev
    run = os.path.join(tmp, "ab-run1")
    os.makedirs(run + "/sub/deep")
    with open(run + "/sub/deep/out.txt", "w") as handle:
        handle.write("x" * (3 << 20))  # more than one chunk
    os.chown(run + "/sub/deep/out.txt", 65534, 65534)
    with open(run + "/tool", "wb") as handle:
        handle.write(b"#!/bin/sh\n")
    os.chmod(run + "/tool", 0o4755)
    os.symlink("/etc/shadow", run + "/shadow-link")
    os.mkfifo(run + "/pipe", 0o640)
    os.link(run + "/tool", run + "/tool-again")
    os.mkdir(run + "/empty", 0o750)
    os.symlink("/etc", os.path.join(tmp, "ab-link"))
    with open(os.path.join(tmp, "ab-file"), "w") as handle:
        handle.write("left\n")
    shadow = os.stat("/etc/shadow")
    found = leaks.audit(accounts=[], users=["sg-nobody-here"], tmp_dir=tmp, spool_dir=tmp + "/none",
                        at_spool_dirs=(), runtime_root=None)
    assert {os.path.basename(f["path"]) for f in found["findings"]} == {"ab-run1", "ab-link", "ab-file"}
    report = leaks_remove.remove(found["findings"], quarantine, crontab="")
    assert report["complete"], report["errors"]
    assert sorted(os.listdir(tmp)) == [], "every run directory left the tmpfs"
    moved = {r["path"]: r for r in report["removed"]}
    copy = moved[run]["quarantine"]
    assert moved[run]["copied"] == 9
    assert os.path.getsize(copy + "/sub/deep/out.txt") == 3 << 20
    assert os.stat(copy + "/sub/deep/out.txt").st_uid == 65534, "owners come along"
    assert stat.S_IMODE(os.stat(copy + "/tool").st_mode) == 0o755, "never a setuid bit in the quarantine"
    assert os.readlink(copy + "/shadow-link") == "/etc/shadow"
    assert stat.S_ISFIFO(os.lstat(copy + "/pipe").st_mode)
    assert stat.S_IMODE(os.stat(copy + "/empty").st_mode) == 0o750
    assert os.readlink(moved[os.path.join(tmp, "ab-link")]["quarantine"]) == "/etc"
    with open(moved[os.path.join(tmp, "ab-file")]["quarantine"]) as handle:
        assert handle.read() == "left\n"
    after = os.stat("/etc/shadow")
    # not st_ino: useradd and userdel (another test beside this one) write a new /etc/shadow
    assert (after.st_mode, after.st_uid, after.st_gid) == (shadow.st_mode, shadow.st_uid, shadow.st_gid)
    assert os.path.isdir("/etc") and not os.path.islink("/etc")


def test_a_device_node_or_a_mount_in_a_run_directory_stays_and_the_rest_moves(exdev, tmp_path):
    tmp, quarantine = exdev
    run = os.path.join(tmp, "ab-run2")
    os.makedirs(run + "/mnt")
    os.mknod(run + "/null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    with open(run + "/log", "w") as handle:
        handle.write("log\n")
    _mount_tmpfs(run + "/mnt")
    try:
        with open(run + "/mnt/inside", "w") as handle:
            handle.write("another file system's\n")
        found = leaks.audit(accounts=[], users=["sg-nobody-here"], tmp_dir=tmp, spool_dir=tmp + "/none",
                            at_spool_dirs=(), runtime_root=None)
        report = leaks_remove.remove(found["findings"], quarantine, crontab="")
        errors = {e["path"]: e["error"] for e in report["errors"]}
        assert set(errors) == {run + "/null", run + "/mnt"}, report["errors"]
        assert "device node" in errors[run + "/null"] and "mount point" in errors[run + "/mnt"]
        assert not os.path.exists(run + "/log"), "the rest moved"
        assert os.path.exists(run + "/mnt/inside") and stat.S_ISCHR(os.lstat(run + "/null").st_mode)
        assert report["complete"] is False
    finally:
        subprocess.run(["umount", run + "/mnt"], check=False, capture_output=True)
