# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The privileged-file walker on real files, as root: what it changes and what it never touches."""
import errno
import multiprocessing
import os
import shutil
import stat
import subprocess
import sys
import threading
import time

import pytest
from sandboxguard import caps as capsmod
from sandboxguard import strip
from sandboxguard.roots import RootRefused

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_strip.py must run as root (real chown, setxattr, mount)", pytrace=False)

NET_RAW = capsmod.CAP_NAMES.index("cap_net_raw")
SYS_ADMIN = capsmod.CAP_NAMES.index("cap_sys_admin")
MODES = [True, False]  # forked worker (fchdir) and in-process (/proc/self/fd/D/NAME)


def make_file(path, mode=0o755, data=b"#!/bin/sh\necho hi\n", uid=0, gid=0):
    path = os.fspath(path)
    with open(path, "wb") as handle:
        handle.write(data)
    os.chown(path, uid, gid)
    os.chmod(path, mode)
    return path


def set_caps(path, permitted=(NET_RAW,), rootid=None):
    os.setxattr(os.fspath(path), capsmod.XATTR_NAME,
                capsmod.encode_vfs_cap(permitted=permitted, effective=True, rootid=rootid))


def has_caps(path):
    return capsmod.XATTR_NAME in os.listxattr(os.fspath(path), follow_symlinks=False)


def mode_of(path):
    return stat.S_IMODE(os.lstat(os.fspath(path)).st_mode)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "sandbox"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path):
    out = tmp_path / "outside"
    out.mkdir()
    target = make_file(out / "host-suid", 0o4755)
    set_caps(target)
    return target


# -- what is changed -------------------------------------------------------------------

@pytest.mark.parametrize("fork", MODES)
def test_setuid_and_setgid_cleared_other_bits_owner_content_mtime_kept(tree, fork):
    f = make_file(tree / "tool", 0o7751, uid=1234, gid=4321)  # sticky + setuid + setgid + rwxr-x--x
    os.utime(f, (1_000_000, 1_000_000))
    report = strip.strip([str(tree)], fork=fork)
    st = os.lstat(f)
    assert stat.S_IMODE(st.st_mode) == 0o1751
    assert (st.st_uid, st.st_gid) == (1234, 4321)
    assert st.st_mtime == 1_000_000
    with open(f, "rb") as handle:
        assert handle.read() == b"#!/bin/sh\necho hi\n"
    assert report["changed"] and report["complete"]
    [entry] = report["files"]
    assert entry["mode_before"] == "07751" and entry["mode_after"] == "01751"
    assert entry["actions"] == ["setuid", "setgid"]


@pytest.mark.parametrize("fork", MODES)
def test_capability_xattr_removed_entirely_and_reported_as_getcap_text(tree, fork):
    f = make_file(tree / "ping", 0o755)
    set_caps(f, permitted=(NET_RAW, SYS_ADMIN))
    report = strip.strip([str(tree)], fork=fork)
    assert not has_caps(f)
    [entry] = report["files"]
    assert entry["caps_before"] == "cap_net_raw,cap_sys_admin=ep"
    assert entry["actions"] == ["caps"]
    assert report["counts"]["caps"] == 1


def test_file_with_setuid_and_caps_loses_both_in_one_walk(tree):
    f = make_file(tree / "both", 0o4755)
    set_caps(f)
    report = strip.strip([str(tree)])
    assert mode_of(f) == 0o755 and not has_caps(f)
    assert report["files"][0]["actions"] == ["setuid", "caps"]
    assert report["counts"]["files"] == 1 and report["counts"]["setid"] == 1 and report["counts"]["caps"] == 1


def test_caps_method_chown_clears_caps_and_keeps_owner(tree):
    f = make_file(tree / "capfile", 0o755, uid=1000, gid=1000)
    set_caps(f)
    strip.strip([str(tree)], setid=False, caps_method="chown")
    st = os.lstat(f)
    assert not has_caps(f)
    assert (st.st_uid, st.st_gid) == (1000, 1000)


def test_v3_capability_with_rootid_is_reported_like_getcap_n(tree):
    f = make_file(tree / "nscap", 0o755)
    set_caps(f, rootid=1000)
    report = strip.scan([str(tree)])
    assert report["files"][0]["caps_before"] == "cap_net_raw=ep [rootid=1000]"
    assert has_caps(f)  # scan changes nothing


