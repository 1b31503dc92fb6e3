# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The library's private packages import in one direction (issue 20).

python/src/sandboxguard/ holds the public modules (python/README.md's table) and the other
flat modules, and below them private packages, one per capability, with EMPTY __init__.py
files: a re-exporting __init__ would make every Ansible module that imports one piece carry
(and AnsiballZ compile) the whole package. The packages, lowest first:

    _core < _walk < _bwrap < _fetch < _leaks < _privileged < _terminal < _prevent < _guard < _fleet

- a package imports only packages to its left (``_core`` none at all);
- a flat module may import any package; a package may import flat modules, but never one
  that imports the package back, directly or through other modules (no cycles: the facade
  ``bwrap`` imports ``_bwrap``, so ``_bwrap`` never imports ``bwrap``);
- every import counts, a lazy one inside a function too, and one by string
  (``importlib.import_module("sandboxguard.x")``, ``__import__("sandboxguard.x")``): a string
  import must name its module as a literal this test can read, so a cycle cannot hide in one.
"""
import ast
import os

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(TOP, "python", "src", "sandboxguard")
ORDER = ("_core", "_walk", "_bwrap", "_fetch", "_leaks", "_privileged", "_terminal", "_prevent", "_guard", "_fleet")


def modules(lib=LIB):
    """{dotted name below sandboxguard ('bwrap', '_bwrap.checks'): file path}."""
    found = {}
    for here, dirs, names in os.walk(lib):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in names:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(here, name), lib)[:-3].replace(os.sep, ".")
                if rel != "__init__":  # sandboxguard itself: its __version__, no code
                    found[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(here, name)
    return found


def imports_of(name, path, known):
    """The library modules `name` imports (relative imports; every statement, lazy ones too)."""
    package = name.rsplit(".", 1)[0] if "." in name else ""
    if path.endswith("__init__.py"):
        package = name
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            parts = package.split(".") if package else []
            base = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
            stem = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                full = "%s.%s" % (stem, alias.name) if stem else alias.name
                out.add(full if full in known else stem)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for mod in names:
                if mod.startswith("sandboxguard."):
                    out.add(mod[len("sandboxguard."):])
        elif _string_import(node) is not None:
            text = _string_import(node)
            if text.startswith("sandboxguard."):
                out.add(text[len("sandboxguard."):])
            elif text.startswith("."):  # import_module(".x", package=__package__): relative to this package
                level = len(text) - len(text.lstrip("."))
                parts = package.split(".") if package else []
                out.add(".".join([*parts[:len(parts) - (level - 1)], *text[level:].split(".")]).strip("."))
    return {m for m in out if m in known and m != name}


def _string_import(node):
    """The module text of an ``importlib.import_module(...)``/``__import__(...)`` call; '' when it is
    not a literal (the test cannot tell what it imports); None for any other node."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    called = ast.unparse(node.func)
    if called not in ("__import__", "import_module", "importlib.import_module"):
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""


def unreadable_imports(lib=LIB):
    """'file:line' of each string import whose module is not a literal."""
    found = []
    for path in sorted(modules(lib).values()):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        found += ["%s:%d" % (os.path.relpath(path, lib), node.lineno) for node in ast.walk(tree)
                  if _string_import(node) == ""]
    return found


def graph(lib=LIB):
    known = modules(lib)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def unit(name):
    """A package's modules count as one unit ('_bwrap'); a flat module is its own."""
    return name.split(".", 1)[0]


def problems(edges):
    found = []
    packages = sorted({unit(m) for m in edges if m.startswith("_")})
    for pkg in packages:
        if pkg not in ORDER:
            found.append("%s: a private package this test does not place; add it to ORDER" % pkg)
    for name, targets in sorted(edges.items()):
        here = unit(name)
        for target in sorted(targets):
            there = unit(target)
            if here.startswith("_") and there.startswith("_") and here != there:
                if here not in ORDER or there not in ORDER or ORDER.index(there) >= ORDER.index(here):
                    found.append("%s imports %s: packages import only those below them (%s)"
                                 % (name, target, " < ".join(ORDER)))
    # no cycle through a package: nothing a package reaches leads back into it
    for pkg in packages:
        start = {t for m, ts in edges.items() if unit(m) == pkg for t in ts if unit(t) != pkg}
        seen, todo = set(), sorted(start)
        while todo:
            mod = todo.pop()
            if mod in seen:
                continue
            seen.add(mod)
            for target in edges.get(mod, ()):
                if unit(target) == pkg:
                    found.append("%s reaches %s, which imports %s back (no cycles)" % (pkg, mod, pkg))
                elif target not in seen:
                    todo.append(target)
    return sorted(set(found))


def test_the_packages_exist_with_empty_init_files():
    found = modules()
    inits = [name for name in found if name.startswith("_") and "." not in name]
    assert "_bwrap" in inits
    for name in inits:
        with open(found[name], encoding="utf-8") as handle:
            body = ast.parse(handle.read()).body
        assert body == [], "%s/__init__.py must stay empty (no imports, no re-exports): AnsiballZ" % name


def test_imports_point_down_and_never_back():
    assert problems(graph()) == []


def test_no_import_hides_in_a_string():
    """A module named by a computed string cannot be placed; import it by name (a lazy import
    inside the function is fine) or name it as a literal."""
    assert unreadable_imports() == []


def test_string_imports_are_read(tmp_path):
    (tmp_path / "_terminal").mkdir()
    (tmp_path / "_terminal" / "__init__.py").write_text("")
    (tmp_path / "_terminal" / "tools.py").write_text("from .. import shim\n")
    (tmp_path / "shim.py").write_text(
        "import importlib\n"
        "def a():\n    return importlib.import_module('sandboxguard._terminal.tools')\n"
        "def b():\n    return __import__('sandboxguard.report')\n"
        "def c(name):\n    return importlib.import_module('%s.%s' % (__package__, name))\n")
    (tmp_path / "report.py").write_text("")
    edges = graph(str(tmp_path))
    assert edges["shim"] == {"_terminal.tools", "report"}
    assert any(p.startswith("_terminal reaches shim, which imports _terminal back") for p in problems(edges))
    assert unreadable_imports(str(tmp_path)) == ["shim.py:7"]


@pytest.mark.parametrize(("edges", "expected"), [
    ({"_core.a": {"_bwrap.b"}, "_bwrap.b": set()}, "_core.a imports _bwrap.b"),
    ({"_bwrap.b": {"_guard.c"}, "_guard.c": set()}, "_bwrap.b imports _guard.c"),
    ({"_bwrap.b": {"text"}, "text": {"bwrap"}, "bwrap": {"_bwrap.c"}, "_bwrap.c": set()},
     "_bwrap reaches bwrap, which imports _bwrap back"),
    ({"_odd.x": set()}, "_odd: a private package this test does not place"),
])
def test_the_rules_see_a_wrong_arrow(edges, expected):
    assert any(p.startswith(expected) for p in problems(edges)), problems(edges)


def test_relative_imports_resolve_to_library_modules(tmp_path):
    (tmp_path / "_bwrap").mkdir()
    (tmp_path / "_bwrap" / "__init__.py").write_text("")
    (tmp_path / "_bwrap" / "a.py").write_text("from .. import text\nfrom .b import x\n"
                                              "def f():\n    from ..bwrap import probe\n")
    (tmp_path / "_bwrap" / "b.py").write_text("x = 1\n")
    (tmp_path / "text.py").write_text("")
    (tmp_path / "bwrap.py").write_text("from ._bwrap import a\nfrom . import report as envelope\n")
    (tmp_path / "report.py").write_text("")
    edges = graph(str(tmp_path))
    assert edges["_bwrap.a"] == {"text", "_bwrap.b", "bwrap"} and edges["bwrap"] == {"_bwrap.a", "report"}
