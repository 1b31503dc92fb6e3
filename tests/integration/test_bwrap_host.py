# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""bwrap on this Debian 12 host: a real 0.12.0 built from Debian's trixie source, probed as a
real unprivileged user with every isolation check green; Debian's own 0.8.0 fails the version check.

Needs root (useradd, privilege drop), the apt packages in tools/apt-packages.txt (bubblewrap,
meson, ninja-build, pkg-config, libcap-dev) and, the first time, Debian's archive for the
source tarball (tools/build-bwrap.sh caches the build under .cache/bwrap/).
"""
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
from sandboxguard import bwrap, credentials
from sandboxguard._bwrap.argv import SANDBOX_BASE_PROCESSES
from sandboxguard._bwrap.checks import ISOLATION_CHECKS
from sandboxguard._bwrap.diagnosis import version_at_least
from sandboxguard._bwrap.host import existing_docker_sockets, hidden_paths, read_bwrap_version

pytestmark = [pytest.mark.root, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(TOP, "python", "src")
# One user per test run: two runs at once (CI and a developer) must not share or delete it.
AGENT = "sg-bwrap-%d" % os.getpid()
DEBIAN_BWRAP = "/usr/bin/bwrap"


@pytest.fixture(scope="session")
def built_bwrap():
    done = subprocess.run(["bash", os.path.join(TOP, "tools", "build-bwrap.sh"), "build"], capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    path = done.stdout.strip().splitlines()[-1]
    assert version_at_least(read_bwrap_version(path)[0], "0.9.0")
    return path


@pytest.fixture(scope="session")
def agent():
    """A real unprivileged user with credential stores and a runtime dir holding a socket."""
    if os.geteuid() != 0:
        pytest.fail("these tests create a user and drop privileges: run them as root")
    subprocess.run(["userdel", "-r", AGENT], capture_output=True, check=False)
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", AGENT], check=True)
    entry = pwd.getpwnam(AGENT)
    home = entry.pw_dir
    ssh = os.path.join(home, ".ssh")
    os.mkdir(ssh, 0o700)
    with open(os.path.join(ssh, "id_ed25519"), "w") as handle:
        handle.write("-----BEGIN OPENSSH PRIVATE KEY----- not really\n")
    with open(os.path.join(home, ".netrc"), "w") as handle:
        handle.write("machine example.org login agent password hunter2\n")
    run_user = "/run/user/%d" % entry.pw_uid
    shutil.rmtree(run_user, ignore_errors=True)  # left over from an interrupted run
    os.makedirs(run_user, mode=0o700)
    agent_socket = socket.socket(socket.AF_UNIX)
    agent_socket.bind(os.path.join(run_user, "ssh-agent.sock"))
    for root, dirs, files in os.walk(home):
        for name in dirs + files:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)
    for path in (run_user, os.path.join(run_user, "ssh-agent.sock")):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    yield entry
    agent_socket.close()
    shutil.rmtree(run_user, ignore_errors=True)
    subprocess.run(["userdel", "-r", AGENT], capture_output=True, check=False)


def cli(*args):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "sandboxguard_cli", "bwrap-probe", *args], capture_output=True,
                          text=True, env=env, check=False, timeout=120)


@pytest.fixture(scope="session")
def passing_report(built_bwrap, agent):
    done = cli("--user", AGENT, "--bwrap", built_bwrap, "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    return json.loads(done.stdout)


def test_built_bwrap_passes_the_probe_as_the_agent_user(passing_report):
    assert passing_report["ok"] is True
    assert passing_report["reason"] == "ok"
    assert passing_report["bwrap"]["meets_min"] is True
    assert passing_report["user"]["name"] == AGENT


def test_every_isolation_check_is_green_on_this_host(passing_report):
    statuses = {check["name"]: check["status"] for check in passing_report["isolation"]}
    expected = {name: "pass" for name in ISOLATION_CHECKS}
    expected["network_loopback_only"] = "skipped"  # the default profile, network, shares the host network
    if not existing_docker_sockets():
        expected["docker_socket_masked"] = "skipped"  # only when no engine runs here
    assert statuses == expected, passing_report["isolation"]


def test_the_workspace_profile_keeps_loopback_only(built_bwrap, agent):
    done = cli("--user", AGENT, "--bwrap", built_bwrap, "--json", "--profile", "workspace",
               "--check", "network_loopback_only")
    report = json.loads(done.stdout)
    assert done.returncode == 0, report
    assert [c["status"] for c in report["isolation"]] == ["pass"]


def test_the_process_limit_is_set_inside_the_sandbox_and_counts_it_alone(built_bwrap, agent):
    # 60 processes of the agent's uid on the host, a limit of 20: in front of bwrap RLIMIT_NPROC
    # would count the 60 and bwrap could not even fork; set inside it counts the sandbox alone.
    busy = [subprocess.Popen(["sleep", "120"], user=agent.pw_uid, group=agent.pw_gid) for _ in range(60)]
    try:
        report = bwrap.probe(user=AGENT, bwrap=built_bwrap, limits={"max_procs": 20},
                             checks=["user_namespace", "rlimit_nproc"])
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    assert report["ok"] is True, report
    assert report["process_limit_scoped"] is True
    statuses = {c["name"]: (c["status"], c["detail"]) for c in report["isolation"]}
    assert statuses["rlimit_nproc"] == ("pass", "max processes is %d" % (20 + SANDBOX_BASE_PROCESSES))
    argv = report["probe"]["argv"]
    assert not any(a.startswith("--nproc") for a in argv[:argv.index(built_bwrap)])


def test_every_limit_zero_runs_no_prlimit(built_bwrap, agent):
    report = bwrap.probe(user=AGENT, bwrap=built_bwrap, limits={"memory_mb": 0, "cpu_seconds": 0, "max_procs": 0},
                         checks=["user_namespace", "rlimit_as", "rlimit_cpu", "rlimit_nproc"])
    assert report["ok"] is True, report
    assert not any("prlimit" in a for a in report["probe"]["argv"])
    assert [c["status"] for c in report["isolation"]] == ["pass", "skipped", "skipped", "skipped"]


# A file for the stores that are files in the tools that own them, a directory otherwise.
FILE_STORES = {".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials", ".boto", ".s3cmd", ".env",
               ".config/git/credentials", ".config/npm/npmrc", ".cargo/credentials", ".cargo/credentials.toml",
               ".gem/credentials", ".m2/settings.xml", ".gradle/gradle.properties", ".cache/huggingface/token"}


def test_every_store_of_the_one_list_is_hidden_in_the_real_sandbox(built_bwrap, agent):
    home = agent.pw_dir
    made = []
    try:
        for rel in credentials.home_stores("bwrap"):
            path = os.path.join(home, rel)
            if os.path.lexists(path):
                continue  # the fixture's .ssh and .netrc
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if rel in FILE_STORES:
                with open(path, "w") as handle:
                    handle.write("secret\n")
            else:
                os.makedirs(path)
                with open(os.path.join(path, "token"), "w") as handle:
                    handle.write("secret\n")
            made.append(path)
        for root, dirs, files in os.walk(home):
            for name in dirs + files:
                os.chown(os.path.join(root, name), agent.pw_uid, agent.pw_gid)
        dirs, files = hidden_paths(home)
        assert len(dirs) + len(files) == len(credentials.home_stores("bwrap"))
        report = bwrap.probe(user=AGENT, bwrap=built_bwrap, checks=["credentials_hidden"])
        assert report["ok"] is True, report
        (check,) = report["isolation"]
        assert check["status"] == "pass", check
        for path in dirs + files:
            assert "%s is empty" % path in check["detail"]
    finally:
        for path in reversed(made):
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)


def test_credential_stores_of_the_agent_are_the_ones_checked(passing_report, agent):
    (check,) = [c for c in passing_report["isolation"] if c["name"] == "credentials_hidden"]
    assert os.path.join(agent.pw_dir, ".ssh") in check["detail"]
    assert os.path.join(agent.pw_dir, ".netrc") in check["detail"]


def test_the_sandbox_runs_as_the_agent_user_not_root(built_bwrap, agent):
    """A wrapper in front of bwrap records who starts the sandbox."""
    workdir = tempfile.mkdtemp(prefix="sg-bwrap-wrapper-", dir="/var/tmp")
    try:
        # the agent user appends to the log here
        os.chmod(workdir, 0o777)
        log = os.path.join(workdir, "uids")
        wrapper = os.path.join(workdir, "bwrap")
        with open(wrapper, "w") as handle:
            handle.write('#!/bin/sh\n[ "$1" = --version ] || id -u >> %s\nexec %s "$@"\n' % (log, built_bwrap))
        # the agent user runs it
        os.chmod(wrapper, 0o755)
        done = cli("--user", AGENT, "--bwrap", wrapper, "--json", "--check", "user_namespace")
        assert done.returncode == 0, done.stdout + done.stderr
        with open(log) as handle:
            uids = handle.read().split()
        # The scoped process-limit probe and the sandbox itself: both as the agent user.
        assert uids and set(uids) == {str(agent.pw_uid)}
    finally:
        shutil.rmtree(workdir)


def test_debian_12_bwrap_fails_the_version_check_with_the_minimum_named(agent):
    done = cli("--user", AGENT, "--bwrap", DEBIAN_BWRAP, "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert report["reason"] == "version-too-old"
    assert report["message"] == "bwrap 0.8.0 at /usr/bin/bwrap is older than the minimum 0.9.0"
    assert report["remediation"] == "install"
    # The library names the fix in its own terms; the role adds its variable names (issue 11 item 7).
    assert "upstream release tarball" in report["remediation_text"]
    assert "bwrap_" not in report["remediation_text"]


def test_debian_12_bwrap_human_output_names_the_fix(agent):
    done = cli("--user", AGENT, "--bwrap", DEBIAN_BWRAP)
    assert done.returncode == 1
    assert "FAIL (version-too-old)" in done.stdout
    assert "install bubblewrap >= 0.9.0" in done.stdout


def test_probing_as_root_is_refused_with_exit_2(built_bwrap):
    done = cli("--user", "root", "--bwrap", built_bwrap)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "refusing to probe as root" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_root_without_a_user_is_told_to_name_the_agent(built_bwrap):
    done = cli("--bwrap", built_bwrap)
    assert done.returncode == 2
    assert "pass --user AGENT" in done.stderr


def test_a_hung_sandbox_is_killed_at_the_timeout(built_bwrap, agent):
    report = bwrap.probe(user=AGENT, bwrap=built_bwrap, timeout=1, checks=["user_namespace"])
    assert report["ok"] is True  # the checks are fast; now make the sandbox hang
    workdir = tempfile.mkdtemp(prefix="sg-bwrap-hang-", dir="/var/tmp")
    try:
        # the agent user enters it
        os.chmod(workdir, 0o755)
        wrapper = os.path.join(workdir, "bwrap")
        with open(wrapper, "w") as handle:
            handle.write('#!/bin/sh\n[ "$1" = --version ] && exec %s --version\nexec sleep 30\n' % built_bwrap)
        # the agent user runs it
        os.chmod(wrapper, 0o755)
        report = bwrap.probe(user=AGENT, bwrap=wrapper, timeout=1, checks=["user_namespace"])
    finally:
        shutil.rmtree(workdir)
    assert report["reason"] == "timeout"
    assert report["probe"]["timed_out"] is True
    assert report["probe"]["elapsed"] < 10
    assert report["isolation"][0]["status"] == "not_run"
