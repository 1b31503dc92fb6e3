# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""A runner host's Docker daemon with the prevention as its default (issue 28), for real.

The machine's own dockerd is shared and never reconfigured or restarted, so this test starts a
second one of its own from the daemon.json that sandbox_prevent (place docker_daemon) wrote:
its own bridge (FACTS.md: ``--bridge none`` would delete the host's docker0), data root, exec
root and socket, no iptables. The test image is loaded into it. Then a CI-job-like container
(no options) under that daemon's default is probed, and the prevention made again against it
(its builtin default is hidden now: the base kept beside the profiles is used). Everything it
made is removed at the end.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest
from sandboxguard import docker_engine
from sandboxguard._prevent import bases, prevent, probe, seccomp

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

IMAGE = "sandboxguard/debian:12"
START_S = 60


def sh(*argv, check=True, **kwargs):
    return subprocess.run(list(argv), capture_output=True, check=check, timeout=300, **kwargs)


@pytest.fixture(scope="module")
def runner_daemon():
    tag = "%x" % (os.getpid() & 0xFFFF)
    bridge = "sgp28b%s" % tag
    top = tempfile.mkdtemp(prefix="sg-prevent-daemon-", dir="/run")
    data = tempfile.mkdtemp(prefix="sg-prevent-daemon-", dir="/var/lib")
    exec_root = os.path.join(top, "exec")
    sock = os.path.join(top, "docker.sock")
    daemon_json = os.path.join(top, "etc", "daemon.json")
    os.makedirs(os.path.dirname(daemon_json))
    proc = None
    try:
        done = prevent.prevent("docker_daemon", profile_dir=os.path.join(top, "seccomp"), image=IMAGE,
                               daemon_json=daemon_json)
        assert done["changed"] and done["restart"]
        sh("ip", "link", "add", bridge, "type", "bridge")
        sh("ip", "addr", "add", "10.229.%d.1/24" % (os.getpid() % 200 + 20), "dev", bridge)
        sh("ip", "link", "set", bridge, "up")
        log = open(os.path.join(top, "dockerd.log"), "wb")
        proc = subprocess.Popen(["dockerd", "--config-file", daemon_json, "--bridge", bridge, "--data-root", data,
                                 "--exec-root", exec_root, "--pidfile", os.path.join(top, "dockerd.pid"),
                                 "-H", "unix://" + sock, "--iptables=false", "--ip-masq=false"],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        url = "unix://" + sock
        limit = time.monotonic() + START_S
        while True:
            try:
                docker_engine.connect(url, timeout=5).close()
                break
            except docker_engine.EngineError:
                if proc.poll() is not None or time.monotonic() > limit:
                    raise
                time.sleep(0.2)
        save = subprocess.Popen(["docker", "save", IMAGE], stdout=subprocess.PIPE)
        sh("docker", "-H", url, "load", "-q", stdin=save.stdout)
        save.wait()
        yield {"url": url, "top": top, "daemon_json": daemon_json, "profile": done["profile"]["path"],
               "bundles": os.path.join(exec_root, "containerd", "daemon", "io.containerd.runtime.v2.task", "moby")}
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        sh("ip", "link", "del", bridge, check=False)
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(top, ignore_errors=True)


def test_the_daemon_json_names_the_profile_with_device_rules(runner_daemon):
    with open(runner_daemon["daemon_json"]) as handle:
        assert json.load(handle) == {"seccomp-profile": runner_daemon["profile"]}
    with open(runner_daemon["profile"]) as handle:
        assert seccomp.devices_denied(json.load(handle))
    info = docker_engine.connect(runner_daemon["url"]).info()
    assert bases.daemon_profile(info) == runner_daemon["profile"]


def test_a_job_container_under_the_daemon_default_makes_no_setid_file_or_device_node(runner_daemon):
    report = probe.probe("daemon", IMAGE, engine_url=runner_daemon["url"])
    rows = {row["name"]: row for row in report["results"]}
    assert report["ran"], report["reason"]
    for name in ("chmod_4755", "chmod_2755", "install_4755", "open_creat_04755", "mknod_c"):
        assert rows[name]["outcome"] == "denied" and rows[name]["errno"] == "EPERM", rows[name]
    for name in ("chmod_755", "mkdir_p", "venv"):
        assert rows[name]["outcome"] == "allowed"
    for name in ("unshare_user", "keyctl", "io_uring_setup"):
        assert rows[name]["outcome"] == "denied"
    # what a daemon-wide default cannot stop, said by the probe: CAP_SETFCAP is in Docker's default set
    assert [row["name"] for row in report["findings"]] == ["setcap"]
    assert rows["setcap"]["fix"].startswith("drop CAP_SETFCAP")


def test_a_job_that_passes_seccomp_unconfined_is_not_stopped_by_the_default(runner_daemon):
    report = probe.probe("hermes", IMAGE, engine_url=runner_daemon["url"],
                         extra_args=["--security-opt", "seccomp=unconfined"], reference=False)
    rows = {row["name"]: row for row in report["results"]}
    assert rows["chmod_4755"]["outcome"] == "allowed"


def test_making_the_prevention_again_uses_the_kept_base_while_the_builtin_is_hidden(runner_daemon, monkeypatch):
    monkeypatch.setattr(bases, "DOCKER_BUNDLE_DIRS", (runner_daemon["bundles"],))
    client = docker_engine.connect(runner_daemon["url"])
    try:
        with pytest.raises(bases.BaseHidden):
            bases.docker_default(client, IMAGE)
    finally:
        client.close()
    again = prevent.prevent("docker_daemon", profile_dir=os.path.dirname(runner_daemon["profile"]), image=IMAGE,
                            docker_host=runner_daemon["url"], daemon_json=runner_daemon["daemon_json"])
    assert not again["changed"] and not again["restart"]
