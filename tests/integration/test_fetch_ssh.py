# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""fetch over a real sshd on 127.0.0.1 with the paramiko transport (library and CLI).

The sandbox user's shell is noisy and hostile (see fetch_fixtures.HOSTILE_BASHRC).
"""
import hashlib
import json
import os
import stat
import subprocess
import sys
import time

import pytest
from fetch_fixtures import SECRET, SSHD, make_file
from sandboxguard import fetch as F
from sandboxguard._fetch.policy import DEFAULT_OPEN_TIMEOUT_S
from sandboxguard.transport_ssh import SSHExec

pytestmark = [pytest.mark.root]

SMALL = 1024  # a refusal moves markers and a reason, never payload


@pytest.fixture(scope="module")
def sshd():
    server = SSHD()
    yield server
    server.stop()


@pytest.fixture
def work(sshd):
    path = sshd.workdir()
    yield path
    subprocess.run(["rm", "-rf", path], check=False)


@pytest.fixture
def channel(sshd):
    with SSHExec("127.0.0.1", port=sshd.port, user="sgfetch", key_filename=sshd.client_key,
                 known_hosts=sshd.known_hosts) as ssh:
        yield ssh


@pytest.fixture
def dest(tmp_path):
    path = tmp_path / "dest"
    path.mkdir()
    return path


def run(channel, sshd, src, dest, **kwargs):
    kwargs.setdefault("remote_home", sshd.home)
    return F.fetch(channel, src, str(dest), **kwargs)


def test_binary_file_round_trips_byte_exact(sshd, work, channel, dest):
    data = os.urandom(3 * 1024 * 1024 + 7)
    make_file(os.path.join(work, "model.bin"), data, owner=sshd.user)
    report = run(channel, sshd, os.path.join(work, "model.bin"), dest)
    assert report["refused"] is None, report
    assert (dest / "model.bin").read_bytes() == data
    assert report["sha256"] == hashlib.sha256(data).hexdigest()
    assert report["noise_lines"] >= 2  # the hostile .bashrc spoke on both calls


def test_symlink_to_ssh_key_is_refused_after_resolution_and_nothing_is_written(sshd, work, channel, dest):
    os.symlink(os.path.join(sshd.home, ".ssh", "id_rsa"), os.path.join(work, "report.pdf"))
    report = run(channel, sshd, os.path.join(work, "report.pdf"), dest)
    assert (report["stage"], report["refused_code"]) == ("pass2", "denylisted")
    assert report["bytes_received"] < SMALL
    assert list(dest.iterdir()) == []


def test_symlink_to_ssh_key_is_refused_with_home_unknown(sshd, work, channel, dest):
    os.symlink(os.path.join(sshd.home, ".ssh", "id_rsa"), os.path.join(work, "report.pdf"))
    report = run(channel, sshd, os.path.join(work, "report.pdf"), dest, remote_home=None)
    assert report["refused_code"] == "denylisted"
    assert list(dest.iterdir()) == []


def test_hard_link_to_credential_file_is_refused(sshd, work, channel, dest):
    os.link(os.path.join(sshd.home, ".ssh", "id_rsa"), os.path.join(work, "notes.txt"))
    report = run(channel, sshd, os.path.join(work, "notes.txt"), dest)
    assert (report["stage"], report["refused_code"]) == ("read", "hard_link")
    assert report["bytes_received"] < SMALL
    assert list(dest.iterdir()) == []


def test_dev_zero_is_refused_before_the_channel_is_used(sshd, channel, dest):
    report = run(channel, sshd, "/dev/zero", dest)
    assert (report["stage"], report["bytes_received"]) == ("pass1", 0)


def test_symlink_to_dev_zero_is_refused_without_moving_its_bytes(sshd, work, channel, dest):
    os.symlink("/dev/zero", os.path.join(work, "zeros"))
    report = run(channel, sshd, os.path.join(work, "zeros"), dest)
    assert (report["stage"], report["refused_code"]) == ("pass2", "denylisted")
    assert report["bytes_received"] < SMALL


def test_file_of_max_bytes_plus_one_is_refused_without_moving_its_bytes(sshd, work, channel, dest):
    cap = 1024 * 1024
    make_file(os.path.join(work, "big"), b"x" * (cap + 1), owner=sshd.user)
    report = run(channel, sshd, os.path.join(work, "big"), dest, max_bytes=cap)
    assert report["refused_code"] == "too_large"
    assert report["bytes_received"] < SMALL
    assert list(dest.iterdir()) == []


def test_file_that_lies_about_its_size_is_cut_at_max_bytes_plus_one(sshd, work, channel, dest):
    # /proc/cpuinfo is a regular file of size 0 with kilobytes of content: the size check
    # passes, so only head -c max+1 inside the sandbox bounds what moves.
    target = os.path.join(work, "cpuinfo")
    make_file(target, b"")
    subprocess.run(["mount", "--bind", "/proc/cpuinfo", target], check=True)
    try:
        report = run(channel, sshd, target, dest, max_bytes=100)
    finally:
        subprocess.run(["umount", target], check=True)
    assert (report["stage"], report["refused_code"]) == ("decode", "too_large")
    assert report["bytes_received"] < 101 * 4 // 3 + SMALL
    assert list(dest.iterdir()) == []


def test_fifo_is_refused_without_blocking(sshd, work, channel, dest):
    os.mkfifo(os.path.join(work, "pipe"))
    started = time.monotonic()
    report = run(channel, sshd, os.path.join(work, "pipe"), dest)
    assert report["refused_code"] == "fifo"
    assert time.monotonic() - started < DEFAULT_OPEN_TIMEOUT_S
    assert list(dest.iterdir()) == []


def test_setuid_executable_arrives_without_setid_bits(sshd, work, channel, dest):
    make_file(os.path.join(work, "tool"), b"\x7fELF not really", mode=0o4755)
    report = run(channel, sshd, os.path.join(work, "tool"), dest)
    assert report["remote_mode"] == "04755"
    assert stat.S_IMODE(os.stat(dest / "tool").st_mode) == 0o644


def test_symlink_swapped_in_by_the_sandbox_after_pass_2_leaves_nothing(sshd, work, channel, dest):
    make_file(os.path.join(work, "swapme"), b"an honest report\n", owner=sshd.user)
    report = run(channel, sshd, os.path.join(work, "swapme"), dest)
    assert os.path.islink(os.path.join(work, "swapme")), "the hostile .bashrc did not swap"
    assert (report["stage"], report["refused_code"]) == ("read", "swapped")
    assert list(dest.iterdir()) == []


def test_strict_mode_fetches_nothing(sshd, work, channel, dest):
    make_file(os.path.join(work, "r.txt"), b"fine\n", owner=sshd.user)
    report = run(channel, sshd, os.path.join(work, "r.txt"), dest, strict=True)
    assert (report["refused_code"], report["bytes_received"]) == ("strict", 0)
    assert list(dest.iterdir()) == []


# ---------------------------------------------------------------- the CLI over the same sshd

def cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(F.__file__), ".."))
    return subprocess.run([sys.executable, "-m", "sandboxguard_cli", "fetch", *args], capture_output=True,
                          text=True, env=env, check=False)


def ssh_args(sshd):
    return ["--ssh", "sgfetch@127.0.0.1:%d" % sshd.port, "--identity", sshd.client_key,
            "--known-hosts", sshd.known_hosts, "--remote-home", sshd.home]


def test_cli_fetch_prints_json_report_and_exits_0(sshd, work, dest):
    make_file(os.path.join(work, "r.txt"), b"cli\n", owner=sshd.user)
    proc = cli(*ssh_args(sshd), os.path.join(work, "r.txt"), "--dest", str(dest), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sha256"] == hashlib.sha256(b"cli\n").hexdigest()
    assert (dest / "r.txt").read_bytes() == b"cli\n"


def test_cli_refusal_exits_1_and_names_the_rule(sshd, work, dest):
    os.symlink(os.path.join(sshd.home, ".ssh", "id_rsa"), os.path.join(work, "r.txt"))
    proc = cli(*ssh_args(sshd), os.path.join(work, "r.txt"), "--dest", str(dest))
    assert proc.returncode == 1
    assert ".ssh" in proc.stdout
    assert SECRET.decode() not in proc.stdout + proc.stderr


def test_cli_unknown_host_key_is_rejected(sshd, work, dest, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    proc = cli("--ssh", "sgfetch@127.0.0.1:%d" % sshd.port, "--identity", sshd.client_key, "--known-hosts",
               str(empty), os.path.join(work, "r.txt"), "--dest", str(dest))
    assert proc.returncode == 1
    assert "host key" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ssh_channel_stops_reading_at_max_output(sshd):
    # A sandbox that ignores the in-sandbox cap still cannot push more than this.
    with SSHExec("127.0.0.1", port=sshd.port, user="sgfetch", key_filename=sshd.client_key,
                 known_hosts=sshd.known_hosts, max_output=1000) as ssh:
        rc, out, _err = ssh(["/bin/sh", "-c", "head -c 100000000 /dev/zero"])
    assert (rc, len(out)) == (-1, 1001)
