# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Ownership return and hard links (issue 19 item 6): where fs.protected_hardlinks is 0 (the
kernel's own default), any user can hard-link a root file it cannot even read into its
sandbox; the ownership return must not give that file away. Where it is 1, a multi-link
file in the tree is the container's own and is chowned as before.

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
    assert entries["shadow"]["skipped"] == fileops.LINKED_OWNER_KEPT and entries["shadow"]["nlink"] == 2
    assert "chown" not in entries["shadow"]["actions"] and entries["out.txt"]["actions"] == ["chown"]
    assert any("sysctl fs.protected_hardlinks=1" in line for line in report["warnings"]), report["warnings"]
    assert report["counts"]["skipped"] == 1 and strip.findings_remain(report)


def test_a_setuid_root_file_linked_in_loses_its_bits_but_keeps_its_owner(world, protected_hardlinks):
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    tool = os.path.join(world.base, "suid-tool")
    with open(tool, "wb") as handle:
        handle.write(b"\x7fELF")
    os.chmod(tool, 0o4755)
    os.link(tool, os.path.join(sandbox, "tool"))
    protected_hardlinks(0)
    try:
        report = strip.run([sandbox], actions=("chown", "setid", "caps"), chown_to=(world.uid, world.gid))
    finally:
        protected_hardlinks(1)
    st = os.stat(tool)
    assert st.st_uid == 0 and not st.st_mode & 0o6000, "setid stripped (hardlinks: strip), owner kept"
    (entry,) = report["files"]
    assert entry["actions"] == ["setuid"] and entry["skipped"] == fileops.LINKED_OWNER_KEPT


def test_where_hard_links_are_protected_multi_link_files_are_given_back_as_before(world, protected_hardlinks):
    sandbox = world.agent_dir("sandboxes/docker/t1/workspace")
    first = os.path.join(sandbox, "a")
    with open(first, "wb") as handle:
        handle.write(b"container output\n")
    os.link(first, os.path.join(sandbox, "b"))  # the container linked its own file
    protected_hardlinks(1)
    report = strip.run([sandbox], actions=("chown", "setid", "caps"), chown_to=(world.uid, world.gid))
    assert os.stat(first).st_uid == world.uid  # one inode, both names: chowned once
    assert report["warnings"] == [] and report["counts"]["skipped"] == 0
    (entry,) = report["files"]
    assert entry["actions"] == ["chown"] and entry["nlink"] == 2 and "skipped" not in entry


def test_the_sysctl_is_read_once_per_strip_not_per_file(monkeypatch):
    reads = []
    real = fileops.hardlinks_protected

    def counting(*args, **kwargs):
        reads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fileops, "hardlinks_protected", counting)
    opts = fileops.StripOptions(actions=("chown",), chown_to=(1, 1))
    assert len(reads) == 1 and isinstance(opts.chown_links, bool)
    fileops.StripOptions(actions=("setid",))
    assert len(reads) == 1, "a strip without the chown action never reads it"
