# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""fetch_fixtures.ensure_ssh_user puts every property the fetch tests rely on in place,
whatever state the machine left the test user in (issue 10 item 21)."""
import os
import pwd
import shutil
import stat
import subprocess

import pytest
from fetch_fixtures import HOSTILE_BASHRC, SECRET, SSH_USER, ensure_ssh_user

pytestmark = [pytest.mark.root]


@pytest.fixture
def spoiled_user():
    """The test user as a careless machine leaves it: made by useradd without -s, locked, expired,
    with a group-writable home, .ssh a symlink, the key missing and .bashrc a directory."""
    if os.geteuid() != 0:
        pytest.fail("these tests change a user: run them as root")
    try:
        pwd.getpwnam(SSH_USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", SSH_USER], check=True)
    subprocess.run(["usermod", "--shell", "/bin/sh", "--lock", SSH_USER], check=True)
    subprocess.run(["chage", "--expiredate", "2001-01-01", SSH_USER], check=True)
    entry = pwd.getpwnam(SSH_USER)
    home = entry.pw_dir
    os.makedirs(home, exist_ok=True)
    os.chmod(home, 0o777)
    ssh = os.path.join(home, ".ssh")
    if os.path.islink(ssh) or os.path.isfile(ssh):
        os.unlink(ssh)
    elif os.path.isdir(ssh):
        shutil.rmtree(ssh)
    os.symlink("/tmp", ssh)
    bashrc = os.path.join(home, ".bashrc")
    if os.path.lexists(bashrc):
        os.unlink(bashrc)
    os.mkdir(bashrc)
    return entry


def test_an_existing_user_with_sh_gets_bash_and_every_other_property(spoiled_user):
    entry = ensure_ssh_user()
    assert entry.pw_shell == "/bin/bash"
    assert pwd.getpwnam(SSH_USER).pw_shell == "/bin/bash"
    shadow = _shadow(SSH_USER)
    assert shadow[1] == "*"  # not locked ("!"), no password login
    assert shadow[7] == ""   # no expiry date
    home = entry.pw_dir
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o755
    ssh = os.path.join(home, ".ssh")
    assert not os.path.islink(ssh) and os.path.isdir(ssh)
    assert os.path.exists("/tmp")  # the old symlink's target was left alone
    assert stat.S_IMODE(os.stat(ssh).st_mode) == 0o700
    with open(os.path.join(ssh, "id_rsa"), "rb") as handle:
        assert handle.read() == SECRET
    with open(os.path.join(home, ".bashrc")) as handle:
        assert handle.read() == HOSTILE_BASHRC
    for path in (home, ssh, os.path.join(ssh, "id_rsa"), os.path.join(home, ".bashrc")):
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == (entry.pw_uid, entry.pw_gid), path


def _shadow(user):
    done = subprocess.run(["getent", "shadow", user], capture_output=True, text=True, check=True)
    return done.stdout.strip().split(":")


def test_the_hostile_bashrc_runs_for_the_user_after_the_fixture(spoiled_user):
    ensure_ssh_user()
    # bash -c sources ~/.bashrc when it believes sshd started it (SSH_CLIENT set, SHLVL < 2),
    # which is how the fetch tests' commands reach the sandbox user.
    env = dict(os.environ, SSH_CLIENT="127.0.0.1 40000 22", SHLVL="0")
    done = subprocess.run(["su", SSH_USER, "-c", "true"], capture_output=True, text=True, env=env,
                          check=False, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "noise from .bashrc" in done.stdout
