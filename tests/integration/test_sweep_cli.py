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
        assert dry.returncode == 1, dry.stderr  # changes needed: findings remain
        assert json.loads(dry.stdout)["changed"] is True
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


def _plant(path, mode=0o4755):
    path.write_bytes(b"\x7fELF fake")
    os.chown(path, 0, 0)
    os.chmod(path, mode)


@pytest.mark.parametrize("options", [[], ["--json"]])
def test_sweep_dry_run_exits_1_while_changes_are_needed_and_0_once_clean(home, options):
    hermes, ws = home
    _plant(ws / "suid")
    dry = cli("sweep", "--hermes-home", str(hermes), "--dry-run", *options)
    assert dry.returncode == 1, dry.stdout + dry.stderr
    assert stat.S_IMODE(os.lstat(ws / "suid").st_mode) == 0o4755
    if options:
        assert json.loads(dry.stdout)["changed"] is True
    else:
        assert "changes needed, nothing changed (dry run)" in dry.stdout
    fixed = cli("sweep", "--hermes-home", str(hermes), *options)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    again = cli("sweep", "--hermes-home", str(hermes), "--dry-run", *options)
    assert again.returncode == 0, again.stdout + again.stderr
    if options:
        assert json.loads(again.stdout)["changed"] is False


@pytest.mark.parametrize("where", [("t7", "other"), ("t7",), ("loose",)])
def test_sweep_says_what_it_covers_and_names_the_scan_that_finds_the_rest(home, where):
    """A setuid file under the root that no container mounts and no task directory holds: the
    sweep does not walk it, says so, and the command it prints finds it."""
    hermes, _ws = home
    root = hermes / "profiles" / "research" / "sandboxes" / "docker"
    place = root.joinpath(*where)
    place.mkdir(parents=True, exist_ok=True)
    _plant(place / "stray")
    result = cli("sweep", "--hermes-home", str(hermes))
    assert result.returncode == 0, result.stdout + result.stderr
    covered = [line for line in result.stdout.splitlines() if line.startswith("covered: ")]
    assert len(covered) == 1 and "task directory(ies) no container mounts" in covered[0]
    command = "sandboxguard scan %s" % root
    assert "the rest of the roots is not swept: `%s`" % command in covered[0]
    assert "sandboxguard.boundary.audit" in covered[0]
    assert stat.S_IMODE(os.lstat(place / "stray").st_mode) == 0o4755  # not covered: left as it was
    report = json.loads(cli("sweep", "--hermes-home", str(hermes), "--json").stdout)
    assert report["covers"]["roots"] == [str(root)] and report["covers"]["scan"] == command
    assert report["covers"]["task_dirs"] == 1 and report["covers"]["container_mounts"] == 0
    scan = cli(*command.split()[1:], "--json")
    assert scan.returncode == 1
    assert str(place / "stray") in [f["path"] for f in json.loads(scan.stdout)["files"]]


def _metrics(path):
    parse, series = promtext().parse, promtext().series

    families = parse(path.read_text())
    return {name: {tuple(sorted(k)): v for k, v in series(families, name).items()} for name in families}


@pytest.mark.parametrize("dry_run", [False, True])
def test_sweep_textfile_has_findings_by_kind_engines_and_the_last_success(home, tmp_path, dry_run):
    hermes, ws = home
    for path in (ws.parent, ws):
        os.chown(path, 1000, 1000)  # the agent's task directories: nothing for ownership return
    _plant(ws / "suid")  # root's: ownership return takes it (the kernel clears the bit on chown)
    mine = ws / "mine"
    _plant(mine)
    os.chown(mine, 1000, 1000)
    os.chmod(mine, 0o2755)  # the agent's own setgid file: the setid step takes it
    textdir = tmp_path / "node-exporter"
    textdir.mkdir()
    prom = textdir / "sandboxguard-sweep.prom"
    before = time.time()
    result = cli("sweep", "--hermes-home", str(hermes), "--textfile", str(prom), *(["--dry-run"] if dry_run else []))
    assert result.returncode == (1 if dry_run else 0), result.stdout + result.stderr
    got = _metrics(prom)
    cmd = ("command", "sweep")
    # a dry run changes nothing between the steps: the setid step sees root's file as well
    assert got["sandboxguard_findings"] == {(cmd, ("kind", "caps")): 0, (cmd, ("kind", "chown")): 1,
                                            (cmd, ("kind", "device")): 0,
                                            (cmd, ("kind", "setid")): 2 if dry_run else 1}
    assert got["sandboxguard_engine_up"][(cmd, ("engine", "docker"))] == 1
    assert got["sandboxguard_dry_run"] == {(cmd,): 1 if dry_run else 0}
    assert set(got["sandboxguard_errors_total"].values()) == {0}
    assert got["sandboxguard_last_success_timestamp_seconds"][(cmd,)] >= before
    assert stat.S_IMODE(os.lstat(prom).st_mode) == 0o644 and os.listdir(textdir) == [prom.name]


