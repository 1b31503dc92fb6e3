# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Device nodes are privileged artifacts (issue 25 item 4), and a change that failed is never
counted as done (item 6).

Docker keeps CAP_MKNOD: a root container step can ``mknod`` a disk's block node 0666 into its
bind mount, and the runner user (or the agent) then opens a root-only host device through it.
Every walk makes such a node harmless without giving it away: root-owned, mode 0000 (its
directory's owner may still unlink it, it can no longer open or chmod it)."""
import json
import os
import stat
import subprocess
import sys

import pytest
from racing import RaceWorld
from sandboxguard import strip
from sandboxguard._walk import fileops

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_strip_devices.py must run as root", pytrace=False)

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python", "src"))
NULL = os.makedev(1, 3)  # /dev/null's numbers: harmless to open, but any node works the same
DISK = os.makedev(8, 0)  # /dev/sda's: what a job would make


@pytest.fixture
def world():
    with RaceWorld("sgdev") as made:
        yield made


def _node(path, kind, owner, mode=0o666):
    os.mknod(path, kind | mode, NULL if kind == stat.S_IFCHR else DISK)
    os.chown(path, *owner)
    os.chmod(path, mode)
    return path


def _state(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), stat.S_IFMT(st.st_mode)


@pytest.mark.parametrize("kind", [stat.S_IFCHR, stat.S_IFBLK], ids=["char", "block"])
@pytest.mark.parametrize("made_by", ["root", "user"])
def test_a_device_node_in_the_tree_is_made_root_owned_mode_0000(world, kind, made_by):
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    owner = (0, 0) if made_by == "root" else (world.uid, world.gid)
    node = _node(os.path.join(sandbox, "disk"), kind, owner)
    report = strip.strip([sandbox])
    assert _state(node) == (0, 0, 0, kind)
    (entry,) = report["files"]
    assert entry["actions"] == ["device"] and entry["type"] == ("character device" if kind == stat.S_IFCHR
                                                                 else "block device")
    assert (entry["uid_after"], entry["gid_after"], entry["mode_after"][-4:]) == (0, 0, "0000")
    assert report["counts"]["device"] == 1 and report["changed"] and not strip.findings_remain(report)
    denied = world.as_user(["/usr/bin/python3", "-c", "import sys; open(sys.argv[1], 'rb')", node])
    assert denied.returncode != 0 and b"Permission denied" in denied.stderr
    chmod = world.as_user(["chmod", "666", node])
    assert chmod.returncode != 0, "its old owner could chmod it back"
    unlink = world.as_user(["rm", "-f", node])
    assert unlink.returncode == 0 and not os.path.lexists(node), "the directory's owner may still remove it"


def test_ownership_return_never_gives_a_device_node_away(world):
    """A runner's work folder: everything not the runner user's goes back to it, but a device
    node the job made goes to root, 0000."""
    work = world.agent_dir("runner/_work")
    node = _node(os.path.join(work, "sda"), stat.S_IFBLK, (0, 0))
    plain = os.path.join(work, "out.txt")
    with open(plain, "wb") as handle:
        handle.write(b"build output\n")
    report = strip.run([work], actions=("chown", "setid", "caps", "device"), chown_to=(world.uid, world.gid),
                       chown_from=fileops.CHOWN_FROM_OTHERS)
    assert _state(node) == (0, 0, 0, stat.S_IFBLK), "a device node was given to the runner user"
    assert os.stat(plain).st_uid == world.uid
    assert report["counts"]["device"] == 1 and report["counts"]["chown"] == 1


def test_scan_reports_a_device_node_as_a_finding_and_changes_nothing(world):
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    node = _node(os.path.join(sandbox, "null"), stat.S_IFCHR, (world.uid, world.gid))
    report = strip.scan([sandbox])
    assert _state(node) == (world.uid, world.gid, 0o666, stat.S_IFCHR)
    assert report["counts"]["device"] == 1 and strip.findings_remain(report)
    proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "scan", "--json", sandbox], capture_output=True,
                          text=True, env=ENV, timeout=60, check=False)
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)
    assert [e["actions"] for e in found["files"]] == [["device"]] and found["counts"]["device"] == 1
    human = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "scan", sandbox], capture_output=True, text=True,
                           env=ENV, timeout=60, check=False)
    assert human.returncode == 1 and "1 device nodes" in human.stdout and "character device" in human.stdout


def test_a_harmless_node_and_fifos_sockets_are_no_findings(world):
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    _node(os.path.join(sandbox, "done"), stat.S_IFCHR, (0, 0), mode=0)
    os.mkfifo(os.path.join(sandbox, "pipe"))
    report = strip.strip([sandbox])
    assert report["files"] == [] and report["counts"]["device"] == 0 and report["counts"]["special"] == 2


def test_no_devices_leaves_them_alone(world):
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    node = _node(os.path.join(sandbox, "null"), stat.S_IFCHR, (world.uid, world.gid))
    report = strip.strip([sandbox], devices=False)
    assert _state(node) == (world.uid, world.gid, 0o666, stat.S_IFCHR) and report["files"] == []


def test_a_linked_device_node_is_left_alone_where_links_are_unprotected(world):
    """Where fs.protected_hardlinks is 0 a user may link a root node of another tree (a chroot's
    /dev/null) into its own: making the shared inode 0000 would break that tree."""
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    outside = world.victim_path("chroot/dev")
    node = _node(os.path.join(outside, "null"), stat.S_IFCHR, (0, 0))
    world.victim_path("chroot/dev")  # compared from now on, node included
    with open("/proc/sys/fs/protected_hardlinks") as handle:
        old = handle.read()
    try:
        with open("/proc/sys/fs/protected_hardlinks", "w") as handle:
            handle.write("0\n")
        made = world.as_user(["ln", node, os.path.join(sandbox, "null")])
        assert made.returncode == 0, made.stderr
        report = strip.strip([sandbox])
    finally:
        with open("/proc/sys/fs/protected_hardlinks", "w") as handle:
            handle.write(old)
    assert world.what_changed() == []
    (entry,) = report["files"]
    assert entry["skipped"] == fileops.LINKED_UNCHANGED and report["counts"]["device"] == 0
    assert strip.findings_remain(report)


def test_a_change_that_failed_is_an_error_never_a_count(world):
    """EPERM on an immutable file: counted as an error, not as given back (issue 25 item 6)."""
    sandbox = world.agent_dir("runner/_work")
    stuck = os.path.join(sandbox, "stuck")
    with open(stuck, "wb") as handle:
        handle.write(b"x")
    os.chmod(stuck, 0o4755)
    given = os.path.join(sandbox, "given")
    with open(given, "wb") as handle:
        handle.write(b"y")
    subprocess.run(["chattr", "+i", stuck], check=True)
    try:
        report = strip.run([sandbox], actions=("chown", "setid", "caps", "device"), chown_to=(world.uid, world.gid),
                           chown_from=fileops.CHOWN_FROM_OTHERS)
    finally:
        subprocess.run(["chattr", "-i", stuck], check=True)
    assert os.stat(stuck).st_uid == 0 and os.stat(given).st_uid == world.uid
    assert report["counts"]["chown"] == 1, report["counts"]  # "given" only: "stuck" failed
    assert report["counts"]["setid"] == 0 and report["counts"]["errors"] == 1
    (failed,) = [e for e in report["files"] if e["path"].endswith("/stuck")]
    assert failed["error"] and set(failed["failed"]) == {"chown", "setuid"}
    assert strip.findings_remain(report)
