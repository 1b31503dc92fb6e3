# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""install.install_tree: the library and CLI tree written in one call, only what differs,
atomically, never through a symbolic link, pruning only what it owns."""
import os
import stat

import pytest
from sandboxguard._privileged import install

TREE = {"pkg/__init__.py": "", "pkg/mod.py": "X = 1\n", "pkg/sub/deep.py": "Y = 2\n", "cli/main.py": "print()\n"}


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_tree_is_written_with_its_modes_and_a_second_run_changes_nothing(tmp_path):
    dest = tmp_path / "lib"
    first = install.install_tree(str(dest), TREE)
    assert first["changed"] is True and first["written"] == sorted(TREE) and first["removed"] == []
    assert first["counts"] == {"files": 4, "written": 4, "removed": 0, "unchanged": 0}
    for rel, text in TREE.items():
        assert (dest / rel).read_text() == text and _mode(dest / rel) == 0o644
    assert _mode(dest) == _mode(dest / "pkg" / "sub") == 0o755
    second = install.install_tree(str(dest), TREE)
    assert second["changed"] is False and second["written"] == [] and second["counts"]["unchanged"] == 4
    assert set(second) >= {"roots", "changed", "complete", "errors", "warnings", "counts", "elapsed"}


def test_only_files_whose_content_or_mode_differ_are_rewritten(tmp_path):
    dest = tmp_path / "lib"
    install.install_tree(str(dest), TREE)
    (dest / "pkg" / "mod.py").write_text("X = 'tampered'\n")
    os.chmod(dest / "cli" / "main.py", 0o666)
    untouched = os.lstat(dest / "pkg" / "sub" / "deep.py").st_ino
    result = install.install_tree(str(dest), TREE)
    assert result["written"] == ["cli/main.py", "pkg/mod.py"]
    assert (dest / "pkg" / "mod.py").read_text() == "X = 1\n" and _mode(dest / "cli" / "main.py") == 0o644
    assert os.lstat(dest / "pkg" / "sub" / "deep.py").st_ino == untouched


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_as_root_a_file_owned_by_someone_else_is_given_back_to_root(tmp_path):
    dest = tmp_path / "lib"
    install.install_tree(str(dest), TREE)
    os.chown(dest / "pkg" / "mod.py", 1000, 1000)
    assert install.install_tree(str(dest), TREE)["written"] == ["pkg/mod.py"]
    st = os.lstat(dest / "pkg" / "mod.py")
    assert (st.st_uid, st.st_gid) == (0, 0)


def test_stale_files_go_only_from_listed_directories_and_only_with_the_suffix(tmp_path):
    dest = tmp_path / "lib"
    install.install_tree(str(dest), TREE)
    (dest / "pkg" / "gone.py").write_text("old\n")
    (dest / "pkg" / "notes.txt").write_text("keep\n")
    (dest / "pkg" / "__pycache__").mkdir()
    (dest / "other").mkdir()
    (dest / "other" / "theirs.py").write_text("keep\n")
    result = install.install_tree(str(dest), TREE)
    assert result["removed"] == ["pkg/gone.py"] and result["written"] == []
    assert not (dest / "pkg" / "gone.py").exists()
    assert (dest / "pkg" / "notes.txt").exists() and (dest / "other" / "theirs.py").exists()
    assert (dest / "pkg" / "__pycache__").is_dir()


def test_dry_run_reports_what_would_change_and_writes_nothing(tmp_path):
    dest = tmp_path / "lib"
    result = install.install_tree(str(dest), TREE, dry_run=True)
    assert result["changed"] is True and result["written"] == sorted(TREE)
    assert not dest.exists()
    install.install_tree(str(dest), TREE)
    (dest / "pkg" / "gone.py").write_text("old\n")
    (dest / "pkg" / "mod.py").write_text("tampered\n")
    result = install.install_tree(str(dest), TREE, dry_run=True)
    assert (result["written"], result["removed"]) == (["pkg/mod.py"], ["pkg/gone.py"])
    assert (dest / "pkg" / "gone.py").exists() and (dest / "pkg" / "mod.py").read_text() == "tampered\n"


def test_a_symlink_where_a_directory_belongs_is_refused_and_its_target_untouched(tmp_path):
    dest = tmp_path / "lib"
    outside = tmp_path / "outside"
    outside.mkdir()
    dest.mkdir()
    (dest / "pkg").symlink_to(outside)
    with pytest.raises(install.InstallError, match=r"lib/pkg: not a directory"):
        install.install_tree(str(dest), TREE)
    assert list(outside.iterdir()) == []


def test_a_symlinked_install_directory_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "lib").symlink_to(real)
    with pytest.raises(install.InstallError, match="not a directory"):
        install.install_tree(str(tmp_path / "lib"), TREE)
    assert list(real.iterdir()) == []


def test_a_symlink_where_a_file_belongs_is_replaced_never_written_through(tmp_path):
    dest = tmp_path / "lib"
    install.install_tree(str(dest), TREE)
    target = tmp_path / "target.py"
    target.write_text("theirs\n")
    os.unlink(dest / "pkg" / "mod.py")
    (dest / "pkg" / "mod.py").symlink_to(target)
    assert install.install_tree(str(dest), TREE)["written"] == ["pkg/mod.py"]
    assert not os.path.islink(dest / "pkg" / "mod.py") and (dest / "pkg" / "mod.py").read_text() == "X = 1\n"
    assert target.read_text() == "theirs\n"


@pytest.mark.parametrize("name", ["/abs.py", "../up.py", "pkg/../x.py", "pkg//x.py", "./x.py", ""])
def test_names_that_leave_the_tree_are_refused_before_anything_is_written(tmp_path, name):
    with pytest.raises(install.InstallError, match="relative path"):
        install.install_tree(str(tmp_path / "lib"), dict(TREE, **{name: "x"}))
    assert not (tmp_path / "lib").exists()


def test_a_missing_parent_directory_is_named(tmp_path):
    with pytest.raises(install.InstallError, match="cannot be opened"):
        install.install_tree(str(tmp_path / "nope" / "lib"), TREE)


def test_no_temporary_file_is_left_behind(tmp_path):
    dest = tmp_path / "lib"
    install.install_tree(str(dest), TREE)
    names = [n for _d, _s, files in os.walk(dest) for n in files]
    assert sorted(names) == sorted(os.path.basename(r) for r in TREE)


def _compile(path):
    """What `python3 file` leaves: __pycache__/<stem>.cpython-XY.pyc beside it."""
    cache = path.parent / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / (path.stem + ".cpython-311.pyc")).write_bytes(b"\x00")


def test_remove_tree_takes_out_the_tree_and_its_bytecode_then_changes_nothing(tmp_path):
    dest = tmp_path / "lib"
    install.install_tree(str(dest), TREE)
    _compile(dest / "pkg" / "mod.py")
    (dest / "pkg" / "old.py").write_text("")  # what an older install left in a listed directory
    dry = install.remove_tree(str(dest), TREE, dry_run=True)
    assert dry["changed"] and (dest / "pkg" / "mod.py").exists()
    done = install.remove_tree(str(dest), TREE)
    assert done["removed"] == dry["removed"] == sorted([
        "./", "cli/", "cli/main.py", "pkg/", "pkg/__init__.py", "pkg/__pycache__/",
        "pkg/__pycache__/mod.cpython-311.pyc", "pkg/mod.py", "pkg/old.py", "pkg/sub/", "pkg/sub/deep.py"])
    assert not dest.exists() and tmp_path.is_dir()
    again = install.remove_tree(str(dest), TREE)
    assert again["changed"] is False and again["removed"] == []


def test_remove_tree_leaves_what_it_did_not_install_and_the_directories_holding_it(tmp_path):
    dest = tmp_path / "lib"
    install.install_tree(str(dest), TREE)
    (dest / "eval-bin").mkdir()  # another role's tools beside the tree
    (dest / "eval-bin" / "crontab").write_text("#!/bin/sh\n")
    (dest / "pkg" / "sub" / "notes.txt").write_text("mine\n")
    cache = dest / "pkg" / "__pycache__"
    cache.mkdir()
    (cache / "foreign.cpython-311.pyc").write_bytes(b"\x00")
    done = install.remove_tree(str(dest), list(TREE))  # the paths alone will do
    assert sorted(done["removed"]) == ["cli/", "cli/main.py", "pkg/__init__.py", "pkg/mod.py", "pkg/sub/deep.py"]
    assert (dest / "eval-bin" / "crontab").exists() and (dest / "pkg" / "sub" / "notes.txt").exists()
    assert (cache / "foreign.cpython-311.pyc").exists()


def test_remove_tree_never_follows_a_link_where_a_directory_was(tmp_path):
    dest = tmp_path / "lib"
    install.install_tree(str(dest), TREE)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "mod.py").write_text("keep\n")
    for name in os.listdir(str(dest / "pkg" / "sub")):
        os.unlink(str(dest / "pkg" / "sub" / name))
    os.rmdir(str(dest / "pkg" / "sub"))
    os.symlink(str(victim), str(dest / "pkg" / "sub"))
    with pytest.raises(install.InstallError, match="not a directory"):
        install.remove_tree(str(dest), TREE)
    assert (victim / "mod.py").read_text() == "keep\n"


def test_remove_tree_of_a_missing_install_changes_nothing(tmp_path):
    assert install.remove_tree(str(tmp_path / "nowhere" / "lib"), TREE)["changed"] is False
    assert install.remove_tree(str(tmp_path / "lib"), TREE)["removed"] == []
