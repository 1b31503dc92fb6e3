# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The one scanner of the repository's own files, for the tests that read them (meta-tests).

Each file is read and parsed once per test run (``ast`` trees and YAML documents are cached),
and every meta-test finds the library, the CLI, the plugins, the roles and the playbooks the
same way, so a new file is covered without editing a test. Paths are relative to the top of
the checkout unless a function says otherwise.
"""
import ast
import functools
import importlib
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARY = "python/src/sandboxguard"
CLI = "python/src/sandboxguard_cli"
MODULES = "plugins/modules"
MODULE_UTILS = "plugins/module_utils"
ACTION = "plugins/action"
DOC_FRAGMENTS = "plugins/doc_fragments"
FQCN = "sandboxguard.boundary."
SKIPPED_DIRS = ("__pycache__",)


def path(rel):
    return os.path.join(TOP, rel)


@functools.cache
def read(rel):
    with open(path(rel), encoding="utf-8") as handle:
        return handle.read()


@functools.cache
def parse(rel):
    """The ``ast`` tree of a Python file (parsed once)."""
    return ast.parse(read(rel), path(rel))


@functools.cache
def load_yaml(rel):
    import yaml  # an edge dependency: only the tests that read YAML need it

    return yaml.safe_load(read(rel))


def tool(name):
    """The module tools/NAME.py (role_readme, docsite, cli_docs, ...), imported once."""
    if path("tools") not in sys.path:
        sys.path.insert(0, path("tools"))
    return importlib.import_module(name)


def python_files(top, recursive=True, skip=(), init=True):
    """Sorted relative paths of the .py files under *top* (a relative folder), without
    __pycache__ and the folder names in *skip*; ``init=False`` leaves out ``__init__.py``."""
    found = []
    for here, dirs, names in os.walk(path(top)):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and d not in skip) if recursive else []
        found += [os.path.relpath(os.path.join(here, n), TOP) for n in names
                  if n.endswith(".py") and (init or n != "__init__.py")]
    return sorted(found)


def module_names():
    """The collection's module names (plugins/modules/NAME.py)."""
    return [os.path.basename(p)[:-3] for p in python_files(MODULES, recursive=False, init=False)]


def library_files(lib=LIBRARY):
    """{dotted name below sandboxguard: file} of the library's modules: 'bwrap', '_bwrap.checks',
    '_bwrap' for its __init__.py; the package's own __init__.py (its __version__) left out.
    *lib* may be any folder laid out the same (a test's tmp_path)."""
    found = {}
    for rel in python_files(lib):
        dotted = os.path.relpath(path(rel), path(lib))[:-3].replace(os.sep, ".")
        if dotted != "__init__":
            found[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = rel
    return found


def package_of(name, rel):
    """The package a library module's relative imports start from ('' at the top)."""
    return name if rel.endswith("__init__.py") else name.rpartition(".")[0]


def below(dotted, package):
    """An import's name made absolute below the library: a relative one ('..text', '.b.x') from
    the importing file's *package*, an absolute one without its 'sandboxguard.'; None for any
    other (os, yaml)."""
    level = len(dotted) - len(dotted.lstrip("."))
    if not level:
        return dotted[len("sandboxguard."):] if dotted.startswith("sandboxguard.") else None
    parts = package.split(".") if package else []
    return ".".join([*parts[:len(parts) - (level - 1)], *filter(None, dotted[level:].split("."))])


def library_modules():
    """{short name: [dotted names below sandboxguard]} of the library's modules."""
    found = {}
    for dotted, rel in library_files().items():
        if not rel.endswith("__init__.py"):
            found.setdefault(dotted.rsplit(".", 1)[-1], []).append(dotted)
    return found


def imports(rel):
    """(line, dotted name) of every import of a Python file: each name a from-import takes
    ('from . import x' is '.x', 'from a import b' is 'a.b': the reader tells a module from a
    name), and ``importlib.import_module("x")``/``__import__("x")`` with a literal name (an
    import by string is an import). A relative import is given with its leading dots."""
    found = []
    for node in ast.walk(parse(rel)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [(node.lineno, base if a.name == "*" else (base + "." if node.module else base) + a.name)
                      for a in node.names]
        elif _is_import_call(node) and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.append((node.lineno, node.args[0].value))
    return found


def computed_imports(rel):
    """Lines of ``importlib.import_module(...)``/``__import__(...)`` calls whose name is computed:
    imports that imports() cannot name (a direction test refuses them or reads them another way)."""
    return [node.lineno for node in ast.walk(parse(rel)) if _is_import_call(node)
            and not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))]


