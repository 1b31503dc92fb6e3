# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""python/README.md names the library's public API: every name it lists exists, and its
signature is the one pinned in public_api.txt (parameter names, kinds and defaults of each
function, each class's constructor and public methods, the built-in exceptions an error
class is caught as, StripOptions' keywords).

A change to a pinned signature fails here. Keep the old form working through a deprecation
first (see DEPRECATE below), then regenerate the pins deliberately:
``python3 tests/unit/test_public_api.py --write``.
"""
import ast
import importlib
import inspect
import os
import sys
import types

import pytest
import repo_scan as scan

HERE = os.path.dirname(os.path.abspath(__file__))
COPY = "ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard"  # the glue's name for it
PINS = os.path.join(HERE, "public_api.txt")

DEPRECATE = (
    "The public API keeps its signatures within a major version (python/README.md). To rename a "
    "parameter, keep the old one as a trailing keyword defaulting to None that warns "
    "(DeprecationWarning) and wins when given (report.dry_run_arg does it for dry_run's old names); "
    "to drop or reorder one, or change a default, add the new form beside the old and deprecate the "
    "old; either way add a changelog fragment under deprecated_features. A new trailing parameter with "
    "a default is compatible. Then run python3 tests/unit/test_public_api.py --write and commit "
    "public_api.txt with the change.")


def _table():
    """[(public module, [names])] of python/README.md's API table (repo_scan reads it)."""
    return [(module, names) for module, names in scan.api_table().items() if module.startswith("sandboxguard.")]


class _Shown:
    """A default as the pin writes it: the same text on every machine and Python."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _default_text(value):
    if isinstance(value, types.ModuleType):
        return "<module %s>" % value.__name__
    if inspect.isclass(value):
        return "<class %s>" % value.__name__
    if callable(value):
        return "<function %s>" % getattr(value, "__name__", type(value).__name__)
    text = repr(value)
    if " at 0x" in text:
        return "<%s object>" % type(value).__name__
    return text


def signature_text(func, drop_first=False):
    """``(a, b=1, *, c=None, **kw)``: names, kinds and defaults; annotations left out."""
    sig = inspect.signature(func)
    params = list(sig.parameters.values())[1 if drop_first else 0:]
    params = [p.replace(annotation=inspect.Parameter.empty,
                        default=p.default if p.default is inspect.Parameter.empty else _Shown(_default_text(p.default)))
              for p in params]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _constructor(cls):
    """The __init__ of the library class it comes from, or the built-in it inherits."""
    for klass in cls.__mro__:
        if "__init__" in vars(klass) and klass.__module__.startswith("sandboxguard"):
            return signature_text(vars(klass)["__init__"], drop_first=True)
        if klass.__module__ == "builtins" and klass is not object:
            return "<%s.__init__>" % klass.__name__
    return "()"


def describe(obj):
    """The pinned lines for one public name (without the name)."""
    if inspect.isclass(obj):
        lines = ["class %s" % _constructor(obj)]
        builtin = [k.__name__ for k in obj.__mro__[1:] if k.__module__ == "builtins" and k is not object]
        if builtin:
            lines.append("caught as %s" % ", ".join(builtin))
        options = getattr(sys.modules[obj.__module__], "OPTION_DEFAULTS", None) if obj.__name__ == "StripOptions" \
            else None
        if options is not None:  # StripOptions(**kwargs): its keywords are run(), scan() and strip()'s too
            lines += ["keyword %s=%s" % (name, _default_text(value)) for name, value in sorted(options.items())]
        for name, member in sorted(vars(obj).items()):
            if inspect.isfunction(member) and (not name.startswith("_") or name in ("__call__", "__enter__",
                                                                                      "__exit__")):
                lines.append("method %s%s" % (name, signature_text(member, drop_first=True)))
        return lines
    if callable(obj):
        return ["function %s" % signature_text(obj)]
    return ["constant %s" % type(obj).__name__]  # its value may grow (a new kind, a new step)


def current():
    lines = []
    for module, names in _table():
        mod = importlib.import_module(module)
        for name in names:
            if hasattr(mod, name):
                lines += ["%s.%s %s" % (module, name, line) for line in describe(getattr(mod, name))]
    return lines


def pinned():
    with open(PINS, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle if line.strip() and not line.startswith("#")]


def _by_name(lines):
    grouped = {}
    for line in lines:
        grouped.setdefault(line.split(" ", 1)[0], []).append(line.split(" ", 1)[1])
    return grouped


def differences(now, pins):
    """One message per public name whose pinned lines changed."""
    now, pins = _by_name(now), _by_name(pins)
    out = []
    for name in sorted(set(now) | set(pins)):
        if now.get(name) != pins.get(name):
            was, got = pins.get(name, ["(not pinned)"]), now.get(name, ["(gone)"])
            out.append("%s\n    pinned: %s\n    now:    %s" % (name, "\n            ".join(was),
                                                              "\n            ".join(got)))
    return out


def test_the_flat_modules_are_exactly_the_public_ones():
    """Everything internal lives in a private package (_core, _walk, ...): a module at the
    top of the library is public, and listed in the table (issue 20)."""
    flat = {"sandboxguard." + name for name, rel in scan.library_files().items()
            if "." not in name and not rel.endswith("__init__.py")}
    listed = {module for module, _names in _table()}
    assert sorted(flat - listed) == [], "internal modules belong in a private package (docs/architecture.md)"
    assert sorted(listed - flat) == [], "python/README.md lists modules that are not at the top of the library"
    packages = sorted({name.split(".")[0] for name in scan.library_files() if "." in name})
    assert packages and all(name.startswith("_") for name in packages), packages


@pytest.mark.parametrize(("module", "names"), _table(), ids=[m for m, _ in _table()])
def test_every_name_of_the_row_exists_and_all_is_exactly_the_row(module, names):
    """``from sandboxguard.strip import *`` gives the row, nothing more (pytest's and pip's
    ``__init__`` list exactly their public names): what else the modules, the CLI and the tests
    need, they import from the private module that defines it."""
    mod = importlib.import_module(module)
    missing = [name for name in names if not hasattr(mod, name)]
    assert not missing, "%s lacks %s (python/README.md lists them)" % (module, missing)
    exported = getattr(mod, "__all__", None)
    assert exported is not None, "%s has no __all__: give it python/README.md's row" % module
    assert len(exported) == len(set(exported)) and sorted(exported) == sorted(names), (
        "%s.__all__ is %s; python/README.md's row is %s: the two say the same" % (module, sorted(exported),
                                                                                    sorted(names)))


def own_names(tree):
    """What a module defines at its top (def, class, assignment), not what it imports."""
    names = set()

    def visit(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                visit([*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                       *(s for handler in getattr(node, "handlers", []) for s in handler.body)])

    visit(tree.body)
    return names


def _library_module(node, package):
    """The library module a from-import reads, dotted below sandboxguard ('' for the package
    itself), or None. `package` is the importing library file's package ('' at the top), None
    outside the library (a relative import there is not the library's)."""
    if node.level and package is None:
        return None
    dotted = "." * node.level + _absolute(node.module or "")
    return "" if dotted == "sandboxguard" else scan.below(dotted, package or "")


def _absolute(dotted):
    """The library's own name for a module the glue names through its copy (COPY.strip)."""
    return "sandboxguard" + dotted[len(COPY):] if dotted == COPY or dotted.startswith(COPY + ".") else dotted


def _denoted(node, bound, rows):
    """The library module an expression stands for ('' for the package itself), or None: a
    name bound by an import, ``sandboxguard.strip``, ``importlib.import_module("sandboxguard.strip")``,
    ``__import__("sandboxguard.strip").strip``."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        return node.attr if _denoted(node.value, bound, rows) == "" and node.attr in rows else None
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str):
        called, text = ast.unparse(node.func), node.args[0].value
        if called == "__import__" and (text == "sandboxguard" or text.startswith("sandboxguard.")):
            return ""  # __import__("a.b") gives the package a
        if called.endswith("import_module") and text.startswith("sandboxguard."):
            return text[len("sandboxguard."):]
    return None


def hub_uses(tree, package, rows, own):
    """(line, module, name) of each name read from a public module that is neither in its row nor
    defined there (a re-export used as a hub): ``from sandboxguard.strip import held_fd_cap``,
    ``from .. import strip`` then ``strip.held_fd_cap``, ``__import__("sandboxguard.strip").strip.held_fd_cap``.
    `rows`: {module: its row}; `own`: {module: own_names}."""
    bound, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            stem = _library_module(node, package)
            for alias in node.names if stem is not None else ():
                if stem in rows:
                    found.append((node.lineno, stem, alias.name))
                elif stem == "" and alias.name in rows:
                    bound[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module = scan.below(_absolute(alias.name), "")
                if module in rows and (alias.asname or alias.name.startswith("sandboxguard.")):
                    bound[alias.asname or "sandboxguard"] = module if alias.asname else ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            module = _denoted(node.value, bound, rows)
            if module:
                found.append((node.lineno, module, node.attr))
    return sorted((line, module, name) for line, module, name in found
                  if name not in rows[module] and name not in own[module] and not name.startswith("__"))


def _readers():
    """(file, tree, package) of everything that imports the library: the library itself (its
    private packages and the public modules), the CLI, the modules' glue and plugins, the tests,
    the benchmarks and the tools."""
    for name, rel in sorted(scan.library_files().items()):
        yield rel, scan.parse(rel), scan.package_of(name, rel)
    for top in (scan.CLI, scan.MODULES, scan.ACTION, scan.MODULE_UTILS, "tests", "benchmarks", "tools",
                "plugins/filter"):
        for rel in scan.python_files(top, skip=("sandboxguard",)):  # module_utils/sandboxguard: the copy
            yield rel, scan.parse(rel), None


def test_nothing_reads_a_private_name_through_a_public_module():
    """A name not in a public module's row is imported from where it is defined: the private
    packages, the CLI, the glue and the tests import the private module (``_walk.walk``), never a
    public one (``strip``) as a hub for it."""
    rows = {module[len("sandboxguard."):]: set(names) for module, names in _table()}
    own = {}
    for module in rows:
        own[module] = own_names(scan.parse("%s/%s.py" % (scan.LIBRARY, module)))
    found = ["%s:%d reads %s from %s: import it from the private module that defines it"
             % (rel, line, name, module)
             for rel, tree, package in _readers() for line, module, name in hub_uses(tree, package, rows, own)]
    assert found == []


@pytest.mark.parametrize(("source", "package", "expected"), [
    ("from sandboxguard.strip import run, held_fd_cap", None, [(1, "strip", "held_fd_cap")]),
    ("from .. import strip as s\ns.held_fd_cap(1)", "_guard", [(2, "strip", "held_fd_cap")]),
    ("from . import strip\nstrip.run_opened(1)\nstrip.run(2)", "", []),
    ("import sandboxguard.strip\nsandboxguard.strip.held_fd_cap", None, [(2, "strip", "held_fd_cap")]),
    ("from %s import strip\nstrip.held_fd_cap" % COPY, None, [(2, "strip", "held_fd_cap")]),
    ("from %s.strip import held_fd_cap" % COPY, None, [(1, "strip", "held_fd_cap")]),
    ("from ._walk.walk import held_fd_cap\nfrom .strip import run", "", []),
    ("from ..strip import held_fd_cap", None, []),  # outside the library: not the library's
    ("__import__('sandboxguard.strip').strip.held_fd_cap(1)", None, [(1, "strip", "held_fd_cap")]),
    ("import importlib\nimportlib.import_module('sandboxguard.strip').held_fd_cap", None,
     [(2, "strip", "held_fd_cap")]),
    ("__import__('sandboxguard.strip').strip.run(1)", None, []),
])
def test_the_hub_rule_sees_each_way_of_reading_a_name(source, package, expected):
    rows = {"strip": {"run"}}
    own = {"strip": {"run", "run_opened"}}
    assert hub_uses(ast.parse(source), package, rows, own) == expected


PRIVATE_NOTICE = "PRIVATE to the library and the collection"


def private_files():
    """Every file of the private packages (but their __init__.py, which stay empty) and every
    file of the modules' glue (plugins/module_utils/*.py; its sandboxguard/ is the library's copy)."""
    found = [rel for name, rel in scan.library_files().items()
             if name.startswith("_") and not rel.endswith("__init__.py")]
    return sorted(found + scan.python_files(scan.MODULE_UTILS, recursive=False, init=False))


def test_private_files_say_so_first():
    """community.crypto marks every _crypto/ and _acme/ file private to the collection: here the
    first words of each private file's docstring do, where ``help()`` and a reader look first."""
    files = private_files()
    assert any(p.endswith(os.path.join("_core", "text.py")) for p in files)
    assert any(p.endswith(os.path.join("module_utils", "walk_module.py")) for p in files) and len(files) > 60
    unmarked = [rel for rel in files if not (ast.get_docstring(scan.parse(rel)) or "").startswith(PRIVATE_NOTICE)]
    assert unmarked == [], "start each docstring with %r: %s" % (PRIVATE_NOTICE + ".", unmarked)


def test_every_public_signature_is_the_pinned_one():
    changed = differences(current(), pinned())
    assert not changed, "public signature(s) changed:\n%s\n\n%s" % ("\n".join(changed), DEPRECATE)


def test_the_pin_sees_a_renamed_parameter_a_new_default_and_a_dropped_keyword(monkeypatch):
    from sandboxguard import leaks, roots, strip

    def renamed(path, allow_files=False):  # was allow_file
        return path

    monkeypatch.setattr(roots, "check_root", renamed)
    monkeypatch.setattr(leaks, "finding_lines", lambda report, limit=10: [])  # a new parameter, compatible
    monkeypatch.setitem(sys.modules[strip.StripOptions.__module__].OPTION_DEFAULTS, "budget", 1.0)
    changed = differences(current(), pinned())
    assert sorted(c.split("\n", 1)[0] for c in changed) == [
        "sandboxguard.leaks.finding_lines", "sandboxguard.roots.check_root", "sandboxguard.strip.StripOptions"]
    assert "allow_files=False" in "\n".join(changed) and "keyword budget=1.0" in "\n".join(changed)


def test_defaults_are_written_the_same_on_every_machine():
    assert _default_text(os) == "<module os>" and _default_text(os.path.isdir) == "<function isdir>"
    assert _default_text(object()) == "<object object>" and _default_text(("ab-*",)) == "('ab-*',)"


if __name__ == "__main__":  # python3 tests/unit/test_public_api.py --write: pin what the code says now
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "src"))
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python3 tests/unit/test_public_api.py --write")
    with open(PINS, "w", encoding="utf-8") as handle:
        handle.write("# Copyright (c) sandboxguard contributors\n# SPDX-License-" "Identifier: Apache-2.0\n"
                     "# The public API's signatures (python/README.md's table), pinned: tests/unit/test_public_api.py\n"
                     "# compares the code with these lines. Written by python3 tests/unit/test_public_api.py --write\n"
                     "# after a change went through its deprecation; never edited by hand.\n")
        handle.write("\n".join(current()) + "\n")