@pytest.mark.parametrize("fork", MODES)
def test_ownership_return_runs_first_and_the_kernel_clears_bits_on_chown(tree, fork):
    sub = tree / "dist"
    sub.mkdir()
    os.chown(sub, 0, 0)
    f = make_file(sub / "suid", 0o4755)
    g = make_file(sub / "sgid-noexec", 0o2644)  # setgid without group-exec survives chown
    set_caps(f)
    report = strip.strip([str(tree)], chown_to=(1000, 1000), fork=fork)
    for path in (tree, sub, f, g):
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == (1000, 1000), path
    assert mode_of(f) == 0o755 and not has_caps(f)
    assert mode_of(g) == 0o644
    actions = {e["path"]: e["actions"] for e in report["files"]}
    assert actions[str(f)] == ["chown", "setuid", "caps"]
    assert actions[str(sub)] == ["chown"]


def test_files_not_owned_by_root_are_not_chowned(tree):
    f = make_file(tree / "mine", 0o644, uid=2000, gid=2000)
    os.chown(tree, 2000, 2000)
    report = strip.strip([str(tree)], chown_to=(1000, 1000))
    assert os.lstat(f).st_uid == 2000
    assert report["counts"]["chown"] == 0 and not report["changed"]


def test_dry_run_reports_and_changes_nothing(tree):
    f = make_file(tree / "suid", 0o4755)
    set_caps(f)
    report = strip.strip([str(tree)], chown_to=(1000, 1000), dry_run=True)
    assert mode_of(f) == 0o4755 and has_caps(f) and os.lstat(f).st_uid == 0
    assert report["dry_run"] and report["changed"]
    assert strip.findings_remain(report)
    assert {e["path"]: e["mode_after"] for e in report["files"]}[str(f)] == "0755"


def test_second_strip_reports_no_change(tree):
    make_file(tree / "suid", 0o6755)
    assert strip.strip([str(tree)])["changed"]
    again = strip.strip([str(tree)])
    assert not again["changed"] and again["files"] == []


def test_only_setuid_when_setgid_is_not_asked_for(tree):
    f = make_file(tree / "both-bits", 0o6755)
    strip.strip([str(tree)], setgid=False, caps=False)
    assert mode_of(f) == 0o2755


# -- what is never touched -------------------------------------------------------------

@pytest.mark.parametrize("fork", MODES)
def test_symlink_to_setuid_file_outside_is_not_followed(tree, outside, fork):
    os.symlink(outside, tree / "link")
    os.symlink(os.path.dirname(outside), tree / "dirlink")
    report = strip.strip([str(tree)], chown_to=(1000, 1000), fork=fork)
    assert mode_of(outside) == 0o4755 and has_caps(outside) and os.lstat(outside).st_uid == 0
    assert report["counts"]["symlinks"] == 2 and report["counts"]["setid"] == 0


def test_setgid_directory_keeps_its_bit(tree):
    d = tree / "shared"
    d.mkdir()
    os.chmod(d, 0o2775)
    strip.strip([str(tree)])
    assert mode_of(d) == 0o2775


def test_fifo_keeps_its_bits_and_is_never_opened(tree):
    fifo = tree / "pipe"
    os.mkfifo(fifo)
    os.chmod(fifo, 0o4755)
    sock_dir = tree / "sock"
    sock_dir.mkdir()
    done = []
    worker = threading.Thread(target=lambda: done.append(strip.strip([str(tree)], chown_to=(1000, 1000))))
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "strip blocked on a FIFO (it must never open one)"
    assert mode_of(fifo) == 0o4755 and os.lstat(fifo).st_uid == 0
    assert done[0]["counts"]["special"] == 1


def test_device_node_is_made_root_owned_mode_0000_never_setid_stripped_alone(tree):
    dev = tree / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(dev, 0o4666)
    os.chown(dev, 1000, 1000)
    report = strip.strip([str(tree)])
    assert mode_of(dev) == 0 and (os.lstat(dev).st_uid, os.lstat(dev).st_gid) == (0, 0)
    assert report["counts"]["device"] == 1 and report["counts"]["setid"] == 0


def test_device_node_keeps_its_bits_without_the_device_action(tree):
    dev = tree / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(dev, 0o4666)
    strip.strip([str(tree)], devices=False)
    assert mode_of(dev) == 0o4666


