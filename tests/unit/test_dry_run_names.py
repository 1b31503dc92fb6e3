# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""One name for "change nothing, say what would change": dry_run.

Found, not listed: every function, method and lambda of the library, the CLI and the
plugins is read (its source, so a module that cannot be imported here, a nested helper or a
private one is looked at too) and every parameter spelled like a dry run must be ``dry_run``. An old
spelling stays only as a deprecated alias that report.dry_run_arg resolves (it warns), and
``check`` only where it means something else, in the closed table below. The adapters
(modules, action plugins, the CLI) hand Ansible's check mode and ``--dry-run`` over as
``dry_run=``, by keyword.
"""
import ast
import os
import warnings

import pytest
import repo_scan as scan
from sandboxguard import crontab, leaks, report, strip
from sandboxguard._fleet import leaks_remove
from sandboxguard._privileged import nosuid

ADAPTERS = [scan.CLI, scan.MODULES, scan.ACTION, scan.MODULE_UTILS]  # module_utils/sandboxguard/: the copy, skipped
EVERYTHING = (scan.LIBRARY, *ADAPTERS)

# Spellings of "change nothing" other than dry_run (Ansible's, and other tools').
DRY_SPELLINGS = {"check", "check_mode", "checkmode", "dryrun", "dry", "noop", "no_op", "simulate", "pretend",
                 "what_if", "whatif"}

# A parameter spelled so that means something else: (file, function, parameter) -> why.
# Closed: an entry that no longer matches a parameter fails too.
OTHER_MEANINGS = {
    ("_core/proc.py", "run", "check"): "subprocess.run's check=: raise CalledProcessError on a non-zero exit",
    ("report.py", "dry_run_arg", "check"): "the resolver of the deprecated alias: the value the caller got",
}


def _sources(*tops):
    """(name, tree): the library's files by their own name (_core/proc.py), the adapters' from the top."""
    for top in tops:
        for rel in scan.python_files(top, skip=("sandboxguard",)):
            yield (rel if top in ADAPTERS else os.path.relpath(scan.path(rel), scan.path(top))), scan.parse(rel)


def _functions(tree):
    """(qualified name, node) of every def and lambda in a module."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.Lambda):
                found.append((prefix + "<lambda>", child))
                visit(child, prefix)
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _parameters(node):
    """{name: default node or None} of a def or lambda (positional, keyword-only, * and **)."""
    args = node.args
    positional = list(getattr(args, "posonlyargs", [])) + list(args.args)
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = {a.arg: d for a, d in zip(positional, defaults)}
    params.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults)})
    for extra in (args.vararg, args.kwarg):
        if extra is not None:
            params[extra.arg] = None
    return params


def _resolves_alias(node, alias):
    """The body hands ``alias`` to report.dry_run_arg (which warns): ``dry_run_arg(dry_run, alias, ...)``."""
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or len(call.args) < 2:
            continue
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        first, second = call.args[0], call.args[1]
        if (name == "dry_run_arg" and isinstance(first, ast.Name) and first.id == "dry_run"
                and isinstance(second, ast.Name) and second.id == alias):
            return True
    return False


def _spelled_like_a_dry_run(name):
    return name in DRY_SPELLINGS or (name != "dry_run" and name.replace("_", "").startswith("dryrun"))


def dry_run_problems(tops=EVERYTHING):
    """Every parameter spelled like a dry run that is not dry_run, a resolved alias or another meaning."""
    problems, other_seen = [], set()
    for rel, tree in _sources(*tops):
        for qualname, node in _functions(tree):
            params = _parameters(node)
            for name, default in params.items():
                if not _spelled_like_a_dry_run(name):
                    continue
                key = (rel, qualname.rsplit(".", 1)[-1], name)
                if key in OTHER_MEANINGS:
                    other_seen.add(key)
                    continue
                alias = ("dry_run" in params and isinstance(default, ast.Constant) and default.value is None
                         and _resolves_alias(node, name))
                if not alias:
                    problems.append("%s: %s(%s=...): name it dry_run (keep %s=None as a deprecated alias resolved "
                                    "by report.dry_run_arg(dry_run, %s, %r) where the function is public or a "
                                    "module calls it)" % (rel, qualname, name, name, name, qualname))
    if tops == EVERYTHING:
        problems += ["OTHER_MEANINGS lists %s: %s(%s), which is no longer there: drop the entry" % key
                     for key in sorted(set(OTHER_MEANINGS) - other_seen)]
    return problems


def test_every_dry_run_parameter_of_the_library_the_cli_and_the_plugins_is_named_dry_run():
    assert dry_run_problems() == []


def test_the_rule_finds_an_operation_that_spells_it_check_or_check_mode(tmp_path):
    # What leaks_remove.remove and nosuid.ensure were (1.x), and a silent alias (no warning).
    (tmp_path / "old.py").write_text(
        "def remove(findings, quarantine_dir=None, check=False):\n    pass\n\n"
        "def ensure(paths=(), run=None, check_mode=False):\n    pass\n\n"
        "def install_text(bin_dir, dry_run=False, check=None):\n    return dry_run if check is None else check\n\n"
        "def kept(dry_run=False, check=None):\n    return report.dry_run_arg(dry_run, check, 'kept')\n")
    problems = dry_run_problems((str(tmp_path),))
    assert [p.split(":", 1)[1].split("(", 1)[0].strip() for p in problems] == ["remove", "ensure", "install_text"]


def _adapter_calls():
    for rel, tree in _sources(*ADAPTERS):
        for call in ast.walk(tree):
            if isinstance(call, ast.Call):
                yield rel, call


