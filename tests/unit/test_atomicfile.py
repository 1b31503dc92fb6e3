# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The library's one atomic write (sandboxguard._core.atomicfile), and that the writers use it."""
import ast
import os
import stat

import pytest
from sandboxguard import hermes_config, leaks
from sandboxguard._core import atomicfile
from sandboxguard._fleet import audit_report

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


# Every rename in the library, line by line, each with its reason. Closed: a new one fails
# (use atomicfile.write_at to write a file, safefs.rename_at to move one), and an entry here
# that no longer matches fails too. (file, function, the line as written) -> why.
RENAMES_ALLOWED = {
    ("_core/atomicfile.py", "write_at", "os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)"):
        "the library's one atomic whole-file write: the temporary file onto the name, under the held directory",
    ("_core/fdops.py", "rename_at", "os.rename(src_name, dst_name, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)"):
        "the one renameat between two held directories (safemove moves a leak into quarantine with it): "
        "a move, not a write",
    ("_terminal/crontab_shim.py", "_write_private", "os.replace(tmp, path)"):
        "the crontab shim's own atomic write of its table: crontab_shim.py also runs standalone, where the package "
        "(atomicfile) cannot be imported; the table only, written as the user the eval runs as",
}
RENAMING = {("os", "rename"), ("os", "replace"), ("os", "renames"), ("shutil", "move")}


def _renames(tree, lines):
    """(function, line) of every use of a renaming call: os.rename/replace/renames, shutil.move,
    their from-imports and getattr spellings, and renameat(2) through ctypes."""
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            hit = False
            if isinstance(child, ast.Attribute):
                hit = child.attr in ("renameat", "renameat2") or (
                    isinstance(child.value, ast.Name) and (child.value.id, child.attr) in RENAMING)
            elif isinstance(child, ast.ImportFrom):
                hit = any((child.module, alias.name) in RENAMING for alias in child.names)
            elif isinstance(child, ast.Call) and getattr(child.func, "id", None) == "getattr" and len(child.args) > 1:
                target, attr = child.args[0], child.args[1]
                hit = (isinstance(target, ast.Name) and isinstance(attr, ast.Constant)
                       and (target.id, attr.value) in RENAMING)
            elif isinstance(child, ast.Constant) and isinstance(child.value, (str, bytes)):
                hit = child.value in ("renameat", "renameat2", b"renameat", b"renameat2")
            if hit:
                found.append((function, lines[child.lineno - 1].strip()))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def renames_outside_the_allowlist(src=SRC):
    seen, found = set(), []
    for where, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(where, name)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            for function, line in _renames(ast.parse(text, path), text.splitlines()):
                key = next((k for k in RENAMES_ALLOWED if k[:2] == (rel, function) and k[2] in line), None)
                if key is None or key in seen:
                    found.append("%s: %s(): %s" % (rel, function, line))
                seen.add(key)
    stale = ["allowed but not there any more (drop it from RENAMES_ALLOWED): %s: %s(): %s" % key
             for key in sorted(set(RENAMES_ALLOWED) - seen)]
    return found + stale if src == SRC else found


def test_no_other_module_of_the_library_writes_a_file_by_rename():
    # One decision, one place: a new writer uses atomicfile.write_at, a new move safefs.rename_at.
    assert renames_outside_the_allowlist() == []


def test_the_rename_rule_sees_every_spelling_and_only_the_allowed_lines(tmp_path):
    (tmp_path / "_terminal").mkdir()
    (tmp_path / "_terminal" / "crontab_shim.py").write_text(
        "import os\nfrom os import replace\nimport shutil\n\n"
        "def _write_private(path, tmp):\n    os.replace(tmp, path)\n    os.rename(tmp, path)\n\n"
        "def install(a, b):\n    os.replace(a, b)\n    shutil.move(a, b)\n    getattr(os, 'renames')(a, b)\n"
        "    libc.renameat2(-100, a, -100, b, 0)\n")
    assert renames_outside_the_allowlist(str(tmp_path)) == [
        "_terminal/crontab_shim.py: <module>(): from os import replace",
        "_terminal/crontab_shim.py: _write_private(): os.rename(tmp, path)",
        "_terminal/crontab_shim.py: install(): os.replace(a, b)",
        "_terminal/crontab_shim.py: install(): shutil.move(a, b)",
        "_terminal/crontab_shim.py: install(): getattr(os, 'renames')(a, b)",
        "_terminal/crontab_shim.py: install(): libc.renameat2(-100, a, -100, b, 0)",
    ]