def test_hard_link_to_outside_name_is_stripped_and_reported_with_nlink(tree, tmp_path):
    outside_name = make_file(tmp_path / "outside-link", 0o4755)
    os.link(outside_name, tree / "inside-link")
    report = strip.strip([str(tree)])
    [entry] = report["files"]
    assert entry["nlink"] == 2
    assert report["counts"]["hardlinks"] == 1
    # The bits live on the inode: stripping the name inside strips every name.
    assert mode_of(outside_name) == 0o755


def test_hard_link_policy_skip_leaves_it_and_says_so(tree, tmp_path):
    outside_name = make_file(tmp_path / "outside-link", 0o4755)
    os.link(outside_name, tree / "inside-link")
    report = strip.strip([str(tree)], hardlinks="skip")
    assert mode_of(outside_name) == 0o4755
    assert "hardlinks=skip" in report["files"][0]["skipped"]
    assert report["counts"]["skipped"] == 1 and strip.findings_remain(report)


def test_immutable_file_is_an_error_and_the_rest_is_still_processed(tree):
    sub = tree / "a"
    sub.mkdir()
    locked = make_file(sub / "locked", 0o4755)
    other = make_file(sub / "z-other", 0o4755)
    later = tree / "b"
    later.mkdir()
    third = make_file(later / "third", 0o2755)
    subprocess.run(["chattr", "+i", locked], check=True)
    try:
        report = strip.strip([str(tree)])
    finally:
        subprocess.run(["chattr", "-i", locked], check=True)
    assert mode_of(locked) == 0o4755
    assert mode_of(other) == 0o755 and mode_of(third) == 0o755
    [error] = report["errors"]
    assert error["path"] == locked and error["error"].startswith("EPERM")
    assert report["complete"] and strip.findings_remain(report)


# -- mounts ----------------------------------------------------------------------------

@pytest.fixture
def mounted(tree, tmp_path):
    """A tmpfs and a same-filesystem bind mount below the root, each holding a setuid file."""
    tmpfs = tree / "tmpfs"
    tmpfs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "sgtest", tmpfs], check=True)
    source = tmp_path / "bind-source"
    source.mkdir()
    bind = tree / "bind with space"
    bind.mkdir()
    subprocess.run(["mount", "--bind", source, bind], check=True)
    files = [make_file(tmpfs / "suid", 0o4755), make_file(bind / "suid", 0o4755)]
    yield tmpfs, bind, files
    subprocess.run(["umount", "-l", tmpfs], check=False)
    subprocess.run(["umount", "-l", bind], check=False)


@pytest.mark.parametrize("fork", MODES)
def test_nested_tmpfs_and_same_filesystem_bind_mount_are_pruned_and_reported(tree, mounted, fork):
    tmpfs, bind, files = mounted
    assert os.lstat(bind).st_dev == os.lstat(tree).st_dev  # -xdev alone would walk into it
    mine = make_file(tree / "mine", 0o4755)
    report = strip.strip([str(tree)], fork=fork)
    for f in files:
        assert mode_of(f) == 0o4755
    assert mode_of(mine) == 0o755
    assert sorted(report["pruned_mounts"]) == sorted([str(tmpfs), str(bind)])


def test_mount_pruning_can_be_turned_off_for_same_filesystem_binds(tree, mounted):
    tmpfs, _bind, files = mounted
    report = strip.strip([str(tree)], prune_mounts=False)
    assert mode_of(files[1]) == 0o755  # the bind mount was walked
    assert mode_of(files[0]) == 0o4755  # the tmpfs is still another filesystem
    assert report["pruned_mounts"] == [str(tmpfs)]


# -- races -----------------------------------------------------------------------------

RACE_FAILSAFE_S = 300  # only so a racer that never swaps fails instead of hanging: not a window


def _swap_loop(name, outside, stop, swaps):
    """Replace `name` by a symlink to `outside` and back by a fresh setuid file, until `stop` is set."""
    tmp_link, tmp_file = name + ".l", name + ".f"
    while not stop.is_set():
        try:
            os.symlink(outside, tmp_link)
            os.rename(tmp_link, name)
            make_file(tmp_file, 0o4755)
            os.rename(tmp_file, name)
        except OSError:
            pass
        with swaps.get_lock():
            swaps.value += 1


