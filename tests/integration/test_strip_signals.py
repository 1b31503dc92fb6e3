# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""SIGTERM/SIGINT to `sandboxguard strip` stops its forked walkers with it: once the CLI
has exited nothing changes any more and none of its processes is left."""
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_strip_signals.py must run as root", pytrace=False)

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python", "src"))
DIRS, PER_DIR = 120, 1000


@pytest.fixture
def many_setuid(tmp_path):
    """120,000 setuid files in 120 directories: a strip of them takes seconds here."""
    root = tmp_path / "sandbox"
    root.mkdir()
    for index in range(DIRS):
        sub = root / ("pkg%03d" % index)
        sub.mkdir()
        dfd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for number in range(PER_DIR):
                fd = os.open("f%d" % number, os.O_WRONLY | os.O_CREAT, 0o755, dir_fd=dfd)
                os.fchmod(fd, 0o4755)
                os.close(fd)
        finally:
            os.close(dfd)
    return root


def _still_setuid(root):
    left = 0
    for sub in os.scandir(root):
        for entry in os.scandir(sub.path):
            left += bool(entry.stat(follow_symlinks=False).st_mode & 0o4000)
    return left


def _session_processes(sid):
    """Pids (other than zombies) whose session is `sid`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != b"Z":
            found.append(int(name))
    return found


def _walkers_running(pid):
    """True once the CLI's worker has forked its walkers (grandchildren of the CLI)."""
    for child in _children(pid):
        if _children(child):
            return True
    return False


def _children(pid):
    kids = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as handle:
                kids.extend(int(p) for p in handle.read().split())
    except OSError:
        pass
    return kids


def _default_sigint():
    # A shell runs a background job with SIGINT ignored, and Python keeps an inherited SIG_IGN
    # (no KeyboardInterrupt): seen when make test ran as `... &`. The CLI must see SIGINT as a
    # terminal would send it, whatever launched the suite.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# The CLI as on a cold disk (every walk counts as cold): it forks handoff.COLD_WALKERS
# walkers, which hand directories to each other through its broker (handoff.py).
COLD_CLI = ("import runpy; from sandboxguard._walk import handoff; handoff.COLD_READ_BYTES = 0; "
            "runpy.run_module('sandboxguard_cli', run_name='__main__')")


@pytest.mark.parametrize("cache", ["warm", "cold"], ids=["warm", "cold-eight-walkers"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_the_cli_stops_its_forked_walkers_and_nothing_changes_after_it_exits(many_setuid, signum, cache):
    cli = ["-m", "sandboxguard_cli"] if cache == "warm" else ["-c", COLD_CLI]
    proc = subprocess.Popen([sys.executable, *cli, "strip", "--budget", "0", str(many_setuid)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            start_new_session=True, preexec_fn=_default_sigint)  # noqa: PLW1509  pylint: disable=subprocess-popen-preexec-fn
    try:
        deadline = time.monotonic() + 30
        while not _walkers_running(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, "the strip finished before it could be signalled"
        os.kill(proc.pid, signum)  # the CLI only, as systemd or kill(1) would
        _out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:  # pragma: no cover - only when the test fails
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode in (128 + signum, 130), (proc.returncode, err)
    assert err.count("\n") == 1 and ("stopped by" in err or "interrupted" in err), err
    left = _still_setuid(many_setuid)  # at the CLI's exit
    # Waited for, not slept on: once no process of its session is left, nothing it started
    # can change a file any more; every change one made after the exit is seen below.
    deadline = time.monotonic() + 30
    while _session_processes(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _session_processes(proc.pid) == [], "walkers outlived the CLI"
    assert _still_setuid(many_setuid) == left, "files changed after the CLI exited"
    assert left > 0, "the walk was not stopped: everything was stripped"
