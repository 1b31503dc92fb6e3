# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Engines are untrusted input (issue 26): the issue's three fake engines, each served by a
throwaway unprivileged user on its own /run/user/<uid>/podman/podman.sock (what logind gives
any logged-in user), beside the real Docker engine and the real rootful Podman.

- answers ping, then HTTP 500 on /info: in 1.1.0 the whole sweep failed and the setuid shell
  stayed; here the shells of Docker's and Podman's containers are stripped and the result
  names the bad engine;
- dribbles one byte every 5 s: in 1.1.0 the sweep never returned; here the same, within the
  engines' deadline plus the steps' budget;
- ends its /events stream at once: in 1.1.0 the watcher returned and stopped watching Docker;
  here it keeps sweeping Docker containers as they stop and says the engine was lost.

Plus a module run (sandbox_sweep through ansible) with a target Python that cannot import the
Docker SDK: it finds and sweeps Docker and Podman containers.
"""
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid

import pytest
from docker_sdk import sdk_client
from podman_fixtures import PREFIX, Podman, PodmanUnavailable
from sandboxguard import docker_engine
from sandboxguard._fleet import audit
from test_podman import (
    AGENT,
    PODMAN_DEFAULT_SOCKET,
    assert_fixed,
    cli,
    no_docker_host,
    read_json_until,
    run_attack,
)

pytestmark = [pytest.mark.docker, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKE = os.path.join(TOP, "tests", "fake_engine.py")
BEHAVIOURS = ("info-500", "dribble", "events-end")
# the sweep's budget with a bad engine: the engines' deadline once (they are asked in parallel),
# then the steps (three small walks here)
SWEEP_BUDGET_S = docker_engine.DEFAULT_TIMEOUT_S + 15
# the watcher's first word on a bad engine: its pump connects (one deadline), asks its info (a
# second), then says it lost it; on a loaded machine (make test runs two lanes on two cores) the
# 500 can take most of both
LOST_WAIT_S = 2 * docker_engine.DEFAULT_TIMEOUT_S + 15


def cname(what):
    return "%s%d_iso_%s" % (PREFIX, os.getpid(), what)


class BadEngine:
    """A throwaway user (unique name) serving ``behaviour`` (tests/fake_engine.py) on its own
    /run/user/<uid>/podman/podman.sock, as itself (setpriv: no root left in the process)."""

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.user = "sgeng%s" % uuid.uuid4().hex[:8]
        subprocess.run(["useradd", "--system", "-M", "-s", "/usr/sbin/nologin", self.user], check=True)
        entry = pwd.getpwnam(self.user)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.runtime = "/run/user/%d" % self.uid
        self.made_run_user = not os.path.isdir("/run/user")  # no logind here: the tests make it
        os.makedirs("/run/user", mode=0o755, exist_ok=True)
        os.mkdir(self.runtime, 0o700)  # what logind makes at login: the user's own
        os.chown(self.runtime, self.uid, self.gid)
        self.socket = os.path.join(self.runtime, "podman", "podman.sock")
        self.url = "unix://" + self.socket
        self.name = "podman-rootless-%d" % self.uid
        self.proc = None

    def start(self):
        script = os.path.join(self.runtime, "fake_engine.py")
        shutil.copyfile(FAKE, script)
        os.chown(script, self.uid, self.gid)
        as_user = ["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.gid, "--clear-groups", "--"]
        subprocess.run([*as_user, "mkdir", "-m", "0700", os.path.dirname(self.socket)], check=True)
        self.proc = subprocess.Popen([*as_user, "/usr/bin/python3", script, "--socket", self.socket, "--behaviour",
                                      self.behaviour], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        line = self.proc.stdout.readline()
        assert b"serving" in line, line
        st = os.lstat(self.socket)
        assert stat.S_ISSOCK(st.st_mode) and st.st_uid == self.uid
        return self

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.runtime, ignore_errors=True)
        subprocess.run(["userdel", self.user], check=False, capture_output=True)
        if self.made_run_user:
            try:
                os.rmdir("/run/user")
            except OSError:  # another user's runtime directory appeared meanwhile
                pass


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    try:
        pod = Podman(str(tmp_path_factory.mktemp("podman")))
    except PodmanUnavailable as exc:
        pytest.fail("NO PODMAN, the engine isolation tests cannot run: %s" % exc, pytrace=False)
    pod.ensure_image()
    pod.remove_ours()
    if os.path.exists(PODMAN_DEFAULT_SOCKET):
        pytest.fail("%s exists already (another podman service?): these tests need that path to be their own"
                    % PODMAN_DEFAULT_SOCKET, pytrace=False)
    made = not os.path.isdir(os.path.dirname(PODMAN_DEFAULT_SOCKET))
    pod.service(PODMAN_DEFAULT_SOCKET)  # the real rootful Podman, where auto finds it
    yield pod
    pod.close()
    if made:
        os.rmdir(os.path.dirname(PODMAN_DEFAULT_SOCKET))


@pytest.fixture(scope="module")
def sdk():
    return sdk_client()


@pytest.fixture(scope="module")
def psdk(podman):
    return sdk_client("unix://" + PODMAN_DEFAULT_SOCKET)


@pytest.fixture(params=BEHAVIOURS)
def bad(request):
    engine = BadEngine(request.param)
    try:
        yield engine.start()
    finally:
        engine.close()


@pytest.fixture
def hermes(tmp_path):
    home = tmp_path / "hermes"
    sandbox = home / "sandboxes"
    for task in ("task1", "task2", "task3"):
        (sandbox / "docker" / task / "workspace").mkdir(parents=True)
    for path in (home, sandbox):
        os.chown(path, *AGENT)
    os.chmod(tmp_path, 0o755)
    return {"home": str(home), "ws": [str(sandbox / "docker" / t / "workspace") for t in ("task1", "task2", "task3")]}


@pytest.fixture
def containers(sdk, psdk):
    yield
    for client in (sdk, psdk):
        for container in client.containers.list(all=True):
            if container.name.startswith(cname("")):
                container.remove(force=True)


def bad_row(result, bad):
    rows = [row for row in result["engines"] if row["url"] == bad.url]
    assert len(rows) == 1, result["engines"]
    return rows[0]


def test_a_bad_users_engine_cannot_stop_or_hang_the_sweep(bad, podman, sdk, psdk, hermes, containers):
    docker_shell = run_attack(sdk, cname("sweep_d"), hermes["ws"][0])
    podman_shell = run_attack(psdk, cname("sweep_p"), hermes["ws"][1])
    cmd, env = cli("sweep", "--hermes-home", hermes["home"], "--json", env=no_docker_host())
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, env=env, timeout=SWEEP_BUDGET_S * 3, check=False)
    took = time.monotonic() - started
    assert took < SWEEP_BUDGET_S, took
    result = json.loads(proc.stdout)
    assert_fixed(docker_shell)
    assert_fixed(podman_shell)
    engines = {row["name"]: row for row in result["engines"]}
    assert engines["docker"]["error"] is None and engines["podman"]["error"] is None
    row = bad_row(result, bad)
    assert row["name"] == bad.name
    if bad.behaviour == "events-end":  # its info and containers are fine: only the watcher sees it misbehave
        assert row["error"] is None and not [e for e in result["errors"] if e["op"] == "engine"]
        return
    assert row["error"] and ("HTTP 500" in row["error"] or "deadline" in row["error"]), row
    assert proc.returncode == 1 and result["complete"] is False
    assert any(e["op"] == "engine" and e["path"] == bad.url and bad.name in e["error"] for e in result["errors"])


def test_the_audit_shows_the_engine_it_could_not_ask_as_an_error_and_still_finds_the_shell(
        bad, podman, sdk, hermes, containers):
    shell = run_attack(sdk, cname("audit"), hermes["ws"][0])
    found = audit.check_privileged_files(hermes_homes=[hermes["home"]], docker="auto")
    assert shell in [f["path"] for f in found["findings"]]
    rows = {row["url"]: row for row in found["engine"]["engines"]}
    if bad.behaviour == "events-end":
        assert rows[bad.url]["error"] is None
        return
    assert rows[bad.url]["error"] and found["status"] != "clean"
    assert any(e["op"] == "engine" and e["path"] == bad.url for e in found["errors"])


def test_the_watcher_keeps_sweeping_docker_containers_as_they_stop(bad, podman, sdk, hermes, containers):
    cmd, env = cli("watch", "--hermes-home", hermes["home"], env=no_docker_host())
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        lines = read_json_until(proc, lambda e: e["event"] == "watching", timeout=SWEEP_BUDGET_S)
        assert {"docker", "podman"} <= set(lines[-1]["engines"])
        # the bad engine is lost (an error, or a stream that ended) and said so, by name
        lines += read_json_until(proc, lambda e: e["event"] == "engine-lost" and e["url"] == bad.url,
                                 timeout=LOST_WAIT_S)
        for round_ in ("1", "2"):  # the second after the bad engine was lost (and asked again) at least once
            workspace = hermes["ws"][int(round_)]
            shell = run_attack(sdk, cname("watch%s" % round_), workspace, watched=True)
            lines += read_json_until(proc, lambda e, ws=workspace: e["event"] == "die" and e.get("engine") == "docker"
                                     and ws in e.get("swept", ()), timeout=SWEEP_BUDGET_S)
            assert_fixed(shell)
            time.sleep(1.5)
        assert proc.poll() is None, "the watcher ended"
        lost = [e for e in lines if e["event"] == "engine-lost" and e["url"] == bad.url]
        assert lost[0]["engine"] == bad.name and lost[0]["error"] and lost[0]["retry_in"] > 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    except AssertionError as exc:  # what the watcher said on stderr belongs in the failure
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        said = proc.stderr.read().decode("utf-8", "replace")[-4000:]
        raise AssertionError("%s\nthe watcher's stderr (exit %s): %s" % (exc, proc.returncode, said)) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.controller
def run_module(python, module, args):
    """One module through ``ansible localhost`` with ``python`` as the target's interpreter."""
    env = dict(no_docker_host(), ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m",
                           "sandboxguard.boundary." + module, "-a", json.dumps(args),
                           "-e", "ansible_python_interpreter=%s" % python],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert not result.get("failed"), result.get("msg")
    return result


