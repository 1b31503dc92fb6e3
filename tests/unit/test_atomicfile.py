# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The library's one atomic write (sandboxguard.atomicfile), and that the writers use it."""
import os
import re
import stat

import pytest
from sandboxguard import atomicfile, audit_report, hermes_config, leaks

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "python", "src", "sandboxguard")


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_file_gets_exactly_the_mode_asked_whatever_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        atomicfile.write(tmp_path / "report.html", "<p>x</p>\n", mode=0o644)
    finally:
        os.umask(old)
    assert (tmp_path / "report.html").read_text() == "<p>x</p>\n"
    assert _mode(tmp_path / "report.html") == 0o644
    assert os.listdir(tmp_path) == ["report.html"]


def test_an_existing_file_is_replaced_whole_and_no_temporary_file_stays(tmp_path):
    target = tmp_path / "config.yaml"
    target.write_text("old: 1\n")
    os.chmod(target, 0o666)
    before = os.stat(target).st_ino
    atomicfile.write(str(target), b"new: 2\n")
    assert target.read_bytes() == b"new: 2\n"
    assert _mode(target) == atomicfile.DEFAULT_MODE and os.stat(target).st_ino != before
    assert os.listdir(tmp_path) == ["config.yaml"]


def test_a_symlink_at_the_final_name_is_replaced_never_written_through(tmp_path):
    victim = tmp_path / "shadow"
    victim.write_text("root:x:0:\n")
    link = tmp_path / "crontab"
    link.symlink_to(victim)
    atomicfile.write(link, "* * * * * true\n")
    assert not os.path.islink(link) and link.read_text() == "* * * * * true\n"
    assert victim.read_text() == "root:x:0:\n"


def test_text_with_undecodable_bytes_survives_the_round_trip(tmp_path):
    text = os.fsdecode(b"/srv/caf\xe9\n")
    atomicfile.write(tmp_path / "t", text)
    assert (tmp_path / "t").read_bytes() == b"/srv/caf\xe9\n"


def test_a_failed_rename_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "baseline.json"
    target.write_text("{}\n")

    def no_rename(*_args, **_kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "rename", no_rename)
    with pytest.raises(OSError, match="Input/output"):
        atomicfile.write(target, "{\"items\": []}\n")
    assert target.read_text() == "{}\n" and os.listdir(tmp_path) == ["baseline.json"]


def test_a_missing_directory_is_an_oserror_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        atomicfile.write(tmp_path / "no-such-dir" / "f", "x")
    assert str(tmp_path / "no-such-dir") in str(info.value)


@pytest.mark.parametrize("name", ["", ".", "..", "a/b"])
def test_write_at_takes_a_name_in_its_directory_only(tmp_path, name):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(ValueError, match="not a file name"):
            atomicfile.write_at(fd, name, "x")
    finally:
        os.close(fd)


@pytest.mark.root
def test_the_owner_is_set_on_the_descriptor_before_the_rename(tmp_path):
    atomicfile.write(tmp_path / "table", "x\n", mode=0o600, owner=(65534, 65534))
    st = os.lstat(tmp_path / "table")
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o600)


def test_the_callers_own_ids_need_no_chown(tmp_path):
    atomicfile.write(tmp_path / "f", "x", owner=(os.geteuid(), os.getegid()))
    assert os.lstat(tmp_path / "f").st_uid == os.geteuid()


def test_the_writers_land_their_files_through_the_one_write(tmp_path, monkeypatch):
    calls = []
    real = atomicfile.write_at

    def spy(dir_fd, name, data, mode=atomicfile.DEFAULT_MODE, owner=None):
        calls.append((name, mode))
        return real(dir_fd, name, data, mode=mode, owner=owner)

    monkeypatch.setattr(atomicfile, "write_at", spy)
    leaks.write_baseline(str(tmp_path / "before.json"), {"items": []})
    hermes_config.write_like(str(tmp_path / "config.yaml"), "a: 1\n")
    audit_report._write_atomic(str(tmp_path / "boundary-audit.json"), "{}\n")
    assert calls == [("before.json", 0o600), ("config.yaml", 0o600), ("boundary-audit.json", 0o644)]


def test_no_other_module_of_the_library_writes_a_file_by_rename():
    # One decision, one place: a new writer uses atomicfile. The crontab shim keeps its own
    # copy (it runs standalone, without the package); leaks_remove's rename moves a leak
    # into quarantine (a move, not a write), through safefs.rename_at (the one renameat
    # between held directories).
    allowed = {"atomicfile.py": None, "crontab.py": None, "leaks_remove.py": "os.rename(path, dest)",
               "safefs.py": "os.rename(src_name, dst_name, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)"}
    found = []
    for name in sorted(os.listdir(SRC)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(SRC, name), encoding="utf-8") as handle:
            for line in handle:
                if re.search(r"\bos\.(replace|rename)\(", line):
                    if name in allowed and (allowed[name] is None or allowed[name] in line):
                        continue
                    found.append("%s: %s" % (name, line.strip()))
    assert found == []
