# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Bytecode kept between module runs (issue 26, item 5): the library imported from a zip (an
AnsiballZ payload) by root compiles each module once per host, not at every run; an entry
that is not root's alone is never executed."""
import os
import shutil
import subprocess
import sys
import uuid
import zipfile

import pytest
from sandboxguard._core import bytecode

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COPY = os.path.join(TOP, "plugins", "module_utils", "sandboxguard")
PACKAGE = "ansible_collections/sandboxguard/boundary/plugins/module_utils"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the cache is root's")

PROGRAM = r"""
import builtins, json, sys
sys.path.insert(0, sys.argv[1])
compiled = []
real = builtins.compile
def counting(source, filename, *args, **kwargs):
    compiled.append(str(filename))
    return real(source, filename, *args, **kwargs)
builtins.compile = counting
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import strip, sweep
print(json.dumps({"compiled": compiled, "file": sweep.__file__,
                  "finder": type(sys.meta_path[0]).__name__, "strip": strip.run.__code__.co_filename}))
"""


def payload(tmp_path, name="payload.zip"):
    """A zip holding the collection's module_utils copy of the library, as AnsiballZ ships it."""
    path = str(tmp_path / name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        parts = PACKAGE.split("/")
        for depth in range(1, len(parts) + 1):
            archive.writestr("/".join(parts[:depth]) + "/__init__.py", "")
        for here, dirs, names in os.walk(COPY):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name_ in names:
                if name_.endswith(".py"):
                    full = os.path.join(here, name_)
                    archive.write(full, PACKAGE + "/sandboxguard/" + os.path.relpath(full, COPY))
    return path


def run(zip_path):
    import json

    out = subprocess.run([sys.executable, "-I", "-c", PROGRAM, zip_path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def forget_this_library():
    """Remove the cache entries of this checkout's library: the next run is a host's first."""
    for here, dirs, names in os.walk(COPY):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name_ in names:
            if name_.endswith(".py"):
                with open(os.path.join(here, name_), "rb") as handle:
                    entry = os.path.join(bytecode.CACHE_DIR, bytecode.entry_name(handle.read()))
                if os.path.lexists(entry):
                    os.unlink(entry)


@root_only
def test_the_second_run_from_a_zip_compiles_none_of_the_library(tmp_path):
    forget_this_library()
    first = run(payload(tmp_path, "one.zip"))  # a cold cache: every module compiled and stored
    assert first["finder"] == "_Finder"
    assert any(f.endswith("/sweep.py") for f in first["compiled"])
    again = run(payload(tmp_path, "two.zip"))  # another payload path, the same sources: AnsiballZ's next run
    library = [f for f in again["compiled"] if "/module_utils/sandboxguard/" in f]
    # only the package and the cache itself compile, before the cache can be used
    assert sorted({os.path.basename(os.path.dirname(f)) + "/" + os.path.basename(f) for f in library}) == [
        "_core/__init__.py", "_core/atomicfile.py", "_core/bytecode.py", "sandboxguard/__init__.py",
        "sandboxguard/errors.py"]
    assert again["file"].startswith(str(tmp_path / "two.zip"))
    assert again["strip"].startswith(str(tmp_path / "two.zip"))  # tracebacks name this run's file
    key = bytecode.entry_name(open(os.path.join(COPY, "sweep.py"), "rb").read())
    assert os.path.isfile(os.path.join(bytecode.CACHE_DIR, key))


def test_outside_a_zip_nothing_is_installed():
    assert bytecode.install("sandboxguard", None) is False
    assert not any(type(f).__name__ == "_Finder" for f in sys.meta_path)


def test_not_root_means_no_cache(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert bytecode.open_cache_dir() is None


@pytest.fixture
def cache_dir():
    """A root-only directory below /run (not /tmp: a directory others can write is refused)."""
    path = "/run/sgtest-bytecode-%s" % uuid.uuid4().hex[:8]
    os.mkdir(path, 0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@root_only
def test_the_cache_directory_is_made_root_only_and_reached_without_links(cache_dir):
    fd = bytecode.open_cache_dir(cache_dir + "/a/b")
    assert fd is not None
    os.close(fd)
    assert oct(os.stat(cache_dir + "/a/b").st_mode & 0o777) == "0o700"
    os.chmod(cache_dir + "/a", 0o777)
    assert bytecode.open_cache_dir(cache_dir + "/a/b") is None  # others could swap b
    os.chmod(cache_dir + "/a", 0o700)
    os.chown(cache_dir + "/a/b", 4242, 4242)
    assert bytecode.open_cache_dir(cache_dir + "/a/b") is None
    os.symlink(cache_dir + "/a", cache_dir + "/link")
    assert bytecode.open_cache_dir(cache_dir + "/link/b", create=False) is None


@root_only
def test_an_entry_not_roots_alone_is_never_loaded(cache_dir):
    fd = bytecode.open_cache_dir(cache_dir)
    code = compile("x = 1", "x.py", "exec")
    bytecode.store(fd, "good", code)
    assert bytecode.load(fd, "good") == code
    assert os.listdir(cache_dir) == ["good"]  # the temporary name is gone
    shutil.copy(cache_dir + "/good", cache_dir + "/shared")
    os.chmod(cache_dir + "/shared", 0o620)
    assert bytecode.load(fd, "shared") is None
    shutil.copy(cache_dir + "/good", cache_dir + "/theirs")
    os.chown(cache_dir + "/theirs", 4242, 4242)
    assert bytecode.load(fd, "theirs") is None
    os.symlink(cache_dir + "/good", cache_dir + "/link")
    assert bytecode.load(fd, "link") is None
    with open(cache_dir + "/garbage", "wb") as handle:
        handle.write(b"\x00not marshal")
    assert bytecode.load(fd, "garbage") is None
    import marshal

    with open(cache_dir + "/notcode", "wb") as handle:
        handle.write(marshal.dumps({"a": 1}))
    assert bytecode.load(fd, "notcode") is None
    os.close(fd)


def test_the_entry_name_is_the_content_and_the_interpreter():
    assert bytecode.entry_name(b"a = 1") == bytecode.entry_name(b"a = 1")
    assert bytecode.entry_name(b"a = 1") != bytecode.entry_name(b"a = 2")


@root_only
def test_a_store_that_fails_in_any_way_never_fails_the_import(cache_dir, monkeypatch):
    fd = bytecode.open_cache_dir(cache_dir)

    def broken(*args, **kwargs):
        raise RuntimeError("anything at all")

    monkeypatch.setattr(bytecode.atomicfile, "write_at", broken)
    bytecode.store(fd, "x", compile("x = 1", "x.py", "exec"))
    assert os.listdir(cache_dir) == []
    os.close(fd)