def test_sweep_without_an_engine_keeps_the_last_success_and_counts_the_engine_error(home, tmp_path):
    hermes, _ws = home
    prom = tmp_path / "sandboxguard-sweep.prom"
    assert cli("sweep", "--hermes-home", str(hermes), "--textfile", str(prom)).returncode == 0
    last = _metrics(prom)["sandboxguard_last_success_timestamp_seconds"][(("command", "sweep"),)]
    down = cli("sweep", "--hermes-home", str(hermes), "--textfile", str(prom),
               "--docker-host", "unix://%s/no-engine.sock" % tmp_path)
    assert down.returncode == 1
    got = _metrics(prom)
    cmd = ("command", "sweep")
    assert got["sandboxguard_last_success_timestamp_seconds"][(cmd,)] == last
    assert got["sandboxguard_last_run_timestamp_seconds"][(cmd,)] > last
    assert got["sandboxguard_errors_total"][(cmd, ("kind", "engine"))] == 1
    assert list(got["sandboxguard_engine_up"].values()) == [0]
    assert "sandboxguard_findings" not in got  # nothing was checked: no 0 that nobody measured


@pytest.mark.parametrize(("name", "words"), [("sweep.txt", "*.prom"), ("missing/sweep.prom", "does not exist")])
def test_sweep_refuses_a_bad_textfile_before_sweeping(home, tmp_path, name, words):
    hermes, ws = home
    _plant(ws / "suid")
    result = cli("sweep", "--hermes-home", str(hermes), "--textfile", str(tmp_path / name))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("sandboxguard sweep: --textfile ")
    assert words in lines[0]
    assert stat.S_IMODE(os.lstat(ws / "suid").st_mode) == 0o4755  # nothing done


def test_watcher_textfile_is_written_at_start_and_after_each_sweep(client, home, tmp_path):
    hermes, ws = home
    for path in (ws.parent, ws):
        os.chown(path, 1000, 1000)  # the agent's task directories: only the dropped file is root's
    prom = tmp_path / "sandboxguard-watch.prom"
    watcher = subprocess.Popen([sys.executable, "-m", "sandboxguard_cli", "watch", "--hermes-home", str(hermes),
                                "--textfile", str(prom), "--textfile-interval", "0.5"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(ln)) for ln in watcher.stdout], daemon=True).start()
    cmd = ("command", "watch")
    try:
        assert lines.get(timeout=60)["event"] == "watching"
        started = _metrics(prom)
        assert started["sandboxguard_engine_up"][(cmd, ("engine", "docker"))] == 1
        assert "sandboxguard_findings" not in started  # no sweep yet
        first = started["sandboxguard_last_success_timestamp_seconds"][(cmd,)]
        container = client.containers.run(IMAGE, ["sh", "-c", DROP], detach=True, network_mode="none",
                                          auto_remove=True, volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
        _lines_until(lines, container.id)
        got = _metrics(prom)
        assert got["sandboxguard_findings"][(cmd, ("kind", "chown"))] == 1
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the interval's rewrite keeps the success fresh
            beat = _metrics(prom)["sandboxguard_last_success_timestamp_seconds"][(cmd,)]
            if beat > first + 0.5:
                break
            time.sleep(0.1)
        assert beat > first + 0.5
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)


def promtext():
    """tests/unit/promtext.py: the strict parser of node_exporter's text format."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "promtext.py")
    spec = importlib.util.spec_from_file_location("promtext", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
