# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The one report envelope (sandboxguard.report): shape, errors, modes, merge."""
import errno
import os
import stat
import time

import pytest
from sandboxguard import fetch, report
from sandboxguard._walk import fileops, walk
from sandboxguard._walk.walk import new_report


def test_new_report_has_every_envelope_key_with_empty_values():
    rep = report.new_report(["/srv/a", "/srv/b"])
    assert rep == {"roots": ["/srv/a", "/srv/b"], "changed": False, "complete": True, "errors": [],
                   "warnings": [], "counts": {}, "elapsed": 0.0}
    assert tuple(rep)[:len(report.ENVELOPE_KEYS)] == report.ENVELOPE_KEYS


def test_new_report_roots_are_strings_for_bytes_single_paths_and_pathlike(tmp_path):
    assert report.new_report(b"/srv/caf\xc3\xa9")["roots"] == ["/srv/caf\u00e9"]
    assert report.new_report("/srv/one")["roots"] == ["/srv/one"]
    assert report.new_report(tmp_path)["roots"] == [str(tmp_path)]
    assert report.new_report([b"/a", "/b", tmp_path])["roots"] == ["/a", "/b", str(tmp_path)]
    assert report.new_report(None)["roots"] == []
    # a name that is not UTF-8 survives as its fsdecode form, not as a bytes repr
    assert report.new_report([b"/srv/\xff"])["roots"] == [os.fsdecode(b"/srv/\xff")]


def test_new_report_extra_keys_are_added_and_can_override_defaults():
    rep = report.new_report(["/x"], files=[], counts={"files": 0}, dry_run=True)
    assert rep["files"] == [] and rep["counts"] == {"files": 0} and rep["dry_run"] is True
    # each report gets its own lists
    other = report.new_report(["/x"])
    other["errors"].append(1)
    assert report.new_report(["/x"])["errors"] == []


@pytest.mark.parametrize("mode, text", [
    (0o644, "0644"), (0o755, "0755"), (0o4755, "04755"), (0o2755, "02755"), (0o6755, "06755"),
    (0o1777, "01777"), (0o7777, "07777"), (0o600, "0600"), (0o7, "0007"), (0, "0000"),
    (stat.S_IFREG | 0o644, "0644"), (stat.S_IFDIR | 0o4755, "04755"),
])
def test_mode_text_is_octal_with_one_leading_zero_and_no_type_bits(mode, text):
    assert report.mode_text(mode) == text
    assert int(text, 8) == stat.S_IMODE(mode)


def test_strip_and_fetch_print_modes_the_same_way():
    # strip's file entries are built in fileops (files) and walk (directories)
    assert fileops.envelope is report and walk.envelope is report
    assert vars(fetch)["envelope"] is report  # fetch's own wiring, not a name it offers


@pytest.mark.parametrize("error, text", [
    ("vanished during the walk", "vanished during the walk"),
    (OSError(errno.ENOENT, "No such file or directory"), "ENOENT: No such file or directory"),
    (PermissionError(errno.EACCES, "Permission denied"), "EACCES: Permission denied"),
    (OSError(errno.EPERM, "Operation not permitted"),
     "EPERM: Operation not permitted (immutable or append-only? check lsattr; or not root)"),
    (ValueError("bad owner 'x:'"), "ValueError: bad owner 'x:'"),
    (OSError("no errno here"), "OSError: no errno here"),
    (TimeoutError(), "TimeoutError"),
])
def test_error_text_is_one_line_for_strings_oserrors_and_other_exceptions(error, text):
    assert report.error_text(error) == text


def test_add_error_records_path_op_error_and_counts_beyond_the_listed_cap():
    rep = report.new_report(["/r"])
    for i in range(5):
        report.add_error(rep, b"/r/f%d" % i, "chmod", OSError(errno.EROFS, "Read-only file system"), max_listed=2)
    assert rep["errors"] == [{"path": "/r/f0", "op": "chmod", "error": "EROFS: Read-only file system"},
                             {"path": "/r/f1", "op": "chmod", "error": "EROFS: Read-only file system"}]
    assert rep["counts"]["errors"] == 5
    assert report.has_problems(rep)


