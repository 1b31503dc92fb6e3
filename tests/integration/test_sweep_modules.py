# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""sandbox_mounts_info and sandbox_sweep as Ansible runs them, against a real engine."""
import json
import os
import stat
import subprocess
import sys

import pytest
from docker_sdk import sdk_client

pytestmark = [pytest.mark.controller, pytest.mark.docker, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = "sandboxguard/debian:12"


def run_module(module, args, *flags):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m",
                           "sandboxguard.boundary." + module, "-a", json.dumps(args), *flags],
                          capture_output=True, text=True, env=env, timeout=180, check=False)
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.fixture
def attacked(tmp_path):
    client = sdk_client()
    home = tmp_path / "hermes"
    ws = home / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    os.chown(home / "sandboxes", 1000, 1000)
    outside = tmp_path / "outside"
    outside.mkdir()
    container = client.containers.run(
        IMAGE, ["sh", "-c", "cp /bin/true /w/suid && chmod 4755 /w/suid && cp /bin/true /o/suid && chmod 4755 /o/suid"],
        detach=True, network_mode="none", labels={"hermes-agent": "1"},
        volumes={str(ws): {"bind": "/w", "mode": "rw"}, str(outside): {"bind": "/o", "mode": "rw"}})
    container.wait(timeout=60)
    yield {"home": str(home), "ws": ws, "outside": outside, "name": container.name}
    container.remove(force=True)


def test_mounts_info_reports_each_mount_with_its_reason(attacked):
    result = run_module("sandbox_mounts_info", {"hermes_home": attacked["home"], "containers": [attacked["name"]]})
    assert result["changed"] is False
    [container] = result["containers"]
    decisions = {m["source"]: m for m in container["mounts"]}
    assert decisions[str(attacked["ws"])]["in_scope"] is True
    assert decisions[str(attacked["outside"])]["in_scope"] is False
    assert [t["realpath"] for t in result["targets"]] == [str(attacked["ws"])]
    assert result["engine"]["sweepable"] is True
    # the same roots shape as sandbox_sweep and every other report: strings; their sources beside
    assert result["roots"] == [os.path.realpath(os.path.join(attacked["home"], "sandboxes", "docker"))]
    assert [r["realpath"] for r in result["root_sources"]] == result["roots"]
    assert result["errors"] == [] and result["complete"] is True and result.get("warnings", []) == []


def test_sweep_check_mode_then_sweep_then_idempotent(attacked):
    args = {"hermes_home": attacked["home"] + ",", "containers": attacked["name"]}  # survey-style strings
    check = run_module("sandbox_sweep", args, "--check")
    assert check["changed"] is True
    assert stat.S_IMODE(os.lstat(attacked["ws"] / "suid").st_mode) == 0o4755
    first = run_module("sandbox_sweep", args)
    assert first["changed"] is True and first.get("warnings", []) == []
    st = os.lstat(attacked["ws"] / "suid")
    assert stat.S_IMODE(st.st_mode) == 0o755 and st.st_uid == 1000
    assert stat.S_IMODE(os.lstat(attacked["outside"] / "suid").st_mode) == 0o4755
    second = run_module("sandbox_sweep", args)
    assert second["changed"] is False


def test_container_method_without_image_fails_clearly(attacked):
    result = run_module("sandbox_sweep", {"hermes_home": attacked["home"], "method": "container"})
    assert result["failed"] is True and "image" in result["msg"]


def test_warning_names_the_sandbox_when_the_sweep_cannot_run(attacked):
    result = run_module("sandbox_sweep", {"hermes_home": attacked["home"], "containers": [attacked["name"]],
                                          "method": "container", "image": "sandboxguard/absent:none"})
    assert result.get("failed") is not True
    assert len(result["warnings"]) == 1 and str(attacked["ws"]) in result["warnings"][0]
    failed = run_module("sandbox_sweep", {"hermes_home": attacked["home"], "containers": [attacked["name"]],
                                          "method": "container", "image": "sandboxguard/absent:none",
                                          "fail_on_warnings": True})
    assert failed["failed"] is True and str(attacked["ws"]) in failed["msg"]
