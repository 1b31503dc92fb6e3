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
import os

import pytest
import repo_scan as scan

ORDER = ("_core", "_walk", "_bwrap", "_fetch", "_leaks", "_privileged", "_terminal", "_prevent", "_guard", "_fleet")


def imports_of(name, rel, known):
    """The library modules `name` imports (every statement, lazy ones and literal strings too)."""
    out = set()
    for _line, dotted in scan.imports(rel):
        target = scan.below(dotted, scan.package_of(name, rel))
        if target is not None:  # 'strip.run' is the module strip; '_bwrap.b' a module itself
            out.add(target if target in known else target.rpartition(".")[0])
    return {m for m in out if m in known and m != name}


def unreadable_imports(lib=scan.LIBRARY):
    """'file:line' of each string import whose module is not a literal."""
    return ["%s:%d" % (os.path.relpath(scan.path(rel), scan.path(lib)), line)
            for rel in sorted(scan.library_files(lib).values()) for line in scan.computed_imports(rel)]


def graph(lib=scan.LIBRARY):
    known = scan.library_files(lib)
    return {name: imports_of(name, rel, known) for name, rel in known.items()}


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
    found = scan.library_files()
    inits = [name for name in found if name.startswith("_") and "." not in name]
    assert "_bwrap" in inits
    for name in inits:
        assert scan.parse(found[name]).body == [], (
            "%s/__init__.py must stay empty (no imports, no re-exports): AnsiballZ" % name)


def test_imports_point_down_and_never_back():
    assert problems(graph()) == []


def test_no_import_hides_in_a_string():
    """A module named by a computed string cannot be placed; import it by name (a lazy import
    inside the function is fine) or name it as a literal."""
    assert unreadable_imports() == []


@pytest.mark.parametrize(("edges", "expected"), [
    ({"_core.a": {"_bwrap.b"}, "_bwrap.b": set()}, "_core.a imports _bwrap.b"),
    ({"_bwrap.b": {"_guard.c"}, "_guard.c": set()}, "_bwrap.b imports _guard.c"),
    ({"_bwrap.b": {"text"}, "text": {"bwrap"}, "bwrap": {"_bwrap.c"}, "_bwrap.c": set()},
     "_bwrap reaches bwrap, which imports _bwrap back"),
    ({"_odd.x": set()}, "_odd: a private package this test does not place"),
])
def test_the_rules_see_a_wrong_arrow(edges, expected):
    assert any(p.startswith(expected) for p in problems(edges)), problems(edges)


def test_relative_and_string_imports_resolve_to_library_modules(tmp_path):
    for name, text in {
            "_bwrap/__init__.py": "", "_terminal/__init__.py": "", "_bwrap/b.py": "x = 1\n", "text.py": "",
            "report.py": "", "_bwrap/a.py": "from .. import text\nfrom .b import x\n"
                                            "def f():\n    from ..bwrap import probe\n",
            "bwrap.py": "from ._bwrap import a\nfrom . import report as envelope\n",
            "_terminal/tools.py": "from .. import shim\n",
            "shim.py": "import importlib\n"
                       "def a():\n    return importlib.import_module('sandboxguard._terminal.tools')\n"
                       "def b():\n    return __import__('sandboxguard.report')\n"
                       "def c(name):\n    return importlib.import_module('%s.%s' % (__package__, name))\n"}.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = graph(str(tmp_path))
    assert edges["_bwrap.a"] == {"text", "_bwrap.b", "bwrap"} and edges["bwrap"] == {"_bwrap.a", "report"}
    assert edges["shim"] == {"_terminal.tools", "report"}
    assert any(p.startswith("_terminal reaches shim, which imports _terminal back") for p in problems(edges))
    assert unreadable_imports(str(tmp_path)) == ["shim.py:7"]
