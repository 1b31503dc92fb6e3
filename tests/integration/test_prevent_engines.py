# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Prevention for real (issue 28): the profile made from each engine's own default, proven in
real Docker and rootful Podman containers by the probe, attempt by attempt.

Docker is the machine's engine; Podman is set up by podman_fixtures (runc, our
containers.conf, our storage, an API service on a private socket). The profiles are made from
each running engine's default (Docker: a throwaway container's OCI runtime spec; Podman:
containers-common's file) and installed in a root-only directory under /run. Containers are
the probe's own (label sandboxguard=seccomp-probe) and removed by it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from podman_fixtures import IMAGE, Podman, PodmanUnavailable
from sandboxguard import docker_engine
from sandboxguard._prevent import bases, probe, profile, seccomp

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

DENIED = ("chmod_4755", "chmod_2755", "install_4755", "open_creat_04755", "fchmodat2_4755", "mknod_c", "setcap")
SETID = ("chmod_4755", "chmod_2755", "install_4755", "open_creat_04755")
DROPS = ["--cap-drop", "SETFCAP", "--cap-drop", "MKNOD"]
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python", "src")


@pytest.fixture(scope="module")
def profiles():
    """A root-only directory with Docker's profile, Docker's with device rules, Podman's, and one
    made from Podman's default (the wrong base for Docker)."""
    top = tempfile.mkdtemp(prefix="sg-prevent-", dir="/run")
    made = {"docker": profile.make("docker", image=IMAGE), "docker-devices": profile.make("docker", image=IMAGE,
                                                                                        devices=True),
            "podman": profile.make("podman")}
    paths = {}
    for name, doc in made.items():
        paths[name] = os.path.join(top, name + ".json")
        with open(paths[name], "w") as handle:
            handle.write(seccomp.profile_text(doc))
    yield paths
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    try:
        pod = Podman(str(tmp_path_factory.mktemp("podman-prevent")))
    except PodmanUnavailable as exc:
        pytest.fail("NO PODMAN, the Podman prevention tests cannot run: %s" % exc, pytrace=False)
    pod.ensure_image()
    pod.url = pod.service(os.path.join(pod.workdir, "api", "podman.sock"))
    yield pod
    pod.close()


def rows(report):
    return {row["name"]: row for row in report["results"]}


def assert_all_as_expected(report):
    assert report["ran"] and report["errors"] == [], report["reason"]
    bad = {r["name"]: (r["outcome"], r["errno"], r["detail"]) for r in report["findings"]}
    assert report["ok"] and bad == {}, bad
    for name in DENIED:
        assert rows(report)[name]["outcome"] == "denied"
    for name in SETID:
        assert rows(report)[name]["errno"] == "EPERM"
    for name in ("mknod_c", "setcap"):
        assert rows(report)[name]["errno"] == "EPERM"


def test_dockers_default_is_read_from_a_throwaway_container_and_left_no_container():
    client = docker_engine.connect()
    try:
        base, source = bases.docker_default(client, IMAGE)
        assert base["defaultAction"] == "SCMP_ACT_ERRNO" and source["engine"] == "docker"
        assert "Docker's builtin default" in source["origin"]
        left = client.containers(all=True, filters={"label": ["sandboxguard=seccomp-base"]})
        assert left == []
    finally:
        client.close()


def test_the_hermes_sandbox_on_docker_makes_no_setid_file_capability_or_device_node(profiles):
    report = probe.probe("hermes", IMAGE, extra_args=["--security-opt", "seccomp=" + profiles["docker"], *DROPS])
    assert_all_as_expected(report)
    # the reference container (Docker's own default) shows what the profile changed
    for name in SETID:
        assert rows(report)[name]["default"] == "allowed"
    assert rows(report)["io_uring_setup"]["default"] == "allowed"
    for name in ("unshare_user", "keyctl"):
        assert rows(report)[name]["outcome"] == "denied" and rows(report)[name]["default"] == "denied"
    for name in ("chmod_755", "mkdir_p", "venv"):
        assert rows(report)[name]["outcome"] == "allowed"


