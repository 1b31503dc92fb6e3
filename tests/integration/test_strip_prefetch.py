# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The cold-cache prefetch (prefetch.py): directory reads ahead of the forked walkers.

What it may read (only below the root, never through a symlink, never across a mount),
when it starts (only when the walk reads from the disk), that it stops with the walk,
and that a walk with it finds exactly what a walk without it finds."""
import os
import subprocess
import threading

import pytest
from sandboxguard import prefetch, strip

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_strip_prefetch.py must run as root", pytrace=False)


def make_suid(path):
    with open(path, "wb") as handle:
        handle.write(b"#!/bin/sh\n")
    os.chmod(path, 0o4755)
    return str(path)


@pytest.fixture
def tree(tmp_path):
    """root/a/b/c (3 levels), root/pkgNN/lib for 80 packages (wider than SHARE_FRONTIER),
    a symlink to a directory tree outside, and one outside the root next to it."""
    root = tmp_path / "sandbox"
    (root / "a" / "b" / "c").mkdir(parents=True)
    expected = set()
    for index in range(80):
        lib = root / ("pkg%02d" % index) / "lib"
        lib.mkdir(parents=True)
        (lib / "index.js").touch()
        if index % 9 == 0:
            expected.add(make_suid(lib / "suid"))
    outside = tmp_path / "outside"
    (outside / "x" / "y").mkdir(parents=True)
    make_suid(outside / "x" / "host-suid")
    os.symlink(str(outside), str(root / "link"))
    os.symlink("../../outside/x", str(root / "a" / "rel"))
    return root, outside, expected


def real_dirs(root):
    """Directories below root (root included), never through a symlink."""
    return sum(1 for _ in os.walk(root))  # os.walk does not follow symlinks by default


def prefetch_all(root, seeds=(b".",), threads=4, deadline=None):
    fd = os.open(str(root), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert prefetch.supported(fd), "openat2 with RESOLVE_BENEATH works on this kernel"
        fetcher = prefetch.Prefetcher(fd, list(seeds), threads, deadline).start()
        fetcher.wait()
        return fetcher
    finally:
        os.close(fd)


def test_prefetch_lists_every_directory_below_the_root_and_nothing_through_symlinks(tree):
    root, _, _ = tree
    fetcher = prefetch_all(root)
    assert fetcher.dirs == real_dirs(root) == 1 + 3 + 80 * 2


@pytest.mark.parametrize("seed", [b"link", b"link/x", b"a/rel", b"a/rel/y", b"..", b"../outside", b"a/../../outside"])
def test_prefetch_refuses_a_seed_through_a_symlink_or_out_of_the_root(tree, seed):
    root, _, _ = tree
    assert prefetch_all(root, seeds=[seed]).dirs == 0


def test_prefetch_does_not_cross_a_mount_point(tree):
    root, _, _ = tree
    inner = root / "a" / "mnt"
    inner.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "sgprefetch", str(inner)], check=True)
    try:
        (inner / "d1" / "d2").mkdir(parents=True)
        fetcher = prefetch_all(root)
        direct = prefetch_all(root, seeds=[b"a/mnt"])
    finally:
        subprocess.run(["umount", "-l", str(inner)], check=False)
    assert fetcher.dirs == 1 + 3 + 80 * 2  # a/mnt itself is refused (RESOLVE_NO_XDEV), so d1 and d2 are too
    assert direct.dirs == 0


def test_prefetch_stops_at_the_deadline(tree):
    root, _, _ = tree
    assert prefetch_all(root, deadline=0.0).dirs == 0


def test_prefetch_leaves_directories_below_max_depth_to_the_walkers(tree, monkeypatch):
    root, _, _ = tree
    monkeypatch.setattr(prefetch, "MAX_DEPTH", 1)
    # the root (depth 0) and its children (depth 1) are listed; nothing deeper is queued
    assert prefetch_all(root).dirs == 1 + 1 + 80


def test_cold_watch_starts_only_once_the_walk_has_read_from_the_disk(tree, monkeypatch):
    root, _, _ = tree
    reads = {"n": 0}
    monkeypatch.setattr(prefetch, "read_bytes", lambda pid: 0 if pid == os.getpid() else reads["n"])
    fd = os.open(str(root), os.O_RDONLY | os.O_DIRECTORY)
    try:
        watch = prefetch.ColdWatch(fd, [b"."], [12345], own_start=0, threads=2)
        assert watch.poll() is False and watch.prefetcher is None  # warm: nothing read yet
        reads["n"] = prefetch.COLD_READ_BYTES - 1
        assert watch.poll() is False and watch.prefetcher is None
        reads["n"] = prefetch.COLD_READ_BYTES
        assert watch.poll() is True and watch.prefetcher is not None
        watch.prefetcher.wait()
        watch.stop()
        assert watch.prefetcher.dirs == real_dirs(root)
    finally:
        os.close(fd)


def test_cold_watch_without_io_accounting_never_prefetches(tree, monkeypatch):
    root, _, _ = tree

    def unreadable(pid):
        raise OSError(2, "no /proc/%d/io" % pid)

    monkeypatch.setattr(prefetch, "read_bytes", unreadable)
    fd = os.open(str(root), os.O_RDONLY | os.O_DIRECTORY)
    try:
        watch = prefetch.ColdWatch(fd, [b"."], [12345], own_start=0, threads=2)
        assert watch.poll() is True and watch.prefetcher is None
        assert prefetch.ColdWatch(fd, [b"."], [1], own_start=None).poll() is True
    finally:
        os.close(fd)


@pytest.fixture
def record_prefetch(monkeypatch, tmp_path):
    """Where the forked walk's ColdWatch writes how many directories it prefetched
    (-1: never started), read back by the test (the walk runs in forked children)."""
    marker = tmp_path / "prefetched"
    stop = prefetch.ColdWatch.stop

    def recording_stop(self):
        stop(self)
        marker.write_text("%d %d" % (self.prefetcher.dirs if self.prefetcher else -1, threading.active_count()))

    monkeypatch.setattr(prefetch.ColdWatch, "stop", recording_stop)
    return marker


def test_cold_walk_prefetches_and_finds_exactly_what_a_warm_walk_finds(tree, monkeypatch, record_prefetch):
    root, outside, expected = tree
    warm = strip.scan([str(root)], workers=2, budget=0)
    assert record_prefetch.read_text() == "-1 1"  # a just-written tree is in the cache: no thread started
    monkeypatch.setattr(prefetch, "COLD_READ_BYTES", 0)  # every walk counts as cold
    cold = strip.scan([str(root)], workers=2, budget=0)
    prefetched, threads_after = map(int, record_prefetch.read_text().split())
    assert prefetched > 0 and threads_after == 1  # it ran, and every thread was joined before the walk returned
    assert cold["counts"] == warm["counts"] and cold["complete"] and cold["errors"] == []
    assert {e["path"] for e in cold["files"]} == {e["path"] for e in warm["files"]} == expected
    stripped = strip.strip([str(root)], workers=2, budget=0)
    assert {e["path"] for e in stripped["files"]} == expected
    assert os.stat(outside / "x" / "host-suid").st_mode & 0o4000  # never reached through the symlinks
