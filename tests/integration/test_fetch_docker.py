# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""fetch into a real container (sandboxguard/debian:12, --network none) with the Docker SDK exec transport."""
import hashlib
import os
import stat
import time

import pytest
from fetch_fixtures import SECRET, Container
from sandboxguard import fetch as F
from sandboxguard._fetch.policy import DEFAULT_OPEN_TIMEOUT_S
from sandboxguard.transport_docker import DockerExec

pytestmark = [pytest.mark.docker]

HOME = "/home/agent"
SMALL = 1024


@pytest.fixture(scope="module")
def box():
    # /proc/cpuinfo bound in as a file: a regular file of size 0 with kilobytes of content.
    container = Container(extra=("-v", "/proc/cpuinfo:/srv/liar/cpuinfo:ro"))
    yield container
    container.remove()


@pytest.fixture
def work(box):
    name = "%s/out/t%d" % (HOME, time.monotonic_ns())
    box.sh("mkdir -p %s" % name, user="agent")
    return name


@pytest.fixture
def channel(box):
    return DockerExec(box.name, user="agent")


@pytest.fixture
def dest(tmp_path):
    path = tmp_path / "dest"
    path.mkdir()
    return path


def run(channel, src, dest, **kwargs):
    kwargs.setdefault("remote_home", HOME)
    return F.fetch(channel, src, str(dest), **kwargs)


def test_binary_file_round_trips_byte_exact(box, work, channel, dest):
    data = os.urandom(2 * 1024 * 1024 + 3)
    box.put(work + "/model.bin", data)
    report = run(channel, work + "/model.bin", dest)
    assert report["refused"] is None, report
    assert (dest / "model.bin").read_bytes() == data
    assert report["sha256"] == hashlib.sha256(data).hexdigest()


def test_symlink_to_ssh_key_is_refused_after_resolution_and_nothing_is_written(box, work, channel, dest):
    box.sh("ln -s %s/.ssh/id_rsa %s/report.pdf" % (HOME, work), user="agent")
    report = run(channel, work + "/report.pdf", dest)
    assert (report["stage"], report["refused_code"]) == ("pass2", "denylisted")
    assert report["bytes_received"] < SMALL
    assert list(dest.iterdir()) == []


def test_hard_link_to_credential_file_is_refused(box, work, channel, dest):
    box.sh("ln %s/.ssh/id_rsa %s/notes.txt" % (HOME, work), user="agent")
    report = run(channel, work + "/notes.txt", dest)
    assert (report["stage"], report["refused_code"]) == ("read", "hard_link")
    assert list(dest.iterdir()) == []


def test_symlink_to_dev_zero_is_refused_without_moving_its_bytes(box, work, channel, dest):
    box.sh("ln -s /dev/zero %s/zeros" % work, user="agent")
    report = run(channel, work + "/zeros", dest)
    assert report["refused_code"] == "denylisted"
    assert report["bytes_received"] < SMALL


def test_device_node_outside_dev_is_refused_before_it_is_opened(box, work, channel, dest):
    box.sh("mknod %s/zero c 1 5 && chmod 666 %s/zero" % (work, work))
    report = run(channel, work + "/zero", dest)
    assert (report["stage"], report["refused_code"]) == ("read", "not_regular")
    assert report["bytes_received"] < SMALL


def test_file_of_max_bytes_plus_one_is_refused_without_moving_its_bytes(box, work, channel, dest):
    cap = 1024 * 1024
    box.sh("head -c %d /dev/zero > %s/big" % (cap + 1, work), user="agent")
    report = run(channel, work + "/big", dest, max_bytes=cap)
    assert report["refused_code"] == "too_large"
    assert report["bytes_received"] < SMALL
    assert list(dest.iterdir()) == []


def test_file_that_lies_about_its_size_is_cut_at_max_bytes_plus_one(channel, dest):
    report = run(channel, "/srv/liar/cpuinfo", dest, max_bytes=100)
    assert (report["stage"], report["refused_code"]) == ("decode", "too_large")
    assert report["bytes_received"] < 101 * 4 // 3 + SMALL


def test_fifo_is_refused_without_blocking(box, work, channel, dest):
    box.sh("mkfifo %s/pipe" % work, user="agent")
    started = time.monotonic()
    report = run(channel, work + "/pipe", dest)
    assert report["refused_code"] == "fifo"
    assert time.monotonic() - started < DEFAULT_OPEN_TIMEOUT_S


def test_setuid_executable_arrives_without_setid_bits(box, work, channel, dest):
    box.sh("cp /bin/true %s/tool && chmod 6755 %s/tool" % (work, work))
    report = run(channel, work + "/tool", dest)
    assert report["remote_mode"] == "06755"
    assert stat.S_IMODE(os.stat(dest / "tool").st_mode) == 0o644


def test_symlink_swapped_in_after_pass_2_leaves_nothing(box, work, channel, dest):
    box.put(work + "/report.txt", b"an honest report\n")

    def swap(resolved):
        box.sh("mv %s/report.txt %s/report.orig && ln -s %s/.ssh/id_rsa %s/report.txt" % (work, work, HOME, work),
               user="agent")

    report = run(channel, work + "/report.txt", dest, after_pass2=swap)
    assert (report["stage"], report["refused_code"]) == ("read", "swapped")
    assert list(dest.iterdir()) == []


def test_parent_directory_swapped_after_pass_2_is_caught_through_the_descriptor(box, work, channel, dest):
    box.sh("mkdir %s/d && echo report > %s/d/r.txt && echo '%s' > %s/.ssh/r.txt"
           % (work, work, SECRET.decode().splitlines()[0], HOME), user="agent")

    def swap(resolved):
        box.sh("mv %s/d %s/d.orig && ln -s %s/.ssh %s/d" % (work, work, HOME, work), user="agent")

    report = run(channel, work + "/d/r.txt", dest, after_pass2=swap)
    assert (report["stage"], report["refused_code"]) == ("read", "swapped")
    assert list(dest.iterdir()) == []


def test_strict_mode_fetches_nothing(box, work, channel, dest):
    box.put(work + "/r.txt", b"fine\n")
    report = run(channel, work + "/r.txt", dest, strict=True)
    assert (report["refused_code"], report["bytes_received"]) == ("strict", 0)
    assert list(dest.iterdir()) == []


def test_docker_channel_stops_reading_at_max_output(box):
    rc, out, _err = DockerExec(box.name, max_output=1000)(["/bin/sh", "-c", "head -c 100000000 /dev/zero"])
    assert (rc, len(out)) == (-1, 1001)
