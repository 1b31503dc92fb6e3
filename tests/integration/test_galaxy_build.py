# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The collection as users get it: `ansible-galaxy collection build`, install, run.

Everything after the build runs against the INSTALLED copy only: ANSIBLE_COLLECTIONS_PATH
and ANSIBLE_HOME point into a temp dir, so neither the checkout (.cache/collections) nor a
copy some tool left in ~/.ansible/collections can answer instead.
"""
import json
import os
import stat
import subprocess
import sys
import tarfile

import pytest
import yaml

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)  # .venv/bin: ansible-galaxy, ansible-doc, ansible
FQCN = "sandboxguard.boundary"

pytestmark = [pytest.mark.controller, pytest.mark.slow]


def galaxy():
    with open(os.path.join(TOP, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)


def checkout_modules():
    directory = os.path.join(TOP, "plugins", "modules")
    if not os.path.isdir(directory):
        return []
    return sorted(n[:-3] for n in os.listdir(directory) if n.endswith(".py") and not n.startswith("_"))


def run(argv, env, cwd, check=True):
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        pytest.fail("%s exited %d\nstdout:\n%s\nstderr:\n%s" % (argv, result.returncode, result.stdout, result.stderr))
    return result


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Build the tarball from the checkout. tests/output/ gets a sentinel file if it has none,
    so the build_ignore check below has something to leave out."""
    out = tmp_path_factory.mktemp("build")
    sentinel_dir = os.path.join(TOP, "tests", "output")
    sentinel = os.path.join(sentinel_dir, "galaxy-build-sentinel.txt")
    made_dir = not os.path.isdir(sentinel_dir)
    os.makedirs(sentinel_dir, exist_ok=True)
    with open(sentinel, "w") as handle:
        handle.write("must not be in the tarball\n")
    try:
        run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out), TOP],
            env=dict(os.environ), cwd=str(out))
    finally:
        os.unlink(sentinel)
        if made_dir:
            os.rmdir(sentinel_dir)
    tarballs = sorted(p for p in os.listdir(str(out)) if p.endswith(".tar.gz"))
    return out, tarballs


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """Install the tarball into a temp collections path; return (env, collection dir)."""
    out, tarballs = built
    assert len(tarballs) == 1, tarballs
    root = tmp_path_factory.mktemp("install")
    (root / "ansible.cfg").write_text("[defaults]\n")  # not the checkout's ansible.cfg
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("ANSIBLE_"):
            del env[name]
    env.update(
        ANSIBLE_HOME=str(root / "home"),
        ANSIBLE_COLLECTIONS_PATH=str(root / "collections"),
        ANSIBLE_CONFIG=str(root / "ansible.cfg"),
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
    )
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "--force",
         "-p", str(root / "collections"), str(out / tarballs[0])], env=env, cwd=str(root))
    return env, str(root / "collections" / "ansible_collections" / "sandboxguard" / "boundary")


def test_build_writes_one_tarball_named_for_namespace_name_and_version(built):
    meta = galaxy()
    assert built[1] == ["%s-%s-%s.tar.gz" % (meta["namespace"], meta["name"], meta["version"])]


def test_tarball_leaves_out_venv_cache_and_test_output(built):
    out, tarballs = built
    # The check means something only if the build saw them: setup made .venv and .cache,
    # the fixture put a sentinel in tests/output.
    assert os.path.isdir(os.path.join(TOP, ".venv")) and os.path.isdir(os.path.join(TOP, ".cache"))
    with tarfile.open(str(out / tarballs[0])) as tar:
        names = tar.getnames()
    leaked = [n for n in names if n.split("/")[0] in (".venv", ".cache", ".git") or n.startswith("tests/output")]
    assert leaked == []
    assert "galaxy.yml" not in names  # replaced by MANIFEST.json, as for every built collection
    assert "MANIFEST.json" in names and "FILES.json" in names


def test_tarball_carries_the_module_utils_copy_of_the_library(built):
    out, tarballs = built
    with tarfile.open(str(out / tarballs[0])) as tar:
        names = set(tar.getnames())
    source = os.path.join(TOP, "python", "src", "sandboxguard")
    expected = {"plugins/module_utils/sandboxguard/" + os.path.relpath(os.path.join(here, n), source)
                for here, _dirs, files in os.walk(source) if "__pycache__" not in here
                for n in files if n.endswith(".py")}
    assert expected and any("/_bwrap/" in n for n in expected) and expected <= names


