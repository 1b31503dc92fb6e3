# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Rootful Podman for real (issue 21): a podman container leaves a setuid-root shell in a bind
mount under a Hermes root; the sweep (named engine and ``auto``), the watcher, the guard and the
audit find it and fix it; with Docker and Podman both running, ``auto`` asks both.

Podman is set up by podman_fixtures (Debian's package, our containers.conf, runc, our storage,
the Docker test image loaded into it, an API service on a private socket). Containers are
named ``sgpod_<pid>_...`` and removed afterwards.
"""
import json
import os
import select
import stat
import subprocess
import sys
import time

import pytest
from docker_sdk import sdk_client
from podman_fixtures import IMAGE, PREFIX, Podman, PodmanUnavailable
from sandboxguard import docker_engine, sweep
from sandboxguard._fleet import audit

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

AGENT = (1000, 1000)
PODMAN_DEFAULT_SOCKET = "/run/podman/podman.sock"  # rootful Podman's socket (podman.socket), what auto looks for
WAIT_S = 60.0
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python", "src")
# What the seeds' root container does: a copy of the shell, setuid root, in its bind mount.
ATTACK = "mkdir -p /workspace/dist && cp /bin/sh /workspace/dist/sh && chmod 4755 /workspace/dist/sh"


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    try:
        pod = Podman(str(tmp_path_factory.mktemp("podman")))
    except PodmanUnavailable as exc:
        # tools/setup.sh installs podman (tools/apt-packages.txt): its absence is a broken setup, not a skip
        pytest.fail("NO PODMAN, the Podman engine tests cannot run: %s" % exc, pytrace=False)
    pod.ensure_image()
    pod.remove_ours()
    pod.url = pod.service(os.path.join(pod.workdir, "api", "podman.sock"))  # private socket
    yield pod
    pod.close()


@pytest.fixture(scope="module")
def pclient(podman):
    return sdk_client(podman.url)


@pytest.fixture
def default_socket(podman):
    """A podman API service on Podman's default rootful path, for ``auto`` discovery; stopped after."""
    path = PODMAN_DEFAULT_SOCKET
    if os.path.exists(path):
        pytest.fail("%s exists already (another podman service?): the auto test needs that path to be its own"
                    % path, pytrace=False)
    made = not os.path.isdir(os.path.dirname(path))
    podman.service(path)
    yield "unix://" + path
    podman.stop_service(path)
    if made:
        os.rmdir(os.path.dirname(path))


@pytest.fixture
def hermes(tmp_path):
    """<HH>/sandboxes/docker/<task>/workspace as the sweep tests lay it out: HH and sandboxes owned by the agent."""
    home = tmp_path / "hermes"
    sandbox = home / "sandboxes"
    for task in ("task1", "task2"):
        (sandbox / "docker" / task / "workspace").mkdir(parents=True)
    for path in (home, sandbox):
        os.chown(path, *AGENT)
    os.chmod(tmp_path, 0o755)
    return {"home": str(home), "ws": str(sandbox / "docker" / "task1" / "workspace"),
            "ws2": str(sandbox / "docker" / "task2" / "workspace")}


def run_attack(client, name, workspace, watched=False):
    """A root container on ``client``'s engine writes the setuid shell into ``workspace``; kept stopped.
    ``watched``: a watcher may strip it as soon as the container died, so its state is not checked here."""
    container = client.containers.run(IMAGE, ["sh", "-c", ATTACK], name=name, detach=True, network_mode="none",
                                      volumes={workspace: {"bind": "/workspace", "mode": "rw"}},
                                      labels={"hermes-agent": "1", "hermes-task-id": "task1"})
    assert container.wait(timeout=WAIT_S)["StatusCode"] == 0, container.logs()
    shell = os.path.join(workspace, "dist", "sh")
    if watched:
        return shell
    st = os.lstat(shell)
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o4755, 0, 0)  # -rwsr-xr-x root root on the host
    return shell


def name(what):
    return "%s%d_%s" % (PREFIX, os.getpid(), what)


def assert_fixed(shell):
    st = os.lstat(shell)
    assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID), oct(st.st_mode)
    assert (st.st_uid, st.st_gid) == AGENT