def _is_import_call(node):
    name = getattr(node.func, "attr", None) or getattr(node.func, "id", None) if isinstance(node, ast.Call) else None
    return name in ("import_module", "__import__") and bool(node.args)


def api_table():
    """{public module: [names]} from the API table of python/README.md (the first column names
    the module, the second its public names in backticks)."""
    table = {}
    for line in read("python/README.md").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 2:
            continue
        module = re.findall(r"`(sandboxguard(?:_cli)?\.[\w.]+)`", cells[0])
        if module:
            table[module[0]] = re.findall(r"`([A-Za-z_]\w*)", cells[1])
    return table


def repo_files():
    """Every file and directory (with a trailing /) of the checkout, hidden ones left out."""
    files = []
    for here, dirs, names in os.walk(TOP):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "build", "node_modules")]
        files.extend(os.path.relpath(os.path.join(here, n), TOP) for n in names)
        files.extend(os.path.relpath(os.path.join(here, d), TOP) + "/" for d in dirs)
    return files


def literal(rel, var="DOCUMENTATION"):
    """The YAML document a plugin file assigns to *var*."""
    import yaml

    for node in ast.walk(parse(rel)):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == var:
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no %s" % (rel, var))


class _Captured(Exception):
    pass


@functools.cache
def argument_spec(name):
    """A module's argument spec as its main() builds it (or its action plugin's ARGUMENT_SPEC).
    Needs ansible and the collection linked into .cache/collections (tools/setup.sh)."""
    sys.path.insert(0, path(".cache/collections"))
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


def option_spec(module, option):
    """A module option's spec, found by its name or one of its aliases."""
    spec = argument_spec(module)
    if option in spec:
        return spec[option]
    return next(s for s in spec.values() if option in s.get("aliases", ()))


# -- roles and playbooks -----------------------------------------------------------------------
def roles():
    return sorted(n for n in os.listdir(path("roles")) if os.path.isdir(path("roles/" + n)))


def role_task_files(role):
    folder = "roles/%s/tasks" % role
    return ["%s/%s" % (folder, n) for n in sorted(os.listdir(path(folder)))]


def playbooks():
    return sorted("playbooks/" + n for n in os.listdir(path("playbooks")) if n.endswith(".yml"))


def role_options(role):
    """{variable: spec} over every entry point of a role's meta/argument_specs.yml."""
    options = {}
    for entry in load_yaml("roles/%s/meta/argument_specs.yml" % role)["argument_specs"].values():
        options.update(entry.get("options") or {})
    return options


def tasks(data):
    """Every task of a task list, those inside block/rescue/always included."""
    for task in data or ():
        if isinstance(task, dict):
            yield task
            for nested in ("block", "rescue", "always"):
                yield from tasks(task.get(nested))


def module_calls(data):
    """(module, arguments) of every task of a task list that calls one of the collection's modules."""
    for task in tasks(data):
        for key, value in task.items():
            if isinstance(key, str) and key.startswith(FQCN) and isinstance(value, dict):
                yield key[len(FQCN):], value


PASSED = re.compile(r"^\{\{\s*(\w+)\s*(\|[^{}]*)?\}\}$")


def passed_on(role):
    """(module, option, role variable, task file) for each module option a role's task sets
    from one of the role's variables (``{{ var }}`` or ``{{ var | filters }}``)."""
    for rel in role_task_files(role):
        for module, args in module_calls(load_yaml(rel)):
            for option, text in args.items():
                match = PASSED.match(text.strip()) if isinstance(text, str) else None
                if match and match.group(1).startswith(role + "_"):
                    yield module, option, match.group(1), rel


def shown(value):
    """A default as the roles' descriptions write it: C(true), C([a, b]), C(10)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    return str(value)