def test_without_the_prevention_the_probe_finds_every_setid_attempt(profiles):
    report = probe.probe("hermes", IMAGE)
    assert report["ran"] and not report["ok"]
    found = {r["name"] for r in report["findings"]}
    assert set(SETID) <= found and "io_uring_setup" in found
    assert "mknod_c" not in found and "setcap" not in found  # Hermes' own --cap-drop ALL stops those


def test_a_daemon_style_default_with_device_rules_stops_device_nodes_without_a_cap_drop(profiles):
    # what a runner host's daemon-wide default does: default capabilities, the devices profile
    report = probe.probe("hermes", IMAGE, extra_args=["--security-opt", "seccomp=" + profiles["docker-devices"],
                                                      "--cap-add", "MKNOD"])
    assert rows(report)["mknod_c"]["outcome"] == "denied" and rows(report)["mknod_c"]["errno"] == "EPERM"
    for name in SETID:
        assert rows(report)[name]["outcome"] == "denied"


def test_the_daemon_mode_under_dockers_own_default_is_flagged():
    report = probe.probe("daemon", IMAGE)
    found = {r["name"] for r in report["findings"]}
    assert set(SETID) | {"mknod_c", "setcap", "io_uring_setup"} <= found
    assert rows(report)["setcap"]["fix"].startswith("drop CAP_SETFCAP")


def test_a_profile_made_from_podmans_default_under_docker_reopens_namespaces_and_is_caught(profiles):
    report = probe.probe("hermes", IMAGE, extra_args=["--security-opt", "seccomp=" + profiles["podman"], *DROPS])
    assert rows(report)["unshare_user"]["outcome"] == "allowed" and rows(report)["unshare_user"]["default"] == "denied"
    assert not rows(report)["unshare_user"]["ok"] and not report["ok"]
    checked = profile.check(profiles["podman"], "docker", image=IMAGE)
    rules = {p["rule"]: p["syscalls"] for p in checked["problems"]}
    assert {"unshare", "keyctl", "mount", "setns", "pivot_root", "clone3"} <= set(rules["base-denial-lost"])
    assert "other-engine-base" in rules


def test_the_check_passes_dockers_profile_against_the_running_engine(profiles):
    report = profile.check(profiles["docker"], "docker", image=IMAGE)
    assert report["ok"] and report["complete"], report["problems"]


def test_the_cli_prints_a_profile_docker_accepts(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "seccomp-profile", "--image", IMAGE],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=SRC))
    assert done.returncode == 0, done.stderr
    path = tmp_path / "p.json"
    path.write_text(done.stdout)
    run = subprocess.run(["docker", "run", "--rm", "--network", "none", "--security-opt", "seccomp=%s" % path, IMAGE,
                          "sh", "-c", "touch /f; chmod 4755 /f; echo rc=$?"], capture_output=True, text=True,
                         timeout=120)
    assert "rc=1" in run.stdout and "Operation not permitted" in run.stderr


def test_the_hermes_sandbox_on_podman_makes_no_setid_file_capability_or_device_node(podman, profiles):
    report = probe.probe("hermes", IMAGE, engine_url=podman.url,
                         extra_args=["--security-opt", "seccomp=" + profiles["podman"], *DROPS])
    assert report["engine"]["kind"] == "podman"
    assert_all_as_expected(report)
    for name in SETID:
        assert rows(report)[name]["default"] == "allowed"
    # Podman's own default allows user namespaces and keyctl: the profile keeps that, no more
    for name in ("unshare_user", "keyctl"):
        assert rows(report)[name]["default"] == "allowed" and rows(report)[name]["outcome"] == "allowed"
    assert rows(report)["io_uring_setup"]["outcome"] == "denied"


def test_podmans_profile_checks_clean_against_podmans_default(profiles):
    report = profile.check(profiles["podman"], "podman")
    assert report["ok"] and report["complete"], report["problems"]
    assert json.load(open(profiles["podman"]))[seccomp.META_KEY]["base"]["origin"] == bases.PODMAN_DEFAULT_PROFILE


def test_a_profile_made_from_dockers_default_under_podman_is_flagged(profiles):
    report = profile.check(profiles["docker"], "podman")
    assert not report["ok"]
    assert "other-engine-base" in {p["rule"] for p in report["problems"]}
