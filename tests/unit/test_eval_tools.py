# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""_terminal.eval_tools: the crontab shim and the eval-run wrapper installed through descriptors
(raced in tests/integration/test_race_writers.py)."""
import os
import stat
import subprocess

import pytest
from sandboxguard import crontab, home_mode
from sandboxguard._core import safefs
from sandboxguard._terminal import eval_tools


def test_install_text_writes_then_leaves_an_identical_file_alone(tmp_path):
    path, changed = eval_tools.install_text(str(tmp_path / "a" / "bin"), "tool", b"#!/bin/sh\n")
    assert changed and path == str(tmp_path / "a" / "bin" / "tool")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(str(tmp_path / "a")).st_mode) == 0o755  # every user reaches the tools
    assert eval_tools.install_text(str(tmp_path / "a" / "bin"), "tool", b"#!/bin/sh\n") == (path, False)
    assert eval_tools.install_text(str(tmp_path / "a" / "bin"), "tool", b"#!/bin/sh\n", mode=0o700) == (path, True)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


@pytest.mark.parametrize("kind", ["symlink", "fifo", "hardlink"])
def test_what_is_at_the_name_is_replaced_never_followed_or_written_through(tmp_path, kind):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    target = tmp_path / "target"
    target.write_bytes(b"keep\n")
    if kind == "symlink":
        (bin_dir / "crontab").symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(str(bin_dir / "crontab"))
    else:
        os.link(str(target), str(bin_dir / "crontab"))
    path, changed = eval_tools.install_text(str(bin_dir), "crontab", b"#!/bin/sh\nshim\n")
    assert changed
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and st.st_nlink == 1
    assert target.read_bytes() == b"keep\n"


def test_a_bin_dir_through_a_symlink_others_can_change_is_refused(tmp_path):
    os.chmod(str(tmp_path), 0o777)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(safefs.PathRefused, match="goes through a symlink"):
        eval_tools.install_text(str(tmp_path / "link" / "bin"), "crontab", b"x")
    assert list((tmp_path / "real").iterdir()) == []
    with pytest.raises(home_mode.HomeModeError, match="goes through a symlink"):
        home_mode.install_eval_tools(str(tmp_path / "link" / "bin"), python="/usr/bin/python3")


def test_dry_run_writes_nothing_and_says_whether_it_would_change(tmp_path):
    assert eval_tools.install_text(str(tmp_path / "bin"), "x", b"y", dry_run=True) == (str(tmp_path / "bin/x"), True)
    assert not (tmp_path / "bin").exists()
    eval_tools.install_text(str(tmp_path / "bin"), "x", b"y")
    assert eval_tools.install_text(str(tmp_path / "bin"), "x", b"y", dry_run=True)[1] is False


def test_crontab_install_shim_is_the_same_installer_and_the_shim_stays_standalone(tmp_path):
    path, changed = crontab.install_shim(str(tmp_path), python="/usr/bin/python3")
    assert changed
    assert eval_tools.install_shim(str(tmp_path), python="/usr/bin/python3") == (path, False)
    text = open(path).read()
    assert "from ." not in text and "import sandboxguard" not in text
    # it runs alone, without the package on the path
    proc = subprocess.run(["/usr/bin/python3", path, "-"], input=b"@daily true\n", cwd="/", capture_output=True,
                          env={"PATH": "/usr/bin:/bin", "EVAL_CRONTAB_FILE": str(tmp_path / "table")}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "table").read_bytes().endswith(b"@daily true\n")


def test_remove_eval_tools_removes_its_two_files_and_its_default_directory_once(tmp_path, monkeypatch):
    bin_dir = str(tmp_path / "lib" / "eval-bin")
    monkeypatch.setattr(eval_tools, "DEFAULT_EVAL_BIN", bin_dir)  # the default the installer made
    home_mode.install_eval_tools(bin_dir)
    dry = eval_tools.remove_eval_tools(bin_dir, dry_run=True)
    assert dry["changed"] and dry["removed"] == [bin_dir + "/crontab", bin_dir + "/sandboxguard-eval-run", bin_dir]
    assert sorted(os.listdir(bin_dir)) == ["crontab", "sandboxguard-eval-run"]
    done = eval_tools.remove_eval_tools(bin_dir)
    assert done["removed"] == dry["removed"] and not done["warnings"]
    assert not os.path.exists(bin_dir) and os.path.isdir(str(tmp_path / "lib"))
    again = eval_tools.remove_eval_tools(bin_dir)
    assert not again["changed"] and again["removed"] == []


@pytest.mark.parametrize("kind", ["foreign text", "symlink", "hardlink"])
def test_remove_eval_tools_leaves_what_it_did_not_write(tmp_path, kind):
    bin_dir = tmp_path / "bin"
    home_mode.install_eval_tools(str(bin_dir))
    target = tmp_path / "target"
    target.write_bytes(b"keep\n")
    os.unlink(str(bin_dir / "crontab"))
    if kind == "foreign text":
        (bin_dir / "crontab").write_bytes(b"#!/bin/sh\nexec /usr/bin/crontab \"$@\"\n")
    elif kind == "symlink":
        (bin_dir / "crontab").symlink_to(target)
    else:
        os.link(str(target), str(bin_dir / "crontab"))
    done = eval_tools.remove_eval_tools(str(bin_dir))
    assert done["removed"] == [str(bin_dir / "sandboxguard-eval-run")]
    assert len(done["warnings"]) == 1 and done["warnings"][0].startswith("%s/crontab left in place: " % bin_dir)
    assert os.listdir(str(bin_dir)) == ["crontab"] and target.read_bytes() == b"keep\n"


def test_remove_eval_tools_keeps_a_directory_the_operator_chose_even_empty(tmp_path):
    bin_dir = str(tmp_path / "opt-bin")
    home_mode.install_eval_tools(bin_dir)
    done = eval_tools.remove_eval_tools(bin_dir)
    assert done["removed"] == [bin_dir + "/crontab", bin_dir + "/sandboxguard-eval-run"]
    assert os.listdir(bin_dir) == []


def test_a_shim_installed_before_the_shim_moved_is_still_recognised_and_removed(tmp_path):
    # 1.1's shim was crontab.py's own text: its docstring opened with the marker sentence, which
    # crontab_shim.py keeps word for word on its second line (a reworded one would strand every shim).
    old_start = ('#!/usr/bin/python3\n# Copyright (c) sandboxguard contributors\n# SPDX-License-' 'Identifier: '
                 'Apache-2.0\n"""A crontab that behaves like Debian\'s and writes into the eval run directory.\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "crontab").write_text(old_start + "x" * 4096)
    assert eval_tools.remove_eval_tools(str(bin_dir))["removed"] == [str(bin_dir / "crontab")]
    path, _changed = crontab.install_shim(str(bin_dir), python="/usr/bin/python3")
    assert eval_tools.remove_eval_tools(str(bin_dir))["removed"] == [path]
