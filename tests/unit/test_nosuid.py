# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Planning nosuid,nodev bind mounts from mountinfo, unit names and fstab edits (pure)."""
import pytest
from sandboxguard import mountinfo, nosuid

BASE = (b"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        b"30 22 0:50 / /srv rw,noexec,nosuid,relatime - tmpfs tmpfs rw\n")
SELF_BIND = b"40 22 254:0 /home/a/sb/docker /home/a/sb/docker rw,nosuid,nodev,relatime - ext4 /dev/vda rw\n"
FOREIGN = b"41 22 254:3 / /home/a/sb/docker rw,relatime - xfs /dev/vdb rw\n"
PLAIN_BIND = b"42 22 254:0 /home/a/sb/docker /home/a/sb/docker ro,noatime - ext4 /dev/vda rw\n"


def mounts(*extra):
    return mountinfo.parse_mountinfo(BASE + b"".join(extra))


def test_plain_directory_gets_a_bind_then_a_remount_carrying_its_mounts_flags():
    commands, warnings = nosuid.plan("/home/a/sb/docker", "mounted", mounts())
    assert commands == [["mount", "--bind", "/home/a/sb/docker", "/home/a/sb/docker"],
                        ["mount", "-o", "remount,bind,rw,relatime,nosuid,nodev", "/home/a/sb/docker"]]
    assert warnings == []


def test_directory_on_a_noexec_mount_keeps_noexec_in_the_remount():
    commands = nosuid.plan("/srv/sb/docker", "mounted", mounts())[0]
    assert commands[1] == ["mount", "-o", "remount,bind,rw,noexec,relatime,nosuid,nodev", "/srv/sb/docker"]


def test_existing_nosuid_nodev_bind_needs_nothing():
    assert nosuid.plan("/home/a/sb/docker", "mounted", mounts(SELF_BIND)) == ([], [])


def test_existing_mount_without_the_flags_is_only_remounted_keeping_ro_and_noatime():
    commands = nosuid.plan("/home/a/sb/docker", "mounted", mounts(PLAIN_BIND))[0]
    assert commands == [["mount", "-o", "remount,bind,ro,noatime,nosuid,nodev", "/home/a/sb/docker"]]


def test_unmounted_removes_a_self_bind_but_leaves_a_foreign_filesystem_with_a_warning():
    assert nosuid.plan("/home/a/sb/docker", "unmounted", mounts(SELF_BIND)) == (
        [["umount", "/home/a/sb/docker"]], [])
    commands, warnings = nosuid.plan("/home/a/sb/docker", "unmounted", mounts(FOREIGN))
    assert commands == [] and len(warnings) == 1 and "/dev/vdb" in warnings[0] and "left mounted" in warnings[0]
    assert nosuid.plan("/home/a/sb/docker", "unmounted", mounts()) == ([], [])


def test_stacked_self_binds_are_all_removed():
    stacked = b"43 40 254:0 /home/a/sb/docker /home/a/sb/docker rw,nosuid,nodev - ext4 /dev/vda rw\n"
    commands = nosuid.plan("/home/a/sb/docker", "unmounted", mounts(SELF_BIND, stacked))[0]
    assert commands == [["umount", "/home/a/sb/docker"]] * 2


def test_describe_says_what_the_path_is():
    assert nosuid.describe("/home/a/sb/docker", mounts()) == "/home/a/sb/docker: not a mount point"
    assert nosuid.describe("/home/a/sb/docker", mounts(SELF_BIND)) == (
        "/home/a/sb/docker: bind mount of itself, rw,nosuid,nodev,relatime")


@pytest.mark.parametrize("path,name", [
    ("/srv/sb/docker", "srv-sb-docker.mount"),
    ("/var/tmp/a b/.x-y/\u00fc", "var-tmp-a\\x20b-.x\\x2dy-\\xc3\\xbc.mount"),  # as systemd-escape --path
    ("/.hidden/x", "\\x2ehidden-x.mount"),
])
def test_unit_name_escapes_like_systemd_escape(path, name):
    assert nosuid.unit_name(path) == name


def test_unit_text_mounts_the_path_on_itself_with_the_flags_before_the_engine():
    text = nosuid.unit_text("/srv/50%/docker")
    assert "What=/srv/50%%/docker" in text and "Where=/srv/50%%/docker" in text
    assert "Options=bind,nosuid,nodev" in text and "Before=docker.service" in text
    assert "WantedBy=local-fs.target" in text


def test_fstab_edit_adds_once_replaces_ours_and_removes_only_ours():
    start = "UUID=1 / ext4 defaults 0 1\n"
    added = nosuid.fstab_edit(start, "/srv/a b/docker", True)
    assert added.startswith(start) and "/srv/a\\040b/docker /srv/a\\040b/docker none bind,nosuid,nodev 0 0" in added
    assert nosuid.fstab_edit(added, "/srv/a b/docker", True) == added
    assert nosuid.fstab_edit(added, "/srv/a b/docker", False) == start


def test_fstab_entry_someone_else_made_for_the_path_is_refused_naming_the_line():
    text = "UUID=1 / ext4 defaults 0 1\n/dev/vdb /srv/sb/docker xfs defaults 0 2\n"
    with pytest.raises(nosuid.NosuidError, match="line 2 already mounts"):
        nosuid.fstab_edit(text, "/srv/sb/docker", True)
    assert nosuid.fstab_edit(text, "/srv/sb/docker", False) == text
