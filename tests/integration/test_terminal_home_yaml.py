# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The line editor's output is the intended YAML, as PyYAML and ruamel.yaml read it.

For each config, the parsed result after setting terminal.home_mode must equal the
parsed original with only that one key changed (a missing or null `terminal` becomes a
mapping holding it). Comments are not data, so they are checked by text.
"""
import copy
import io

import pytest
import yaml
from ruamel.yaml import YAML
from sandboxguard import yamlconf as yc

CONFIGS = [
    "",
    "model: x\n",
    "# Hermes agent config\nmodel:\n  default: anthropic/claude\n  provider: openrouter\n\n"
    "terminal:\n  backend: docker   # local, docker, ssh\n  cwd: /workspace\n  docker_image: \"nikolaik/python\"\n"
    "  timeout: 180\n\nbrowser:\n  home_mode: real\n",
    "terminal:\n  home_mode: auto\n",
    "terminal:\n    backend: ssh\n    ssh:\n      host: box\n      home_mode: keep-me\n",
    "terminal: ~\nagent:\n  max_turns: 60\n",
    "terminal: {}\n",
    "terminal:\n",
    "terminal:  # set below\n  # home_mode: real\n  backend: local\n",
    "---\nterminal:\n  env: |\n    home_mode: not-a-key\n    x\n  backend: local\n",
    "terminal:\n  home_mode: 'real'   # quoted\n  list:\n    - a\n    - b\n",
    "a: 1\r\nterminal:\r\n  home_mode: real\r\n",
    "\ufeffterminal:\n  backend: local\n",
    "key: \"multi\n  line\"\nterminal:\n  backend: local\n",
    "terminal:\n  backend: local\nzzz:\n- 1\n- 2\n",
]


def pyyaml(text):
    return yaml.safe_load(text.lstrip("\ufeff"))


def ruamel(text):
    return YAML(typ="safe", pure=True).load(io.StringIO(text))


def expected_after(data, mode):
    data = copy.deepcopy(data) if isinstance(data, dict) else {}
    if not isinstance(data.get("terminal"), dict):
        data["terminal"] = {}
    data["terminal"]["home_mode"] = mode
    return data


@pytest.mark.parametrize("loader", [pyyaml, ruamel], ids=["PyYAML", "ruamel.yaml"])
@pytest.mark.parametrize("text", CONFIGS, ids=[repr(c[:30]) for c in CONFIGS])
def test_result_parses_to_the_original_with_one_key_set(loader, text):
    after = yc.set_nested(text, "terminal", "home_mode", "profile")
    assert loader(after) == expected_after(loader(text), "profile")


@pytest.mark.parametrize("text", CONFIGS, ids=[repr(c[:30]) for c in CONFIGS])
def test_every_comment_line_survives(text):
    after = yc.set_nested(text, "terminal", "home_mode", "profile")
    for line in text.splitlines():
        if "#" in line and "home_mode" not in line:
            assert line in after.splitlines()


def test_ruamel_round_trip_of_the_result_is_stable():
    text = CONFIGS[2]
    after = yc.set_nested(text, "terminal", "home_mode", "profile")
    rt = YAML()
    rt.preserve_quotes = True
    out = io.StringIO()
    rt.dump(rt.load(after), out)
    assert out.getvalue() == after
