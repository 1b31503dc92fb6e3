# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The guard on real files with a real fanotify mark, as root: what it strips, how fast,
what it never follows, and how it recovers from a lost event queue."""
import itertools
import json
import os
import select
import shutil
import stat
import subprocess
import sys
import time

import pytest
from sandboxguard import caps as capsmod
from sandboxguard._guard import fanotify, guard_scope
from sandboxguard._guard import guard as guardmod

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_guard.py must run as root (fanotify, setxattr)", pytrace=False)

NET_RAW = capsmod.CAP_NAMES.index("cap_net_raw")
WAIT_S = 10.0  # generous: the CI machine is shared; the exposure bound is measured in benchmarks/
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python", "src")


def make_file(path, mode=0o755, data=b"#!/bin/sh\necho hi\n"):
    path = os.fspath(path)
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)
    return path


def set_caps(path):
    os.setxattr(os.fspath(path), capsmod.XATTR_NAME, capsmod.encode_vfs_cap(permitted=(NET_RAW,), effective=True))


def has_caps(path):
    return capsmod.XATTR_NAME in os.listxattr(os.fspath(path), follow_symlinks=False)


def mode_of(path):
    return stat.S_IMODE(os.lstat(os.fspath(path)).st_mode)


def privileged(path):
    return bool(mode_of(path) & 0o6000) or has_caps(path)


class Running:
    """A Guard driven step by step in this process, with its output collected.

    ``marker_dir``: where settle() makes its marker files, on the roots' filesystem and
    outside every root (default: the first root's parent)."""

    def __init__(self, roots, marker_dir=None, **kwargs):
        self.records, self.logs = [], []
        self.roots = [(os.fspath(r), "test") for r in roots]
        self.marker_dir = os.fspath(marker_dir or os.path.dirname(self.roots[0][0]))
        self.guard = guardmod.Guard(self.source, self.records.append, self.logs.append, **kwargs)
        self.guard.start()
        assert self.guard.wait_jobs(WAIT_S), "the start sweep did not finish"

    def source(self):
        """What guard_scope.roots_source gives the guard: the roots (the test's, as operator
        roots) proven by the scope and held, its refusals, the absent ones."""
        held, refused, absent = guard_scope.roots_source((), None, [path for path, _source in self.roots])()
        return [(opened, "test") for opened, _source in held], refused, absent

    def until(self, condition, timeout=WAIT_S):
        """Poll the guard until ``condition()`` holds (True) or WAIT_S pass (False): for what
        must happen. What must not happen is asserted after settle(), never after a wait."""
        limit = time.monotonic() + timeout
        while time.monotonic() < limit:
            if condition():
                return True
            self.guard.poll(0.05)
        return condition()

    def paths(self):
        return [r["path"] for r in self.records]

    def close(self):
        self.guard.close()


_MARKS = itertools.count()


def queued_events(running):
    """Read every event queued for the guard until now, without handling them.

    Deterministic, not a sleep: a marker file is made in ``running.marker_dir`` and the
    read goes on until the marker's own event has come and the queue is empty. The kernel
    queues a filesystem's events in the order they happen, so every event from before the
    marker has been read by then. The marker's events are left out."""
    name = b".settle-%d" % next(_MARKS)
    os.close(os.open(os.path.join(os.fsencode(running.marker_dir), name), os.O_CREAT | os.O_WRONLY, 0o644))
    events, seen = [], False
    limit = time.monotonic() + WAIT_S
    while True:
        batch = fanotify.read_events(running.guard.fan_fd)
        if batch:
            seen = seen or any(e.name == name for e in batch)
            events += [e for e in batch if e.name != name]
            continue
        if seen:
            return events
        assert time.monotonic() < limit, "the marker's event never came (%s: on the roots' filesystem?)" % (
            running.marker_dir)
        select.select([running.guard.fan_fd], [], [], 0.05)


def settle(running, wait_jobs=True):
    """Hand the guard every event queued until now (queued_events), then, with
    ``wait_jobs``, collect the walks they started: after it, what the guard was going to
    do about everything before it is done, whatever the load."""
    events = queued_events(running)
    if events:
        running.guard.handle_events(events, time.time())
    if wait_jobs:
        assert running.guard.wait_jobs(WAIT_S), running.logs
    return events


@pytest.fixture
def sandbox(tmp_path):
    root = tmp_path / "sandboxes" / "docker"
    (root / "task" / "workspace").mkdir(parents=True)
    return root


@pytest.fixture
def outside(tmp_path):
    out = tmp_path / "outside"
    out.mkdir()
    return out


@pytest.fixture
def guard(sandbox):
    running = Running([sandbox])
    yield running
    running.close()


def test_created_setuid_file_is_stripped(guard, sandbox):
    path = make_file(sandbox / "task" / "workspace" / "suid", 0o4755)
    assert guard.until(lambda: not privileged(path)), guard.logs
    assert mode_of(path) == 0o755
    record = next(r for r in guard.records if r["path"] == path)
    assert record["actions"] == ["setuid"] and record["mode_before"] == "04755" and record["via"] == "event"
    assert record["latency_ms"] is not None and record["latency_ms"] >= 0


def test_a_device_node_made_in_a_guarded_root_is_made_root_owned_mode_0000(guard, sandbox):
    """issue 25 item 4: a block node a root container mknods 0666 in its bind mount is made
    harmless within milliseconds, never given away (owner root, mode 0000)."""
    path = sandbox / "task" / "workspace" / "sda"
    os.mknod(path, 0o666 | stat.S_IFBLK, os.makedev(8, 0))
    os.chown(path, 1000, 1000)
    assert guard.until(lambda: mode_of(path) == 0), guard.logs
    st = os.lstat(path)
    assert (st.st_uid, st.st_gid) == (0, 0) and stat.S_ISBLK(st.st_mode)
    record = next(r for r in guard.records if r["path"] == os.fspath(path))
    assert record["actions"] == ["device"] and record["via"] == "event"


def test_chmod_of_an_existing_file_to_setgid_is_stripped(guard, sandbox):
    path = make_file(sandbox / "task" / "workspace" / "tool", 0o750)
    settle(guard)  # its creation is handled: only the chmod's event can make it fixed
    os.chmod(path, 0o2750)
    assert guard.until(lambda: not privileged(path)), guard.logs
    assert mode_of(path) == 0o750
    assert [r["actions"] for r in guard.records if r["path"] == path] == [["setgid"]]


def test_setcap_on_an_existing_file_is_cleared_and_reported(guard, sandbox):
    path = make_file(sandbox / "task" / "workspace" / "ping", 0o755)
    settle(guard)  # its creation is handled: only the setxattr's event can make it fixed
    set_caps(path)
    assert guard.until(lambda: not has_caps(path)), guard.logs
    record = next(r for r in guard.records if r["path"] == path)
    assert record["actions"] == ["caps"] and record["caps_before"] == "cap_net_raw=ep"
    assert mode_of(path) == 0o755


def test_file_moved_in_from_outside_is_stripped(guard, sandbox, outside):
    src = make_file(outside / "suid", 0o4755)
    settle(guard)
    assert privileged(src), "the guard touched a file outside its roots"
    assert guard.guard.stats["filtered"] >= 1 and guard.records == []
    dest = os.fspath(sandbox / "task" / "moved-in")
    os.rename(src, dest)
    assert guard.until(lambda: not privileged(dest)), guard.logs


def test_tree_moved_in_is_walked_and_every_file_stripped(guard, sandbox, outside):
    tree = outside / "dist"
    deep = tree / "a" / "b" / "c"
    deep.mkdir(parents=True)
    files = [make_file(deep / ("s%d" % i), 0o6755) for i in range(20)]
    files.append(make_file(tree / "capped", 0o755))
    set_caps(files[-1])
    settle(guard)
    assert all(privileged(f) for f in files), "the guard touched files outside its roots"
    os.rename(tree, sandbox / "task" / "dist")
    moved = [f.replace(os.fspath(tree), os.fspath(sandbox / "task" / "dist")) for f in files]
    assert guard.until(lambda: not any(privileged(f) for f in moved)), guard.logs
    assert guard.guard.stats["trees"] == 1
    assert guard.until(lambda: len(guard.records) == len(moved))
    assert sorted(guard.paths()) == sorted(moved)
    assert {r["via"] for r in guard.records} == {"moved-in tree"}


def test_file_outside_the_roots_is_never_touched(guard, outside):
    path = make_file(outside / "host-suid", 0o4755)
    set_caps(path)
    os.chmod(path, 0o4755)
    handed = settle(guard)  # every event of the file was handed to the guard, and handled
    assert any(e.name == b"host-suid" for e in handed)
    assert mode_of(path) == 0o4755 and has_caps(path)
    assert guard.records == []
    assert guard.guard.stats["filtered"] >= 1  # its events arrived and were filtered by directory


def test_file_swapped_for_a_symlink_between_event_and_fix_is_not_followed(guard, sandbox, outside):
    target = make_file(outside / "host-suid", 0o4755)
    path = sandbox / "task" / "workspace" / "bait"
    make_file(path, 0o4755)
    events = queued_events(guard)  # read the events ourselves: the fix has not happened yet
    assert any(e.name == b"bait" for e in events)
    os.unlink(path)
    os.symlink(target, path)
    guard.guard.handle_events(events, time.time())
    assert mode_of(target) == 0o4755, "followed the symlink to a file outside the roots"
    assert os.path.islink(path)
    assert guard.records == []


def test_directory_swapped_for_a_symlink_between_event_and_fix_is_not_followed(guard, sandbox, outside):
    work = sandbox / "task" / "workspace"
    decoy = outside / "decoy"
    decoy.mkdir()
    host_file = make_file(decoy / "bin", 0o4755)
    real = make_file(work / "bin", 0o4755)
    events = queued_events(guard)
    assert any(e.name == b"bin" for e in events)
    os.rename(work, sandbox / "task" / "workspace.old")  # the event's directory moves away...
    os.symlink(decoy, work)  # ...and its name now leads outside
    guard.guard.handle_events(events, time.time())
    assert mode_of(host_file) == 0o4755, "followed a symlinked directory to a file outside the roots"
    moved = real.replace("/workspace/", "/workspace.old/")
    assert not privileged(moved), "the file in the directory the event named was not fixed"


def test_root_whose_path_is_swapped_for_a_symlink_after_start_is_swept_from_the_held_fd_never_the_link(tmp_path):
    base = tmp_path / "home"
    root = base / "sandboxes" / "docker"
    (root / "t1").mkdir(parents=True)
    target = tmp_path / "elsewhere"  # what the swapped-in symlink points to: outside every root
    (target / "docker" / "t1").mkdir(parents=True)
    host_file = make_file(target / "docker" / "t1" / "host-suid", 0o4755)
    running = Running([root], marker_dir=tmp_path, rescan_interval=3600)
    try:
        os.rename(base / "sandboxes", base / "sandboxes.old")  # an ancestor of the root moves away...
        os.symlink(target, base / "sandboxes")  # ...and its name now leads outside
        held = make_file(base / "sandboxes.old" / "docker" / "t1" / "suid", 0o4755)
        assert any(e.name == b"suid" for e in queued_events(running))  # its events are lost: only a sweep finds it
        running.guard.start_sweep(list(running.guard.rootset.roots.values()), "queue overflow")
        assert running.guard.wait_jobs(WAIT_S), running.logs
        assert mode_of(host_file) == 0o4755, "the sweep followed the symlinked path to a directory outside the roots"
        assert not privileged(held), running.logs  # the directory the guard proved and holds was swept
        assert [(r["path"], r["via"]) for r in running.records] == [(held, "sweep")]  # named where it is now
        # The rescan looks the name up again by the walker's rules: refused, and the old root dropped.
        running.guard.refresh_roots("rescan")
        assert not running.guard.rootset.roots
        refusals = [line for line in running.logs if line.startswith("refused root ")]
        assert refusals and "goes through a symlink" in refusals[0] and os.fspath(base / "sandboxes") in refusals[0]
        os.chmod(host_file, 0o4755)  # an event under the link's target: filtered, never fixed
        running.guard.start_sweep(list(running.guard.rootset.roots.values()), "queue overflow")
        assert running.guard.wait_jobs(WAIT_S)
        settle(running)  # the chmod's event handed over and handled too
        assert mode_of(host_file) == 0o4755, "a file under the symlink's target was changed"
    finally:
        running.close()


def test_a_refused_root_is_logged_once_not_at_every_rescan_and_again_when_the_reason_changes(sandbox, tmp_path):
    link = tmp_path / "linked"
    os.symlink(sandbox, link)
    running = Running([sandbox, link], rescan_interval=3600)
    try:
        def refusals():
            return [line for line in running.logs if line.startswith("refused root ") and os.fspath(link) in line]

        assert len(refusals()) == 1 and "goes through a symlink" in refusals()[0]
        for _rescan in range(3):
            running.guard.refresh_roots("rescan")
        assert len(refusals()) == 1, running.logs  # the same reason: said once
        os.unlink(link)
        link.mkdir()  # now a real directory: guarded, and nothing refused
        running.guard.refresh_roots("rescan")
        assert len(refusals()) == 1 and any(line.startswith("guarding ") and os.fspath(link) in line
                                            for line in running.logs)
        link.rmdir()
        os.symlink(sandbox, link)  # a symlink again: refused again, and said again
        running.guard.refresh_roots("rescan")
        assert len(refusals()) == 2 and "goes through a symlink" in refusals()[1], running.logs
    finally:
        running.close()


def test_tree_moved_in_and_swapped_for_a_symlink_before_its_walk_is_walked_from_the_held_fd(guard, sandbox, outside,
                                                                                           monkeypatch):
    decoy = outside / "decoy"
    decoy.mkdir()
    host_file = make_file(decoy / "host-suid", 0o4755)
    tree = outside / "dist"
    (tree / "bin").mkdir(parents=True)
    files = [make_file(tree / "bin" / ("s%d" % i), 0o4755) for i in range(5)]
    settle(guard)
    monkeypatch.setattr(guard.guard.pool, "max_jobs", 0)  # every walk waits: the swap lands before the walk starts
    dest = sandbox / "task" / "dist"
    os.rename(tree, dest)
    settle(guard, wait_jobs=False)
    assert [job["kind"] for job in guard.guard.pool.waiting] == ["tree"]
    os.rename(dest, sandbox / "task" / "dist.moved")  # the tree moves on (its events are not handled)...
    os.symlink(decoy, dest)  # ...and its old name leads outside
    monkeypatch.setattr(guard.guard.pool, "max_jobs", 4)
    guard.guard.start_waiting()
    assert guard.guard.wait_jobs(WAIT_S), guard.logs
    assert mode_of(host_file) == 0o4755, "the tree's walk followed the symlink left at its name"
    moved = [f.replace(os.fspath(tree), os.fspath(sandbox / "task" / "dist.moved")) for f in files]
    assert not any(privileged(f) for f in moved), guard.logs
    assert sorted(guard.paths()) == sorted(moved)  # reported where the walk found them


def test_waiting_trees_beyond_the_bound_become_one_sweep_of_their_root(guard, sandbox, outside, monkeypatch):
    monkeypatch.setattr(guard.guard.pool, "max_jobs", 0)
    monkeypatch.setattr(guard.guard.pool, "max_waiting_trees", 3)
    for i in range(6):
        (outside / ("t%d" % i)).mkdir()
        make_file(outside / ("t%d" % i) / "suid", 0o4755)
    settle(guard)
    for i in range(6):
        os.rename(outside / ("t%d" % i), sandbox / "task" / ("t%d" % i))
    settle(guard, wait_jobs=False)
    kinds = [job["kind"] for job in guard.guard.pool.waiting]
    assert kinds.count("tree") == 3 and kinds.count("sweep") == 1, kinds  # descriptors held: 3, not 6
    monkeypatch.setattr(guard.guard.pool, "max_jobs", 4)
    guard.guard.start_waiting()
    assert guard.guard.wait_jobs(WAIT_S), guard.logs
    assert not any(privileged(sandbox / "task" / ("t%d" % i) / "suid") for i in range(6)), guard.logs


def test_queue_overflow_is_followed_by_a_full_sweep(sandbox):
    running = Running([sandbox])
    try:
        burst = sandbox / "task" / "burst"
        burst.mkdir()
        limit = int(open("/proc/sys/fs/fanotify/max_queued_events").read())
        # Not reading while more events than the queue holds arrive (create + close each):
        # the kernel drops the rest and queues FAN_Q_OVERFLOW. The last file's events are lost.
        for i in range(limit // 2 + 2000):
            os.close(os.open(burst / ("f%d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
        lost = make_file(burst / "zz-suid", 0o4755)
        assert running.until(lambda: running.guard.stats["overflows"] >= 1), running.logs
        assert running.until(lambda: not privileged(lost)), running.logs
        assert running.until(lambda: lost in running.paths())
        assert any("overflow" in line for line in running.logs)
        assert any(r["path"] == lost and r["via"] == "sweep" for r in running.records)
    finally:
        running.close()


def test_root_created_after_start_is_swept_then_guarded(tmp_path):
    late = tmp_path / "late" / "docker"
    running = Running([late], rescan_interval=0.2)
    try:
        assert not running.guard.rootset.roots
        late.mkdir(parents=True)
        before = make_file(late / "early-suid", 0o4755)  # written before the guard knew the root
        assert running.until(lambda: not privileged(before)), running.logs
        assert any("full sweep of %s" % late in line for line in running.logs)
        after = make_file(late / "later-suid", 0o4755)
        assert running.until(lambda: not privileged(after)), running.logs
    finally:
        running.close()


def test_root_remounted_with_a_new_filesystem_is_marked_again_even_when_its_device_number_is_reused(tmp_path):
    root = tmp_path / "sandboxes" / "docker"
    root.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", os.fspath(root)], check=True)
    running = Running([root], rescan_interval=3600)
    try:
        subprocess.run(["umount", "-l", os.fspath(root)], check=True)
        running.guard.refresh_roots("rescan")  # the plain directory below: a new root
        running.guard.wait_jobs(WAIT_S)
        subprocess.run(["umount", "-l", os.fspath(root)], check=False)  # nothing mounted: harmless
        running.guard.refresh_roots("rescan")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", os.fspath(root)], check=True)
        running.guard.refresh_roots("rescan")  # the first tmpfs is freed: its device number may come back
        assert running.guard.wait_jobs(WAIT_S), running.logs
        path = make_file(root / "suid", 0o4755)
        assert running.until(lambda: not privileged(path)), running.logs
        assert [r["via"] for r in running.records if r["path"] == path] == ["event"]
    finally:
        running.close()
        subprocess.run(["umount", "-l", os.fspath(root)], check=False)


def test_dry_run_reports_and_changes_nothing(sandbox):
    running = Running([sandbox], dry_run=True)
    try:
        path = make_file(sandbox / "task" / "suid", 0o4755)
        assert running.until(lambda: path in running.paths()), running.logs
        assert mode_of(path) == 0o4755
    finally:
        running.close()


def test_files_present_at_start_are_swept(sandbox):
    old = make_file(sandbox / "task" / "workspace" / "old-suid", 0o4755)
    running = Running([sandbox])
    try:
        assert not privileged(old)
        assert [r["via"] for r in running.records if r["path"] == old] == ["sweep"]
    finally:
        running.close()


# -- the command ---------------------------------------------------------------------------
def guard_cmd(*args):
    return [sys.executable, "-c", "import sys; from sandboxguard_cli.main import main; sys.exit(main())",
            "guard", *args]


def cli_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC
    return env


def read_lines(stream, count, timeout=WAIT_S):
    """What a running command wrote on ``stream`` (a pipe) once ``count`` lines came: the
    event waited for before it is stopped, instead of a pause (the guard flushes each line)."""
    data, fd = b"", stream.fileno()
    limit = time.monotonic() + timeout
    while data.count(b"\n") < count and time.monotonic() < limit:
        if select.select([fd], [], [], max(0.0, limit - time.monotonic()))[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    return data


def test_cli_prints_one_json_object_per_fixed_file_and_exits_0_on_sigterm(sandbox, tmp_path):
    err_path = tmp_path / "stderr"
    with open(err_path, "wb") as err_file:
        proc = subprocess.Popen(guard_cmd(os.fspath(sandbox), "--json"), stdout=subprocess.PIPE, stderr=err_file,
                                env=cli_env())
    try:
        limit = time.monotonic() + WAIT_S
        while time.monotonic() < limit and b"done" not in err_path.read_bytes():  # marked, start sweep over
            time.sleep(0.05)
        path = make_file(sandbox / "task" / "suid", 0o4755)
        limit = time.monotonic() + WAIT_S
        while time.monotonic() < limit and privileged(path):
            time.sleep(0.02)
        assert not privileged(path)
        out = read_lines(proc.stdout, 1)
        stopped = time.monotonic()
        proc.terminate()
        out += proc.communicate(timeout=5)[0]
        assert time.monotonic() - stopped < 5
    finally:
        if proc.poll() is None:
            proc.kill()
    err = err_path.read_bytes()
    assert proc.returncode == 0, err
    records = [json.loads(line) for line in out.decode().splitlines()]
    assert [r["path"] for r in records] == [path]
    assert set(records[0]) >= {"path", "actions", "mode_before", "caps_before", "latency_ms"}
    assert b"stopped:" in err


def test_cli_textfile_counts_what_it_fixed_and_stays_fresh_while_it_guards(sandbox, tmp_path):
    parse, series = promtext().parse, promtext().series

    textdir = tmp_path / "node-exporter"
    textdir.mkdir()
    prom = textdir / "sandboxguard-guard.prom"
    err_path = tmp_path / "stderr"
    with open(err_path, "wb") as err_file:
        proc = subprocess.Popen(guard_cmd(os.fspath(sandbox), "--json", "--textfile", os.fspath(prom),
                                          "--rescan-interval", "0.2", "--textfile-interval", "0.2"),
                                stdout=subprocess.PIPE, stderr=err_file, env=cli_env())
    try:
        limit = time.monotonic() + WAIT_S
        while time.monotonic() < limit and not prom.exists():  # written at start
            time.sleep(0.05)
        first = parse(prom.read_text())
        cmd = ("command", "guard")
        assert series(first, "sandboxguard_findings") == {frozenset([cmd, ("kind", "setid")]): 0,
                                                         frozenset([cmd, ("kind", "caps")]): 0,
                                                         frozenset([cmd, ("kind", "device")]): 0}
        started = series(first, "sandboxguard_last_success_timestamp_seconds")[frozenset([cmd])]
        assert started > 0
        suid = make_file(sandbox / "task" / "suid", 0o4755)
        capped = make_file(sandbox / "task" / "capped")
        set_caps(capped)
        read_lines(proc.stdout, 2)
        limit = time.monotonic() + WAIT_S
        found = {}
        while time.monotonic() < limit:
            families = parse(prom.read_text())
            found = {dict(k)["kind"]: v for k, v in series(families, "sandboxguard_findings").items()}
            if found == {"setid": 1, "caps": 1, "device": 0}:
                break
            time.sleep(0.05)
        assert found == {"setid": 1, "caps": 1, "device": 0}
        assert not privileged(suid) and not privileged(capped)
        later = series(families, "sandboxguard_last_success_timestamp_seconds")[frozenset([cmd])]
        assert later > started  # rewritten while guarding, not only at start
        assert series(families, "sandboxguard_errors_total") == {
            frozenset([cmd, ("kind", kind)]): 0 for kind in ("fanotify", "file", "other")}
        proc.terminate()
        proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err_path.read_bytes()
    assert sorted(os.listdir(textdir)) == ["sandboxguard-guard.prom"]
    assert stat.S_IMODE(os.lstat(prom).st_mode) == 0o644


def test_cli_refuses_a_system_path_as_root():
    proc = subprocess.run(guard_cmd("/usr"), capture_output=True, env=cli_env(), timeout=30, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "/usr" in lines[0] and "refusing a system path" in lines[0]


def strip_cmd(*args):
    return [sys.executable, "-c", "import sys; from sandboxguard_cli.main import main; sys.exit(main())",
            "strip", *args]


@pytest.mark.parametrize("spelling", ["{link}", "{link}/", "{link}/.", "{link}//", "{link}/docker", "{real}/../link"])
def test_cli_refuses_a_symlinked_root_exactly_as_strip_refuses_it(tmp_path, spelling):
    real = tmp_path / "real"
    (real / "docker").mkdir(parents=True)
    make_file(real / "docker" / "suid", 0o4755)
    link = tmp_path / "link"
    os.symlink(real, link)
    path = spelling.format(link=link, real=real)
    results = {}
    for name, cmd in (("guard", guard_cmd(path)), ("strip", strip_cmd(path))):
        proc = subprocess.run(cmd, capture_output=True, env=cli_env(), timeout=30, check=False)
        lines = proc.stderr.decode().strip().splitlines()
        assert proc.returncode == 2, (name, proc.stderr)
        assert len(lines) == 1 and lines[0].startswith("sandboxguard %s: " % name), (name, lines)
        results[name] = lines[0].split(": ", 1)[1]
    assert results["guard"] == results["strip"]
    assert "symlink" in results["guard"] and path in results["guard"]
    assert mode_of(real / "docker" / "suid") == 0o4755


def test_cli_without_fanotify_names_the_fallback_and_exits_1():
    python = "/usr/bin/python3"  # root's pyenv Pythons are not executable by other users (FACTS.md)
    base = "/var/tmp/sandboxguard-guard-test-%d" % os.getpid()  # /tmp/pytest-of-root is 0700
    src, sandbox = base + "/src", base + "/sandboxes/docker"
    shutil.rmtree(base, ignore_errors=True)
    shutil.copytree(SRC, src)
    os.makedirs(sandbox)
    for path in (base, base + "/sandboxes", sandbox):
        os.chmod(path, 0o755)
    try:
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c",
             "import sys; sys.path.insert(0, %r); from sandboxguard_cli.main import main; sys.exit(main())" % src,
             "guard", os.fspath(sandbox)],
            capture_output=True, timeout=30, cwd="/", check=False)
    finally:
        shutil.rmtree(src, ignore_errors=True)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1, lines
    assert "need root" in lines[0] and "sandboxguard-sweep.timer" in lines[0] and "sandboxguard watch" in lines[0]


@pytest.mark.parametrize("probe", [False, True])
def test_cli_without_cap_dac_read_search_refuses_to_start_naming_the_capability_and_the_fallback(sandbox, probe):
    # Root without CAP_DAC_READ_SEARCH (a container's default set, a unit's bounding set):
    # fanotify marks work but no event's directory handle can be opened, so running would
    # strip only at its start sweep. It must say so and exit 1 instead.
    cmd = ["setpriv", "--bounding-set=-dac_read_search", "--inh-caps=-dac_read_search", "--", *guard_cmd(
        os.fspath(sandbox), "--no-engine", *(["--probe"] if probe else []))]
    proc = subprocess.run(cmd, capture_output=True, env=cli_env(), timeout=30, check=False)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1, lines
    assert "CAP_DAC_READ_SEARCH" in lines[0] and "sandboxguard-sweep.timer" in lines[0], lines


def test_bind_mount_on_another_filesystem_below_a_root_is_guarded_once_a_container_mounts_it(tmp_path):
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
        pytest.fail("no Docker engine: run tools/docker-engine.sh (make test starts it)")
    home = tmp_path / "hermes"
    work = home / "sandboxes" / "docker" / "t1" / "workspace"
    work.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", os.fspath(work)], check=True)
    name = "sg-guard-tmpfs-%d" % os.getpid()
    err_path = tmp_path / "stderr"
    try:
        with open(err_path, "wb") as err_file:
            proc = subprocess.Popen(guard_cmd("--hermes-home", os.fspath(home), "--rescan-interval", "0.5", "--json"),
                                    stdout=subprocess.PIPE, stderr=err_file, env=cli_env())
        subprocess.run(["docker", "run", "-d", "--name", name, "--network", "none", "-v", "%s:/w" % work,
                        "sandboxguard/debian:12", "sleep", "120"], check=True, capture_output=True)
        limit = time.monotonic() + WAIT_S
        while time.monotonic() < limit and ("guarding %s" % work).encode() not in err_path.read_bytes():
            time.sleep(0.1)
        subprocess.run(["docker", "exec", name, "sh", "-c", "cp /bin/true /w/x && chmod 4755 /w/x"], check=True)
        limit = time.monotonic() + WAIT_S
        while time.monotonic() < limit and privileged(work / "x"):
            time.sleep(0.05)
        assert not privileged(work / "x"), err_path.read_text()
        proc.terminate()
        out = proc.communicate(timeout=5)[0]
        assert [json.loads(line)["via"] for line in out.decode().splitlines()] == ["event"]
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["umount", "-l", os.fspath(work)], check=False)


def test_cli_probe_tries_a_mark_on_each_root_and_exits_0(sandbox):
    proc = subprocess.run(guard_cmd(os.fspath(sandbox), "--probe"), capture_output=True, env=cli_env(), timeout=30,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert b"fanotify works here" in proc.stderr and os.fsencode(sandbox) in proc.stderr


# -- hostile names (issue 19 item 5) --------------------------------------------------------

GUARD_NAMES = [b"bad\xff\xfe", b"two\nsandboxguard guard: forged line", b"esc\x1b[2J\x07", b"<script>]]>&amp;"]


def _run_guard_cli(root, names, *flags):
    """The guard CLI on `root` while the names are made setuid in it; (stdout, stderr) once all are stripped."""
    err_path = os.path.join(os.path.dirname(root), b"guard-stderr")
    with open(err_path, "wb") as err_file:
        proc = subprocess.Popen(guard_cmd(os.fsdecode(root), *flags), stdout=subprocess.PIPE, stderr=err_file,
                                env=cli_env())
    try:
        limit = time.monotonic() + WAIT_S
        while time.monotonic() < limit and b"done" not in open(err_path, "rb").read():
            time.sleep(0.05)
        paths = [make_file(os.path.join(root, name), 0o4755) for name in names]
        limit = time.monotonic() + WAIT_S
        while time.monotonic() < limit and any(privileged(p) for p in paths):
            time.sleep(0.02)
        assert not any(privileged(p) for p in paths)
        out = read_lines(proc.stdout, len(paths))  # every record written, then the stop
        proc.terminate()
        out += proc.communicate(timeout=5)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    with open(err_path, "rb") as handle:
        return out, handle.read()


def test_cli_lines_and_logs_stay_one_line_per_thing_whatever_the_names(tmp_path):
    from sandboxguard._core.text import escape, from_result

    root = os.path.join(os.fsencode(str(tmp_path)), b"root \x1b[1m\nsandboxguard guard: forged", b"docker")
    os.makedirs(root)
    out, err = _run_guard_cli(root, GUARD_NAMES)
    lines = out.decode("utf-8").splitlines()  # strict: escaped, never a raw byte that is not UTF-8
    assert len(lines) == len(GUARD_NAMES) and all(line.startswith("stripped ") for line in lines), lines
    for name in GUARD_NAMES:
        assert any(escape(os.fsdecode(os.path.join(root, name))) in line for line in lines), name
    assert b"\x1b" not in out + err and b"\x07" not in out + err
    assert all(line.startswith(b"sandboxguard guard: ") for line in err.splitlines()), err
    assert err.count(b"forged") == err.count(b"\\nsandboxguard guard: forged")  # every one inside a line

    root2 = os.path.join(os.path.dirname(root), b"json")
    os.makedirs(root2)
    out, err = _run_guard_cli(root2, GUARD_NAMES, "--json")
    records = [json.loads(line) for line in out.decode("utf-8").splitlines()]
    assert sorted(os.fsencode(r["path"]) for r in from_result(records)) == sorted(
        os.path.join(root2, n) for n in GUARD_NAMES)
    assert [r for r in records if "path_b64" in r]


def promtext():
    """tests/unit/promtext.py: the strict parser of node_exporter's text format."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "promtext.py")
    spec = importlib.util.spec_from_file_location("promtext", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