def _race(tree, outside, fork, racer, swap_loop=_swap_loop, min_walks=20):
    """Walk while the racer swaps, until both outcomes were met several times (the victim
    stripped as a file, and met as the symlink), whatever the load: counted, not timed."""
    name = str(tree / "victim")
    make_file(name, 0o4755)
    for i in range(30):  # other files make each walk longer, widening the window
        make_file(tree / ("pad%02d" % i), 0o4755)
    context = multiprocessing.get_context("fork")
    stop, swaps = (threading.Event() if racer == "thread" else context.Event()), context.Value("l", 0)
    if racer == "thread":
        worker = threading.Thread(target=swap_loop, args=(name, outside, stop, swaps))
    else:
        worker = context.Process(target=swap_loop, args=(name, outside, stop, swaps))
    worker.start()
    walks = stripped_victim = met_link = 0
    deadline = time.monotonic() + RACE_FAILSAFE_S
    try:
        while walks < min_walks or stripped_victim < 3 or met_link < 3:
            assert time.monotonic() < deadline, "the race never happened: %d walks, the victim stripped in %d, " \
                "not stripped in %d, %d swaps" % (walks, stripped_victim, met_link, swaps.value)
            before = swaps.value
            report = strip.strip([str(tree)], fork=fork)
            walks += 1
            if any(e["path"] == name for e in report["files"]):
                stripped_victim += 1
            elif swaps.value != before:  # it swapped during this walk, and the walk left the victim alone
                met_link += 1
            assert mode_of(outside) == 0o4755 and has_caps(outside), "a change followed the symlink out"
            for i in range(30):
                os.chmod(tree / ("pad%02d" % i), 0o4755)
    finally:
        stop.set()
        worker.join()
    assert mode_of(outside) == 0o4755 and has_caps(outside)


@pytest.mark.parametrize("fork", MODES)
def test_setuid_file_swapped_for_symlink_between_scan_and_fix_never_changes_the_target(tree, outside, fork,
                                                                                        monkeypatch):
    """The race's window, hit every time: the scan saw a setuid file, and the name is a
    symlink to a host file by the time the walk acts on it (a hook at walk.fix_at swaps it)."""
    from sandboxguard._walk import walk

    victim, link = str(tree / "victim"), str(tree / ".link")
    make_file(victim, 0o4755)
    hits = multiprocessing.get_context("fork").Value("l", 0)  # the forked walkers count here too
    real_fix_at = walk.fix_at

    def swapped_first(dfd, name, *args):
        if os.fsencode(name) == b"victim":
            os.symlink(outside, link)
            os.rename(link, victim)
            with hits.get_lock():
                hits.value += 1
        return real_fix_at(dfd, name, *args)

    monkeypatch.setattr(walk, "fix_at", swapped_first)  # forked walkers inherit it
    report = strip.strip([str(tree)], fork=fork)
    assert hits.value == 1, "the walk never acted on the victim"
    assert mode_of(outside) == 0o4755 and has_caps(outside), "a change followed the symlink out"
    assert [e["op"] for e in report["errors"] if e["path"] == victim] == ["verify"], report["errors"]
    assert os.path.islink(victim) and not any(e["path"] == victim for e in report["files"])


def _no_swaps(name, outside, stop, swaps):
    """A racer that never swaps: the victim stays a setuid file."""
    stop.wait()


def test_a_race_whose_racer_never_swaps_is_not_counted_as_a_race(tree, outside, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "RACE_FAILSAFE_S", 3)
    with pytest.raises(AssertionError, match="the race never happened"):
        _race(tree, outside, fork=False, racer="thread", swap_loop=_no_swaps)


@pytest.mark.slow
def test_setuid_file_swapped_for_symlink_by_a_racing_thread_never_changes_the_target(tree, outside):
    _race(tree, outside, fork=False, racer="thread", min_walks=500)


@pytest.mark.slow
def test_setuid_file_swapped_for_symlink_by_a_racing_process_never_changes_the_target(tree, outside):
    _race(tree, outside, fork=True, racer="process", min_walks=100)


