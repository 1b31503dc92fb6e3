# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Forked walkers handing directories to each other (handoff.py).

That work is split per directory (a package holding most of the tree is shared), that
more walkers join only when the walk reads from the disk, that a walk with hand-overs
finds exactly what a walk without them finds, that a directory swapped for a symlink
after it was handed over is never followed, and that a walker failing or running out
of time ends the walk (no hang, every child reaped)."""
import json
import os
import resource
import subprocess
import sys
import time

import pytest
from sandboxguard import strip
from sandboxguard._walk import handoff, walk

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_strip_handoff.py must run as root", pytrace=False)


def make_suid(path):
    with open(path, "wb") as handle:
        handle.write(b"#!/bin/sh\n")
    os.chmod(path, 0o4755)
    return str(path)


@pytest.fixture
def dominant(tmp_path):
    """A tree where one package holds most directories: root/small/pNN (70 small packages,
    wider than SHARE_FRONTIER) and root/big/dNNN/eN (600 directories, a setuid file in
    every 25th), plus symlinks out of the root to a tree holding a setuid file."""
    root = tmp_path / "sandbox"
    expected = set()
    for index in range(70):
        lib = root / "small" / ("p%02d" % index)
        lib.mkdir(parents=True)
        (lib / "index.js").touch()
    for index in range(120):
        for inner in range(5):
            leaf = root / "big" / ("d%03d" % index) / ("e%d" % inner)
            leaf.mkdir(parents=True)
            (leaf / "a.js").touch()
            if (index * 5 + inner) % 25 == 0:
                expected.add(make_suid(leaf / "suid"))
    outside = tmp_path / "outside"
    (outside / "x").mkdir(parents=True)
    make_suid(outside / "x" / "host-suid")
    os.symlink(str(outside), str(root / "big" / "link"))
    return root, outside, expected


@pytest.fixture
def record(monkeypatch, tmp_path):
    """What each Broker did (walkers forked, directories handed over), written by the
    process that ran the broker (the walk itself runs in a forked child)."""
    marker = tmp_path / "broker"
    run = handoff.Broker.run

    def recording_run(self, spawn):
        reports = run(self, spawn)
        with open(str(marker), "a") as out:
            out.write(json.dumps({"walkers": len(reports), "handed": self.handed}) + "\n")
        return reports

    monkeypatch.setattr(handoff.Broker, "run", recording_run)
    return marker


def brokers(marker):
    return [json.loads(line) for line in marker.read_text().splitlines()]


def slow_visits(monkeypatch, seconds=0.002):
    """Make each directory visit take a moment, so walkers are still busy when another
    asks for work (a warm test tree is walked faster than a walker forks)."""
    visit = walk.Walk._visit

    def slow(self, node, pending):
        time.sleep(seconds)
        return visit(self, node, pending)

    monkeypatch.setattr(walk.Walk, "_visit", slow)


def paths(report):
    return {entry["path"] for entry in report["files"]}


def assert_no_children_left():
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_warm_walk_keeps_two_walkers_and_shares_the_dominant_package(dominant, monkeypatch, record):
    root, _outside, expected = dominant
    slow_visits(monkeypatch)
    report = strip.scan([str(root)], workers=2, budget=0)
    (only,) = brokers(record)
    assert only["walkers"] == 2 and only["handed"] > 0, "the idle walker got none of the big package"
    assert report["complete"] and report["errors"] == [] and paths(report) == expected
    assert report["counts"]["dirs"] == 1 + 1 + 70 + 1 + 120 + 600
    assert_no_children_left()


def test_cold_walk_forks_cold_walkers_and_finds_exactly_what_a_warm_walk_finds(dominant, monkeypatch, record):
    root, outside, expected = dominant
    warm = strip.scan([str(root)], workers=2, budget=0)
    monkeypatch.setattr(handoff, "COLD_READ_BYTES", 0)  # every walk counts as cold
    slow_visits(monkeypatch)
    cold = strip.scan([str(root)], workers=2, budget=0)
    first, second = brokers(record)
    assert first["walkers"] == 2
    assert second["walkers"] == handoff.COLD_WALKERS and second["handed"] > 0
    assert cold["counts"] == warm["counts"] and cold["complete"] and cold["errors"] == []
    assert paths(cold) == paths(warm) == expected
    stripped = strip.strip([str(root)], workers=2, budget=0)
    assert paths(stripped) == expected
    assert all(not os.stat(path).st_mode & 0o6000 for path in expected)
    assert os.stat(outside / "x" / "host-suid").st_mode & 0o4000  # never reached through the symlink
    assert_no_children_left()


def test_a_directory_swapped_for_a_symlink_after_it_was_handed_over_is_walked_by_its_descriptor(
        dominant, monkeypatch, record):
    """The walker that found a directory opens it; the one that walks it gets that
    descriptor. Renaming it away and putting a symlink out of the root in its place
    between the two changes nothing: the original directory is walked, the symlink's
    target is not."""
    root, outside, _expected = dominant
    slow_visits(monkeypatch)
    give = handoff.WalkerSide.give
    once = str(root.parent / "swapped")

    def give_then_swap(self, relpath, fd):
        try:  # the first hand-over in any walker swaps; the walkers are separate processes
            os.close(os.open(once, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            pass
        else:
            path = os.path.join(str(root), os.fsdecode(relpath))
            os.rename(path, path + ".moved")
            os.symlink(str(outside / "x"), path)
        give(self, relpath, fd)

    monkeypatch.setattr(handoff.WalkerSide, "give", give_then_swap)
    report = strip.strip([str(root)], workers=2, budget=0)
    assert brokers(record)[0]["handed"] > 0 and os.path.exists(once)
    assert os.stat(outside / "x" / "host-suid").st_mode & 0o4000, "the symlink was followed"
    assert report["complete"] and report["errors"] == []
    assert not _setuid_below(root), "a setuid file below the root was missed"
    assert "host-suid" not in json.dumps(report)


def _setuid_below(root):
    found = []
    for top, _dirs, files in os.walk(str(root)):  # never follows symlinks
        found.extend(os.path.join(top, name) for name in files
                     if os.lstat(os.path.join(top, name)).st_mode & 0o6000)
    return found


def test_a_walker_that_fails_ends_the_walk_with_an_error_and_no_child_left(dominant, monkeypatch):
    root, _outside, _expected = dominant
    slow_visits(monkeypatch)

    def broken(self, stack):
        raise RuntimeError("hand-over broke")

    monkeypatch.setattr(walk.Walk, "_hand_over", broken)
    with pytest.raises(RuntimeError, match="walker failed: RuntimeError: hand-over broke"):
        strip.scan([str(root)], workers=2, budget=0)
    assert_no_children_left()


def test_walkers_out_of_time_end_the_walk_incomplete(dominant, monkeypatch):
    root, _outside, _expected = dominant
    monkeypatch.setattr(handoff, "COLD_READ_BYTES", 0)
    slow_visits(monkeypatch, seconds=0.05)
    report = strip.scan([str(root)], workers=2, budget=0.5)
    assert report["complete"] is False
    assert report["counts"]["dirs"] < 1 + 1 + 70 + 1 + 120 + 600
    assert_no_children_left()


def test_a_path_too_long_to_hand_over_is_walked_where_it_was_found(dominant, monkeypatch, record):
    root, _outside, expected = dominant
    monkeypatch.setattr(handoff, "MAX_HANDOFF_PATH", 0)
    slow_visits(monkeypatch)
    report = strip.scan([str(root)], workers=2, budget=0)
    assert brokers(record)[0]["handed"] == 0
    assert report["complete"] and paths(report) == expected


CLI_COLD = ("import runpy; from sandboxguard._walk import handoff; handoff.COLD_READ_BYTES = 0; "
            "runpy.run_module('sandboxguard_cli', run_name='__main__')")


def test_cli_cold_scan_under_ulimit_n_32_reports_every_file(dominant):
    """Eight walkers, their sockets and the handed-over descriptors within a small limit."""
    root, _outside, expected = dominant

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", CLI_COLD, "scan", "--json", "--budget", "0", str(root)],
                          capture_output=True, text=True, env=env, timeout=120, check=False,
                          preexec_fn=limit)  # pylint: disable=subprocess-popen-preexec-fn
    report = json.loads(proc.stdout)
    assert report["errors"] == [] and report["complete"], proc.stderr[-2000:]
    assert paths(report) == expected and proc.returncode == 1
