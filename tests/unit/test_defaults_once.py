# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Each default and each choice is decided once, in the library (issues 20 and 29).

- The modules' argument specs, the action plugins' and the CLI's options take a default or a
  list of choices from a library constant, never a literal copy of one.
- That each module's documentation (with its doc fragments) states the defaults and choices of
  its argument spec is ansible-test sanity's validate-modules check (doc-default-does-not-match-spec,
  doc-choices-do-not-match-spec, undocumented-parameter), not written again here.
- A role variable a module option takes has a blank default - ``''``, ``[]`` or null, "the
  module's default" - unless the role itself decides it (ROLE_DECISIONS, with the reason); its
  description says which default that is. (The roles' filters wrote defaults again before
  issue 29; those copies are gone, and the test that kept them equal with them.)
- The playbooks pass inputs on blank, to the role variable or module option that decides.

Everything is found with repo_scan, so a new module, role or playbook is checked unchanged.
"""
import ast
import os

import pytest
import repo_scan as scan

yaml = pytest.importorskip("yaml")  # the pythons layer's venvs carry only pytest
TRIVIAL = (None, True, False, 0, "", (), [], {})
BLANK = ("", [], None)


def _key(value):
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return ("seq", *(_key(v) for v in items))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("num", float(value))
    return ("val", value)


def _constants():
    """{key of a value: [module.NAME]} of the library's module-level constants (and the values
    of its constant dicts such as fileops.OPTION_DEFAULTS)."""
    found = {}
    for rel in scan.python_files(scan.LIBRARY, recursive=False, init=False):
        for node in scan.parse(rel).body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.lstrip("_").isupper()):
                continue
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            where = "%s.%s" % (os.path.basename(rel)[:-3], node.targets[0].id)
            pairs = [(where, value)] if not isinstance(value, dict) else [
                ("%s[%r]" % (where, k), v) for k, v in value.items()]
            for name, item in pairs:
                if not isinstance(item, (bool, dict)) and item not in TRIVIAL:
                    found.setdefault(_key(item), []).append(name)
    return found


def _literal_options(rel):
    """(line, option, 'default'|'choices', value) of each literal default=/choices= (keyword or dict key)."""
    for node in ast.walk(scan.parse(rel)):
        pairs, option = [], ""
        if isinstance(node, ast.Call):
            pairs = [(k.arg, k.value) for k in node.keywords if k.arg in ("default", "choices")]
            option = next((a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)), "")
        elif isinstance(node, ast.Dict):
            pairs = [(k.value, v) for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and k.value in ("default", "choices")]
        for what, value in pairs:
            try:
                yield node.lineno, option, what, ast.literal_eval(value)
            except ValueError:
                continue  # a name: the library's constant (or an expression of it)


def test_option_defaults_and_choices_are_the_librarys_constants_not_copies_of_them():
    constants = _constants()
    sources = [rel for top in (scan.MODULES, scan.MODULE_UTILS, scan.ACTION, scan.CLI + "/commands")
               for rel in scan.python_files(top, recursive=False, init=False)]
    found = ["%s:%d: %s %s=%r is %s" % (rel, line, option, what, value, " or ".join(constants[_key(value)]))
             for rel in sources for line, option, what, value in _literal_options(rel)
             if not isinstance(value, bool) and value not in TRIVIAL and _key(value) in constants]
    assert found == [], "take these from the library:\n" + "\n".join(found)


# -- roles and playbooks (the modules' argument specs are read with ansible) --------------------
pytest.importorskip("ansible")


# A role variable that feeds a module option and has a value of its own: the role decides it, because...
ROLE_DECISIONS = {
    "bwrap_probe_profile": "the role probes with workspace, whose loopback-only check network skips",
    "bwrap_require_pass": "the role fails on a failed probe (a module call on its own only reports)",
    "runner_cleanup_hook_dir": "the role installs the hooks there and removes that directory again",
    "sandbox_prevent_state": "the role's own present/absent",
}


@pytest.mark.parametrize("role", scan.roles())
def test_a_role_variable_passed_to_a_module_is_blank_and_says_whose_default_applies(role):
    options = scan.role_options(role)
    found = []
    for module, option, variable, rel in scan.passed_on(role):
        if module not in scan.module_names() or variable not in options or variable in ROLE_DECISIONS:
            continue
        wanted, declared = scan.option_spec(module, option), options[variable]
        default = wanted.get("default")
        if default is None:
            pass  # the module has no default: the role gives the value (a path it installs to)
        elif declared.get("default") not in BLANK:
            found.append("%s: %s has default %r: make it blank (the default of %s %s, %r)" % (
                rel, variable, declared["default"], module, option, default))
        elif default not in BLANK and "the module's default (C(%s))" % scan.shown(default) not in str(
                declared.get("description")):
            found.append("%s: the description does not say 'Empty - the module's default (C(%s))'" % (
                variable, scan.shown(default)))
        if declared.get("choices") and [c for c in declared["choices"] if c != ""] != list(wanted.get("choices") or ()):
            found.append("%s (choices %r) feeds %s %s (choices %r)" % (
                variable, declared["choices"], module, option, wanted.get("choices")))
    assert found == []


def _module_defaults_of_role_variables():
    """{role variable: the default of the module option it feeds} over every role."""
    return {variable: scan.option_spec(module, option).get("default")
            for role in scan.roles() for module, option, variable, _ in scan.passed_on(role)
            if module in scan.module_names()}


def _input_targets(playbook, fed):
    """{input: [(what it feeds, that one's default)]} for a playbook's sandboxguard_* inputs passed on
    whole to a role variable or a module option (directly or through a play variable); a blank
    role variable's default is the module's it feeds (*fed*)."""
    found = {}
    for play in scan.load_yaml(playbook):
        tasks = list(scan.tasks(play.get("tasks")))
        # play variables and facts set from an input (the scope remediate takes from the inputs given)
        given = [*(play.get("vars") or {}).items(),
                 *(item for task in tasks for item in (task.get("ansible.builtin.set_fact") or {}).items())]
        via = {}
        for name, text in given:
            match = scan.PASSED.match(str(text).strip())
            if name.startswith("sandboxguard__") and match and match.group(1).startswith("sandboxguard_") \
                    and not match.group(1).startswith("sandboxguard__"):
                via[name] = match.group(1)

        def source(text, via=via):
            match = scan.PASSED.match(text.strip()) if isinstance(text, str) else None
            name = via.get(match.group(1), match.group(1)) if match else None
            return name if name and name.startswith("sandboxguard_") and not name.startswith("sandboxguard__") else None

        role_options = {}  # every option of every role the play runs: what its set_fact tasks may feed
        assigned = []
        for task in tasks:
            imported = task.get("ansible.builtin.import_role") or task.get("ansible.builtin.include_role") or {}
            role = imported.get("name")
            if role and role.startswith(scan.FQCN):
                role_options.update(scan.role_options(role[len(scan.FQCN):]))
                assigned += list((task.get("vars") or {}).items())
            assigned += list((task.get("ansible.builtin.set_fact") or {}).items())
        for variable, text in assigned:
            if source(text) and variable in role_options:
                default = role_options[variable].get("default")
                found.setdefault(source(text), []).append(
                    (variable, fed.get(variable) if default in BLANK else default))
        for module, args in scan.module_calls(tasks):
            spec = scan.argument_spec(module) if module in scan.module_names() else {}
            for option, text in args.items():
                if source(text) and option in spec:
                    found.setdefault(source(text), []).append(("%s %s" % (module, option), spec[option].get("default")))
    return found


def test_the_playbook_inputs_are_documented_with_the_defaults_of_what_they_feed():
    inputs = scan.load_yaml("docs/docsite/inputs.yml")["inputs"]
    fed = _module_defaults_of_role_variables()
    found, seen = [], 0
    for playbook in scan.playbooks():
        for name, targets in sorted(_input_targets(playbook, fed).items()):
            documented = inputs[name].get("default")
            for what, default in targets:
                seen += 1
                if default is not None and documented not in BLANK and _key(documented) != _key(default):
                    found.append("%s: %s documented default %r, %s has %r" % (
                        os.path.basename(playbook), name, documented, what, default))
    assert seen > 10  # the playbooks pass their inputs on whole (blank means: the default of what they feed)
    assert found == []


def test_the_standalone_files_keep_the_librarys_python():
    # crontab.py and fdmount.py run standalone and import nothing from the package: their
    # own copy of the interpreter path is tied here to the one in defaults.py
    import inspect

    from sandboxguard._core import defaults, fdmount
    from sandboxguard._terminal.crontab_shim import SHIM_PYTHON

    assert SHIM_PYTHON == defaults.SYSTEM_PYTHON
    assert inspect.signature(fdmount.program_source).parameters["python"].default == defaults.SYSTEM_PYTHON
