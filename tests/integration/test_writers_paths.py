# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""A Hermes home reached through a symlink: followed when only root could have made it
(/home a link to /data/home), refused with the real path when the agent could have."""
import os
import pwd
import shutil
import subprocess
import uuid

import pytest
from sandboxguard import hermes_config, home_mode

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_writers_paths.py must run as root", pytrace=False)


@pytest.fixture
def layout():
    """/var/lib/sgwr-X (root 0755, under trusted /var/lib) holding data/home/<user>/ (the user's)
    and home -> data/home (root's link); a throwaway user."""
    user = "sgwr" + uuid.uuid4().hex[:6]
    subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", "--home-dir",
                    "/nonexistent", user], check=True, capture_output=True)
    entry = pwd.getpwnam(user)
    top = "/var/lib/sgwr-" + uuid.uuid4().hex[:8]
    os.makedirs(top + "/data/home")
    for path in (top, top + "/data", top + "/data/home"):
        os.chmod(path, 0o755)
    agent_home = top + "/data/home/" + user
    os.mkdir(agent_home)
    os.chown(agent_home, entry.pw_uid, entry.pw_gid)
    os.symlink("data/home", top + "/home")
    try:
        yield {"top": top, "user": user, "uid": entry.pw_uid, "gid": entry.pw_gid, "agent_home": agent_home}
    finally:
        shutil.rmtree(top, ignore_errors=True)
        subprocess.run(["userdel", user], check=False, capture_output=True)


def as_agent(layout, *argv):
    subprocess.run(["setpriv", "--reuid=%d" % layout["uid"], "--regid=%d" % layout["gid"], "--clear-groups",
                    *argv], check=True, capture_output=True, cwd="/")


def test_a_hermes_home_under_a_root_made_link_is_followed_and_configured(layout):
    as_agent(layout, "mkdir", "-p", layout["agent_home"] + "/.hermes/profiles/work")
    given = "%s/home/%s/.hermes" % (layout["top"], layout["user"])
    report = home_mode.configure_terminal_home(given, "profile")
    assert report["errors"] == [] and report["changed"]
    assert [h["hermes_home"] for h in report["homes"]] == [given, given + "/profiles/work"]
    for sub in ("", "/profiles/work"):
        info = os.stat(layout["agent_home"] + "/.hermes" + sub + "/config.yaml")
        assert (info.st_uid, info.st_gid) == (layout["uid"], layout["gid"])
    assert hermes_config.set_config(given + "/config.yaml", {"terminal.backend": "local"})["changed"]


def test_a_hermes_home_under_an_agent_made_link_is_refused_naming_the_real_path(layout):
    as_agent(layout, "mkdir", "-p", layout["agent_home"] + "/hermes-real")
    as_agent(layout, "ln", "-s", "hermes-real", layout["agent_home"] + "/.hermes")
    given = "%s/home/%s/.hermes" % (layout["top"], layout["user"])
    real = layout["agent_home"] + "/hermes-real"
    with pytest.raises(home_mode.HomeModeError) as caught:
        home_mode.configure_terminal_home(given, "profile")
    text = str(caught.value)
    assert "goes through a symlink" in text and "uid %d" % layout["uid"] in text
    assert "(it leads to %s now)" % real in text
    assert os.listdir(real) == []
    # and the real path it names works
    assert home_mode.configure_terminal_home(real, "profile")["errors"] == []
    with pytest.raises(hermes_config.ConfigError, match="it leads to"):
        hermes_config.set_config(given + "/config.yaml", {"a": 1})