def cli(*args, env=None):
    cmd = [sys.executable, "-c", "import sys; from sandboxguard_cli.main import main; sys.exit(main())", *args]
    return cmd, dict(env or os.environ, PYTHONPATH=SRC)


def run_cli(*args, env=None):
    cmd, env = cli(*args, env=env)
    return subprocess.run(cmd, capture_output=True, env=env, timeout=300, check=False)


def no_docker_host():
    env = dict(os.environ)
    env.pop("DOCKER_HOST", None)
    return env


def test_the_sweep_cli_on_the_podman_socket_finds_and_fixes_a_podman_containers_setuid_shell(podman, pclient,
                                                                                            hermes):
    shell = run_attack(pclient, name("sweep"), hermes["ws"])
    proc = run_cli("sweep", "--hermes-home", hermes["home"], "--docker-host", podman.url, "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    [ours] = [c for c in result["containers"] if c["name"] == name("sweep")]
    assert ours["engine"] == "podman" and [m["in_scope"] for m in ours["mounts"]] == [True]
    assert result["engine"]["engines"][0]["name"] == "podman" and result["engine"]["sweepable"] is True
    assert hermes["ws"] in [s["path"] for s in result["sandboxes"]]
    assert_fixed(shell)


def test_the_container_method_strips_on_the_podman_engine(podman, pclient, hermes):
    shell = run_attack(pclient, name("method"), hermes["ws"])
    group = docker_engine.connect_engines(podman.url)
    result = sweep.sweep(group, [hermes["home"]], names=[name("method")], method="container", image=IMAGE)
    assert result["warnings"] == [], result["warnings"]
    [entry] = result["sandboxes"]
    assert entry["engine"] == "podman" and entry["changed"] is True
    assert_fixed(shell)


def test_auto_asks_docker_and_podman_and_names_each_containers_engine(podman, pclient, default_socket, hermes):
    docker = sdk_client()
    pod_shell = run_attack(pclient, name("auto"), hermes["ws"])
    try:
        docker_shell = run_attack(docker, name("auto_docker"), hermes["ws2"])
        people = run_cli("sweep", "--hermes-home", hermes["home"], "--dry-run", env=no_docker_host())
        assert ("%s (podman)" % name("auto")).encode() in people.stdout, people.stdout
        assert ("%s (docker)" % name("auto_docker")).encode() in people.stdout, people.stdout
        proc = run_cli("sweep", "--hermes-home", hermes["home"], "--json", env=no_docker_host())
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        engines = {c["name"]: c["engine"] for c in result["containers"]}
        assert engines[name("auto")] == "podman" and engines[name("auto_docker")] == "docker"
        assert [e["name"] for e in result["engine"]["engines"]] == ["docker", "podman"]
        by_path = {s["path"]: s for s in result["sandboxes"]}
        assert hermes["ws"] in by_path and hermes["ws2"] in by_path
        assert_fixed(pod_shell)
        assert_fixed(docker_shell)
    finally:
        subprocess.run(["docker", "rm", "-f", name("auto_docker")], capture_output=True, check=False)


def read_json_until(proc, wanted, timeout=WAIT_S):
    """JSON lines of a running command until one satisfies ``wanted`` (waits for that line, no pause)."""
    lines, buf, fd = [], b"", proc.stdout.fileno()
    limit = time.monotonic() + timeout
    while time.monotonic() < limit:
        if not select.select([fd], [], [], max(0.0, limit - time.monotonic()))[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            lines.append(json.loads(line))
            if wanted(lines[-1]):
                return lines
    raise AssertionError("no wanted line within %ss: %r" % (timeout, lines))


@pytest.mark.parametrize("how", ["docker-host", "auto"])
def test_the_watcher_sees_a_podman_container_die_and_strips_what_it_left(podman, pclient, hermes, request, how):
    args = ["watch", "--hermes-home", hermes["home"]]
    if how == "docker-host":
        args += ["--docker-host", podman.url]
    else:
        request.getfixturevalue("default_socket")
    cmd, env = cli(*args, env=no_docker_host())
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        [watching] = read_json_until(proc, lambda e: e["event"] == "watching")
        assert "podman" in watching["engines"]
        if how == "auto":
            assert watching["engines"] == ["docker", "podman"]
        shell = run_attack(pclient, name("watch_%s" % how.replace("-", "")), hermes["ws"], watched=True)
        lines = read_json_until(proc, lambda e: e["event"] == "die" and e.get("engine") == "podman")
        assert hermes["ws"] in lines[-1]["swept"] and lines[-1]["changed"] is True
        assert_fixed(shell)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_guard_in_auto_asks_podman_for_a_mount_on_another_filesystem_and_records_the_fix(
        podman, pclient, hermes, tmp_path, default_socket):
    """A tmpfs below the root is another filesystem: the guard marks it only once an engine
    says a container mounts it. auto asks Docker and Podman, so a podman container's mount
    is marked, and what that container writes is stripped and recorded. (With --docker-host
    naming the podman socket this worked before auto asked every engine.)"""
    engine_args = []
    how = "auto"
    work = hermes["ws"]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", work], check=True)
    err_path = tmp_path / "guard-stderr"
    cname = name("guard_%s" % how.replace("-", ""))
    try:
        with open(err_path, "wb") as err_file:
            cmd, env = cli("guard", "--hermes-home", hermes["home"], *engine_args, "--rescan-interval", "0.5",
                           "--json", env=no_docker_host())
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_file, env=env)
        pclient.containers.run(IMAGE, ["sleep", "300"], name=cname, detach=True, network_mode="none",
                               volumes={work: {"bind": "/workspace", "mode": "rw"}})
        limit = time.monotonic() + WAIT_S
        while time.monotonic() < limit and ("guarding %s" % work).encode() not in err_path.read_bytes():
            time.sleep(0.1)
        assert ("guarding %s" % work).encode() in err_path.read_bytes(), err_path.read_text()
        subprocess.run([podman.podman, *podman.flags, "exec", cname, "sh", "-c", ATTACK], env=podman.env,
                       check=True, capture_output=True)
        shell = os.path.join(work, "dist", "sh")
        limit = time.monotonic() + WAIT_S
        while time.monotonic() < limit and os.lstat(shell).st_mode & stat.S_ISUID:
            time.sleep(0.05)
        assert not os.lstat(shell).st_mode & stat.S_ISUID, err_path.read_text()
        proc.terminate()
        out = proc.communicate(timeout=30)[0]
        records = [json.loads(line) for line in out.decode().splitlines()]
        assert [(r["path"], r["via"]) for r in records] == [(shell, "event")]
    finally:
        podman.cli("rm", "-f", cname, check=False)
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["umount", "-l", work], check=False)


