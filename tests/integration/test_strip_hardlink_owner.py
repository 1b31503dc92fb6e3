# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Hard links (issue 19 item 6, issue 25 item 5): one rule in every walk. A regular file with
more than one link is never given away: where fs.protected_hardlinks is 0 (the kernel's own
default) any user can hard-link a root file it cannot even read into its sandbox, and where
it is 1 still one it can read and write through a group. Where the sysctl is 0 nothing at all
is changed on such a file (its setid bits and caps may be a system binary's: stripping the
shared inode would strip it host-wide); where it is 1 setid bits and caps are stripped.

These tests set the sysctl and put its old value back in a finally."""
import os
import stat

import pytest
from racing import VICTIM_SECRET, RaceWorld
from sandboxguard import strip
from sandboxguard._walk import fileops

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_strip_hardlink_owner.py must run as root", pytrace=False)

SYSCTL = "/proc/sys/fs/protected_hardlinks"


def _set_sysctl(value):
    with open(SYSCTL, "w") as handle:
        handle.write("%d\n" % value)


@pytest.fixture
def protected_hardlinks():
    """A setter for fs.protected_hardlinks; the value it had is written back afterwards."""
    with open(SYSCTL) as handle:
        old = int(handle.read().strip())
    try:
        yield _set_sysctl
    finally:
        _set_sysctl(old)


@pytest.fixture
def world():
    with RaceWorld("sgq") as made:
        yield made


def test_a_root_file_the_agent_hard_linked_into_its_sandbox_keeps_its_owner(world, protected_hardlinks):
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    secret = world.victim + "/secret"  # root 0600: the agent may not even read it
    out = os.path.join(sandbox, "out.txt")  # what a root container wrote: given back, as always
    with open(out, "wb") as handle:
        handle.write(b"result\n")
    protected_hardlinks(0)
    try:
        made = world.as_user(["ln", secret, os.path.join(sandbox, "shadow")])
        assert made.returncode == 0, made.stderr  # the kernel's default lets the agent link it
        report = strip.run([world.agent + "/sandboxes"], actions=("chown", "setid", "caps"),
                           chown_to=(world.uid, world.gid))
    finally:
        protected_hardlinks(1)
    assert world.what_changed() == [], "the root file was given away"
    with open(secret, "rb") as handle:
        assert handle.read() == VICTIM_SECRET
    st = os.stat(secret)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o600)
    assert os.stat(out).st_uid == world.uid, "single-link files are still given back"
    entries = {os.path.basename(e["path"]): e for e in report["files"]}
    assert entries["shadow"]["owner_kept"] == fileops.LINKED_OWNER_KEPT and entries["shadow"]["nlink"] == 2
    assert "chown" not in entries["shadow"]["actions"] and entries["out.txt"]["actions"] == ["chown"]
    assert report["counts"]["chown"] == 1, "only the file given back is counted"
    assert any("never gives one away" in line for line in report["warnings"]), report["warnings"]


@pytest.mark.parametrize("program", ["sudo", "passwd", "ping"])
def test_where_links_are_unprotected_a_linked_setuid_binary_keeps_its_bits_host_wide(world, protected_hardlinks,
                                                                                      program):
    """The runner user links a setuid system binary into its work folder: stripping the shared
    inode would strip /usr/bin/<program> host-wide (a stand-in binary here, same shape)."""
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    mode = 0o755 if program == "ping" else 0o4755
    tool = world.victim_path("bin/" + program, data=b"\x7fELF", mode=mode)  # root, outside the tree: /usr/bin
    if program == "ping":
        os.setxattr(tool, "security.capability", bytes.fromhex("0100000200200000000000000000000000000000"))
    protected_hardlinks(0)
    try:
        made = world.as_user(["ln", tool, os.path.join(sandbox, program)])
        assert made.returncode == 0, made.stderr
        report = strip.run([world.agent + "/sandboxes"], actions=("chown", "setid", "caps", "device"),
                           chown_to=(world.uid, world.gid))
    finally:
        protected_hardlinks(1)
    assert world.what_changed() == [], "the system binary linked in was changed"
    if program == "ping":
        assert "security.capability" in os.listxattr(tool), "its capability was cleared host-wide"
    (entry,) = [e for e in report["files"] if os.path.basename(e["path"]) == program]
    assert entry["skipped"] == fileops.LINKED_UNCHANGED and "sysctl fs.protected_hardlinks=1" in entry["skipped"]
    assert report["counts"]["skipped"] == 1 and report["counts"]["setid"] == 0 and report["counts"]["caps"] == 0
    assert any("sysctl fs.protected_hardlinks=1" in line for line in report["warnings"]), report["warnings"]
    assert strip.findings_remain(report), "a finding left in place is a finding that remains"


def test_where_links_are_protected_a_group_writable_root_file_linked_in_keeps_its_owner(world, protected_hardlinks):
    """protected_hardlinks=1 still lets a user link a root file it can read and write through a
    group (root:ops 0660): the ownership return must not give it away."""
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    shared = world.victim_path("ops/file", data=b"ops data\n", mode=0o2660)  # setgid: stripped, owner kept
    os.chown(shared, 0, world.gid)
    os.chmod(shared, 0o2660)
    protected_hardlinks(1)
    made = world.as_user(["ln", shared, os.path.join(sandbox, "mine")])
    assert made.returncode == 0, made.stderr
    report = strip.run([sandbox], actions=("chown", "setid", "caps", "device"), chown_to=(world.uid, world.gid),
                       chown_from="others")
    st = os.stat(shared)
    assert st.st_uid == 0 and st.st_gid == world.gid, "the group's root file was given away"
    assert stat.S_IMODE(st.st_mode) == 0o660, "setid bits are stripped where links are protected"
    (entry,) = [e for e in report["files"] if e["path"].endswith("/mine")]
    assert entry["owner_kept"] == fileops.LINKED_OWNER_KEPT and "chown" not in entry["actions"]


def test_where_hard_links_are_protected_multi_link_files_keep_their_owner_and_lose_their_bits(
        world, protected_hardlinks):
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    first = os.path.join(sandbox, "a")
    with open(first, "wb") as handle:
        handle.write(b"container output\n")
    os.chmod(first, 0o4755)
    os.link(first, os.path.join(sandbox, "b"))  # the container linked its own file
    protected_hardlinks(1)
    report = strip.run([sandbox], actions=("chown", "setid", "caps"), chown_to=(world.uid, world.gid))
    st = os.stat(first)
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o755
    assert report["counts"]["skipped"] == 0 and report["counts"]["setid"] == 1 and report["counts"]["chown"] == 0
    # one inode, two names: the first found loses its bit, both keep their owner and say so
    assert sorted(e["actions"] for e in report["files"]) == [[], ["setuid"]]
    assert all(e["nlink"] == 2 and e["owner_kept"] == fileops.LINKED_OWNER_KEPT for e in report["files"])


def test_the_sysctl_is_read_once_per_strip_not_per_file(monkeypatch):
    reads = []
    real = fileops.hardlinks_protected

    def counting(*args, **kwargs):
        reads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fileops, "hardlinks_protected", counting)
    opts = fileops.StripOptions(actions=("chown",), chown_to=(1, 1))
    assert len(reads) == 1 and isinstance(opts.links_protected, bool)
