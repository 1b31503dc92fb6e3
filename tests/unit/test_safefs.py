# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""safefs: the descriptor primitives of the root side (raced in tests/integration/test_race_safefs.py)."""
import errno
import os
import stat
import types

import pytest
from sandboxguard._core import safefs


def fake_st(uid, mode):
    return types.SimpleNamespace(st_uid=uid, st_gid=0, st_mode=stat.S_IFDIR | mode)


@pytest.mark.parametrize("uid, mode, trusted", [
    (0, 0o755, True), (0, 0o700, True), (0, 0o775, False), (0, 0o1777, False), (1000, 0o755, False),
    (4242, 0o755, True),  # the caller's own directory
])
def test_trusted_dir_is_owned_by_root_or_the_caller_and_writable_by_nobody_else(uid, mode, trusted):
    assert safefs.trusted_dir(fake_st(uid, mode), euid=4242) is trusted


@pytest.mark.parametrize("mode, plain", [(0o4755, 0o755), (0o6777, 0o777), (0o1700, 0o700), (0o2640, 0o640)])
def test_plain_mode_never_keeps_setid_or_sticky_bits(mode, plain):
    assert safefs.plain_mode(mode) == plain


def test_open_dir_proves_the_path_and_steps_back_on_dotdot(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    with safefs.open_dir(str(tmp_path / "a" / "b" / ".." / "b" / ".")) as held:
        assert held.path == str(tmp_path / "a" / "b")
        assert stat.S_ISDIR(os.fstat(held.fd).st_mode)


def test_a_symlink_below_a_directory_others_can_write_is_refused(tmp_path):
    os.chmod(tmp_path, 0o777)
    (tmp_path / "real").mkdir()
    os.symlink(str(tmp_path / "real"), str(tmp_path / "link"))
    with pytest.raises(safefs.PathRefused, match=r"goes through a symlink.*everyone can change"):
        safefs.open_dir(str(tmp_path / "link"))


@pytest.mark.skipif(not os.path.islink("/var/run"), reason="needs /var/run as a root-owned link")
def test_a_symlink_only_root_could_have_made_is_resolved_by_the_same_rules():
    with safefs.open_dir("/var/run") as held:
        assert held.path == "/" + os.readlink("/var/run").strip("/").replace("../", "")
    with pytest.raises(safefs.PathRefused, match="symlinks are not followed here"):
        safefs.open_dir("/var/run", follow_trusted_links=False)


def test_a_missing_component_is_file_not_found_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing does not exist"):
        safefs.open_dir(str(tmp_path / "missing" / "below"))


def test_create_makes_each_missing_directory_with_exactly_the_mode(tmp_path):
    old = os.umask(0o077)
    try:
        with safefs.open_dir(str(tmp_path / "x" / "y"), create=True, mode=0o751) as held:
            assert held.path == str(tmp_path / "x" / "y")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "x").st_mode) == 0o751
    assert stat.S_IMODE(os.stat(tmp_path / "x" / "y").st_mode) == 0o751


@pytest.mark.parametrize("path, match", [("relative/f", "relative path"), ("/tmp/dir/", "names a directory"),
                                         ("/tmp/..", "names a directory")])
def test_open_parent_refuses_what_names_no_file(path, match):
    with pytest.raises(safefs.PathRefused, match=match):
        safefs.open_parent(path)


def test_read_at_refuses_a_fifo_a_symlink_and_with_single_link_a_hard_link(tmp_path):
    (tmp_path / "plain").write_bytes(b"data")
    os.mkfifo(str(tmp_path / "fifo"))
    os.symlink("plain", str(tmp_path / "link"))
    os.link(str(tmp_path / "plain"), str(tmp_path / "second"))
    with safefs.open_dir(str(tmp_path)) as held:
        assert safefs.read_at(held.fd, "plain")[0] == b"data"
        assert safefs.read_at(held.fd, "absent") == (None, None)
        with pytest.raises(safefs.PathRefused, match="is a FIFO"):
            safefs.read_at(held.fd, "fifo")
        with pytest.raises(safefs.PathRefused, match="is a symlink"):
            safefs.read_at(held.fd, "link")
        with pytest.raises(safefs.PathRefused, match="2 hard links"):
            safefs.read_at(held.fd, "second", single_link=True)
        with pytest.raises(safefs.PathRefused, match="larger than 2 bytes"):
            safefs.read_at(held.fd, "plain", limit=2)


def test_make_dir_at_gives_a_new_directory_its_mode_and_owner_and_refuses_a_link(tmp_path):
    os.symlink("/etc", str(tmp_path / "link"))
    with safefs.open_dir(str(tmp_path)) as held:
        fd, created = safefs.make_dir_at(held.fd, "new", 0o710, owner=(os.getuid(), os.getgid()))
        os.close(fd)
        assert created and stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o710
        fd, created = safefs.make_dir_at(held.fd, "new", 0o700)
        os.close(fd)
        assert not created and stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o710
        with pytest.raises(safefs.PathRefused, match="is a symlink, not a directory"):
            safefs.make_dir_at(held.fd, "link")


