# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""docs/architecture.md names only what exists (issue 20): every file or directory path it
writes in backticks, every library module (``safefs``, ``_core/safefs.py``,
``sandboxguard.report``) and every ``module.name`` of the library it names."""
import importlib
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(TOP, "python", "src", "sandboxguard")
DOC = os.path.join(TOP, "docs", "architecture.md")
sys.path.insert(0, os.path.join(TOP, "python", "src"))


def library_modules():
    """{short name: dotted name below sandboxguard} for every library module (unique names)."""
    found = {}
    for here, dirs, files in os.walk(LIB):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                rel = os.path.relpath(os.path.join(here, name), LIB)[:-3].replace(os.sep, ".")
                found.setdefault(name[:-3], []).append(rel)
    return found


CLI_MODULES = {n[:-3] for n in os.listdir(os.path.join(TOP, "python", "src", "sandboxguard_cli")) if n.endswith(".py")}


def backticked():
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    return re.findall(r"`([^`\n]+)`", text)


REPO_DIRS = ("python/", "plugins/", "roles/", "playbooks/", "tests/", "tools/", "docs/", "benchmarks/",
             "molecule/", "changelogs/", "meta/", "module_utils/", "sandboxguard/", "sandboxguard_cli/", "_")
FILE_RE = re.compile(r"[\w./-]+\.(?:py|yml|yaml|json|md|sh|j2|txt)")


NOT_OURS = {"_crypto/"}  # community.crypto's package, named as the pattern


def repo_files():
    files = []
    for here, dirs, names in os.walk(TOP):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "build", "node_modules")]
        files.extend(os.path.relpath(os.path.join(here, n), TOP) for n in names)
        files.extend(os.path.relpath(os.path.join(here, d), TOP) + "/" for d in dirs)
    return files


def test_every_path_the_architecture_names_exists():
    """A repository file or directory named in backticks exists: a path from the top
    (plugins/modules/sweep.py), or a file name found at the end of some path (test_guard.py,
    tasks/nosuid.yml, _core/safefs.py). Host paths (RUN/home, sandboxes/docker) are not ours."""
    files = repo_files()
    missing = []
    for token in backticked():
        token = token.split("::")[0].split(" ")[0]
        if "*" in token or token.startswith(("/", "~", "<", ".")):
            continue
        if FILE_RE.fullmatch(token) or (token.startswith(REPO_DIRS) and "/" in token and "." not in token):
            want = token if FILE_RE.fullmatch(token) else token.rstrip("/") + "/"
            if token in NOT_OURS:
                continue
            if not any(f == want or f.endswith("/" + want) for f in files):
                missing.append(token)
    assert missing == [], "docs/architecture.md names files that do not exist: %s" % sorted(set(missing))


def test_every_library_module_and_name_the_architecture_names_exists():
    modules = library_modules()
    missing = []
    for token in backticked():
        if FILE_RE.fullmatch(token.split("::")[0]) or token.endswith((".service", ".json")) or "/" in token:
            continue
        for call in re.findall(r"(?<![\w./])([a-z_][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b", token):
            module, name = call
            if module == "sandboxguard" or module not in modules or module in CLI_MODULES:
                continue
            dotted = [d for d in modules[module]]
            if not any(hasattr(importlib.import_module("sandboxguard." + d), name) or
                       os.path.exists(os.path.join(LIB, *d.split(".")[:-1], module, name + ".py")) for d in dotted):
                missing.append("%s.%s" % call)
        for dotted in re.findall(r"\bsandboxguard(?:\.[a-z_][a-z0-9_]*)+", token):
            parts = dotted.split(".")
            for cut in range(len(parts), 1, -1):
                try:
                    mod = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                if all(hasattr(mod, p) for p in parts[cut:cut + 1]):
                    break
            else:
                missing.append(dotted)
    assert missing == [], "docs/architecture.md names library modules or names that do not exist: %s" % sorted(
        set(missing))
