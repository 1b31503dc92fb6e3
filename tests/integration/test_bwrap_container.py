# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The probe inside Docker containers: what each container option does to bwrap, and that every
failure comes back as a reason with a fix, never a traceback.

Uses the locally built sandboxguard/debian:13 image (tools/build-images.sh), the bwrap 0.12.0
that tools/build-bwrap.sh builds, and the library from the checkout, all mounted read-only;
the containers have no network.
"""
import json
import os
import subprocess

import pytest

pytestmark = [pytest.mark.root, pytest.mark.docker, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = "sandboxguard/debian:13"
# An agent user with a credential store, a runtime dir with a socket and a docker socket,
# so every isolation check has something to prove.
SETUP = """
set -e
useradd --create-home agent
mkdir -m 700 /home/agent/.ssh && echo key > /home/agent/.ssh/id_ed25519
mkdir -p /run/user/$(id -u agent)
python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("/run/user/%d/bus" % int("'$(id -u agent)'"))'
python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("/run/docker.sock")'
chown -R agent: /home/agent /run/user/$(id -u agent)
PYTHONPATH=/opt/sandboxguard python3 -m sandboxguard_cli bwrap-probe --user agent --bwrap /opt/bwrap/bin/bwrap --json
"""


@pytest.fixture(scope="module")
def bwrap_prefix():
    done = subprocess.run(["bash", os.path.join(TOP, "tools", "build-bwrap.sh"), "build"], capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return os.path.dirname(os.path.dirname(done.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def image():
    done = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, check=False)
    assert done.returncode == 0, "image %s missing: run `make images` (tools/build-images.sh)" % IMAGE
    return IMAGE


def probe_in_container(image, bwrap_prefix, *security_opts):
    argv = ["docker", "run", "--rm", "--network", "none",
            "-v", "%s:/opt/bwrap:ro" % bwrap_prefix,
            "-v", "%s:/opt/sandboxguard:ro" % os.path.join(TOP, "python", "src")]
    for opt in security_opts:
        argv += ["--security-opt", opt]
    done = subprocess.run([*argv, image, "sh", "-c", SETUP], capture_output=True, text=True, check=False,
                          timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_default_seccomp_profile_reports_the_blocked_namespace(image, bwrap_prefix):
    code, report = probe_in_container(image, bwrap_prefix)
    assert code == 1
    assert (report["reason"], report["remediation"]) == ("namespace-blocked", "container_options")
    assert "No permissions to create a new namespace" in report["probe"]["stderr"]
    assert "seccomp=unconfined" in report["remediation_text"]
    assert {check["status"] for check in report["isolation"]} == {"not_run"}


def test_seccomp_unconfined_alone_cannot_mount_proc(image, bwrap_prefix):
    code, report = probe_in_container(image, bwrap_prefix, "seccomp=unconfined")
    assert code == 1
    assert (report["reason"], report["remediation"]) == ("proc-mount-denied", "container_options")
    assert "systempaths=unconfined" in report["remediation_text"]


def test_seccomp_and_systempaths_unconfined_pass_every_isolation_check(image, bwrap_prefix):
    code, report = probe_in_container(image, bwrap_prefix, "seccomp=unconfined", "systempaths=unconfined")
    assert code == 0, report
    expected = {name: "pass" for name in report_check_names(report)}
    expected["network_loopback_only"] = "skipped"  # the default profile, network, shares the network
    assert {check["name"]: check["status"] for check in report["isolation"]} == expected
    # rlimit_nproc included: the process limit set inside the sandbox counts it alone here too.
    assert len(report["isolation"]) == 11 and expected["rlimit_nproc"] == "pass"
    assert report["process_limit_scoped"] is True


def report_check_names(report):
    return [check["name"] for check in report["isolation"]]
