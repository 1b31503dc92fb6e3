# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The sandbox program on busybox alone: a chroot holding only busybox-static and its applets.

Debian's busybox-static (tools/apt-packages.txt) provides sh, readlink, stat, head, base64,
od, sed, tr, sleep and kill; no GNU tool is reachable inside the chroot.
"""
import hashlib
import os
import shutil
import stat
import subprocess
import time

import pytest
from fetch_fixtures import SECRET, make_file
from sandboxguard import fetch as F
from sandboxguard._fetch.policy import DEFAULT_OPEN_TIMEOUT_S
from sandboxguard.transport_local import LocalExec

pytestmark = [pytest.mark.root]

BUSYBOX = "/bin/busybox"
HOME = "/home/agent"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    top = tmp_path_factory.mktemp("busybox-root")
    os.chmod(top, 0o755)
    (top / "bin").mkdir()
    shutil.copy(BUSYBOX, top / "bin" / "busybox")
    applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True, check=True).stdout.split()
    for applet in applets:
        if applet != "busybox":
            os.symlink("busybox", top / "bin" / applet)
    for name in ("proc", "dev", "tmp", "home/agent/.ssh", "home/agent/out"):
        (top / name).mkdir(parents=True, exist_ok=True)
    make_file(str(top / "home/agent/.ssh/id_rsa"), SECRET, mode=0o600)
    make_file(str(top / "home/agent/liar"), b"")
    subprocess.run(["mount", "-t", "proc", "proc", str(top / "proc")], check=True)
    subprocess.run(["mount", "--bind", "/proc/cpuinfo", str(top / "home/agent/liar")], check=True)
    yield top
    subprocess.run(["umount", str(top / "home/agent/liar")], check=False)
    subprocess.run(["umount", str(top / "proc")], check=False)


@pytest.fixture
def channel(root):
    return LocalExec(prefix=["chroot", str(root)])


@pytest.fixture
def dest(tmp_path):
    path = tmp_path / "dest"
    path.mkdir()
    return path


def run(channel, src, dest, **kwargs):
    return F.fetch(channel, src, str(dest), remote_home=HOME, **kwargs)


def test_no_gnu_tool_is_reachable_in_the_chroot(root):
    out = subprocess.run(["chroot", str(root), "/bin/sh", "-c", "readlink -f /bin/stat; stat --version 2>&1"],
                         capture_output=True, text=True, check=False).stdout
    assert out.startswith("/bin/busybox\n")
    assert "GNU" not in out


def test_binary_file_round_trips_byte_exact(root, channel, dest):
    data = os.urandom(300 * 1024 + 1)
    make_file(str(root / "home/agent/out/model.bin"), data)
    report = run(channel, HOME + "/out/model.bin", dest)
    assert report["refused"] is None, report
    assert (dest / "model.bin").read_bytes() == data
    assert report["sha256"] == hashlib.sha256(data).hexdigest()


def test_symlink_to_ssh_key_is_refused_after_resolution(root, channel, dest):
    os.symlink(HOME + "/.ssh/id_rsa", root / "home/agent/out/keylink")
    report = run(channel, HOME + "/out/keylink", dest)
    assert (report["stage"], report["refused_code"]) == ("pass2", "denylisted")
    assert list(dest.iterdir()) == []


def test_hard_link_to_credential_file_is_refused(root, channel, dest):
    os.link(root / "home/agent/.ssh/id_rsa", root / "home/agent/out/notes.txt")
    report = run(channel, HOME + "/out/notes.txt", dest)
    assert report["refused_code"] == "hard_link"


def test_fifo_is_refused_without_blocking(root, channel, dest):
    os.mkfifo(root / "home/agent/out/pipe")
    started = time.monotonic()
    report = run(channel, HOME + "/out/pipe", dest)
    assert report["refused_code"] == "fifo"
    assert time.monotonic() - started < DEFAULT_OPEN_TIMEOUT_S


def test_file_that_lies_about_its_size_is_cut_at_max_bytes_plus_one(channel, dest):
    report = run(channel, HOME + "/liar", dest, max_bytes=100)
    assert (report["stage"], report["refused_code"]) == ("decode", "too_large")
    assert report["bytes_received"] < 101 * 4 // 3 + 1024


def test_file_of_max_bytes_plus_one_is_refused(root, channel, dest):
    make_file(str(root / "home/agent/out/big"), b"x" * 4097)
    report = run(channel, HOME + "/out/big", dest, max_bytes=4096)
    assert report["refused_code"] == "too_large"
    assert report["bytes_received"] < 1024


def test_setuid_executable_arrives_without_setid_bits(root, channel, dest):
    make_file(str(root / "home/agent/out/tool"), b"\x7fELF", mode=0o4755)
    report = run(channel, HOME + "/out/tool", dest)
    assert report["remote_mode"] == "04755"
    assert stat.S_IMODE(os.stat(dest / "tool").st_mode) == 0o644


def test_parent_directory_swapped_after_pass_2_is_caught_through_the_descriptor(root, channel, dest):
    (root / "home/agent/out/d").mkdir()
    make_file(str(root / "home/agent/out/d/r.txt"), b"report\n")
    make_file(str(root / "home/agent/.ssh/r.txt"), SECRET)

    def swap(resolved):
        os.rename(root / "home/agent/out/d", root / "home/agent/out/d.orig")
        os.symlink(HOME + "/.ssh", root / "home/agent/out/d")

    report = run(channel, HOME + "/out/d/r.txt", dest, after_pass2=swap)
    assert (report["stage"], report["refused_code"]) == ("read", "swapped")
    assert list(dest.iterdir()) == []