def test_add_warning_adds_each_line_once():
    rep = report.new_report([])
    report.add_warning(rep, "sandbox /s: skipped")
    report.add_warning(rep, "sandbox /s: skipped")
    report.add_warning(rep, "sandbox /t: skipped")
    assert rep["warnings"] == ["sandbox /s: skipped", "sandbox /t: skipped"]
    assert not report.has_problems(rep)  # a warning alone is not a failure


def test_finish_sets_elapsed_in_milliseconds():
    rep = report.finish(report.new_report([]), time.monotonic() - 1.23456)
    assert 1.234 <= rep["elapsed"] < 2 and round(rep["elapsed"], 3) == rep["elapsed"]


def test_merge_changed_is_any_complete_is_all_counts_add_and_lists_extend():
    into = report.new_report(["/a"], files=[{"path": "/a/1"}], counts={"files": 1, "errors": 0})
    sub = report.new_report(["/a", "/b"], files=[{"path": "/b/1"}], counts={"files": 2, "errors": 1, "dirs": 3})
    sub.update(changed=True, complete=False)
    report.add_warning(into, "w1")
    report.add_warning(sub, "w1")
    report.add_warning(sub, "w2")
    sub["errors"].append({"path": "/b/x", "op": "open", "error": "ENOENT: gone"})
    report.merge(into, sub)
    assert into["changed"] is True and into["complete"] is False
    assert into["roots"] == ["/a", "/b"]
    assert into["counts"] == {"files": 3, "errors": 1, "dirs": 3}
    assert into["files"] == [{"path": "/a/1"}, {"path": "/b/1"}]
    assert into["warnings"] == ["w1", "w2"]
    assert into["errors"] == [{"path": "/b/x", "op": "open", "error": "ENOENT: gone"}]


def test_merge_unchanged_complete_stays_so_and_elapsed_is_the_callers():
    into = report.new_report(["/a"], elapsed=0.5)
    report.merge(into, report.new_report(["/a"], elapsed=9.0))
    assert into["changed"] is False and into["complete"] is True and into["elapsed"] == 0.5


def test_merge_caps_files_and_errors_and_counts_the_unlisted_files():
    into = report.new_report(["/a"], files=[1, 2], counts={"unlisted": 0})
    sub = report.new_report(["/a"], files=[3, 4, 5], errors=[{"path": "/a", "op": "x", "error": "y"}] * 3)
    report.merge(into, sub, max_listed=3)
    assert into["files"] == [1, 2, 3] and into["counts"]["unlisted"] == 2
    assert len(into["errors"]) == 3
    report.merge(into, sub, max_listed=3)
    assert len(into["errors"]) == 3 and into["counts"]["unlisted"] == 5


def test_strip_reports_are_built_from_the_envelope():
    rep = new_report([b"/srv/x"], dry_run=True)
    for key in report.ENVELOPE_KEYS:
        assert key in rep
    assert rep["roots"] == ["/srv/x"] and rep["warnings"] == [] and rep["counts"]["errors"] == 0


def test_a_fetch_report_is_the_envelope_and_a_refusal_is_its_one_error(tmp_path):
    def never(argv):
        raise AssertionError("strict mode must not use the channel")

    rep = fetch.fetch(never, "/home/agent/out.txt", str(tmp_path), strict=True)
    for key in report.ENVELOPE_KEYS:
        assert key in rep
    assert rep["roots"] == ["/home/agent/out.txt"] and rep["fetched"] is False
    assert rep["errors"] == [{"path": "/home/agent/out.txt", "op": "strict",
                              "error": "strict mode: remote files are never fetched"}]
    assert report.has_problems(rep)


# -- one vocabulary: one import name, one place an error entry is made --------------------
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LIB = os.path.join(TOP, "python", "src", "sandboxguard")
SOURCES = (("python", "src", "sandboxguard"), *(("python", "src", "sandboxguard", d) for d in sorted(os.listdir(_LIB))
                                                if d.startswith("_") and os.path.isdir(os.path.join(_LIB, d, ""))
                                                and d != "__pycache__"),
           ("python", "src", "sandboxguard_cli"), ("python", "src", "sandboxguard_cli", "commands"),
           ("plugins", "modules"), ("plugins", "module_utils"), ("plugins", "action"), ("plugins", "filter"))
LIBRARY_MODULES = {n[:-3] for n in os.listdir(os.path.join(TOP, "python", "src", "sandboxguard")) if n.endswith(".py")}


