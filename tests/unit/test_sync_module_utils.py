# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The module_utils copy is the library byte for byte, plus one GENERATED line."""
import os
import shutil

import repo_scan as scan

sync = scan.tool("sync_module_utils")


def test_checkout_has_no_drift():
    assert sync.drift() == []


def test_copy_starts_with_generated_line_then_the_source_bytes(tmp_path):
    sync.sync(sync.SOURCE, str(tmp_path))
    with open(os.path.join(sync.SOURCE, "__init__.py"), "rb") as handle:
        source = handle.read()
    copy = (tmp_path / "__init__.py").read_bytes()
    first, rest = copy.split(b"\n", 1)
    assert first.startswith(b"# GENERATED from python/src/sandboxguard/__init__.py")
    assert rest == source


def test_drift_is_named_and_sync_mends_it_private_packages_included(tmp_path):
    """An edited copy, a source not copied and a copy with no source are drift; the library's
    private packages (_bwrap/, _guard/, ...) are part of the copy: a file in a package is
    copied, an edit to its copy is drift, a package whose source is gone goes."""
    packages = sorted({os.path.dirname(name) for name in sync.expected_copies()} - {""})
    assert "_bwrap" in packages, packages
    source, target = tmp_path / "src", tmp_path / "dst"
    shutil.copytree(sync.SOURCE, str(source), ignore=shutil.ignore_patterns("__pycache__"))
    (source / "_new").mkdir()
    (source / "_new" / "__init__.py").write_text("")
    (source / "_new" / "piece.py").write_text("X = 1\n")
    sync.sync(str(source), str(target))
    assert (target / "_new" / "piece.py").read_text().endswith("X = 1\n")
    assert sync.drift(str(source), str(target)) == []
    (target / "_bwrap" / "checks.py").write_text("# edited\n")
    (source / "added.py").write_text("X = 1\n")
    (target / "orphan.py").write_text("Y = 2\n")
    assert sorted(sync.drift(str(source), str(target))) == [("_bwrap/checks.py", "differs from its source"),
                                                            ("added.py", "is missing"), ("orphan.py", "has no source")]
    shutil.rmtree(str(source / "_new"))
    assert sorted(sync.drift(str(source), str(target)))[:2] == [
        ("_bwrap/checks.py", "differs from its source"), ("_new/__init__.py", "has no source")]
    sync.sync(str(source), str(target))
    assert sync.drift(str(source), str(target)) == [] and not (target / "_new").exists()
    assert not (target / "orphan.py").exists() and (target / "added.py").exists()