def test_directory_swapped_for_symlink_after_listing_is_not_followed(tree, outside):
    """The walk opens directories with O_NOFOLLOW relative to the parent's fd."""
    sub = tree / "sub"
    sub.mkdir()
    make_file(sub / "suid", 0o4755)
    calls = []

    def swap_once(counts):
        if not calls:
            calls.append(1)
            shutil.rmtree(sub)
            os.symlink(os.path.dirname(outside), sub)

    # progress runs between directories; a zero interval makes it run after the root listing
    report = strip.strip([str(tree)], fork=False, progress=swap_once, progress_interval=0)
    assert calls == [1]
    assert mode_of(outside) == 0o4755
    assert [e["op"] for e in report["errors"]] == ["open directory"]
    assert "ELOOP" in report["errors"][0]["error"] or "ENOTDIR" in report["errors"][0]["error"]


# -- hostile shapes --------------------------------------------------------------------

@pytest.mark.parametrize("fork", MODES)
def test_non_utf8_and_newline_names(tree, fork):
    raw = os.fsencode(str(tree)) + b"/bad-\xff\xfe-name"
    nl = os.fsencode(str(tree)) + b"/line\nbreak"
    for p in (raw, nl):
        make_file(os.fsdecode(p), 0o4755)
    report = strip.strip([str(tree)], fork=fork)
    assert mode_of(raw) == 0o755 and mode_of(nl) == 0o755
    paths = sorted(os.fsencode(e["path"]) for e in report["files"])
    assert paths == sorted([raw, nl])


@pytest.mark.parametrize("fork", MODES)
def test_tree_1000_deep_with_a_path_longer_than_path_max(tree, fork):
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    name = "d" * 200
    depth = 1000
    try:
        for _level in range(depth):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        leaf = os.open("deep-suid", os.O_WRONLY | os.O_CREAT, 0o755, dir_fd=fd)
        os.close(leaf)
        os.chmod("deep-suid", 0o4755, dir_fd=fd)
        report = strip.strip([str(tree)], fork=fork, budget=0)
        assert stat.S_IMODE(os.stat("deep-suid", dir_fd=fd).st_mode) == 0o755
    finally:
        os.close(fd)
    [entry] = report["files"]
    assert len(os.fsencode(entry["path"])) > 4096 * 40
    assert report["counts"]["dirs"] == depth + 1 and report["complete"]
    subprocess.run(["rm", "-rf", str(tree)], check=True)


def test_wide_and_deep_tree_does_not_run_out_of_descriptors(tree):
    """Every level has two subdirectories, so each ancestor has a pending sibling."""
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _level in range(600):
            os.mkdir("z-side", dir_fd=fd)
            os.mkdir("a", dir_fd=fd)
            nfd = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.close(os.open("suid", os.O_WRONLY | os.O_CREAT, 0o4755, dir_fd=fd))
        os.chmod("suid", 0o4755, dir_fd=fd)
        report = strip.strip([str(tree)], budget=0, fork=False)
        assert stat.S_IMODE(os.stat("suid", dir_fd=fd).st_mode) == 0o755
    finally:
        os.close(fd)
    assert report["errors"] == [] and report["counts"]["dirs"] == 1201


def test_budget_runs_out_promptly_on_a_large_tree(tree):
    # 80,000 files: more than two walkers get through in 0.05 s (about 700,000 files/s here at best)
    for d in range(400):
        sub = tree / ("pkg%03d" % d)
        sub.mkdir()
        for f in range(200):
            (sub / ("f%03d" % f)).touch()
    started = time.monotonic()
    report = strip.scan([str(tree)], budget=0.05)
    took = time.monotonic() - started
    assert report["complete"] is False
    assert report["counts"]["files"] < 80_000
    assert took < 2.0, "a 0.05 s budget took %.2fs" % took
    assert strip.findings_remain(report)


def test_findings_list_is_capped_and_the_rest_counted(tree):
    for i in range(25):
        make_file(tree / ("s%02d" % i), 0o4755)
    report = strip.scan([str(tree)], max_listed=10)
    assert len(report["files"]) == 10
    assert report["counts"]["setid"] == 25 and report["counts"]["unlisted"] == 15


def test_callers_working_directory_never_moves(tree, tmp_path):
    sub = tree / "x"
    sub.mkdir()
    make_file(sub / "s", 0o4755)
    os.chdir(tmp_path)
    for fork in MODES:
        strip.strip([str(tree)], fork=fork)
        assert os.getcwd() == str(tmp_path)


def test_single_file_root(tree):
    f = make_file(tree / "one", 0o4755)
    set_caps(f)
    report = strip.strip([f])
    assert mode_of(f) == 0o755 and not has_caps(f)
    assert report["files"][0]["path"] == f