def test_the_modules_on_a_python_without_the_docker_sdk_audit_and_sweep_docker_and_podman(
        tmp_path, podman, sdk, psdk, hermes, containers):
    bad = BadEngine("info-500").start()
    try:
        python = str(tmp_path / "nodocker" / "bin" / "python")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "nodocker")], check=True)
        assert subprocess.run([python, "-I", "-c", "import docker"], capture_output=True).returncode != 0
        docker_shell = run_attack(sdk, cname("module_d"), hermes["ws"][0])
        podman_shell = run_attack(psdk, cname("module_p"), hermes["ws"][1])
        # the audit first: it finds both shells, and the engine it could not ask is an error of the host
        audit_result = run_module(python, "audit_info", {"hermes_home": [hermes["home"]],
                                                         "checks": ["privileged_files"]})
        check = audit_result["record"]["checks"]["privileged_files"]
        assert {docker_shell, podman_shell} <= {f["path"] for f in check["findings"]}
        assert [e for e in check["errors"] if e["op"] == "engine" and e["path"] == bad.url]
        assert audit_result["record"]["status"] != "clean"
        result = run_module(python, "sandbox_sweep", {"hermes_home": [hermes["home"]]})
        assert_fixed(docker_shell)
        assert_fixed(podman_shell)
        swept = {s["path"] for s in result["sandboxes"]}
        assert {hermes["ws"][0], hermes["ws"][1]} <= swept
        engines = {row["name"]: row for row in result["engines"]}
        assert engines["docker"]["error"] is None and engines["podman"]["error"] is None
        assert "HTTP 500" in bad_row(result, bad)["error"]
    finally:
        bad.close()

