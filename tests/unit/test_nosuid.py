# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""nosuid's pure parts: mountinfo reading, the boot unit's text (escaped so no path text adds a
line or a specifier), the list of roots, 1.0.0's persistence read back, and per-root refusal."""
import os
import subprocess

import pytest
from sandboxguard._core import fdmount, mountinfo, nosuid_legacy
from sandboxguard._privileged import nosuid

BASE = (b"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        b"30 22 0:50 / /srv rw,noexec,nosuid,nodev,relatime - tmpfs tmpfs rw\n")
SELF_BIND = b"40 22 254:0 /home/a/sb/docker /home/a/sb/docker rw,nosuid,nodev,relatime - ext4 /dev/vda rw\n"
FOREIGN = b"41 22 254:3 / /home/a/sb/docker rw,relatime - xfs /dev/vdb rw\n"
PLAIN_BIND = b"42 22 254:0 /home/a/sb/docker /home/a/sb/docker ro,noatime - ext4 /dev/vda rw\n"


def mounts(*extra):
    return mountinfo.parse_mountinfo(BASE + b"".join(extra))


def test_describe_says_what_the_path_is():
    assert nosuid.describe("/home/a/sb/docker", mounts()) == "/home/a/sb/docker: not a mount point"
    assert nosuid.describe("/home/a/sb/docker", mounts(SELF_BIND)) == (
        "/home/a/sb/docker: bind mount of itself, rw,nosuid,nodev,relatime")
    assert nosuid.describe("/home/a/sb/docker", mounts(FOREIGN)) == (
        "/home/a/sb/docker: mount of /dev/vdb (xfs), rw,relatime")
    # on a mount that already has both flags: nothing to do, and it says why
    assert nosuid.describe("/srv/sb/docker", mounts()) == (
        "/srv/sb/docker: not a mount point, on /srv, which is rw,noexec,nosuid,nodev,relatime")


def test_describe_escapes_a_name_with_a_newline_and_bytes_that_are_not_utf8():
    path = os.fsdecode(b"/home/a/evil\nFAKE line\xff/docker")
    line = nosuid.describe(path, mounts())
    assert "\n" not in line and "\\n" in line and "\\xff" in line


def test_self_bind_foreign_and_stacked_mounts_are_told_apart():
    table = mounts(PLAIN_BIND, b"43 42 254:0 /home/a/sb/docker /home/a/sb/docker rw,nosuid,nodev - ext4 /dev/vda rw\n")
    by_id = {m["mount_id"]: m for m in table}
    assert nosuid.is_self_bind(by_id[42], table) and nosuid.is_self_bind(by_id[43], table)
    assert [m["mount_id"] for m in nosuid.mounts_at("/home/a/sb/docker", table)] == [42, 43]
    foreign = mounts(FOREIGN)
    assert not nosuid.is_self_bind(nosuid.mount_by_id(41, foreign), foreign)
    assert nosuid.has_required(by_id[43]) and not nosuid.has_required(by_id[42])


# -- the unit: no path text can add a line or a specifier ------------------------------
HOSTILE = [
    "/srv/with\nExecStartPre=/bin/sh -c evil",
    "/srv/50%n%i%%/x",
    "/srv/$HOME/${PATH}/$$",
    "/srv/a b\tc/\"quoted\" 'single'\\back",
    os.fsdecode(b"/srv/not-utf8-\xff\xfe/\x1b[31m"),
]


@pytest.mark.parametrize("text", HOSTILE)
def test_unit_quote_is_one_printable_word_with_no_specifier_or_variable(text):
    word = nosuid.unit_quote(text)
    assert word.isprintable() and "\n" not in word and "\t" not in word
    assert word.startswith('"') and word.endswith('"')
    body = word[1:-1]
    assert "%" not in body.replace("%%", "")  # every % doubled: no specifier
    assert "$" not in body.replace("$$", "")  # every $ doubled: no variable
    inner = body.replace('\\"', "").replace("\\\\", "")
    assert '"' not in inner  # no quote ends the word early


def _unescape_like_systemd(word):
    """systemd.syntax(7) for one double-quoted word: C escapes, %% and $$ (a test oracle)."""
    body = word[1:-1].replace("%%", "%").replace("$$", "$")
    out, i = bytearray(), 0
    simple = {"n": 10, "t": 9, "\\": 92, '"': 34, "'": 39}
    while i < len(body):
        if body[i] == "\\":
            if body[i + 1] == "x":
                out.append(int(body[i + 2:i + 4], 16))
                i += 4
                continue
            out.append(simple[body[i + 1]])
            i += 2
            continue
        out.append(ord(body[i]))
        i += 1
    return bytes(out)


@pytest.mark.parametrize("text", HOSTILE)
def test_unit_quote_reads_back_as_exactly_the_bytes(text):
    assert _unescape_like_systemd(nosuid.unit_quote(text)) == os.fsencode(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_the_unit_has_the_same_lines_whatever_its_paths_hold(text):
    plain = nosuid.unit_text("/usr/bin/python3", "/usr/local/sbin/sandboxguard-nosuid", "/etc/sandboxguard/x")
    hostile = nosuid.unit_text(text, text + "/prog", text + "/list")
    assert len(hostile.splitlines()) == len(plain.splitlines())
    assert [line.split("=", 1)[0] for line in hostile.splitlines()] == [
        line.split("=", 1)[0] for line in plain.splitlines()]
    assert all(line.isprintable() for line in hostile.splitlines())


def test_the_unit_runs_the_program_over_the_list_before_the_engine_and_holds_no_root():
    text = nosuid.unit_text("/usr/bin/python3", "/usr/local/sbin/sandboxguard-nosuid", "/etc/sandboxguard/nosuid-paths")
    assert text.startswith(nosuid.MARKER + "\n")
    assert 'ExecStart="/usr/bin/python3" -I "/usr/local/sbin/sandboxguard-nosuid" --paths-file ' \
           '"/etc/sandboxguard/nosuid-paths"' in text
    assert "Type=oneshot" in text and "RemainAfterExit=yes" in text
    assert "Before=docker.service" in text and "WantedBy=multi-user.target" in text
    assert "Where=" not in text and "What=" not in text


def test_systemd_analyze_accepts_the_unit(tmp_path):
    if not os.path.exists("/usr/bin/systemd-analyze"):
        pytest.skip("no systemd-analyze here")
    program = tmp_path / "prog"
    program.write_text(fdmount.program_source())
    program.chmod(0o755)
    unit = tmp_path / nosuid.UNIT
    unit.write_text(nosuid.unit_text("/usr/bin/python3", str(program), str(tmp_path / "50% $x\nlist")))
    proc = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert nosuid.UNIT not in proc.stderr, proc.stderr  # nothing said about our unit


# -- the list of roots -------------------------------------------------------------
@pytest.mark.parametrize("path", [*HOSTILE, "/home/a/.hermes/sandboxes/docker", "/x\\x41"])
def test_the_list_keeps_any_path_on_one_line_and_reads_it_back(path):
    text = fdmount.list_text([path, "/srv/plain/docker"])
    lines = text.splitlines()
    assert lines[0] == fdmount.LIST_MARKER and len(lines) == 3
    assert all(line.isprintable() and " " not in line for line in lines[1:])
    assert sorted(fdmount.parse_list(text.encode())) == sorted([os.fsencode(path), b"/srv/plain/docker"])


def test_the_list_is_sorted_and_unique_so_a_second_run_writes_the_same_text():
    assert fdmount.list_text(["/b", "/a", "/b"]) == fdmount.list_text(["/a", "/b"])


def test_shown_makes_one_printable_line():
    assert fdmount.shown(b"/a\nb\xff\\") == "/a\\x0ab\\xff\\x5c"


# -- 1.0.0's persistence, read back for the migration --------------------------------
def test_old_mount_units_and_fstab_lines_are_found_and_removed_only_when_marked():
    old_unit = "\n".join([nosuid.MARKER, "[Mount]", "What=/srv/50%%/docker", "Where=/srv/50%%/docker", ""])
    assert nosuid_legacy.old_unit_path(old_unit) == "/srv/50%/docker"
    assert nosuid_legacy.old_unit_path("[Mount]\nWhere=/srv/x\n") is None  # not ours: left alone
    fstab = ("UUID=1 / ext4 defaults 0 1\n"
             "/srv/a\\040b/docker /srv/a\\040b/docker none bind,nosuid,nodev 0 0  %s\n"
             "/dev/vdb /srv/sb/docker xfs defaults 0 2\n" % nosuid.MARKER)
    assert nosuid_legacy.fstab_ours(fstab) == ["/srv/a b/docker"]
    assert nosuid_legacy.fstab_remove(fstab) == "UUID=1 / ext4 defaults 0 1\n/dev/vdb /srv/sb/docker xfs defaults 0 2\n"
    assert nosuid_legacy.fstab_remove(fstab, {"/srv/other"}) == fstab


@pytest.mark.parametrize("path,name", [
    ("/srv/sb/docker", "srv-sb-docker.mount"),
    ("/var/tmp/a b/.x-y/\u00fc", "var-tmp-a\\x20b-.x\\x2dy-\\xc3\\xbc.mount"),  # as systemd-escape --path
    ("/.hidden/x", "\\x2ehidden-x.mount"),
])
def test_unit_name_escapes_like_systemd_escape(path, name):
    assert nosuid_legacy.unit_name(path) == name


# -- arguments and per-root refusal -------------------------------------------------------
def test_bad_arguments_are_refused_with_the_choices():
    with pytest.raises(nosuid.NosuidError, match="state must be one of"):
        nosuid.ensure(["/srv/x"], state="gone")
    with pytest.raises(nosuid.NosuidError, match="persist must be one of"):
        nosuid.ensure(["/srv/x"], persist="cron")
    with pytest.raises(nosuid.NosuidError, match="no roots"):
        nosuid.ensure([])


def test_each_refused_root_is_refused_alone_with_a_warning_naming_it(tmp_path):
    good = tmp_path / "sb" / "docker"
    good.mkdir(parents=True)
    (tmp_path / "linked").symlink_to(tmp_path / "sb")
    result = nosuid.ensure([str(good), str(tmp_path / "linked" / "docker"), "/usr/bin", "relative/docker",
                            str(tmp_path / "not-yet" / "docker")], persist="none", dry_run=True)
    refused = {r["path"]: r["reason"] for r in result["refused"]}
    assert set(refused) == {str(tmp_path / "linked" / "docker"), "/usr/bin", "relative/docker"}
    assert "symlink" in refused[str(tmp_path / "linked" / "docker")]
    assert "system path" in refused["/usr/bin"]
    assert len(result["warnings"]) == 3 and all("refused" in w for w in result["warnings"])
    assert result["missing"] == [str(tmp_path / "not-yet" / "docker")]
    assert result["roots"] == [str(good)]  # the good root is still handled
    assert result["errors"] == []
