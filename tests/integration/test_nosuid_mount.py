# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""nosuid_mount as Ansible runs it, on real mounts: mount, idempotence, check mode, persistence
(the boot unit, its program and list; 1.0.0's units and fstab lines migrated), unmount, refusal
of one root alone; and what the mount does for the host and for containers started before and after."""
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest
from sandboxguard._core import fdmount, mountinfo, nosuid_legacy
from sandboxguard._privileged import nosuid

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_nosuid_mount.py must run as root (mount)", pytrace=False)

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = "sandboxguard/debian:12"


def ansible_bin():
    return os.path.join(os.path.dirname(sys.executable), "ansible")


def run_module(args, *flags):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([ansible_bin(), "localhost", "-m", "sandboxguard.boundary.nosuid_mount", "-a",
                           json.dumps(args), *flags], capture_output=True, text=True, env=env, timeout=120, check=False)
    out = json.loads(proc.stdout)
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


def mounts_at(path):
    return [m for m in mountinfo.read_mountinfo() if m["mount_point"] == os.fsencode(path)]


def unmount_all(path):
    while mounts_at(path):
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.fixture
def base():
    # Below /var/tmp with 0755 parents: the unprivileged user of the exec test must reach it.
    top = "/var/tmp/sgmnt-nosuid-%s" % uuid.uuid4().hex[:8]
    os.makedirs(top)
    os.chmod(top, 0o755)
    yield top
    with open("/proc/self/mountinfo", "rb") as handle:
        points = [line.split(b" ")[4].decode("utf-8", "surrogateescape") for line in handle]
    for point in reversed(points):
        if point.startswith(top + "/"):
            subprocess.run(["umount", "-l", point], check=False)
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def root(base):
    path = base + "/sandboxes/docker"
    os.makedirs(path + "/task/workspace")
    for part in (base + "/sandboxes", path, path + "/task", path + "/task/workspace"):
        os.chmod(part, 0o755)
    return path


@pytest.fixture
def boot():
    """Where the persisted files go: a root-only directory (the module refuses any other)."""
    top = "/run/sgmnt-boot-%s" % uuid.uuid4().hex[:8]
    os.makedirs(top + "/units")
    files = {"unit_dir": top + "/units", "fstab": top + "/fstab", "program": top + "/sbin/sandboxguard-nosuid",
             "paths_file": top + "/etc/nosuid-paths", "python": "/usr/bin/python3"}
    yield files
    shutil.rmtree(top, ignore_errors=True)


def test_mounted_makes_a_nosuid_nodev_bind_of_itself_and_a_second_run_changes_nothing(root):
    result = run_module({"path": [root], "persist": "none"})
    assert result["changed"] is True, result
    (top,) = mounts_at(root)
    assert {"nosuid", "nodev"} <= set(top["options"])
    assert top["root"].endswith(b"/sandboxes/docker")  # a bind of the directory onto itself
    assert "bind mount of itself" in result["paths"][0]["after"]
    assert result["paths"][0]["how"] == "open_tree"
    again = run_module({"path": [root], "persist": "none"})
    assert again["changed"] is False and again["paths"][0]["actions"] == []
    assert len(mounts_at(root)) == 1


def test_check_mode_reports_the_actions_and_mounts_nothing(root, boot):
    result = run_module(dict(boot, path=[root]), "--check", "--diff")
    assert result["changed"] is True
    assert result["paths"][0]["actions"][0].startswith("bind %s onto itself" % root)
    assert "not a mount point" in result["diff"]["before"] and "nosuid,nodev" in result["diff"]["after"]
    assert boot["paths_file"] in result["files"] and boot["unit_dir"] + "/" + nosuid.UNIT in result["files"]
    assert mounts_at(root) == []
    assert not os.path.exists(boot["paths_file"]) and not os.path.exists(boot["program"])


def test_an_existing_read_only_mount_gets_nosuid_nodev_and_stays_read_only(root):
    subprocess.run(["mount", "--bind", root, root], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", root], check=True)
    result = run_module({"path": [root], "persist": "none"})
    assert result["changed"] is True and result["paths"][0]["how"] == "mount_setattr"
    (top,) = mounts_at(root)
    assert {"ro", "nosuid", "nodev"} <= set(top["options"]), top["options"]


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


def test_persist_systemd_writes_the_list_program_and_unit_once_the_boot_program_remounts_and_unmounted_undoes(
        root, boot):
    args = dict(boot, path=[root])
    result = run_module(args)
    assert result["changed"] is True, result
    unit = os.path.join(boot["unit_dir"], nosuid.UNIT)
    text = open(unit).read()
    assert root not in text and "--paths-file" in text and boot["program"] in text
    assert os.readlink(os.path.join(boot["unit_dir"], "multi-user.target.wants", nosuid.UNIT)) == "../" + nosuid.UNIT
    with open(boot["paths_file"], "rb") as handle:
        assert fdmount.parse_list(handle.read()) == [os.fsencode(root)]
    for path in (boot["paths_file"], boot["program"], unit):
        st = os.stat(path)
        assert (st.st_uid, st.st_gid) == (0, 0) and not st.st_mode & 0o022
    assert run_module(args)["changed"] is False
    # what the boot does: the unit's own command line, run after the mount is gone
    unmount_all(root)
    proc = subprocess.run(["/usr/bin/python3", "-I", boot["program"], "--paths-file", boot["paths_file"]],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "bound onto itself nosuid,nodev" in proc.stdout
    (top,) = mounts_at(root)
    assert {"nosuid", "nodev"} <= set(top["options"])
    gone = run_module(dict(args, state="unmounted"))
    assert gone["changed"] is True
    assert mounts_at(root) == []
    for path in (unit, boot["paths_file"], boot["program"]):
        assert not os.path.lexists(path), path
    assert not os.path.lexists(os.path.join(boot["unit_dir"], "multi-user.target.wants", nosuid.UNIT))


def test_unmounted_listed_takes_out_every_persisted_root_and_the_boot_files_without_a_scope(base, root, boot):
    other = base + "/other/docker"
    os.makedirs(other)
    assert run_module(dict(boot, path=[root]))["changed"] and run_module(dict(boot, path=[other]))["changed"]
    with open(boot["paths_file"], "rb") as handle:
        assert sorted(fdmount.parse_list(handle.read())) == sorted([os.fsencode(root), os.fsencode(other)])
    checked = run_module(dict(boot, listed=True, state="unmounted"), "--check")
    assert checked["changed"] and sorted(checked["roots"]) == sorted([root, other]) and mounts_at(root)
    gone = run_module(dict(boot, listed=True, state="unmounted"))
    assert gone["changed"] is True, gone
    assert mounts_at(root) == [] and mounts_at(other) == []
    for path in (os.path.join(boot["unit_dir"], nosuid.UNIT), boot["paths_file"], boot["program"]):
        assert not os.path.lexists(path), path
    again = run_module(dict(boot, listed=True, state="unmounted"))
    assert again["changed"] is False and again["roots"] == [], again


def test_persist_fstab_is_deprecated_and_what_1_0_0_wrote_is_migrated_to_the_unit(base, root, boot):
    old_root = base + "/old/docker"
    os.makedirs(old_root)
    old_unit = nosuid_legacy.unit_name(old_root)
    with open(os.path.join(boot["unit_dir"], old_unit), "w") as handle:
        handle.write("\n".join([nosuid.MARKER, "[Mount]", "What=%s" % old_root, "Where=%s" % old_root,
                                "Type=none", "Options=bind,nosuid,nodev", ""]))
    os.makedirs(os.path.join(boot["unit_dir"], "local-fs.target.wants"))
    os.symlink("../" + old_unit, os.path.join(boot["unit_dir"], "local-fs.target.wants", old_unit))
    with open(boot["fstab"], "w") as handle:
        handle.write("UUID=abc / ext4 defaults 0 1\n%s %s none bind,nosuid,nodev 0 0  %s\n"
                     % (root, root, nosuid.MARKER))
    result = run_module(dict(boot, path=[root], persist="fstab"))
    assert result["changed"] is True, result
    warnings = " ".join(result.get("warnings", []))
    assert "persist: fstab is deprecated" in warnings
    assert "removed the mount unit 1.0.0 wrote for %s" % old_root in warnings
    assert "removed the line(s) 1.0.0 wrote in %s" % boot["fstab"] in warnings
    assert open(boot["fstab"]).read() == "UUID=abc / ext4 defaults 0 1\n"
    assert not os.path.lexists(os.path.join(boot["unit_dir"], old_unit))
    assert not os.path.lexists(os.path.join(boot["unit_dir"], "local-fs.target.wants", old_unit))
    with open(boot["paths_file"], "rb") as handle:  # both roots are kept, re-proven at boot now
        assert sorted(fdmount.parse_list(handle.read())) == sorted([os.fsencode(root), os.fsencode(old_root)])
    assert {"nosuid", "nodev"} <= set(mounts_at(old_root)[0]["options"])
    assert run_module(dict(boot, path=[root], persist="fstab"))["changed"] is False


def test_unmounted_removes_the_bind_leaves_a_foreign_mount_and_a_second_run_changes_nothing(base, root):
    run_module({"path": [root], "persist": "none"})
    check = run_module({"path": [root], "persist": "none", "state": "unmounted"}, "--check")
    assert check["changed"] is True and check["paths"][0]["actions"][0].startswith("unmount the bind of %s" % root)
    assert len(mounts_at(root)) == 1  # check mode unmounted nothing
    result = run_module({"path": [root], "persist": "none", "state": "unmounted"})
    assert result["changed"] is True and mounts_at(root) == []
    assert run_module({"path": [root], "persist": "none", "state": "unmounted"})["changed"] is False
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "sgmnt-foreign", root], check=True)
    kept = run_module({"path": [root], "persist": "none", "state": "unmounted"})
    assert kept["changed"] is False and "left mounted" in " ".join(kept["warnings"])
    assert len(mounts_at(root)) == 1


def test_a_symlinked_and_a_system_path_are_refused_alone_and_the_other_root_is_still_mounted(base, root):
    link = base + "/link"
    os.symlink(os.path.dirname(root), link)
    result = run_module({"path": [link + "/docker", "/usr", root], "persist": "none"})
    assert not result.get("failed"), result
    refused = {r["path"]: r["reason"] for r in result["refused"]}
    assert "symlink" in refused[link + "/docker"] and "system path" in refused["/usr"]
    assert any(link in w and "refused" in w for w in result["warnings"])
    (top,) = mounts_at(root)
    assert {"nosuid", "nodev"} <= set(top["options"])


def test_the_roots_come_from_the_hermes_home_as_the_sweep_derives_them(base):
    home = base + "/hermes"
    for sub in ("sandboxes/docker", "profiles/work/sandboxes/docker", "profiles/new", "profiles/evil"):
        os.makedirs(os.path.join(home, sub))
    os.symlink(base, os.path.join(home, "profiles/evil/sandboxes"))  # a link in a middle component
    result = run_module({"hermes_home": home, "persist": "none"})
    assert not result.get("failed"), result
    assert sorted(result["roots"]) == [home + "/profiles/work/sandboxes/docker", home + "/sandboxes/docker"]
    assert result["missing"] == [home + "/profiles/new/sandboxes/docker"]
    assert [r["path"] for r in result["refused"]] == [home + "/profiles/evil/sandboxes/docker"]
    for path in result["roots"]:
        assert {"nosuid", "nodev"} <= set(mounts_at(path)[0]["options"])
    assert mounts_at(base + "/docker") == []


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
    before = "sgmnt-nosuid-before-%s" % uuid.uuid4().hex[:6]
    engine.append(before)
    docker("run", "-d", "--name", before, "--network", "none", "-v", "%s:/workspace" % work, IMAGE, "sleep", "300")
    run_module({"path": [root], "persist": "none"})
    after = "sgmnt-nosuid-after-%s" % uuid.uuid4().hex[:6]
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