@pytest.mark.parametrize("how", ["docker-host", "auto"])
def test_the_audit_asks_podman_and_finds_the_shell_and_is_clean_after_the_sweep(podman, pclient, hermes, request,
                                                                                monkeypatch, how):
    url = podman.url
    if how == "auto":
        request.getfixturevalue("default_socket")
        monkeypatch.delenv("DOCKER_HOST", raising=False)
        url = None
    shell = run_attack(pclient, name("audit_%s" % how.replace("-", "")), hermes["ws"])
    found = audit.check_privileged_files(hermes_homes=[hermes["home"]], docker="always", docker_host=url)
    assert found["status"] == "findings" and found["engine"]["answered"] is True
    assert [e["name"] for e in found["engine"]["engines"]] == (["podman"] if url else ["docker", "podman"])
    assert all(e["error"] is None for e in found["engine"]["engines"])
    assert os.path.realpath(hermes["ws"]) in found["engine"]["targets"]
    assert shell in [f["path"] for f in found["findings"]]
    proc = run_cli("sweep", "--hermes-home", hermes["home"], *(["--docker-host", url] if url else []), "--json",
                   env=no_docker_host())
    assert proc.returncode == 0, proc.stderr
    assert_fixed(shell)
    again = audit.check_privileged_files(hermes_homes=[hermes["home"]], docker="always", docker_host=url)
    assert again["status"] == "clean", again