def _is_the_dry_run_flag(node):
    """module.check_mode, self._task.check_mode, args.dry_run (also inside bool(...))."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "bool" and len(node.args) == 1:
        node = node.args[0]
    return isinstance(node, ast.Attribute) and node.attr in ("check_mode", "dry_run")


def test_modules_action_plugins_and_the_cli_pass_check_mode_as_dry_run_by_keyword():
    wrong, handed = [], 0
    for rel, call in _adapter_calls():
        for arg in call.args if getattr(call.func, "id", None) != "bool" else ():
            if _is_the_dry_run_flag(arg):
                flag = ast.unparse(arg)
                wrong.append("%s:%d: %s passed by position: pass dry_run=%s" % (rel, call.lineno, flag, flag))
        for keyword in call.keywords:
            if _is_the_dry_run_flag(keyword.value):
                handed += 1
                if keyword.arg != "dry_run":
                    wrong.append("%s:%d: %s= gets the dry-run flag: name it dry_run=" % (rel, call.lineno, keyword.arg))
            elif keyword.arg in DRY_SPELLINGS and not isinstance(keyword.value, ast.Constant):
                wrong.append("%s:%d: %s=%s: the library's name is dry_run=" % (rel, call.lineno, keyword.arg,
                                                                               type(keyword.value).__name__))
    assert wrong == []
    assert handed >= 8  # the modules and the CLI commands that change things do hand it over


def test_strip_options_name_it_dry_run_too():
    assert strip.StripOptions(dry_run=True).dry_run is True


def test_check_is_a_deprecated_alias_that_warns_and_wins():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert report.dry_run_arg(False, True, "configure_terminal_home") is True
        assert report.dry_run_arg(True, False, "x") is False
        assert report.dry_run_arg(False, True, "nosuid.ensure", alias="check_mode") is True
    assert [w.category for w in caught] == [DeprecationWarning] * 3
    assert "configure_terminal_home: check= is deprecated, use dry_run=" in str(caught[0].message)
    assert "nosuid.ensure: check_mode= is deprecated, use dry_run=" in str(caught[2].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report.dry_run_arg(True, None, "x") is True


def test_terminal_home_dry_run_and_its_check_alias_write_nothing(tmp_path):
    from sandboxguard import home_mode

    home = tmp_path / "hermes"
    home.mkdir()
    result = home_mode.configure_terminal_home(str(home), "profile", dry_run=True)
    assert result["changed"] is True and os.listdir(str(home)) == []
    with pytest.warns(DeprecationWarning):
        result = home_mode.configure_terminal_home(str(home), "profile", check=True)
    assert result["changed"] is True and os.listdir(str(home)) == []


def test_crontab_shim_dry_run_and_its_check_alias_write_nothing(tmp_path):
    path, changed = crontab.install_shim(str(tmp_path / "bin"), python="/usr/bin/python3", dry_run=True)
    assert changed is True and not os.path.exists(path)
    with pytest.warns(DeprecationWarning, match="crontab.install_text: check= is deprecated"):
        path, changed = crontab.install_text(str(tmp_path / "bin"), "x", b"y", check=True)
    assert changed is True and not os.path.exists(path)
    with pytest.warns(DeprecationWarning, match="crontab.install_shim: check= is deprecated"):
        path, changed = crontab.install_shim(str(tmp_path / "bin"), python="/usr/bin/python3", check=True)
    assert changed is True and not os.path.exists(path)


def test_leaks_remove_takes_dry_run_and_check_still_works_with_a_warning(tmp_path):
    spool, tmp = tmp_path / "spool", tmp_path / "tmp"
    spool.mkdir()
    (tmp / "ab-1").mkdir(parents=True)
    table = spool / "root"
    table.write_text("*/5 * * * * curl -s http://x/\n")
    os.chmod(table, 0o600)
    found = leaks.audit(accounts=[("root", 0, str(tmp_path / "home"))], tmp_dir=str(tmp),
                        spool_dir=str(spool))["findings"]
    assert {f["kind"] for f in found} == {"cron_job", "tmp_run_dir"}
    quarantine = tmp_path / "quarantine"
    result = leaks_remove.remove(found, str(quarantine), dry_run=True, crontab="")
    assert result["changed"] and result["dry_run"] is True and len(result["removed"]) == 2
    with pytest.warns(DeprecationWarning, match="leaks_remove.remove: check= is deprecated, use dry_run="):
        again = leaks_remove.remove(found, str(quarantine), check=True, crontab="")
    # the same leaks; the quarantine paths carry the second each call ran in
    assert again["dry_run"] is True and [dict(e, quarantine=None) for e in again["removed"]] == [
        dict(e, quarantine=None) for e in result["removed"]]
    assert not quarantine.exists() and (tmp / "ab-1").is_dir()
    assert table.read_text() == "*/5 * * * * curl -s http://x/\n"


def _mounted_at(path):
    return [line for line in open("/proc/self/mountinfo", encoding="utf-8") if line.split()[4] == str(path)]


def test_nosuid_ensure_takes_dry_run_and_check_mode_still_works_with_a_warning(tmp_path):
    root = tmp_path / "sb" / "docker"
    root.mkdir(parents=True)
    result = nosuid.ensure([str(root)], persist="none", dry_run=True)
    assert result["changed"] and result["paths"][0]["actions"] and _mounted_at(root) == []
    with pytest.warns(DeprecationWarning, match="nosuid.ensure: check_mode= is deprecated, use dry_run="):
        again = nosuid.ensure([str(root)], persist="none", check_mode=True)
    assert again["paths"] == result["paths"] and _mounted_at(root) == []