def test_rename_at_moves_only_the_inode_that_was_checked(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "dst").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"1")
    st = os.lstat(tmp_path / "src" / "f")
    with safefs.open_dir(str(tmp_path / "src")) as src, safefs.open_dir(str(tmp_path / "dst")) as dst:
        with pytest.raises(safefs.PathRefused, match="not the file that was checked"):
            safefs.rename_at(src.fd, "f", dst.fd, "g", expected=(st.st_dev, st.st_ino + 1))
        assert (tmp_path / "src" / "f").exists()
        moved = safefs.rename_at(src.fd, "f", dst.fd, "g", expected=(st.st_dev, st.st_ino))
    assert moved.st_ino == st.st_ino and (tmp_path / "dst" / "g").read_bytes() == b"1"


def test_unlink_at_removes_only_the_inode_expected(tmp_path):
    (tmp_path / "f").write_bytes(b"1")
    st = os.lstat(tmp_path / "f")
    with safefs.open_dir(str(tmp_path)) as held:
        with pytest.raises(safefs.PathRefused):
            safefs.unlink_at(held.fd, "f", expected=(st.st_dev, st.st_ino + 1))
        assert safefs.unlink_at(held.fd, "f", expected=(st.st_dev, st.st_ino)) is True
        assert safefs.unlink_at(held.fd, "f") is False


def test_rmdir_at_removes_only_the_empty_directory_expected(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_bytes(b"")
    os.symlink(str(tmp_path / "d"), str(tmp_path / "link"))
    st = os.lstat(tmp_path / "d")
    with safefs.open_dir(str(tmp_path)) as held:
        with pytest.raises(safefs.PathRefused, match="not the directory that was checked"):
            safefs.rmdir_at(held.fd, "d", expected=(st.st_dev, st.st_ino + 1))
        with pytest.raises(safefs.PathRefused, match="a symlink, not a directory"):
            safefs.rmdir_at(held.fd, "link")
        with pytest.raises(OSError) as err:
            safefs.rmdir_at(held.fd, "full")
        assert err.value.errno == errno.ENOTEMPTY
        assert safefs.rmdir_at(held.fd, "d", expected=(st.st_dev, st.st_ino)) is True
        assert safefs.rmdir_at(held.fd, "d") is False
    assert (tmp_path / "link").is_symlink() and (tmp_path / "full" / "x").exists()


def test_set_mode_and_set_owner_act_on_the_descriptor_only_when_needed(tmp_path):
    (tmp_path / "f").write_bytes(b"1")
    os.chmod(tmp_path / "f", 0o644)
    fd = os.open(str(tmp_path / "f"), safefs.HANDLE_FLAGS)  # an O_PATH handle: through /proc/self/fd
    try:
        assert safefs.set_mode(fd, 0o600) is True
        assert safefs.set_mode(fd, 0o600) is False
        assert safefs.set_owner(fd, os.getuid(), os.getgid()) is False
    finally:
        os.close(fd)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o600


def test_a_refused_symlink_names_the_real_path_it_leads_to(tmp_path):
    os.chmod(tmp_path, 0o777)
    (tmp_path / "data" / "hermes").mkdir(parents=True)
    os.symlink("data", str(tmp_path / "link"))
    with pytest.raises(safefs.PathRefused) as caught:
        safefs.open_dir(str(tmp_path / "link" / "hermes"))
    real = str(tmp_path / "data" / "hermes")
    assert caught.value.real_path == real
    assert "(it leads to %s now)" % real in str(caught.value)
    assert "\n" not in str(caught.value)


def test_real_path_hint_follows_every_link_through_descriptors_or_says_none(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    os.symlink("a/b", str(tmp_path / "l1"))
    os.symlink(str(tmp_path / "l1"), str(tmp_path / "l2"))
    os.symlink("l3", str(tmp_path / "l3"))  # a loop
    (tmp_path / "f").write_text("x")
    assert safefs.real_path_hint(str(tmp_path / "l2" / ".." / "b")) == str(tmp_path / "a" / "b")
    assert safefs.real_path_hint(str(tmp_path / "l3")) is None
    assert safefs.real_path_hint(str(tmp_path / "missing")) is None
    assert safefs.real_path_hint(str(tmp_path / "f")) is None
    assert safefs.real_path_hint("relative") is None


def test_with_fix_adds_a_fix_only_to_a_reason_that_names_none():
    bare = safefs.PathRefused("/x/config.yaml", "is a FIFO, not a regular file (never opened)")
    assert bare.with_fix("make it a regular file") == \
        "/x/config.yaml: is a FIFO, not a regular file (never opened); make it a regular file"
    fixed = safefs.PathRefused("/x/c", "has 2 hard links: never read; look at it, then run again")
    assert fixed.with_fix("other") == str(fixed)
