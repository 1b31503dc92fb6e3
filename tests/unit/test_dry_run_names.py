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
from sandboxguard import crontab, home_mode, leaks, report, strip
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
    return any(isinstance(call, ast.Call) and ast.unparse(call.func).rpartition(".")[2] == "dry_run_arg"
               and [ast.unparse(a) for a in call.args[:2]] == ["dry_run", alias] for call in ast.walk(node))


def _spelled_like_a_dry_run(name):
    return name in DRY_SPELLINGS or (name != "dry_run" and name.replace("_", "").startswith("dryrun"))


def dry_run_problems(tops=EVERYTHING):
    """Every parameter spelled like a dry run that is not dry_run, a resolved alias or another meaning."""
    problems, other_seen = [], set()
    for rel, tree in _sources(*tops):
        for node in ast.walk(tree):  # every def and lambda, nested and private ones too
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            function, params = getattr(node, "name", "<lambda>"), _parameters(node)
            for name, default in params.items():
                if not _spelled_like_a_dry_run(name):
                    continue
                key = (rel, function, name)
                if key in OTHER_MEANINGS:
                    other_seen.add(key)
                    continue
                alias = ("dry_run" in params and isinstance(default, ast.Constant) and default.value is None
                         and _resolves_alias(node, name))
                if not alias:
                    problems.append("%s:%d: %s(%s=...): name it dry_run (keep %s=None as a deprecated alias resolved "
                                    "by report.dry_run_arg(dry_run, %s, %r) where the function is public or a "
                                    "module calls it)" % (rel, node.lineno, function, name, name, name, function))
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
    assert [p.split(": ", 1)[1].split("(", 1)[0] for p in problems] == ["remove", "ensure", "install_text"]


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


def test_the_alias_wins_and_warns_only_when_given():
    with pytest.warns(DeprecationWarning, match="x: check= is deprecated, use dry_run="):
        assert report.dry_run_arg(True, False, "x") is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report.dry_run_arg(True, None, "x") is True


def _terminal_home(tmp):
    (tmp / "hermes").mkdir()
    return lambda **flag: _changed(home_mode.configure_terminal_home(str(tmp / "hermes"), "profile", **flag))


def _crontab(install, *args):
    return lambda tmp: lambda **flag: install(str(tmp / "bin"), *args, **flag)[::-1]  # (changed, path)


def _leaks(tmp):
    (tmp / "tmp" / "ab-1").mkdir(parents=True)
    (tmp / "spool").mkdir()
    (tmp / "spool" / "root").write_text("*/5 * * * * curl -s http://x/\n")
    os.chmod(tmp / "spool" / "root", 0o600)
    found = leaks.audit(accounts=[("root", 0, str(tmp / "home"))], tmp_dir=str(tmp / "tmp"),
                        spool_dir=str(tmp / "spool"))["findings"]
    assert {f["kind"] for f in found} == {"cron_job", "tmp_run_dir"}

    def remove(**flag):
        result = leaks_remove.remove(found, str(tmp / "quarantine"), crontab="", **flag)
        # the same leaks; the quarantine paths carry the second each call ran in
        return result["dry_run"] and len(result["removed"]) == 2, [dict(e, quarantine=None) for e in result["removed"]]
    return remove


def _nosuid(tmp):
    (tmp / "sb" / "docker").mkdir(parents=True)
    return lambda **flag: _changed(nosuid.ensure([str(tmp / "sb" / "docker")], persist="none", **flag))


def _changed(result):
    return result["changed"], result


# (the name the warning gives, the deprecated alias, set up and return the call taking dry_run= or the alias)
ALIASES = [("configure_terminal_home", "check", _terminal_home),
           ("crontab.install_text", "check", _crontab(crontab.install_text, "x", b"y")),
           ("crontab.install_shim", "check", _crontab(crontab.install_shim, "/usr/bin/python3")),
           ("leaks_remove.remove", "check", _leaks), ("nosuid.ensure", "check_mode", _nosuid)]


def _state(tmp):
    """Every path below tmp with its mode and bytes, and the mounts below it."""
    return ([(str(p), p.stat().st_mode, p.read_bytes() if p.is_file() else None) for p in sorted(tmp.rglob("*"))],
            [line for line in open("/proc/self/mountinfo", encoding="utf-8") if str(tmp) in line.split()[4]])


@pytest.mark.parametrize(("name", "alias", "setup"), ALIASES, ids=[a[0] for a in ALIASES])
def test_dry_run_and_its_deprecated_alias_change_nothing_and_say_the_same(tmp_path, name, alias, setup):
    call = setup(tmp_path)
    before = _state(tmp_path)
    result = call(dry_run=True)
    assert result[0], "a dry run says what would change"
    with pytest.warns(DeprecationWarning, match="%s: %s= is deprecated, use dry_run=" % (name, alias)):
        assert call(**{alias: True}) == result
    assert _state(tmp_path) == before
