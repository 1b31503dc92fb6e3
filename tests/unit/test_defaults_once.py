# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Each default and each choice is decided once, in the library, and every other place that
states it is tied to it here (issue 20, item 3).

- The modules' argument specs, the action plugins' and the CLI's options take a default or a
  list of choices from a library constant: a literal there that equals the value of one is
  refused (it would be the second place the decision is written).
- Each module's documentation (with its doc fragments) states exactly the defaults and
  choices its argument spec has: ansible-doc shows what the code does.
- A role passes a variable on to a module option blank-safely with ``as_value(omit)`` (or
  ``as_bool(omit, ...)``), never with ``as_value(<the default again>)``; a role variable that
  feeds a module option has the module's default and choices (defaults/main.yml and
  meta/argument_specs.yml, which test_role_readmes.py keeps equal) or is blank.
- The playbooks pass inputs on blank, to the role variable or module option that decides.

Modules, action plugins, CLI commands, roles and playbooks are found on disk.
"""
import ast
import importlib
import os
import re
import sys

import pytest

yaml = pytest.importorskip("yaml")  # the pythons layer's venvs carry only pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARY = os.path.join(TOP, "python", "src", "sandboxguard")
FQCN = "sandboxguard.boundary."
TRIVIAL = (None, True, False, 0, "", (), [], {})


def _sources(*parts):
    folder = os.path.join(TOP, *parts)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py") and name != "__init__.py":
            yield os.path.join(folder, name)


def _constants():
    """{value: [module.NAME]} of the library's module-level constants (and the values of its
    constant dicts such as fileops.OPTION_DEFAULTS)."""
    found = {}

    def add(value, where):
        if isinstance(value, (list, tuple, frozenset, set)):
            value = tuple(sorted(value, key=repr)) if isinstance(value, (set, frozenset)) else tuple(value)
        if isinstance(value, (str, int, float, tuple)) and not isinstance(value, bool) and value not in TRIVIAL:
            found.setdefault(_key(value), []).append(where)

    for path in _sources("python", "src", "sandboxguard"):
        module = os.path.basename(path)[:-3]
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            name = node.targets[0].id
            if not name.lstrip("_").isupper():
                continue
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(value, dict):
                for key, item in value.items():
                    add(item, "%s.%s[%r]" % (module, name, key))
            else:
                add(value, "%s.%s" % (module, name))
    return found


def _key(value):
    if isinstance(value, (list, tuple)):
        return ("seq", *(_key(v) for v in value))
    if isinstance(value, (int, float)):
        return ("num", float(value))
    return ("str", value)


def _literal_options(path):
    """(line, option, what, value) for each literal ``default=``/``choices=`` (keyword or dict key)."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        pairs = []
        if isinstance(node, ast.Call):
            pairs = [(k.arg, k.value) for k in node.keywords if k.arg in ("default", "choices")]
            option = next((a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)), "")
        elif isinstance(node, ast.Dict):
            pairs = [(k.value, v) for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and k.value in ("default", "choices")]
            option = ""
        for what, value in pairs:
            try:
                literal = ast.literal_eval(value)
            except ValueError:
                continue  # a name: the library's constant (or an expression of it)
            yield node.lineno, option, what, literal


OPTION_SOURCES = [p for parts in (("plugins", "modules"), ("plugins", "module_utils"), ("plugins", "action"),
                                  ("python", "src", "sandboxguard_cli", "commands"))
                  for p in _sources(*parts)]


def test_option_defaults_and_choices_are_the_librarys_constants_not_copies_of_them():
    constants = _constants()
    found = []
    for path in OPTION_SOURCES:
        for line, option, what, literal in _literal_options(path):
            value = tuple(literal) if isinstance(literal, list) else literal
            if isinstance(value, bool) or value in TRIVIAL:
                continue
            same = constants.get(_key(value))
            if same:
                found.append("%s:%d: %s %s=%r is %s" % (os.path.relpath(path, TOP), line, option, what, literal,
                                                        " or ".join(same)))
    assert found == [], "take these from the library:\n" + "\n".join(found)


