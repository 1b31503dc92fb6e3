# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""nosuid_mount as Ansible runs it, on real mounts: mount, idempotence, check mode, persistence,
unmount; and what the mount does for the host and for containers started before and after."""
import json
import os
import shutil
import subprocess
import uuid

import pytest
from sandboxguard import mountinfo

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_nosuid_mount.py must run as root (mount)", pytrace=False)

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE = os.path.join(TOP, ".venv", "bin", "ansible")
IMAGE = "sandboxguard/debian:12"


def run_module(args, *flags):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([ANSIBLE, "localhost", "-m", "sandboxguard.boundary.nosuid_mount", "-a", json.dumps(args),
                           *flags], capture_output=True, text=True, env=env, timeout=120, check=False)
    out = json.loads(proc.stdout)
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


def mounts_at(path):
    return [m for m in mountinfo.read_mountinfo() if m["mount_point"] == os.fsencode(path)]


@pytest.fixture
def root():
    # Below /var/tmp with 0755 parents: the unprivileged user of the exec test must reach it.
    base = "/var/tmp/sandboxguard-nosuid-%s" % uuid.uuid4().hex[:8]
    path = base + "/sandboxes/docker"
    os.makedirs(path + "/task/workspace")
    for part in (base, base + "/sandboxes", path, path + "/task", path + "/task/workspace"):
        os.chmod(part, 0o755)
    yield path
    while mounts_at(path):
        subprocess.run(["umount", "-l", path], check=False)
    shutil.rmtree(base, ignore_errors=True)


def test_mounted_makes_a_nosuid_nodev_bind_of_itself_and_a_second_run_changes_nothing(root):
    result = run_module({"path": [root], "persist": "none"})
    assert result["changed"] is True, result
    (top,) = mounts_at(root)
    assert {"nosuid", "nodev"} <= set(top["options"])
    assert top["root"].endswith(b"/sandboxes/docker")  # a bind of the directory onto itself
    assert "bind mount of itself" in result["paths"][0]["after"]
    again = run_module({"path": [root], "persist": "none"})
    assert again["changed"] is False and again["paths"][0]["commands"] == []
    assert len(mounts_at(root)) == 1


def test_check_mode_reports_the_commands_and_mounts_nothing(root):
    result = run_module({"path": [root], "persist": "none"}, "--check", "--diff")
    assert result["changed"] is True
    assert result["paths"][0]["commands"][0] == ["mount", "--bind", root, root]
    assert "not a mount point" in result["diff"]["before"] and "nosuid,nodev" in result["diff"]["after"]
    assert mounts_at(root) == []


def test_setuid_root_binary_on_the_mount_gives_a_user_no_privilege_but_cp_a_by_root_keeps_the_bits(root):
    shell = root + "/task/workspace/rootshell"
    shutil.copy("/usr/bin/id", shell)
    os.chmod(shell, 0o4755)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", shell, "-u"]
    before = subprocess.run(as_nobody, capture_output=True, text=True, check=True).stdout.strip()
    assert before == "0", "the fixture's setuid binary should elevate before the mount"
    run_module({"path": [root], "persist": "none"})
    after = subprocess.run(as_nobody, capture_output=True, text=True, check=True).stdout.strip()
    assert after == "65534"
    assert os.stat(shell).st_mode & 0o4000, "nosuid leaves the bits on the file"
    copy = os.path.dirname(os.path.dirname(os.path.dirname(root))) + "/copied-out"
    subprocess.run(["cp", "-a", shell, copy], check=True)
    assert os.stat(copy).st_mode & 0o4000  # why the strip stays


def test_persist_systemd_writes_a_unit_and_its_wants_link_once_and_unmounted_removes_them(root, tmp_path):
    units = tmp_path / "units"
    units.mkdir()
    args = {"path": [root], "persist": "systemd", "unit_dir": str(units)}
    result = run_module(args)
    assert result["changed"] is True
    unit = subprocess.run(["systemd-escape", "--path", "--suffix=mount", root], capture_output=True,
                          text=True, check=True).stdout.strip()
    text = (units / unit).read_text()
    assert "What=%s" % root in text and "Where=%s" % root in text and "Options=bind,nosuid,nodev" in text
    assert os.readlink(units / "local-fs.target.wants" / unit) == "../" + unit
    assert run_module(args)["changed"] is False
    gone = run_module(dict(args, state="unmounted"))
    assert gone["changed"] is True
    assert not (units / unit).exists() and not os.path.lexists(units / "local-fs.target.wants" / unit)
    assert mounts_at(root) == []


def test_persist_fstab_adds_one_line_and_unmounted_takes_it_out(root, tmp_path):
    fstab = tmp_path / "fstab"
    fstab.write_text("UUID=abc / ext4 defaults 0 1\n")
    args = {"path": [root], "persist": "fstab", "fstab": str(fstab)}
    assert run_module(args)["changed"] is True
    lines = fstab.read_text().splitlines()
    assert lines[0] == "UUID=abc / ext4 defaults 0 1"
    assert lines[1].startswith("%s %s none bind,nosuid,nodev 0 0" % (root, root))
    assert run_module(args)["changed"] is False
    assert run_module(dict(args, state="unmounted"))["changed"] is True
    assert fstab.read_text() == "UUID=abc / ext4 defaults 0 1\n"


def test_unmounted_removes_the_bind_and_a_second_run_changes_nothing(root):
    run_module({"path": [root], "persist": "none"})
    result = run_module({"path": [root], "persist": "none", "state": "unmounted"})
    assert result["changed"] is True and mounts_at(root) == []
    assert run_module({"path": [root], "persist": "none", "state": "unmounted"})["changed"] is False


def test_a_symlink_and_a_system_path_are_refused_naming_the_path(root):
    link = os.path.dirname(root) + "/link"
    os.symlink(root, link)
    result = run_module({"path": [link], "persist": "none"})
    assert result.get("failed") and link in result["msg"] and "symlink" in result["msg"]
    result = run_module({"path": ["/usr"], "persist": "none"})
    assert result.get("failed") and "/usr" in result["msg"]
    assert mounts_at(root) == []


# -- containers and mount propagation --------------------------------------------------
def docker(*args, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120, check=check)


@pytest.fixture
def engine():
    if shutil.which("docker") is None or docker("info", check=False).returncode != 0:
        pytest.fail("no Docker engine: run tools/docker-engine.sh (make test starts it)")
    if docker("image", "inspect", IMAGE, check=False).returncode != 0:
        pytest.fail("image %s missing: run tools/build-images.sh" % IMAGE)
    names = []
    yield names
    for name in names:
        docker("rm", "-f", name, check=False)


def test_containers_before_and_after_the_mount_both_keep_reading_and_writing(root, engine):
    work = root + "/task/workspace"
    before = "sg-nosuid-before-%s" % uuid.uuid4().hex[:6]
    engine.append(before)
    docker("run", "-d", "--name", before, "--network", "none", "-v", "%s:/workspace" % work, IMAGE, "sleep", "300")
    run_module({"path": [root], "persist": "none"})
    after = "sg-nosuid-after-%s" % uuid.uuid4().hex[:6]
    engine.append(after)
    docker("run", "-d", "--name", after, "--network", "none", "-v", "%s:/workspace" % work, IMAGE, "sleep", "300")
    for name in (before, after):
        docker("exec", name, "sh", "-c", "echo %s > /workspace/%s.txt && cat /workspace/%s.txt" % (name, name, name))
        with open("%s/%s.txt" % (work, name)) as handle:
            assert handle.read().strip() == name
    # The one started before keeps its own mount (made before, no propagation from the host's
    # private mounts); the one started after bind-mounted from the nosuid mount and carries it.
    opts = {name: docker("exec", name, "sh", "-c", "grep ' /workspace ' /proc/self/mountinfo").stdout.split(" ")[5]
            for name in (before, after)}
    assert "nosuid" not in opts[before].split(","), opts
    assert {"nosuid", "nodev"} <= set(opts[after].split(",")), opts
    # Whatever the old container writes is still harmless when run from the host path.
    docker("exec", before, "sh", "-c", "cp /usr/bin/id /workspace/rootid && chmod 4755 /workspace/rootid")
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", work + "/rootid", "-u"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "65534"
