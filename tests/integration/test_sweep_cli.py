# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard sweep` and `sandboxguard watch` against a real engine."""
import json
import os
import queue
import stat
import subprocess
import sys
import threading
import time

import pytest
from docker_sdk import sdk_client

pytestmark = [pytest.mark.docker, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python", "src"))
IMAGE = "sandboxguard/debian:12"
DROP = "cp /bin/true /workspace/suid && chmod 4755 /workspace/suid"


@pytest.fixture(scope="module")
def client():
    return sdk_client()


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "hermes"
    ws = home / "profiles" / "research" / "sandboxes" / "docker" / "t7" / "workspace"
    ws.mkdir(parents=True)
    for p in (home, home / "profiles" / "research", home / "profiles" / "research" / "sandboxes"):
        os.chown(p, 1000, 1000)
    return home, ws


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "sandboxguard_cli", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout, check=False)


def test_sweep_cli_finds_a_profile_sandbox_and_fixes_it(client, home):
    hermes, ws = home
    container = client.containers.run(IMAGE, ["sh", "-c", DROP], detach=True, network_mode="none",
                                      volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
    try:
        container.wait(timeout=60)
        dry = cli("sweep", "--hermes-home", str(hermes), "--container", container.name, "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        assert stat.S_IMODE(os.lstat(ws / "suid").st_mode) == 0o4755
        result = cli("sweep", "--hermes-home", str(hermes), "--container", container.name)
        assert result.returncode == 0, result.stderr
        assert "swept %s [native]" % ws in result.stdout
        st = os.lstat(ws / "suid")
        assert stat.S_IMODE(st.st_mode) == 0o755 and st.st_uid == 1000
    finally:
        container.remove(force=True)


def test_sweep_cli_container_method_needs_an_image():
    result = cli("sweep", "--method", "container")
    assert result.returncode == 2 and "--image" in result.stderr


def test_watcher_sweeps_a_container_within_seconds_of_it_dying(client, home):
    hermes, ws = home
    watcher = subprocess.Popen([sys.executable, "-m", "sandboxguard_cli", "watch", "--hermes-home", str(hermes)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(ln)) for ln in watcher.stdout], daemon=True).start()
    try:
        assert lines.get(timeout=60)["event"] == "watching"
        container = client.containers.run(IMAGE, ["sh", "-c", DROP + " && sleep 2"], detach=True,
                                          network_mode="none", auto_remove=True,
                                          volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
        died = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line.get("event") == "die" and line["id"] == container.id[:12]:
                died = line
                break
        assert died is not None and died["swept"] == [str(ws)] and died["changed"] is True
        assert stat.S_IMODE(os.lstat(ws / "suid").st_mode) == 0o755
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)


def test_a_task_dir_left_by_a_removed_container_is_swept_without_a_container(client, home):
    hermes, ws = home
    client.containers.run(IMAGE, ["sh", "-c", DROP], network_mode="none", remove=True,
                          volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
    assert stat.S_IMODE(os.lstat(ws / "suid").st_mode) == 0o4755
    result = cli("sweep", "--hermes-home", str(hermes), "--json")
    assert result.returncode == 0, result.stderr
    swept = json.loads(result.stdout)["sandboxes"]
    assert [(s["path"], s["containers"]) for s in swept] == [(str(ws), [])]
    st = os.lstat(ws / "suid")
    assert stat.S_IMODE(st.st_mode) == 0o755 and st.st_uid == 1000


def _lines_until(lines, cid, timeout=120):
    """The watcher's lines up to and with the first one about container ``cid``."""
    seen = []
    while not seen or seen[-1].get("id") != cid[:12]:
        seen.append(lines.get(timeout=timeout))
    return seen


def test_watcher_with_the_container_method_ignores_its_own_strip_containers(client, home):
    hermes, ws = home
    # The strip containers the watcher starts, as the engine reports them (by their label):
    # none of them may start a sweep. Other tests' containers may come and go meanwhile.
    strips, since = set(), int(time.time())
    stream = client.events(decode=True, since=since, filters={"type": "container", "event": "start",
                                                                "label": "sandboxguard=sweep"})
    threading.Thread(target=lambda: [strips.add(e.get("Actor", {}).get("ID", "")[:12]) for e in stream],
                     daemon=True).start()
    watcher = subprocess.Popen([sys.executable, "-m", "sandboxguard_cli", "watch", "--hermes-home", str(hermes),
                                "--method", "container", "--image", IMAGE],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(ln)) for ln in watcher.stdout], daemon=True).start()
    try:
        assert lines.get(timeout=60)["event"] == "watching"
        container = client.containers.run(IMAGE, ["sh", "-c", DROP + " && sleep 1"], detach=True,
                                          network_mode="none", auto_remove=True,
                                          volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
        seen = _lines_until(lines, container.id)
        # The strip containers of that sweep die after it; none may start a sweep. Waited
        # for, not given a window: a marker container dies after them, and the watcher
        # takes the engine's events in order, so once the marker's line came every strip
        # container's death was handled.
        marker = client.containers.run(IMAGE, ["true"], detach=True, network_mode="none", auto_remove=True,
                                       name="sgtf-watch-marker-%d" % os.getpid(),
                                       volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
        seen += _lines_until(lines, marker.id)
        ours = [e for e in seen if e["id"] == container.id[:12]]
        assert [e["event"] for e in ours] == ["die"], seen
        assert ours[0]["swept"] == [str(ws)] and ours[0]["warnings"] == []
        assert strips, "the container method started no strip container"
        assert [e for e in seen if e["id"][:12] in strips] == [], (seen, strips)
        assert stat.S_IMODE(os.lstat(ws / "suid").st_mode) == 0o755
    finally:
        stream.close()
        watcher.terminate()
        watcher.wait(timeout=10)