# -- the modules' documentation states what their argument specs do -------------------------
sys.path.insert(0, os.path.join(TOP, ".cache", "collections"))
try:
    pytest.importorskip("ansible")
finally:
    sys.path.pop(0)


class _Captured(Exception):
    pass


def _argument_spec(name):
    """A module's argument spec, as its main() builds it (or its action plugin's ARGUMENT_SPEC)."""
    sys.path.insert(0, os.path.join(TOP, ".cache", "collections"))
    try:
        module = importlib.import_module("ansible_collections.sandboxguard.boundary.plugins.modules." + name)
        if not hasattr(module, "main"):
            action = importlib.import_module("ansible_collections.sandboxguard.boundary.plugins.action." + name)
            return action.ARGUMENT_SPEC
    finally:
        sys.path.pop(0)
    spec = {}

    class Fake:
        def __init__(self, argument_spec=None, **_kwargs):
            spec.update(argument_spec or {})
            raise _Captured()

    real, module.AnsibleModule = module.AnsibleModule, Fake
    try:
        module.main()
    except _Captured:
        pass
    finally:
        module.AnsibleModule = real
    return spec


def _literal(path, var="DOCUMENTATION"):
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == var:
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no %s" % (path, var))


def documented_options(name):
    """The options of a module's DOCUMENTATION with its doc fragments merged in (as ansible-doc does)."""
    doc = _literal(os.path.join(TOP, "plugins", "modules", name + ".py"))
    options = {}
    for fragment in doc.get("extends_documentation_fragment") or ():
        short = fragment[len(FQCN):] if fragment.startswith(FQCN) else fragment
        file_name, _, var = short.partition(".")
        path = os.path.join(TOP, "plugins", "doc_fragments", file_name + ".py")
        part = _literal(path, (var or "documentation").upper())
        options.update(part.get("options") or {})
    options.update(doc.get("options") or {})
    return options


MODULES = sorted(os.path.basename(p)[:-3] for p in _sources("plugins", "modules"))


def _same(documented, coded):
    if isinstance(documented, (list, tuple)) and isinstance(coded, (list, tuple)):
        return len(documented) == len(coded) and all(_same(a, b) for a, b in zip(documented, coded))
    if isinstance(documented, (int, float)) and isinstance(coded, (int, float)) and not isinstance(coded, bool):
        return float(documented) == float(coded) and not isinstance(documented, bool)
    return documented == coded


def _compare(docs, spec, where, found):
    for option in sorted(set(docs) | set(spec)):
        if option not in docs or option not in spec:
            found.append("%s.%s: %s" % (where, option, "not documented" if option not in docs else "not in the spec"))
            continue
        for key in ("default", "choices"):
            if not _same(docs[option].get(key), spec[option].get(key)):
                found.append("%s.%s: documented %s %r, the spec's %r" % (
                    where, option, key, docs[option].get(key), spec[option].get(key)))
        if "options" in spec[option] or "suboptions" in docs[option]:
            _compare(docs[option].get("suboptions") or {}, spec[option].get("options") or {}, where + "." + option,
                     found)


@pytest.mark.parametrize("name", MODULES)
def test_the_documentation_states_the_defaults_and_choices_of_the_argument_spec(name):
    found = []
    _compare(documented_options(name), _argument_spec(name), name, found)
    assert found == []


# -- roles and playbooks fall back to the module's default ------------------------------------
ROLES = sorted(n for n in os.listdir(os.path.join(TOP, "roles")) if os.path.isdir(os.path.join(TOP, "roles", n)))
PLAYBOOKS = sorted(os.path.join(TOP, "playbooks", n) for n in os.listdir(os.path.join(TOP, "playbooks"))
                   if n.endswith(".yml"))
# Keys whose value no module decides: the play's host pattern, a condition on a role's own
# variable (its default is in defaults/main.yml, the one place it is written).
ROLE_OWN = ("hosts", "when")
RESTATED = re.compile(r"\|\s*sandboxguard\.boundary\.as_(value|bool)\(\s*(?!omit\b|\)|''|\"\")([^,)]+)")


