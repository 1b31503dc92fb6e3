# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The role sandbox_sweep's nosuid mounts and guard on this host (no systemd): the roots get
mounted nosuid,nodev (idempotently), missing roots are named, a refused root (a symlink in a
middle component) is refused alone and the play goes on, and the guard is skipped with
the reason instead of failing the play. molecule/sandbox_guard runs the guard under systemd;
test_sweep_role.py covers both switched off."""
import os
import subprocess
import sys

import pytest
from sandboxguard._core import mountinfo
from test_sweep_role import run_role, task_result

pytestmark = [pytest.mark.root]


def mounted_at(path):
    return [m for m in mountinfo.read_mountinfo() if m["mount_point"] == os.fsencode(path)]


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "hermes"
    (home / "sandboxes" / "docker").mkdir(parents=True)
    (home / "profiles" / "research").mkdir(parents=True)  # a profile without sandboxes yet
    (home / "profiles" / "work" / "sandboxes" / "docker").mkdir(parents=True)
    (home / "profiles" / "evil").mkdir(parents=True)  # its sandboxes is a link to another tree
    (tmp_path / "elsewhere" / "docker").mkdir(parents=True)
    (home / "profiles" / "evil" / "sandboxes").symlink_to(tmp_path / "elsewhere")
    yield home
    for path in (home / "sandboxes" / "docker", home / "profiles" / "work" / "sandboxes" / "docker",
                 tmp_path / "elsewhere" / "docker"):
        while mounted_at(path):
            subprocess.run(["umount", "-l", os.fspath(path)], check=False)


def variables(tmp_path, home):
    (tmp_path / "bin").mkdir(exist_ok=True)
    return {"sandbox_sweep_hermes_homes": str(home), "sandbox_sweep_timer": "false",
            "sandbox_sweep_watch_events": "false", "sandbox_sweep_now": "false",
            "sandbox_sweep_docker_sdk": "none", "sandbox_sweep_python": sys.executable,
            "sandbox_sweep_install_dir": str(tmp_path / "lib"),
            "sandbox_sweep_cli_path": str(tmp_path / "bin" / "sandboxguard"),
            # persist none: this host's /etc/systemd and /etc/fstab stay as they are
            "sandbox_sweep_nosuid_persist": "none"}


def test_role_mounts_existing_roots_nosuid_names_missing_ones_and_skips_the_guard_without_systemd(tmp_path, home):
    root = home / "sandboxes" / "docker"
    rc, _stats, out = run_role(tmp_path, variables(tmp_path, home))
    assert rc == 0, out
    for path in (root, home / "profiles" / "work" / "sandboxes" / "docker"):
        (top,) = mounted_at(path)
        assert {"nosuid", "nodev"} <= set(top["options"])
    assert mounted_at(tmp_path / "elsewhere" / "docker") == []  # never through the link
    missing = task_result(out, "Name the roots that are not there yet")
    assert os.fspath(home / "profiles" / "research" / "sandboxes" / "docker") in missing["msg"]
    refused = task_result(out, "Name the roots that were refused")
    assert os.fspath(home / "profiles" / "evil" / "sandboxes" / "docker") in refused["msg"]
    mount_task = task_result(out, "Make each sandbox root a nosuid,nodev bind mount of itself")
    assert any("symlink" in w for w in mount_task.get("warnings", [])), mount_task
    why = task_result(out, "Say why the guard is not installed")
    assert "not systemd" in why["msg"]
    # One role run only (each takes a minute or more here): idempotence of the role is
    # molecule/sandbox_guard's, the module's is test_nosuid_mount.py's.
