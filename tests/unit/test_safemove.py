# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""safemove: a file, link or tree moved between held directories through descriptors; the
copy across file systems is called directly here (tests/integration/test_race_quarantine.py
moves across a real tmpfs and races the moves)."""
import io
import os
import stat

import pytest
from sandboxguard._core import atomicfile, safefs, safemove


def held(path):
    return safefs.open_dir(str(path))


def ident(path):
    st = os.lstat(path)
    return st.st_dev, st.st_ino


def test_move_at_renames_the_name_itself_on_one_file_system(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "dst").mkdir()
    os.symlink("/etc/shadow", str(tmp_path / "src" / "link"))
    with held(tmp_path / "src") as src, held(tmp_path / "dst") as dst:
        result = safemove.move_at(src.fd, "link", dst.fd, "link", ident(tmp_path / "src" / "link"))
    assert result.how == "renamed" and result.left == []
    assert os.readlink(tmp_path / "dst" / "link") == "/etc/shadow", "a link moves as a link"


def test_move_at_leaves_another_inode_where_it_is(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "dst").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"1")
    dev, ino = ident(tmp_path / "src" / "f")
    with held(tmp_path / "src") as src, held(tmp_path / "dst") as dst:
        with pytest.raises(safefs.PathRefused, match="not the file that was checked"):
            safemove.move_at(src.fd, "f", dst.fd, "f", (dev, ino + 1))
        with pytest.raises(safefs.PathRefused, match="not the file that was checked"):
            safemove.copy_then_remove(src.fd, "f", dst.fd, "f", (dev, ino + 1))
    assert (tmp_path / "src" / "f").exists() and not (tmp_path / "dst" / "f").exists()


def _tree(top):
    (top / "sub" / "deep").mkdir(parents=True)
    (top / "sub" / "deep" / "big").write_bytes(b"y" * (2 << 20 | 17))
    (top / "tool").write_bytes(b"#!/bin/sh\n")
    os.chmod(top / "tool", 0o6755)
    os.symlink("../../etc/passwd", str(top / "sub" / "up"))
    os.mkfifo(str(top / "pipe"), 0o640)
    (top / "empty").mkdir(mode=0o750)
    os.chmod(top / "empty", 0o750)


def test_copy_then_remove_copies_a_tree_through_descriptors_and_removes_the_source(tmp_path):
    (tmp_path / "src" / "run").mkdir(parents=True)
    (tmp_path / "dst").mkdir()
    _tree(tmp_path / "src" / "run")
    os.chmod(tmp_path / "src" / "run", 0o751)
    with held(tmp_path / "src") as src, held(tmp_path / "dst") as dst:
        result = safemove.copy_then_remove(src.fd, "run", dst.fd, "run", ident(tmp_path / "src" / "run"))
    assert result.how == "copied" and result.left == [] and result.entries == 8
    assert os.listdir(tmp_path / "src") == []
    copy = tmp_path / "dst" / "run"
    assert (copy / "sub" / "deep" / "big").read_bytes() == b"y" * (2 << 20 | 17)
    assert stat.S_IMODE(os.stat(copy / "tool").st_mode) == 0o755, "setuid and setgid never copied"
    assert os.readlink(copy / "sub" / "up") == "../../etc/passwd"
    assert stat.S_ISFIFO(os.lstat(copy / "pipe").st_mode) and stat.S_IMODE(os.lstat(copy / "pipe").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(copy / "empty").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(copy).st_mode) == 0o751


def test_copy_then_remove_of_a_single_file_and_a_symlink(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "dst").mkdir()
    (tmp_path / "src" / "job").write_bytes(b"at job\n")
    os.chmod(tmp_path / "src" / "job", 0o2700)
    os.symlink("/etc", str(tmp_path / "src" / "etc"))
    with held(tmp_path / "src") as src, held(tmp_path / "dst") as dst:
        for name in ("job", "etc"):
            assert safemove.copy_then_remove(src.fd, name, dst.fd, name, ident(tmp_path / "src" / name)).how == "copied"
    assert os.listdir(tmp_path / "src") == []
    assert (tmp_path / "dst" / "job").read_bytes() == b"at job\n"
    assert stat.S_IMODE(os.stat(tmp_path / "dst" / "job").st_mode) == 0o700
    assert os.readlink(tmp_path / "dst" / "etc") == "/etc" and os.path.isdir("/etc")


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device needs root")
def test_a_device_node_is_never_copied_and_stays_while_the_rest_moves(tmp_path):
    (tmp_path / "src" / "run").mkdir(parents=True)
    (tmp_path / "dst").mkdir()
    os.mknod(str(tmp_path / "src" / "run" / "null"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
    (tmp_path / "src" / "run" / "log").write_bytes(b"1")
    with held(tmp_path / "src") as src, held(tmp_path / "dst") as dst:
        result = safemove.copy_then_remove(src.fd, "run", dst.fd, "run", ident(tmp_path / "src" / "run"))
    with held(tmp_path / "src" / "run") as src, held(tmp_path / "dst") as dst:
        with pytest.raises(safefs.PathRefused, match="device node"):  # a device as the leak itself
            safemove.copy_then_remove(src.fd, "null", dst.fd, "null", ident(tmp_path / "src" / "run" / "null"))
    assert [os.path.basename(path) for path, _why in result.left] == ["null"]
    assert "device node" in result.left[0][1]
    assert sorted(os.listdir(tmp_path / "src" / "run")) == ["null"] and (tmp_path / "dst" / "run" / "log").exists()


def test_a_tree_past_the_entry_limit_stops_there_and_names_it(tmp_path):
    run = tmp_path / "src" / "run"
    run.mkdir(parents=True)
    (tmp_path / "dst").mkdir()
    for index in range(6):
        (run / ("f%d" % index)).write_bytes(b"")
    with held(tmp_path / "src") as src, held(tmp_path / "dst") as dst:
        result = safemove.copy_then_remove(src.fd, "run", dst.fd, "run", ident(run), max_entries=4)
    assert len(result.left) == 1 and "more than 4 entries" in result.left[0][1]
    assert len(os.listdir(run)) == 3 and len(os.listdir(tmp_path / "dst" / "run")) == 3, "3 moved, 3 stay"


def test_a_source_directory_replaced_before_its_removal_is_named_and_left(tmp_path, monkeypatch):
    run = tmp_path / "src" / "run"
    run.mkdir(parents=True)
    (tmp_path / "dst").mkdir()
    (run / "a").write_bytes(b"1")
    real = safefs.rmdir_at

    def swapped(dir_fd, name, expected=None, path_for_errors=None):
        os.rename(str(run), str(tmp_path / "src" / "moved-away"))  # the agent swaps its own directory
        os.mkdir(str(run))
        return real(dir_fd, name, expected, path_for_errors)

    monkeypatch.setattr(safefs, "rmdir_at", swapped)
    with held(tmp_path / "src") as src, held(tmp_path / "dst") as dst:
        result = safemove.copy_then_remove(src.fd, "run", dst.fd, "run", ident(run))
    assert [why for _path, why in result.left] == ["is not the directory that was checked (replaced since); left "
                                                   "alone"]
    assert run.is_dir() and (tmp_path / "dst" / "run" / "a").read_bytes() == b"1"


def test_write_at_streams_a_file_object(tmp_path):
    with held(tmp_path) as top:
        atomicfile.write_at(top.fd, "f", io.BytesIO(b"z" * (3 << 20)), mode=0o640)
    assert (tmp_path / "f").read_bytes() == b"z" * (3 << 20)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o640