def test_installed_collection_reports_the_galaxy_version(installed):
    env, path = installed
    with open(os.path.join(path, "MANIFEST.json")) as handle:
        manifest = json.load(handle)
    assert manifest["collection_info"]["version"] == galaxy()["version"]
    listing = run([os.path.join(BIN, "ansible-galaxy"), "collection", "list", FQCN, "--format", "json"],
                  env=env, cwd=path)
    found = {c: v for paths in json.loads(listing.stdout).values() for c, v in paths.items()}
    assert found == {FQCN: {"version": galaxy()["version"]}}


def test_module_utils_import_from_the_installed_copy(installed):
    env, path = installed
    directory = os.path.join(path, "plugins", "module_utils", "sandboxguard")
    names = sorted(os.path.relpath(os.path.join(here, n), directory)[:-3].replace(os.sep, ".")
                   for here, _dirs, files in os.walk(directory) if "__pycache__" not in here
                   for n in files if n.endswith(".py") and (n != "__init__.py" or here != directory))
    names = [n[:-len(".__init__")] if n.endswith(".__init__") else n for n in names]
    assert any(n.startswith("_bwrap.") for n in names), names  # the private packages import too
    code = (
        "import importlib, sys\n"
        "base = 'ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard'\n"
        "for name in [base] + [base + '.' + n for n in sys.argv[1:]]:\n"
        "    print(importlib.import_module(name).__file__)\n"
    )
    collections = os.path.dirname(os.path.dirname(os.path.dirname(path)))
    result = run([sys.executable, "-c", code, *names], env=dict(env, PYTHONPATH=collections), cwd=collections)
    files = result.stdout.split()
    assert len(files) == len(names) + 1
    assert all(f.startswith(path + os.sep) for f in files), files


def test_ansible_doc_lists_every_module_of_the_checkout(installed):
    env, path = installed
    result = run([os.path.join(BIN, "ansible-doc"), "-t", "module", "-l", FQCN, "--json"], env=env, cwd=path)
    listed = sorted(name[len(FQCN) + 1:] for name in json.loads(result.stdout))
    assert listed == checkout_modules()


@pytest.fixture(scope="module")
def docs(installed):
    env, path = installed
    modules = checkout_modules()
    if not modules:
        return {}
    result = run([os.path.join(BIN, "ansible-doc"), "-t", "module", "--json",
                  *("%s.%s" % (FQCN, m) for m in modules)], env=env, cwd=path)
    return json.loads(result.stdout)


@pytest.mark.parametrize("module", checkout_modules())
def test_module_documentation_renders_from_the_installed_copy(docs, installed, module):
    doc = docs["%s.%s" % (FQCN, module)]["doc"]
    assert doc["module"] == module
    assert doc["short_description"]
    assert doc["filename"].startswith(installed[1] + os.sep)
    assert docs["%s.%s" % (FQCN, module)]["examples"]


def adhoc(env, cwd, module, args, check=False):
    argv = [os.path.join(BIN, "ansible"), "localhost", "-m", "%s.%s" % (FQCN, module), "-a", json.dumps(args)]
    if check:
        argv.append("--check")
    result = run(argv, env=env, cwd=cwd, check=False)
    try:
        return json.loads(result.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError):
        pytest.fail("no JSON result from %s\nstdout:\n%s\nstderr:\n%s" % (argv, result.stdout, result.stderr))


def test_installed_setid_strip_runs_in_check_mode_then_for_real(installed, tmp_path):
    env = installed[0]
    target = tmp_path / "tool"
    target.write_bytes(b"#!/bin/sh\n")
    os.chmod(str(target), 0o4755)

    audit = adhoc(env, str(tmp_path), "setid_strip", {"paths": [str(tmp_path)]}, check=True)
    assert audit.get("failed") is not True, audit
    assert audit["changed"] is True
    assert [(f["path"], f["mode_before"], f["actions"]) for f in audit["files"]] == [(str(target), "04755", ["setuid"])]
    assert stat.S_IMODE(os.lstat(str(target)).st_mode) == 0o4755  # check mode changed nothing

    strip = adhoc(env, str(tmp_path), "setid_strip", {"paths": [str(tmp_path)]})
    assert strip.get("failed") is not True, strip
    assert strip["changed"] is True
    assert stat.S_IMODE(os.lstat(str(target)).st_mode) == 0o755

    again = adhoc(env, str(tmp_path), "setid_strip", {"paths": [str(tmp_path)]})
    assert again["changed"] is False