# -- refused roots ---------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", "/usr", "/etc", "/usr/local/bin", "/home", "/var/lib", "/proc/1"])
def test_system_roots_are_refused(path):
    with pytest.raises(RootRefused) as info:
        strip.scan([path])
    assert "system" in str(info.value)


def test_relative_missing_and_symlink_roots_are_refused(tree):
    os.symlink(tree, str(tree) + "-link")
    for bad, words in (("relative/dir", "relative"), (str(tree / "missing"), "does not exist"),
                       (str(tree) + "-link", "symlink")):
        with pytest.raises(RootRefused) as info:
            strip.strip([bad])
        assert words in str(info.value)


# -- two forked walkers sharing subtrees ---------------------------------------------------

@pytest.fixture
def wide_tree(tree):
    """300 packages (more than SHARE_FRONTIER directories wait after the first listing)."""
    expected = set()
    for d in range(300):
        pkg = tree / ("pkg%03d" % d) / "lib"
        pkg.mkdir(parents=True)
        for f in range(5):
            (pkg / ("f%d" % f)).touch()
        if d % 7 == 0:
            expected.add(make_file(pkg / "suid", 0o4755))
        if d % 11 == 0:
            capped = make_file(pkg / "ping", 0o755)
            set_caps(capped)
            expected.add(capped)
    return tree, expected


def test_two_walkers_find_exactly_what_one_walker_finds(wide_tree):
    tree, expected = wide_tree
    one = strip.scan([str(tree)], workers=1, budget=0)
    two = strip.scan([str(tree)], workers=2, budget=0)
    assert {e["path"] for e in two["files"]} == {e["path"] for e in one["files"]} == expected
    assert two["counts"] == one["counts"]
    assert two["counts"]["dirs"] == 601 and two["complete"]


def test_two_walkers_strip_everything_and_merge_the_listing_cap(wide_tree):
    tree, expected = wide_tree
    report = strip.strip([str(tree)], workers=2, budget=0, max_listed=10)
    assert len(report["files"]) == 10
    assert report["counts"]["unlisted"] == len(expected) - 10
    for path in expected:
        assert mode_of(path) == 0o755 and not has_caps(path)


def test_two_walkers_prune_mounts_and_report_errors(wide_tree):
    tree = wide_tree[0]
    inner = tree / "pkg150" / "mnt"
    inner.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "sgtest2", inner], check=True)
    locked = make_file(tree / "pkg299" / "lib" / "locked", 0o4755)
    subprocess.run(["chattr", "+i", locked], check=True)
    try:
        hidden = make_file(inner / "suid", 0o4755)
        report = strip.strip([str(tree)], workers=2, budget=0)
        assert mode_of(hidden) == 0o4755
    finally:
        subprocess.run(["chattr", "-i", locked], check=True)
        subprocess.run(["umount", "-l", inner], check=False)
    assert report["pruned_mounts"] == [str(inner)]
    assert [e["path"] for e in report["errors"]] == [locked]


def test_two_walkers_honour_the_budget(wide_tree):
    tree = wide_tree[0]
    report = strip.scan([str(tree)], workers=2, budget=0.001)
    assert report["complete"] is False


# -- a filesystem without extended attributes --------------------------------------------

@pytest.mark.parametrize("workers", [1, 2])
def test_without_xattr_support_every_setuid_file_is_still_found_the_first_one_included(tmp_path, monkeypatch,
                                                                                    workers):
    """listxattr failing with ENOTSUP (a filesystem without xattrs) turns the caps check
    off for the rest of that walker's walk; the file it failed on still gets its setid
    check. 70 directories (wider than SHARE_FRONTIER), so with two workers each forked
    walker meets its own first failure."""
    root = tmp_path / "noxattr"
    suid = []
    for index in range(70):
        (root / ("d%02d" % index)).mkdir(parents=True)
        suid.append(make_file(root / ("d%02d" % index) / "f", 0o4755))
    real = os.listxattr

    def unsupported(path, *args, **kwargs):
        if os.path.basename(os.fspath(path)) == "f":
            raise OSError(errno.ENOTSUP, "Operation not supported")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "listxattr", unsupported)
    report = strip.scan([str(root)], workers=workers, budget=0)
    assert sorted(entry["path"] for entry in report["files"]) == sorted(suid)
    assert report["counts"]["setid"] == 70 and report["errors"] == []
