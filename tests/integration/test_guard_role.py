# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The role sandbox_sweep's nosuid mounts and guard on this host (no systemd): the roots get
mounted nosuid,nodev (idempotently), missing roots are named, and the guard is skipped with
the reason instead of failing the play. molecule/sandbox_guard runs the guard under systemd;
test_sweep_role.py covers both switched off."""
import os
import subprocess
import sys

import pytest
from sandboxguard import mountinfo
from test_sweep_role import run_role, task_result

pytestmark = [pytest.mark.root]


def mounted_at(path):
    return [m for m in mountinfo.read_mountinfo() if m["mount_point"] == os.fsencode(path)]


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "hermes"
    (home / "sandboxes" / "docker").mkdir(parents=True)
    (home / "profiles" / "research").mkdir(parents=True)  # a profile without sandboxes yet
    yield home
    for path in (home / "sandboxes" / "docker",):
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
    (top,) = mounted_at(root)
    assert {"nosuid", "nodev"} <= set(top["options"])
    missing = task_result(out, "Name the roots that are not there yet")
    assert os.fspath(home / "profiles" / "research" / "sandboxes" / "docker") in missing["msg"]
    why = task_result(out, "Say why the guard is not installed")
    assert "not systemd" in why["msg"]
    # One role run only (each takes a minute or more here): idempotence of the role is
    # molecule/sandbox_guard's, the module's is test_nosuid_mount.py's.
