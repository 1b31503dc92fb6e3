# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""docs/architecture.md names only what exists (issue 20): every file or directory path it
writes in backticks, every library module (``safefs``, ``_core/safefs.py``,
``sandboxguard.report``) and every ``module.name`` of the library it names."""
import importlib
import os
import re
import sys

import repo_scan as scan

LIB = scan.path(scan.LIBRARY)
sys.path.insert(0, scan.path("python/src"))
CLI_MODULES = {os.path.basename(rel)[:-3] for rel in scan.python_files(scan.CLI, recursive=False)}


def backticked():
    return re.findall(r"`([^`\n]+)`", scan.read("docs/architecture.md"))


REPO_DIRS = ("python/", "plugins/", "roles/", "playbooks/", "tests/", "tools/", "docs/", "benchmarks/",
             "molecule/", "changelogs/", "meta/", "module_utils/", "sandboxguard/", "sandboxguard_cli/", "_")
FILE_RE = re.compile(r"[\w./-]+\.(?:py|yml|yaml|json|md|sh|j2|txt)")


NOT_OURS = {"_crypto/"}  # community.crypto's package, named as the pattern


def test_every_path_the_architecture_names_exists():
    """A repository file or directory named in backticks exists: a path from the top
    (plugins/modules/sweep.py), or a file name found at the end of some path (test_guard.py,
    tasks/nosuid.yml, _core/safefs.py). Host paths (RUN/home, sandboxes/docker) are not ours."""
    files = scan.repo_files()
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
    modules = scan.library_modules()
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
