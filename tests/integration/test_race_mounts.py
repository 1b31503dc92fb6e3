# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Issue 19, items 2 and 3, raced: the nosuid mounts (mount, remount, unmount, what persists them
at boot, a refused root, a root's name in a unit) and the sweep's container method and owner,
while an unprivileged attacker swaps components of its own tree (tests/integration/racing.py).
No victim outside the agent's tree may change: files (owner, mode, content) and the mount table.

Every test here calls the library the way the module (or the sweep) does, through entry points
1.0.0 had too, so the same file runs against the code before the fix: the numbers in the
commit that added it are calls until the victim changed there.
"""
import inspect
import os
import shlex
import shutil
import subprocess
import time
import uuid

import pytest
from racing import DEFAULT_SECONDS, RaceWorld, exchange
from sandboxguard import sweep
from sandboxguard._core import fdmount, mountinfo
from sandboxguard._privileged import nosuid
from sandboxguard._privileged.sweep_steps import sweep_container
from sandboxguard.roots import open_root

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_race_mounts.py must run as root", pytrace=False)

IMAGE = "sandboxguard/debian:12"
CONTAINER_SECONDS = max(DEFAULT_SECONDS, 20.0)  # each call runs a container: about a second


@pytest.fixture
def world():
    with RaceWorld("sgmnt") as made:
        yield made


@pytest.fixture
def files():
    """The persisted files of a run, in a root-only directory (never the machine's own)."""
    top = "/run/sgmnt-race-%s" % uuid.uuid4().hex[:8]
    os.makedirs(top + "/units")
    made = {"unit_dir": top + "/units", "fstab": top + "/fstab", "program": top + "/sbin/sandboxguard-nosuid",
            "paths_file": top + "/etc/nosuid-paths", "python": "/usr/bin/python3"}
    yield made
    shutil.rmtree(top, ignore_errors=True)


def run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def ensure(paths, state="mounted", persist="none", **kwargs):
    """nosuid.ensure as the module calls it, with only the arguments this version takes."""
    accepted = inspect.signature(nosuid.ensure).parameters
    return nosuid.ensure(paths, state, persist, run=run, systemd_running=False,
                         **{k: v for k, v in kwargs.items() if k in accepted})


def report(name, result, tally=None):
    print("RACE %s: %s%s" % (name, result.describe(), " outcomes=%s" % tally if tally else ""))


class Tally(dict):
    """Counts what the calls did (an after_call hook), to show the attack met both outcomes."""

    def add(self, what):
        self[what] = self.get(what, 0) + 1

    def both(self):
        """It acted between swaps and refused the swaps: what race(until=) waits for."""
        return bool(self.get("acted") and self.get("refused"))


def nosuid_outcome(outcome):
    """'refused', 'acted' or 'nothing' for one nosuid.ensure result (or the exception it raised)."""
    if isinstance(outcome, Exception):
        return type(outcome).__name__
    if outcome.get("refused"):
        return "refused"
    # (1.0.0's result listed mount(8) commands instead of actions)
    return "acted" if any(entry.get("actions", entry.get("commands")) for entry in outcome["paths"]) else "nothing"


# -- resets: root's own undo between calls, through proven descriptors (never by path) --
def _retry(step, attempts=400):
    for _attempt in range(attempts):
        try:
            return step()
        except (OSError, ValueError):
            time.sleep(0.001)
    raise AssertionError("a reset kept failing under the attack")


def agent_mounts(world):
    return sorted((m["mount_point"] for m in mountinfo.read_mountinfo()
                   if m["mount_point"].startswith(os.fsencode(world.agent) + b"/")), key=len, reverse=True)


def detach_agent_mounts(world, _outcome=None):
    """Unmount every mount inside the agent's tree, each through a descriptor proven from /."""
    for _attempt in range(400):
        points = agent_mounts(world)
        if not points:
            return
        try:
            with open_root(os.fsdecode(points[0])) as held:
                if fdmount.is_mount_root(held.fd):
                    fdmount.detach(held.fd)
        except (OSError, ValueError):
            time.sleep(0.001)
    raise AssertionError("could not unmount %s" % agent_mounts(world))


def bind_plain(path):
    """``path`` (in the agent's tree) as a plain bind mount of itself, made through its descriptor."""
    def step():
        with open_root(path) as held:
            if not fdmount.is_mount_root(held.fd):
                fd, _how = fdmount.clone_onto(held.fd, held.fd, 0)
                os.close(fd)
    _retry(step)


def clear_nosuid(path):
    """Take nosuid,nodev off the mount at ``path`` again (so the next call has work to do)."""
    def step():
        with open_root(path) as held:
            if fdmount.is_mount_root(held.fd) and fdmount.has_flags(held.fd):
                fdmount.mount_setattr(held.fd, 0, fdmount.NOSUID_NODEV)
    _retry(step)


# -- item 2: the nosuid mounts -----------------------------------------------------
def test_mounted_never_binds_the_agents_directory_over_a_root_directory(world, files):
    """1.0.0: check_root, then ``mount --bind P P`` by path (mount(8) resolves source and target
    one after the other): the agent's cron.d mounted over a root cron.d."""
    path = world.agent_dir("x/cron.d")
    world.agent_file("x/cron.d/evil", b"* * * * * root touch /tmp/sgmnt-pwned\n")
    world.attack(exchange(world.agent + "/x", world.victim + "/etc"))
    tally = Tally()

    def undo(outcome):
        tally.add(nosuid_outcome(outcome))
        detach_agent_mounts(world)

    result = world.race(lambda: ensure([path], **files), after_call=undo, until=lambda _r: tally.both())
    report("mounted", result, tally)
    assert result.clean, result.describe()
    assert tally.get("acted") and tally.get("refused"), tally  # it mounted between swaps and refused the swaps


def test_mounted_on_an_existing_mount_never_makes_a_read_only_victim_writable(world, files):
    """1.0.0: ``mount -o remount,bind,<P's flags>,nosuid,nodev P`` by path: a read-only bind
    mount elsewhere remounted read-write."""
    path = world.agent_dir("y/m")
    victim = world.base + "/rov/m"
    os.makedirs(victim)
    world.add_victim(world.base + "/rov")
    subprocess.run(["mount", "--bind", victim, victim], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", victim], check=True)
    bind_plain(path)
    world.rebase_mounts()
    world.attack(exchange(world.agent + "/y", world.base + "/rov"))
    tally = Tally()

    def undo(outcome):
        tally.add(nosuid_outcome(outcome))
        clear_nosuid(path)

    result = world.race(lambda: ensure([path], **files), after_call=undo, until=lambda _r: tally.both())
    report("remount", result, tally)
    assert result.clean, result.describe()
    assert tally.get("acted") and tally.get("refused"), tally
    assert "ro" in next(m for m in mountinfo.read_mountinfo() if m["mount_point"] == os.fsencode(victim))["options"]


def test_unmounted_never_unmounts_a_victim_mount(world, files):
    """1.0.0: ``umount P`` by path: root unmounted the victim's mount."""
    path = world.agent_dir("z/m")
    victim = world.base + "/umv/m"
    os.makedirs(victim)
    subprocess.run(["mount", "--bind", victim, victim], check=True)
    bind_plain(path)
    world.rebase_mounts()
    world.attack(exchange(world.agent + "/z", world.base + "/umv"))
    tally = Tally()

    def undo(outcome):
        tally.add(nosuid_outcome(outcome))
        bind_plain(path)

    result = world.race(lambda: ensure([path], "unmounted", **files), after_call=undo, until=lambda _r: tally.both())
    report("unmounted", result, tally)
    assert result.clean, result.describe()
    assert tally.get("acted") and tally.get("refused"), tally


def _boot(files):
    """What the persistence does at boot: 1.0.0's fstab line (``mount -a``), or the unit's ExecStart."""
    if os.path.exists(files["fstab"]) and nosuid.MARKER in open(files["fstab"]).read():
        return run(["mount", "-a", "--fstab", files["fstab"]])
    unit = os.path.join(files["unit_dir"], nosuid.UNIT)
    command = next(line for line in open(unit).read().splitlines() if line.startswith("ExecStart="))
    return run(shlex.split(command[len("ExecStart="):]))


def test_what_persists_the_mount_never_mounts_through_a_link_planted_for_the_boot(world, files):
    """1.0.0 (persist: fstab): the line ``P P none bind,nosuid,nodev`` followed a link the agent
    planted, and the boot mounted the victim's bin nosuid,nodev. Now the unit's program proves P."""
    path = world.agent_dir("w/bin")
    ensure([path], persist="fstab", **files)
    detach_agent_mounts(world)  # the reboot: the live mount is gone, what persists it stays
    world.rebase_mounts()
    world.attack(exchange(world.agent + "/w", world.victim))
    tally = Tally()

    def undo(outcome):
        tally.add("mounted" if agent_mounts(world) else "refused")
        detach_agent_mounts(world)

    result = world.race(lambda: _boot(files), after_call=undo)
    report("boot", result, tally)
    assert result.clean, result.describe()
    assert not os.path.exists(files["fstab"]) or nosuid.MARKER not in open(files["fstab"]).read()


def test_no_name_of_a_root_adds_a_line_to_a_unit(world, files):
    """1.0.0: ``_unit_quote`` left newlines, so a profile name holding one wrote lines into a root unit."""
    path = world.agent_dir("hermes/profiles/p\nExecStartPost=/bin/touch /tmp/sgmnt-pwned\n/sandboxes/docker")
    try:
        ensure([path], persist="systemd", **files)
    finally:
        detach_agent_mounts(world)
    for top, _dirs, names in os.walk(files["unit_dir"]):
        for name in names:
            if os.path.islink(os.path.join(top, name)):
                continue
            lines = open(os.path.join(top, name), encoding="utf-8", errors="surrogateescape").read().splitlines()
            assert not [line for line in lines if line.startswith("ExecStartPost=")], (name, lines)


def test_one_refused_root_is_refused_alone_and_the_others_get_their_mount(world, files):
    """1.0.0: one refused root (a symlink on the way) made the module fail and no root got nosuid."""
    good = world.agent_dir("h/sandboxes/docker")
    world.agent_dir("h2/real/docker")
    os.symlink(world.agent + "/h2/real", world.agent + "/h2/link")
    try:
        ensure([world.agent + "/h2/link/docker", good], **files)
    except ValueError:
        pass
    mounted = [m for m in mountinfo.read_mountinfo() if m["mount_point"] == os.fsencode(good)]
    detach_agent_mounts(world)
    assert mounted and {"nosuid", "nodev"} <= set(mounted[-1]["options"])


# -- item 3: the sweep's container method and its owner -------------------------------
@pytest.fixture
def client():
    from sandboxguard import docker_engine

    engine = docker_engine.connect()
    try:
        engine.call("GET", "/images/%s/json" % IMAGE)
    except docker_engine.EngineError:
        pytest.fail("image %s missing: run tools/build-images.sh" % IMAGE)
    return engine


def test_container_method_never_chowns_a_root_directory_to_the_agent(world, client):
    """1.0.0: lstat, then ``Mounts[{Source: path}]`` resolved by the engine, ``chown`` inside:
    a root directory and its 0600 file chowned to the agent."""
    target = world.agent_dir("hermes/sandboxes/docker/task/workspace")
    os.chown(world.agent_file("hermes/sandboxes/docker/task/workspace/dropped", b"root wrote this\n"), 0, 0)
    rootdir = world.base + "/rootdir"
    os.makedirs(rootdir + "/workspace")
    with open(rootdir + "/workspace/secret", "wb") as handle:
        handle.write(b"root only\n")
    os.chmod(rootdir + "/workspace/secret", 0o600)
    world.add_victim(rootdir)
    world.attack(exchange(world.agent + "/hermes/sandboxes/docker/task", rootdir))

    tally = Tally()

    def one_sweep():
        steps = sweep_container(client, target, (world.uid, world.gid), (0,), 30, IMAGE, steps=("chown",))
        return steps[0]

    def undo(outcome):
        if isinstance(outcome, dict):
            tally.add("swept" if outcome["ran"] and not outcome["error"] else "refused" if not outcome["ran"]
                      else "failed: %s" % outcome["error"][:80])
        _retry(drop_again)

    def drop_again():  # given back to the agent: root drops it again for the next call (by descriptor)
        with open_root(target) as held:
            if os.stat("dropped", dir_fd=held.fd, follow_symlinks=False).st_uid != 0:
                os.chown("dropped", 0, 0, dir_fd=held.fd, follow_symlinks=False)

    result = world.race(one_sweep, seconds=CONTAINER_SECONDS, after_call=undo, until=lambda _r: tally.get("swept"))
    report("container", result, tally)
    assert result.clean, result.describe()
    assert tally.get("swept"), tally


def test_ownership_return_owner_never_comes_from_another_users_directory(world):
    """1.0.0: the owner from ``lstat(<sandbox>)`` by path: the files given to another non-root user."""
    docker_root = world.agent_dir("hermes/sandboxes/docker")
    other = world.base + "/other/sandboxes"
    os.makedirs(other)
    os.chown(other, 65534, 65534)
    world.attack(exchange(world.agent + "/hermes", world.base + "/other"))

    def wrong_owner(outcome):
        if isinstance(outcome, tuple) and outcome[0] != world.uid:
            return ["ownership return would give the files to uid %d" % outcome[0]]
        return []

    result = world.race(lambda: sweep.sandbox_owner(docker_root), check=wrong_owner, min_calls=51)
    report("owner", result)
    assert result.clean, result.describe()
    assert result.calls > 50, result.describe()
