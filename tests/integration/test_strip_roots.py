# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Roots opened component by component: no symlink anywhere in a root's path however it is
spelled, the walk starts from the proven descriptor, bind mounts of system dirs refused."""
import ctypes
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest
from sandboxguard import strip
from sandboxguard.roots import RootRefused

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_strip_roots.py must run as root (mount, chmod of root files)", pytrace=False)

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python", "src"))
ANSIBLE = os.path.join(TOP, ".venv", "bin", "ansible")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "sandboxguard_cli", *args], capture_output=True, text=True,
                          env=ENV, timeout=120, check=False)


def run_module(module, args):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([ANSIBLE, "localhost", "-m", "sandboxguard.boundary." + module, "-a", json.dumps(args)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def make_suid(path):
    path = os.fspath(path)
    with open(path, "wb") as handle:
        handle.write(b"#!/bin/sh\n")
    os.chmod(path, 0o4755)
    return path


def mode_of(path):
    return stat.S_IMODE(os.lstat(os.fspath(path)).st_mode)


@pytest.fixture
def linked(tmp_path):
    """SB/link -> OUT, a directory outside the sandbox holding OUT/victim and OUT/sub/victim."""
    sb, out = tmp_path / "sb", tmp_path / "out"
    (sb / "real" / "sub").mkdir(parents=True)
    (out / "sub").mkdir(parents=True)
    victims = [make_suid(out / "victim"), make_suid(out / "sub" / "victim")]
    os.symlink(out, sb / "link")
    return sb, out, victims


SYMLINK_SPELLINGS = ["link", "link/", "link/.", "link//", "link/./", "link/sub", "link/sub/", "link/..",
                     "link/sub/..", "real/../link/", "link/victim"]


@pytest.mark.parametrize("spelling", SYMLINK_SPELLINGS)
@pytest.mark.parametrize("fork", [True, False])
def test_symlinked_root_is_refused_however_it_is_spelled(linked, spelling, fork):
    sb, _out, victims = linked
    with pytest.raises(RootRefused, match="symlink"):
        strip.strip(["%s/%s" % (sb, spelling)], fork=fork)
    assert [mode_of(v) for v in victims] == [0o4755, 0o4755]


@pytest.mark.parametrize("spelling", ["link/", "link/.", "link//", "link/sub", "link/.."])
def test_symlinked_root_with_trailing_slash_is_refused_by_the_cli_with_exit_2(linked, spelling):
    sb, _out, victims = linked
    result = cli("strip", "%s/%s" % (sb, spelling))
    assert result.returncode == 2, result
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert "symlink" in result.stderr and str(sb / "link") in result.stderr
    assert [mode_of(v) for v in victims] == [0o4755, 0o4755]


@pytest.mark.parametrize("spelling", ["link/", "link/.", "link/sub"])
def test_symlinked_root_with_trailing_slash_fails_the_setid_strip_module(linked, spelling):
    sb, _out, victims = linked
    result = run_module("setid_strip", {"paths": ["%s/%s" % (sb, spelling)]})
    assert result["failed"] and "symlink" in result["msg"]
    assert [mode_of(v) for v in victims] == [0o4755, 0o4755]


@pytest.mark.parametrize("spelling", ["real", "real/", "real/.", "real//", "./real/./", "real/sub/..",
                                      "real/../real", "../sb/real"])
def test_root_spelled_with_slashes_dots_and_dotdot_reports_the_proven_path(linked, spelling):
    sb, _out, victims = linked
    inside = make_suid(sb / "real" / "sub" / "tool")
    raw = "%s/%s" % (sb, spelling)
    report = strip.strip([raw])
    assert report["roots"] == [str(sb / "real")]
    assert [e["path"] for e in report["files"]] == [inside]
    assert mode_of(inside) == 0o755 and [mode_of(v) for v in victims] == [0o4755, 0o4755]


def test_regular_file_root_spelled_as_a_directory_is_refused(tmp_path):
    f = make_suid(tmp_path / "tool")
    with pytest.raises(RootRefused, match="regular file"):
        strip.strip([f + "/"])
    with pytest.raises(RootRefused, match="regular file"):
        strip.strip([f + "/."])
    assert mode_of(f) == 0o4755
    assert strip.strip([f])["roots"] == [f] and mode_of(f) == 0o755


# -- the race: an ancestor of the root swapped with a symlink, again and again ------------

SWAPPER = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = sys.argv[1].encode(), sys.argv[2].encode()
swaps, stop = 0, []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
print("ready", flush=True)
while not stop:
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        sys.exit("renameat2: %s" % os.strerror(ctypes.get_errno()))
    swaps += 1
if swaps % 2:  # leave sb/a the directory, as it started
    libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
print(swaps)
"""
RACE_FAILSAFE_S = 300  # only so a swapper that never swaps fails instead of hanging: not a window


def _renameat2_works(tmp_path):
    libc = ctypes.CDLL(None, use_errno=True)
    (tmp_path / "x").mkdir()
    os.symlink("x", tmp_path / "y")
    return hasattr(libc, "renameat2") and libc.renameat2(-100, bytes(tmp_path / "x"), -100,
                                                         bytes(tmp_path / "y"), 2) == 0