def _yaml_files():
    for role in ROLES:
        folder = os.path.join(TOP, "roles", role, "tasks")
        for name in sorted(os.listdir(folder)):
            yield os.path.join(folder, name)
    yield from PLAYBOOKS


def _strings(node, key=None):
    """(the key holding it, text) for every string in a YAML document."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from _strings(value, name)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item, key)
    elif isinstance(node, str):
        yield key, node


def test_roles_and_playbooks_never_write_a_default_again_in_a_filter():
    found = []
    for path in _yaml_files():
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
        for key, text in _strings(data):
            if key in ROLE_OWN:
                continue
            for match in RESTATED.finditer(text):
                found.append("%s: %s: as_%s(%s" % (os.path.relpath(path, TOP), key, match.group(1), match.group(2)))
    assert found == [], "pass a blank on with as_value(omit) / as_bool(omit, NAME): the module decides"


def _role_options(role):
    with open(os.path.join(TOP, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    options = {}
    for entry in specs.values():
        options.update(entry.get("options") or {})
    return options


# A role variable that feeds a module option with a default of its own: a decision of the role's,
# and why (the role's meta/argument_specs.yml says it too).
ROLE_DECISIONS = {
    "bwrap_probe_profile": "the role probes with workspace, whose loopback-only check network skips",
}
PASSED = re.compile(r"^\{\{\s*(\w+)\s*(\|[^{}]*)?\}\}$")


def _module_calls(data):
    for task in data or ():
        if not isinstance(task, dict):
            continue
        for key, value in task.items():
            if isinstance(key, str) and key.startswith(FQCN) and isinstance(value, dict):
                yield key[len(FQCN):], value
        for nested in ("block", "rescue", "always"):
            yield from _module_calls(task.get(nested))


def _passed_on(role):
    """(module, option, role variable) for each module option a role task sets from one variable."""
    folder = os.path.join(TOP, "roles", role, "tasks")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
        for module, args in _module_calls(data):
            for option, text in args.items():
                match = PASSED.match(str(text).strip()) if isinstance(text, str) else None
                if match and match.group(1).startswith(role + "_"):
                    yield module, option, match.group(1)


@pytest.mark.parametrize("role", ROLES)
def test_a_role_variable_passed_to_a_module_has_the_modules_default_and_choices(role):
    options = _role_options(role)
    found = []
    for module, option, variable in _passed_on(role):
        if module not in MODULES or variable not in options:
            continue
        spec = _argument_spec(module)
        if option not in spec:
            aliases = {a: n for n, s in spec.items() for a in s.get("aliases", ())}
            option = aliases.get(option, option)
        wanted, declared = spec[option], options[variable]
        default = declared.get("default")
        if (wanted.get("default") is not None and default not in ("", None) and variable not in ROLE_DECISIONS
                and not _same(default, wanted["default"])):
            found.append("%s (default %r) feeds %s %s (default %r)" % (variable, default, module, option,
                                                                       wanted.get("default")))
        if declared.get("choices") and not _same(declared["choices"], wanted.get("choices")):
            found.append("%s (choices %r) feeds %s %s (choices %r)" % (variable, declared["choices"], module, option,
                                                                       wanted.get("choices")))
    assert found == []


def _play_tasks(tasks):
    for task in tasks or ():
        if isinstance(task, dict):
            yield task
            for nested in ("block", "rescue", "always"):
                yield from _play_tasks(task.get(nested))


def _input_targets(playbook):
    """{input: [(what it feeds, that one's default)]} for a playbook's sandboxguard_* inputs passed on
    whole to a role variable or a module option (directly or through a play variable)."""
    with open(playbook, encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    found = {}
    for play in plays:
        via = {}
        # play variables, and facts set from an input (the scope remediate takes from the inputs given)
        given = [*(play.get("vars") or {}).items(),
                 *(item for task in _play_tasks(play.get("tasks"))
                   for item in (task.get("ansible.builtin.set_fact") or {}).items())]
        for name, text in given:
            match = PASSED.match(str(text).strip())
            if name.startswith("sandboxguard__") and match and match.group(1).startswith("sandboxguard_") \
                    and not match.group(1).startswith("sandboxguard__"):
                via[name] = match.group(1)

        def source(text, via=via):
            match = PASSED.match(text.strip()) if isinstance(text, str) else None
            name = match.group(1) if match else None
            name = via.get(name, name)
            return name if name and name.startswith("sandboxguard_") and not name.startswith("sandboxguard__") else None

        tasks = list(_play_tasks(play.get("tasks")))
        role_options = {}  # every option of every role the play runs: what its set_fact tasks may feed
        for task in tasks:
            imported = task.get("ansible.builtin.import_role") or task.get("ansible.builtin.include_role") or {}
            role = imported.get("name")
            if role and role.startswith(FQCN):
                options = _role_options(role[len(FQCN):])
                role_options.update(options)
                for variable, text in (task.get("vars") or {}).items():
                    if source(text) and variable in options:
                        found.setdefault(source(text), []).append((variable, options[variable].get("default")))
        for task in tasks:  # inputs given to role variables with set_fact (only when set: issue 27)
            for variable, text in (task.get("ansible.builtin.set_fact") or {}).items():
                if source(text) and variable in role_options:
                    found.setdefault(source(text), []).append((variable, role_options[variable].get("default")))
        for task in tasks:
            for module, args in _module_calls([task]):
                spec = _argument_spec(module) if module in MODULES else {}
                for option, text in args.items():
                    if source(text) and option in spec:
                        found.setdefault(source(text), []).append(
                            ("%s %s" % (module, option), spec[option].get("default")))
    return found


def test_the_playbook_inputs_are_documented_with_the_defaults_of_what_they_feed():
    with open(os.path.join(TOP, "docs", "docsite", "inputs.yml"), encoding="utf-8") as handle:
        inputs = yaml.safe_load(handle)["inputs"]
    found, seen = [], 0
    for playbook in PLAYBOOKS:
        for name, targets in sorted(_input_targets(playbook).items()):
            documented = inputs[name].get("default")
            for what, default in targets:
                seen += 1
                if default is not None and documented not in ("", [], None) and not _same(documented, default):
                    found.append("%s: %s documented default %r, %s has %r" % (
                        os.path.basename(playbook), name, documented, what, default))
    assert seen > 10  # the playbooks pass their inputs on whole (blank means: the default of what they feed)
    assert found == []


@pytest.mark.parametrize("role", ROLES)
def test_a_role_checks_no_choice_its_argument_spec_already_validates(role):
    with_choices = {name: spec["choices"] for name, spec in _role_options(role).items() if spec.get("choices")}
    found = []
    path = os.path.join(TOP, "roles", role, "vars", "main.yml")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            role_vars = yaml.safe_load(handle) or {}
        found += ["vars/main.yml: %s repeats the choices of %s" % (name, option)
                  for name, value in role_vars.items() for option, choices in with_choices.items()
                  if isinstance(value, list) and sorted(map(str, value)) == sorted(map(str, choices))]
    folder = os.path.join(TOP, "roles", role, "tasks")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            tasks = yaml.safe_load(handle)
        for task in _play_tasks(tasks):
            that = (task.get("ansible.builtin.assert") or {}).get("that") or []
            for condition in [that] if isinstance(that, str) else that:
                found += ["tasks/%s: asserts %r" % (name, condition) for option in with_choices
                          if re.match(r"^\s*%s\s+in\s+" % option, condition)]
    assert found == [], "meta/argument_specs.yml validates choices: before the role's tasks run"


def test_the_standalone_files_keep_the_librarys_python():
    # crontab.py and fdmount.py run standalone and import nothing from the package: their
    # own copy of the interpreter path is tied here to the one in defaults.py
    import inspect

    from sandboxguard._core import defaults, fdmount
    from sandboxguard._terminal.crontab_shim import SHIM_PYTHON

    assert SHIM_PYTHON == defaults.SYSTEM_PYTHON
    assert inspect.signature(fdmount.program_source).parameters["python"].default == defaults.SYSTEM_PYTHON
