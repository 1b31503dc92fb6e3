# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""strip.fix_file_at: one file fixed through a held directory fd (the real-time guard's path)."""
import os
import stat
import threading

import pytest
from sandboxguard import caps as capsmod
from sandboxguard import strip

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_strip_fix_file_at.py must run as root", pytrace=False)

NET_RAW = capsmod.CAP_NAMES.index("cap_net_raw")


def make_file(path, mode=0o755, uid=0, gid=0):
    path = os.fspath(path)
    with open(path, "wb") as handle:
        handle.write(b"#!/bin/sh\n")
    os.chown(path, uid, gid)
    os.chmod(path, mode)
    return path


def set_caps(path):
    os.setxattr(os.fspath(path), capsmod.XATTR_NAME, capsmod.encode_vfs_cap(permitted=(NET_RAW,), effective=True))


def has_caps(path):
    return capsmod.XATTR_NAME in os.listxattr(os.fspath(path), follow_symlinks=False)


def mode_of(path):
    return stat.S_IMODE(os.lstat(os.fspath(path)).st_mode)


@pytest.fixture
def held(tmp_path):
    """A sandbox directory and a descriptor held on it, as the guard holds one."""
    root = tmp_path / "sandbox"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    yield root, fd
    os.close(fd)


def test_setuid_file_with_caps_is_fixed_and_reported_in_the_strip_entry_shape(held):
    root, fd = held
    f = make_file(root / "tool", 0o6755, uid=1000, gid=1000)
    set_caps(f)
    entry = strip.fix_file_at(fd, "tool", None, "/display/tool")
    assert mode_of(f) == 0o755 and not has_caps(f)
    assert entry["path"] == "/display/tool" and entry["type"] == "file"
    assert entry["mode_before"] == "06755" and entry["mode_after"] == "0755"
    assert entry["caps_before"] == "cap_net_raw=ep"
    assert entry["actions"] == ["setuid", "setgid", "caps"]
    assert (entry["uid"], entry["gid"], entry["nlink"]) == (1000, 1000, 1)
    assert "error" not in entry


def test_second_fix_of_the_same_file_returns_none(held):
    root, fd = held
    make_file(root / "tool", 0o4755)
    assert strip.fix_file_at(fd, "tool", {}) is not None
    assert strip.fix_file_at(fd, "tool", {}) is None


def test_plain_file_missing_name_and_fifo_return_none(held):
    root, fd = held
    make_file(root / "plain", 0o755)
    os.mkfifo(root / "fifo")
    os.chmod(root / "fifo", 0o6644)
    assert strip.fix_file_at(fd, "plain") is None
    assert strip.fix_file_at(fd, "gone") is None
    assert strip.fix_file_at(fd, "fifo") is None
    assert mode_of(root / "fifo") == 0o6644


def test_symlink_name_is_never_followed(held, tmp_path):
    root, fd = held
    outside = make_file(tmp_path / "host-suid", 0o4755)
    set_caps(outside)
    os.symlink(outside, root / "link")
    assert strip.fix_file_at(fd, "link") is None
    assert mode_of(outside) == 0o4755 and has_caps(outside)


def test_expected_identity_mismatch_raises_and_changes_nothing(held):
    root, fd = held
    f = make_file(root / "tool", 0o4755)
    other = os.lstat(make_file(root / "other", 0o755))
    with pytest.raises(strip.ChangedUnderUs):
        strip.fix_file_at(fd, "tool", expected=(other.st_dev, other.st_ino))
    assert mode_of(f) == 0o4755
    st = os.lstat(f)
    assert strip.fix_file_at(fd, "tool", expected=(st.st_dev, st.st_ino))["actions"] == ["setuid"]


def test_symlink_swapped_in_for_the_expected_file_raises(held, tmp_path):
    root, fd = held
    f = make_file(root / "tool", 0o4755)
    st = os.lstat(f)
    outside = make_file(tmp_path / "host-suid", 0o4755)
    os.unlink(f)
    os.symlink(outside, f)
    with pytest.raises(strip.ChangedUnderUs):
        strip.fix_file_at(fd, "tool", expected=(st.st_dev, st.st_ino))
    assert mode_of(outside) == 0o4755


def test_non_utf8_bytes_name_is_fixed_and_display_path_is_surrogate_escaped(held):
    root, fd = held
    name = b"bad-\xff\nname"
    path = os.path.join(os.fsencode(root), name)
    make_file(path, 0o2755)
    entry = strip.fix_file_at(fd, name)
    assert mode_of(path) == 0o755
    assert entry["path"] == os.fsdecode(name) and entry["actions"] == ["setgid"]


def test_ownership_return_with_the_strip_options(held):
    root, fd = held
    f = make_file(root / "tool", 0o4755, uid=0, gid=0)
    entry = strip.fix_file_at(fd, "tool", {"actions": ("chown", "setid", "caps"), "chown_to": (1234, 4321)})
    st = os.lstat(f)
    assert (st.st_uid, st.st_gid) == (1234, 4321) and stat.S_IMODE(st.st_mode) == 0o755
    assert entry["actions"] == ["chown", "setuid"]
    assert (entry["uid_after"], entry["gid_after"]) == (1234, 4321)


def test_dry_run_reports_what_would_change_and_changes_nothing(held):
    root, fd = held
    f = make_file(root / "tool", 0o4755)
    set_caps(f)
    entry = strip.fix_file_at(fd, "tool", strip.StripOptions(dry_run=True))
    assert mode_of(f) == 0o4755 and has_caps(f)
    assert entry["mode_after"] == "0755" and entry["actions"] == ["setuid", "caps"]


def test_hard_link_skip_policy_reports_and_leaves_the_file(held, tmp_path):
    root, fd = held
    f = make_file(root / "tool", 0o4755)
    os.link(f, tmp_path / "second-name")
    entry = strip.fix_file_at(fd, "tool", {"hardlinks": "skip"})
    assert mode_of(f) == 0o4755 and "hardlinks=skip" in entry["skipped"]


def test_only_the_bits_the_options_ask_for_are_cleared(held):
    root, fd = held
    f = make_file(root / "tool", 0o6755)
    set_caps(f)
    entry = strip.fix_file_at(fd, "tool", {"setgid": False, "actions": ("setid",)})
    assert mode_of(f) == 0o2755 and has_caps(f) and entry["actions"] == ["setuid"]


def test_runs_in_a_threaded_caller_without_moving_its_working_directory(held):
    root, fd = held
    f = make_file(root / "tool", 0o4755)
    cwd = os.getcwd()
    results = []
    thread = threading.Thread(target=lambda: results.append(strip.fix_file_at(fd, "tool")))
    thread.start()
    thread.join()
    assert results[0]["actions"] == ["setuid"] and mode_of(f) == 0o755 and os.getcwd() == cwd


@pytest.mark.parametrize("options", [{"budget": float("nan")}, {"chown_to": (99999999999, 0), "actions": ("chown",)},
                                     {"caps_method": "rm"}, {"actions": ("delete",)}])
def test_bad_options_raise_value_error_before_anything_is_opened(held, options):
    root, fd = held
    f = make_file(root / "tool", 0o4755)
    with pytest.raises(ValueError):
        strip.fix_file_at(fd, "tool", options)
    assert mode_of(f) == 0o4755
