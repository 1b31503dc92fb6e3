# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Descriptor exhaustion: a tree a container can build (two directories per level, one with
a setuid file, one with the next level, 1,500 to 2,000 deep) is walked to the end under
`ulimit -n 64`, in process and with the forked walkers, by the library and by the CLI."""
import json
import os
import resource
import subprocess
import sys

import pytest

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_strip_descriptors.py must run as root", pytrace=False)

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python", "src"))
DEPTH = 1800
WIDE = 70
DIRS = 1 + WIDE + 1 + 2 * DEPTH


def _two_per_level(root, depth):
    """Level k holds 'a' (a setuid file inside) and 'n' (level k+1); both orders of
    listing occur since names hash differently per level on most filesystems."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(depth):
            side, deeper = ("s%d" % level, "n") if level % 2 else ("n%d" % level, "m")
            os.mkdir(side, dir_fd=fd)
            sfd = os.open(side, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(os.open("suid", os.O_WRONLY | os.O_CREAT, 0o755, dir_fd=sfd))
            os.chmod("suid", 0o4755, dir_fd=sfd)
            os.close(sfd)
            os.mkdir(deeper, dir_fd=fd)
            nfd = os.open(deeper, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)


@pytest.fixture(scope="module")
def deep_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("fds") / "sandbox"
    root.mkdir()
    for index in range(WIDE):  # wide enough at the top that the forked walkers share the work
        (root / ("w%02d" % index)).mkdir()
    (root / "deep").mkdir()
    _two_per_level(str(root / "deep"), DEPTH)
    yield root
    subprocess.run(["rm", "-rf", str(root)], check=True)


def _limit_fds(limit=64):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    return apply


WALK = r"""
import json, sys
from sandboxguard._walk import handoff
from sandboxguard import strip
if sys.argv[4] == "cold":
    handoff.COLD_READ_BYTES = 0  # as on a cold disk: eight walkers handing directories to each other
fork = {"1": False, "2": True}[sys.argv[2]]
workers = int(sys.argv[3])
report = strip.run([sys.argv[1]], actions=("setid",), dry_run=True, budget=0, fork=fork, workers=workers,
                   max_listed=0)
print(json.dumps({"counts": report["counts"], "errors": report["errors"][:3], "complete": report["complete"]}))
"""


@pytest.mark.parametrize("mode, workers, cache",
                         [("1", 1, "warm"), ("2", 1, "warm"), ("2", 2, "warm"), ("2", 2, "cold")],
                         ids=["in-process", "forked-one-walker", "forked-two-walkers",
                              "forked-cold-eight-walkers"])
def test_two_dirs_per_level_1800_deep_is_fully_walked_under_ulimit_n_64(deep_tree, mode, workers, cache):
    proc = subprocess.run([sys.executable, "-c", WALK, str(deep_tree), mode, str(workers), cache], capture_output=True,
                          text=True, env=ENV, timeout=600, check=False, preexec_fn=_limit_fds(64))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["errors"] == [] and result["complete"]
    assert result["counts"]["setid"] == DEPTH and result["counts"]["dirs"] == DIRS


def test_cli_strip_under_ulimit_n_64_reaches_every_setuid_file(deep_tree):
    proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "scan", "--json", "--budget", "0",
                           "--max-listed", "0", str(deep_tree)], capture_output=True, text=True, env=ENV,
                          timeout=600, check=False, preexec_fn=_limit_fds(64))
    report = json.loads(proc.stdout)
    assert report["counts"]["errors"] == 0, report["errors"][:3]
    assert report["counts"]["setid"] == DEPTH and report["complete"] and proc.returncode == 1


def test_held_directory_descriptors_stay_within_max_held_dir_fds(deep_tree):
    """Counted from inside the walk: the process never holds more directory descriptors
    than MAX_HELD_DIR_FDS plus the few in use at one moment."""
    from sandboxguard import strip
    from sandboxguard._walk.walk import MAX_HELD_DIR_FDS

    peak = [0]

    def count(_counts):
        peak[0] = max(peak[0], len(os.listdir("/proc/self/fd")))

    before = len(os.listdir("/proc/self/fd"))
    report = strip.run([str(deep_tree)], actions=("setid",), dry_run=True, budget=0, fork=False, progress=count,
                       progress_interval=0, max_listed=0)
    assert report["counts"]["setid"] == DEPTH and report["errors"] == []
    assert peak[0] - before <= MAX_HELD_DIR_FDS + 4, peak[0] - before