@pytest.mark.parametrize("fork", [True, False])
def test_ancestor_swapped_for_a_symlink_by_rename_exchange_never_gets_outside_files_stripped(tmp_path, fork):
    if not _renameat2_works(tmp_path):  # pragma: no cover - glibc >= 2.28 and Linux >= 3.15 have it
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    sb, out = tmp_path / "sb", tmp_path / "out"
    (sb / "a" / "b").mkdir(parents=True)
    (out / "b").mkdir(parents=True)
    outside = make_suid(out / "b" / "victim")
    os.symlink(out, sb / "evil")
    inside = sb / "a" / "b" / "victim"
    make_suid(inside)
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(sb / "a"), str(sb / "evil")],
                               stdout=subprocess.PIPE, text=True)
    walked = refused = 0
    try:
        assert swapper.stdout.readline() == "ready\n"
        deadline = time.monotonic() + RACE_FAILSAFE_S
        while walked < 100 or refused < 100:  # both outcomes, many times: counted, whatever the load
            assert time.monotonic() < deadline, "the race never happened: walked %d, refused %d" % (walked, refused)
            try:
                report = strip.strip([str(sb / "a" / "b")], fork=fork, budget=0)
            except RootRefused:
                refused += 1
                continue
            walked += 1
            assert report["roots"] == [str(sb / "a" / "b")]
            assert mode_of(outside) == 0o4755, "a file outside the sandbox was stripped"
            for entry in report["files"]:
                assert entry["path"] == str(inside)
            # Put the bit back on whichever directory is the real sb/a/b now.
            for parent in (sb / "a", sb / "evil"):
                if not os.path.islink(parent):
                    os.chmod(parent / "b" / "victim", 0o4755)
    finally:
        swapper.terminate()
        swaps = swapper.communicate(timeout=30)[0]
    assert swapper.returncode == 0 and int(swaps) > 0, swaps
    assert mode_of(outside) == 0o4755


# -- bind mounts of system directories ------------------------------------------------------

@pytest.fixture
def bind(tmp_path):
    mounted = []

    def make(source, name):
        target = tmp_path / "srv" / name
        target.mkdir(parents=True)
        subprocess.run(["mount", "--bind", source, str(target)], check=True)
        mounted.append(target)
        return target
    yield make
    for target in reversed(mounted):
        subprocess.run(["umount", "-l", str(target)], check=False)


def test_bind_mount_of_usr_bin_is_refused_as_a_root(bind):
    target = bind("/usr/bin", "x")
    before = os.stat("/usr/bin/passwd").st_mode
    with pytest.raises(RootRefused, match="/usr/bin"):
        strip.scan([str(target)])
    result = cli("scan", str(target))
    assert result.returncode == 2 and "/usr/bin" in result.stderr and result.stdout == ""
    assert os.stat("/usr/bin/passwd").st_mode == before


def test_directory_below_a_bind_mount_of_a_system_tree_is_refused_by_its_mount_source(bind):
    target = bind("/usr/lib", "libs")
    sub = next(name for name in sorted(os.listdir(target)) if os.path.isdir(os.path.join(target, name))
               and not os.path.islink(os.path.join(target, name)))
    with pytest.raises(RootRefused, match="bind mount of /usr/lib/%s" % sub):
        strip.scan([str(target / sub)])


def test_bind_mount_of_etc_fails_the_setid_strip_module(bind):
    target = bind("/etc", "etc-copy")
    result = run_module("setid_strip", {"paths": [str(target)]})
    assert result["failed"] and "/etc" in result["msg"]


def test_bind_mount_of_a_sandbox_directory_is_still_allowed(bind, tmp_path):
    (tmp_path / "data").mkdir()
    inside = make_suid(tmp_path / "data" / "tool")
    target = bind(str(tmp_path / "data"), "data")
    report = strip.strip([str(target)])
    assert report["roots"] == [str(target)] and mode_of(inside) == 0o755


def test_a_user_scans_a_root_below_a_search_only_parent(tmp_path):
    """Ancestors are opened O_PATH (search permission, as a lookup by name needs), so a
    user scans a sandbox under a 0711 directory as before; only the root must be readable."""
    base = tempfile.mkdtemp(dir="/var/tmp", prefix="sg-perm-")
    try:
        os.chmod(base, 0o711)
        sb = os.path.join(base, "sb")
        os.mkdir(sb)
        tool = make_suid(os.path.join(sb, "tool"))
        os.chown(sb, 65534, 65534)
        os.chown(tool, 65534, 65534)
        os.chmod(tool, 0o4755)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                               "-m", "sandboxguard_cli", "scan", "--json", sb], capture_output=True, text=True,
                              env=dict(ENV, HOME="/"), cwd="/", timeout=60, check=False)
        assert proc.returncode == 1, proc.stderr
        assert [e["path"] for e in json.loads(proc.stdout)["files"]] == [tool]
    finally:
        shutil.rmtree(base)
