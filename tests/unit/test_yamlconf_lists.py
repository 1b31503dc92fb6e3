# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Lists in a Hermes config.yaml, read and edited without a YAML library (issue 28: docker_extra_args)."""
import pytest
from sandboxguard import yamlconf

yaml = pytest.importorskip("yaml")

KEYS = ("terminal", "docker_extra_args")
CONFIG = """\
# Hermes
terminal:
  backend: docker   # the sandbox
  docker_extra_args:
    - --cap-add   # the agent builds FUSE images
    - "SYS_ADMIN"
    - 'it''s'
  docker_volumes: ["/srv/data:/data", '/srv/ro:/ro:ro']
  empty: []
  unset:
security:
  terminal_secret_isolation: off
"""


@pytest.mark.parametrize(("keys", "expected"), [
    (KEYS, ["--cap-add", "SYS_ADMIN", "it's"]),
    (("terminal", "docker_volumes"), ["/srv/data:/data", "/srv/ro:/ro:ro"]),
    (("terminal", "empty"), []),
    (("terminal", "unset"), []),
    (("terminal", "absent"), None),
    (("nothing", "here"), None),
])
def test_read_list_reads_what_yaml_reads(keys, expected):
    assert yamlconf.read_list(CONFIG, keys) == expected
    if expected:
        node = yaml.safe_load(CONFIG)
        for key in keys:
            node = node[key]
        assert node == expected


def test_an_indentless_sequence_is_read():
    assert yamlconf.read_list("terminal:\n  docker_extra_args:\n  - a\n  - b\n  x: 1\n", KEYS) == ["a", "b"]


@pytest.mark.parametrize(("text", "words"), [
    ("terminal:\n  docker_extra_args: --privileged\n", "is not a list"),
    ("terminal:\n  docker_extra_args:\n    a: 1\n", "not a list of scalars"),
    ("terminal:\n  docker_extra_args: [[a]]\n", "nested flow sequence"),
    ("terminal:\n  docker_extra_args:\n    - &x a\n", "not a plain scalar"),
])
def test_what_the_reader_cannot_read_is_refused_naming_the_key(text, words):
    with pytest.raises(yamlconf.YamlEditError, match=words):
        yamlconf.read_list(text, KEYS)


def test_appending_keeps_every_other_line_and_comment():
    after = yamlconf.set_list(CONFIG, KEYS, ["--cap-add", "SYS_ADMIN", "it's", "--cap-drop", "MKNOD"])
    assert after.replace('    - "--cap-drop"\n    - MKNOD\n', "") == CONFIG
    assert yaml.safe_load(after)["terminal"]["docker_extra_args"][-2:] == ["--cap-drop", "MKNOD"]


def test_removing_the_appended_items_gives_the_file_back_byte_for_byte():
    after = yamlconf.set_list(CONFIG, KEYS, ["--cap-add", "SYS_ADMIN", "it's", "--cap-drop", "MKNOD"])
    assert yamlconf.set_list(after, KEYS, ["--cap-add", "SYS_ADMIN", "it's"]) == CONFIG


def test_a_missing_list_is_created_and_a_flow_list_rewritten():
    made = yamlconf.set_list("terminal:\n  backend: docker\n", KEYS, ["--cap-drop", "MKNOD"])
    assert yaml.safe_load(made)["terminal"] == {"backend": "docker", "docker_extra_args": ["--cap-drop", "MKNOD"]}
    flow = yamlconf.set_list("terminal:\n  docker_extra_args: [a]  # c\n", KEYS, ["a", "b"])
    assert yaml.safe_load(flow)["terminal"]["docker_extra_args"] == ["a", "b"]


def test_emptying_a_block_list_leaves_an_empty_list():
    text = "terminal:\n  docker_extra_args:\n    - a\n  other: 1\n"
    assert yaml.safe_load(yamlconf.set_list(text, KEYS, []))["terminal"] == {"docker_extra_args": [], "other": 1}
