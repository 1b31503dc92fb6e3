# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Parsing /proc/self/mountinfo: octal escapes, any bytes, nested mount points."""
from sandboxguard._core import mountinfo

SAMPLE = (
    b"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    b"30 22 0:25 / /srv/sb/docker/t1/work rw - tmpfs tmpfs rw\n"
    b"31 22 254:0 /data/src /srv/sb/docker/t1/with\\040space rw - ext4 /dev/vda rw\n"
    b"32 22 254:0 /x /srv/sb/docker/t1/nl\\012name\\134x rw master:2 - ext4 /dev/vda rw\n"
    b"33 22 0:26 / /srv/sb/docker/t1-other rw - tmpfs tmpfs rw\n"
    b"34 22 0:27 / /srv/sb/docker/t1/bad\xff rw - tmpfs none rw\n"
    b"garbage line\n"
)


def test_octal_escapes_are_decoded_to_bytes():
    assert mountinfo.decode_path(b"a\\040b\\011c\\012d\\134e") == b"a b\tc\nd\\e"


def test_fields_and_optional_fields_are_parsed():
    mounts = mountinfo.parse_mountinfo(SAMPLE)
    assert len(mounts) == 6
    bind = mounts[2]
    assert bind["mount_id"] == 31 and bind["parent_id"] == 22 and bind["dev"] == "254:0"
    assert bind["root"] == b"/data/src" and bind["mount_point"] == b"/srv/sb/docker/t1/with space"
    assert bind["fstype"] == "ext4" and bind["source"] == b"/dev/vda"
    assert mounts[3]["mount_point"] == b"/srv/sb/docker/t1/nl\nname\\x"


def test_mount_points_strictly_below_a_root():
    mounts = mountinfo.parse_mountinfo(SAMPLE)
    assert mountinfo.mount_points_under("/srv/sb/docker/t1", mounts) == [
        b"/srv/sb/docker/t1/bad\xff",
        b"/srv/sb/docker/t1/nl\nname\\x",
        b"/srv/sb/docker/t1/with space",
        b"/srv/sb/docker/t1/work",
    ]


def test_a_sibling_with_a_common_prefix_is_not_below():
    mounts = mountinfo.parse_mountinfo(SAMPLE)
    assert b"/srv/sb/docker/t1-other" not in mountinfo.mount_points_under("/srv/sb/docker/t1", mounts)
    assert mountinfo.mount_points_under("/srv/sb/docker/t1/work", mounts) == []


def test_everything_but_slash_is_below_slash():
    mounts = mountinfo.parse_mountinfo(SAMPLE)
    assert len(mountinfo.mount_points_under("/", mounts)) == 5


BINDS = (
    b"22 1 254:0 / / rw - ext4 /dev/vda rw\n"
    b"40 22 254:0 /usr/bin /srv/x rw - ext4 /dev/vda rw\n"
    b"41 22 254:1 / /data rw - ext4 /dev/vdb rw\n"
    b"42 22 254:1 /usr/lib /srv/y rw - ext4 /dev/vdb rw\n"
    b"43 22 254:2 /sub /srv/z rw - ext4 /dev/vdc rw\n"
)


def test_bind_mount_shows_its_source_path_through_the_root_mount():
    mounts = mountinfo.parse_mountinfo(BINDS)
    assert mountinfo.source_paths(40, b"/srv/x", mounts) == [b"/usr/bin"]
    assert mountinfo.source_paths(40, b"/srv/x/sub/dir/", mounts) == [b"/usr/bin/sub/dir"]


def test_bind_source_is_mapped_through_the_mount_of_its_own_filesystem():
    mounts = mountinfo.parse_mountinfo(BINDS)
    assert mountinfo.source_paths(42, b"/srv/y/python3", mounts) == [b"/data/usr/lib/python3"]


def test_filesystem_mounted_nowhere_else_and_paths_outside_the_mount_have_no_source():
    mounts = mountinfo.parse_mountinfo(BINDS)
    assert mountinfo.source_paths(43, b"/srv/z/a", mounts) == []
    assert mountinfo.source_paths(40, b"/srv/xy", mounts) == []
    assert mountinfo.source_paths(99, b"/srv/x", mounts) == []
    assert mountinfo.source_paths(22, b"/home/u", mounts) == []
