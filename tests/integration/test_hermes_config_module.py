# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""terminal_home and the bwrap role's hermes_config settings on one Hermes home, as Ansible runs them.

The bwrap role used to round-trip config.yaml through from_yaml/to_nice_yaml and dropped
every comment terminal_home had kept; both now go through the library's line editor.
"""
import io
import json
import os
import subprocess

import pytest
import yaml
from ruamel.yaml import YAML

pytestmark = pytest.mark.root

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE = os.path.join(TOP, ".venv", "bin", "ansible")
CONFIG = ("# Hermes agent config: edited by people\nmodel:\n  default: anthropic/claude  # the model\n\n"
          "terminal:  # the terminal\n  backend: local   # local, docker, bubblewrap\n  timeout: 180\n\n"
          "plugins:\n  # plugins the agent loads\n  entries:\n    bubblewrap:\n      settings:\n"
          "        profile: default  # or strict\n        binds:\n        - dest: /old\n          readonly: true\n"
          "          src: /old\n\n# browser settings below\nbrowser:\n  home_mode: real  # not terminal's\n")
SETTINGS = {"terminal.backend": "bubblewrap", "plugins.entries.bubblewrap.settings.profile": "strict",
            "plugins.entries.bubblewrap.settings.max_procs": 256,
            "plugins.entries.bubblewrap.settings.binds": [{"src": "/opt/tools", "dest": "/opt/tools",
                                                           "readonly": True}],
            "plugins.entries.bubblewrap.settings.home_allow": [".config/nvim"]}


def run_module(module, args, *flags):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([ANSIBLE, "localhost", "-m", "sandboxguard.boundary." + module, "-a", json.dumps(args),
                           *flags], capture_output=True, text=True, env=env, timeout=120, check=False)
    out = json.loads(proc.stdout)
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


def comments(text):
    return [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]


@pytest.fixture()
def hermes(tmp_path):
    home = tmp_path / ".hermes"
    home.mkdir()
    (home / "config.yaml").write_text(CONFIG)
    os.chmod(str(home / "config.yaml"), 0o640)
    return home


def test_terminal_home_then_bwrap_settings_keep_every_comment_of_the_users_config(hermes):
    path = str(hermes / "config.yaml")
    first = run_module("terminal_home", {"hermes_home": str(hermes), "mode": "profile", "profiles": False})
    assert first["changed"] is True, first
    second = run_module("hermes_config", {"path": path, "settings": SETTINGS})
    assert second["changed"] is True and second["path"] == path, second
    text = open(path).read()
    assert comments(text) == comments(CONFIG)
    for load in (yaml.safe_load, lambda t: YAML(typ="safe", pure=True).load(io.StringIO(t))):
        data = load(text)
        assert data["terminal"] == {"home_mode": "profile", "backend": "bubblewrap", "timeout": 180}
        assert data["plugins"]["entries"]["bubblewrap"]["settings"] == {
            "profile": "strict", "max_procs": 256, "home_allow": [".config/nvim"],
            "binds": [{"src": "/opt/tools", "dest": "/opt/tools", "readonly": True}]}
        assert data["browser"] == {"home_mode": "real"} and data["model"] == {"default": "anthropic/claude"}
    assert oct(os.stat(path).st_mode & 0o777) == "0o640"
    # and the other order: terminal_home after the bwrap settings keeps them too
    again = run_module("terminal_home", {"hermes_home": str(hermes), "mode": "profile", "profiles": False})
    assert again["changed"] is False and open(path).read() == text
    assert run_module("hermes_config", {"path": path, "settings": SETTINGS})["changed"] is False


def test_hermes_config_check_mode_and_diff_change_nothing(hermes):
    path = str(hermes / "config.yaml")
    result = run_module("hermes_config", {"path": path, "settings": {"terminal.backend": "bubblewrap"}},
                        "--check", "--diff")
    assert result["changed"] is True
    assert "backend: bubblewrap" in result["diff"]["after"] and result["diff"]["before"] == CONFIG
    assert open(path).read() == CONFIG


def test_hermes_config_fails_naming_the_line_it_will_not_edit(hermes):
    path = str(hermes / "config.yaml")
    with open(path, "w") as handle:
        handle.write("terminal: {backend: local}  # flow\n")
    result = run_module("hermes_config", {"path": path, "settings": {"terminal.backend": "bubblewrap"}})
    assert result["failed"] is True and "line 1: 'terminal' is a flow mapping" in result["msg"]
    assert open(path).read() == "terminal: {backend: local}  # flow\n"


def test_terminal_home_takes_a_list_of_homes_like_sandbox_sweep(tmp_path):
    homes = []
    for name in ("a", "b"):
        home = tmp_path / name / ".hermes"
        home.mkdir(parents=True)
        homes.append(str(home))
    result = run_module("terminal_home", {"hermes_home": homes, "mode": "profile", "profiles": False})
    assert result["changed"] is True and [h["hermes_home"] for h in result["homes"]] == homes
    for home in homes:
        assert "home_mode: profile" in open(os.path.join(home, "config.yaml")).read()
    single = run_module("terminal_home", {"hermes_home": homes[0], "mode": "profile", "profiles": False})
    assert single["changed"] is False and [h["hermes_home"] for h in single["homes"]] == homes[:1]