def _imports():
    import ast

    for parts in SOURCES:
        folder = os.path.join(TOP, *parts)
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    yield "%s/%s" % (parts[-1], name), node


def _is_library(node):
    module = node.module or ""
    return (node.level >= 1 and not module) or module in ("sandboxguard",) or module.endswith(
        "module_utils.sandboxguard")


def test_report_is_imported_under_one_name_everywhere():
    found = []
    for where, node in _imports():
        module = node.module or ""
        if (node.level >= 1 and module == "report") or module.endswith("sandboxguard.report"):
            names = ", ".join(a.name for a in node.names)
            found.append("%s:%d: from %s import %s" % (where, node.lineno, module, names))
        elif _is_library(node):
            found += ["%s:%d: report as %s" % (where, node.lineno, a.asname) for a in node.names
                      if a.name == "report" and a.asname != "envelope"]
    assert found == [], "import it as `from . import report as envelope` (`from sandboxguard import ...` outside)"


def test_no_module_is_imported_under_the_name_of_another_library_module():
    found = ["%s:%d: %s as %s" % (where, node.lineno, a.name, a.asname)
             for where, node in _imports() if _is_library(node)
             for a in node.names if a.asname and a.asname != a.name and a.asname in LIBRARY_MODULES]
    assert found == []


def test_error_entries_are_made_only_by_report_error_entry():
    import ast

    found = []
    for parts in SOURCES:
        folder = os.path.join(TOP, *parts)
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".py") or (parts[-1] == "sandboxguard" and name == "report.py"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            for node in ast.walk(tree):
                keys = {k.value for k in getattr(node, "keys", ()) if isinstance(k, ast.Constant)}
                if isinstance(node, ast.Dict) and {"path", "op", "error"} <= keys:
                    found.append("%s/%s:%d" % (parts[-1], name, node.lineno))
    assert found == [], "add errors with report.add_error (or list report.error_entry)"


def test_error_entry_is_what_add_error_records():
    rep = report.new_report([])
    entry = report.add_error(rep, b"/r/\xff", "read", OSError(errno.EIO, "I/O error\nforged"))
    assert entry == report.error_entry(b"/r/\xff", "read", OSError(errno.EIO, "I/O error\nforged"))
    assert entry == {"path": os.fsdecode(b"/r/\xff"), "op": "read", "error": "EIO: I/O error\\nforged"}


def test_a_sweep_step_that_could_not_run_lists_its_error_as_the_envelope_does(tmp_path):
    from sandboxguard._privileged import sweep_steps

    target = tmp_path / "docker" / "task"
    target.mkdir(parents=True)
    step = sweep_steps._step_result("setid", 10)
    sweep_steps._step_failed(step, str(target), "refused")
    assert step["errors"] == [report.error_entry(str(target), "setid", "refused")]
    assert step["error"] == "refused" and step["complete"] is False


def test_nosuid_ensure_returns_the_envelope_with_its_own_keys(tmp_path):
    from sandboxguard._privileged import nosuid

    (tmp_path / "sb" / "docker").mkdir(parents=True)
    (tmp_path / "linked").symlink_to(tmp_path / "sb")
    result = nosuid.ensure([str(tmp_path / "linked" / "docker"), str(tmp_path / "later")], persist="none",
                           dry_run=True)
    assert tuple(result)[:len(report.ENVELOPE_KEYS)] == report.ENVELOPE_KEYS
    assert {"paths", "refused", "missing", "files", "diff", "persist"} <= set(result)
    assert result["counts"] == {"roots": 0, "refused": 1, "missing": 1, "errors": 0}


def test_install_eval_tools_returns_the_envelope_with_its_own_keys(tmp_path):
    from sandboxguard import home_mode

    result = home_mode.install_eval_tools(str(tmp_path / "bin"), python="/usr/bin/python3")
    assert tuple(result)[:len(report.ENVELOPE_KEYS)] == report.ENVELOPE_KEYS
    assert result["changed"] is True and result["roots"] == [str(tmp_path / "bin")]
    assert result["crontab"] == str(tmp_path / "bin" / "crontab") and os.path.isfile(result["wrapper"])
    assert home_mode.install_eval_tools(str(tmp_path / "bin"), python="/usr/bin/python3")["changed"] is False
