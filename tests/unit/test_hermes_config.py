# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Key paths in a Hermes config.yaml (yamlconf.set_path) and hermes_config.set_config."""
import os
import stat

import pytest
from sandboxguard import hermes_config, yamlconf

PLUGIN = ["plugins", "entries", "bubblewrap", "settings"]

# what the old bwrap role wrote with to_nice_yaml: an indentless sequence under binds
NICE = ("# the agent\nterminal:\n  backend: docker  # was docker\n  home_mode: profile   # set by terminal_home\n"
        "plugins:\n  # plugins below\n  entries:\n    bubblewrap:\n      settings:\n        binds:\n"
        "        - dest: /x\n          readonly: true\n          src: /x\n        max_procs: 100  # low\n"
        "        profile: strict\nmodel: x\n")


def _comments(text):
    return [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]


@pytest.mark.parametrize(("keys", "value", "line"), [
    (["plugins", "entries", "bubblewrap", "settings", "max_procs"], 256, "        max_procs: 256 # low"),
    (["terminal", "backend"], "bubblewrap", "  backend: bubblewrap # was docker"),
    ([*PLUGIN, "profile"], "default", "        profile: default"),
])
def test_a_scalar_deep_in_the_file_is_replaced_in_place_and_every_comment_stays(keys, value, line):
    after = yamlconf.set_path(NICE, keys, value)
    assert line in after.splitlines()
    assert _comments(after) == _comments(NICE)
    assert len(after.splitlines()) == len(NICE.splitlines())
    assert yamlconf.set_path(after, keys, value) == after


def test_a_list_replaces_the_old_indentless_sequence_block_only():
    after = yamlconf.set_path(NICE, [*PLUGIN, "binds"], [{"src": "/a", "dest": "/b", "readonly": False}])
    assert "        binds:\n          - src: /a\n            dest: /b\n            readonly: false\n" \
           "        max_procs: 100  # low\n" in after
    assert "/x" not in after and _comments(after) == _comments(NICE)
    assert yamlconf.set_path(after, [*PLUGIN, "binds"], [{"src": "/a", "dest": "/b", "readonly": False}]) == after


def test_missing_mappings_on_the_path_are_created_with_the_siblings_indentation():
    text = "terminal:\n    backend: local  # four spaces\n"
    after = yamlconf.set_path(text, [*PLUGIN, "home_allow"], [".config/nvim", ".zz tool"])
    assert after == (text + "\nplugins:\n  entries:\n    bubblewrap:\n      settings:\n        home_allow:\n"
                     "          - .config/nvim\n          - \".zz tool\"\n")
    nested = yamlconf.set_path(after, ["terminal", "docker", "image"], "busybox")
    assert nested.startswith("terminal:\n    docker:\n      image: busybox\n    backend: local  # four spaces\n")


@pytest.mark.parametrize(("value", "text"), [
    (True, "true"), (False, "false"), (None, "null"), (0, "0"), (1.5, "1.5"), ("strict", "strict"),
    ("256", '"256"'), ("yes", '"yes"'), ("a: b", '"a: b"'), ("", '""'), ("-x", '"-x"'), ("/srv/x", "/srv/x"),
    ("caf\u00e9 #1", '"caf\\u00e9 #1"'), ([], "[]"), ({}, "{}"),
])
def test_values_are_written_so_they_read_back_as_themselves(value, text):
    assert yamlconf.set_path("", ["a"], value) == "a: %s\n" % text


@pytest.mark.parametrize(("text", "words"), [
    ("plugins:\n  entries: {bubblewrap: {}}\n", "flow mapping"),
    ("plugins:\n  entries: &e\n    x: 1\n", "anchor"),
    ("plugins:\n  entries:\n  - a\n", "sequence"),
    ("plugins:\n  entries:\n    bubblewrap: on\n", "not a mapping"),
    ("plugins:\n  entries:\n    bubblewrap:\n      settings:\n        binds: |\n          x\n", "does not change"),
    ("plugins:\n  entries:\n    bubblewrap:\n      settings:\n        binds: [a, b]\n", "does not change"),
    ("plugins:\n  entries:\n    a: 1\n    a: 2\n    bubblewrap: ~\n  entries:\n", "more than once"),
])
def test_refused_shapes_on_a_deep_path_name_the_line(text, words):
    with pytest.raises(yamlconf.YamlEditError, match=words):
        yamlconf.set_path(text, [*PLUGIN, "binds"], [])


def test_read_path_reads_a_deep_scalar_and_none_when_absent():
    assert yamlconf.read_path(NICE, [*PLUGIN, "max_procs"]) == "100"
    assert yamlconf.read_path(NICE, [*PLUGIN, "memory_mb"]) is None
    assert yamlconf.read_path(NICE, ["browser", "x"]) is None


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(NICE)
    os.chmod(str(path), 0o640)
    return path


def test_set_config_writes_every_key_keeps_comments_mode_and_reports_a_diff(home):
    report = hermes_config.set_config(str(home), {"terminal.backend": "bubblewrap",
                                                  "plugins.entries.bubblewrap.settings.max_procs": 256})
    text = home.read_text()
    assert report["changed"] is True and report["created"] is False and report["errors"] == []
    assert report["previous"] == {"terminal.backend": "docker", "plugins.entries.bubblewrap.settings.max_procs": "100"}
    assert report["diff"]["before"] == NICE and report["diff"]["after"] == text
    assert report["counts"] == {"keys": 2, "keys_changed": 2}
    assert _comments(text) == _comments(NICE)
    assert stat.S_IMODE(os.stat(str(home)).st_mode) == 0o640
    again = hermes_config.set_config(str(home), {"terminal.backend": "bubblewrap"})
    assert again["changed"] is False and again["diff"] is None


def test_set_config_dry_run_writes_nothing_and_says_would_change(home):
    report = hermes_config.set_config(str(home), {"terminal.backend": "bubblewrap"}, dry_run=True)
    assert report["changed"] is True and report["dry_run"] is True
    assert home.read_text() == NICE


def test_set_config_creates_a_missing_file_0600_unless_told_not_to(tmp_path):
    path = tmp_path / "new.yaml"
    with pytest.raises(hermes_config.ConfigError, match="does not exist"):
        hermes_config.set_config(str(path), {"a.b": 1}, create=False)
    report = hermes_config.set_config(str(path), {"a.b": 1})
    assert report["created"] is True and path.read_text() == "a:\n  b: 1\n"
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o600


def test_set_config_refuses_a_symlinked_config(tmp_path, home):
    link = tmp_path / "link.yaml"
    link.symlink_to(home)
    with pytest.raises(hermes_config.ConfigError, match="is a symlink"):
        hermes_config.set_config(str(link), {"a": 1})
    assert home.read_text() == NICE


def test_set_config_names_the_path_of_a_refused_shape(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("terminal: {backend: x}\n")
    with pytest.raises(yamlconf.YamlEditError, match=str(path) + ": line 1: 'terminal' is a flow mapping"):
        hermes_config.set_config(str(path), {"terminal.backend": "bubblewrap"})


# --- through descriptors (issue 19) ---------------------------------------------------------

def test_set_config_refuses_a_fifo_at_once(tmp_path):
    import time

    path = tmp_path / "config.yaml"
    os.mkfifo(str(path))
    started = time.monotonic()
    with pytest.raises(hermes_config.ConfigError, match=r"is a FIFO.*regular file"):
        hermes_config.set_config(str(path), {"terminal.backend": "local"})
    assert time.monotonic() - started < 5


def test_set_config_refuses_a_hard_linked_config_and_changes_neither_link(tmp_path, home):
    os.link(str(home), str(tmp_path / "other.yaml"))
    with pytest.raises(hermes_config.ConfigError, match=r"2 hard links.*remove the extra links"):
        hermes_config.set_config(str(home), {"terminal.backend": "bubblewrap"})
    assert home.read_text() == NICE and os.stat(str(home)).st_nlink == 2


def test_set_config_keeps_the_permission_bits_but_never_setid(home):
    os.chmod(str(home), 0o4750)
    hermes_config.set_config(str(home), {"terminal.backend": "bubblewrap"})
    assert stat.S_IMODE(os.stat(str(home)).st_mode) == 0o750


def test_set_config_refuses_a_path_through_a_symlink_others_can_change(tmp_path):
    os.chmod(str(tmp_path), 0o777)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(hermes_config.ConfigError, match=r"goes through a symlink.*it leads to"):
        hermes_config.set_config(str(tmp_path / "link" / "config.yaml"), {"a": 1})
    assert list((tmp_path / "real").iterdir()) == []


def test_set_config_keeps_bytes_that_are_not_utf8_as_they_are(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_bytes(b"# op\xe9rateur\nterminal:\n  backend: \xff\n")
    report = hermes_config.set_config(str(path), {"terminal.backend": "local"})
    assert report["changed"] is True
    assert path.read_bytes() == b"# op\xe9rateur\nterminal:\n  backend: local\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another owner needs root")
def test_set_config_owner_is_the_old_files_or_the_directorys_from_fstat(tmp_path, home):
    os.chown(str(home), 4321, 4322)
    hermes_config.set_config(str(home), {"terminal.backend": "bubblewrap"})
    assert (os.stat(str(home)).st_uid, os.stat(str(home)).st_gid) == (4321, 4322)
    sub = tmp_path / "profile"
    sub.mkdir()
    os.chown(str(sub), 5432, 5433)
    hermes_config.set_config(str(sub / "config.yaml"), {"a": 1})
    assert (os.stat(str(sub / "config.yaml")).st_uid, os.stat(str(sub / "config.yaml")).st_gid) == (5432, 5433)
    hermes_config.set_config(str(sub / "new.yaml"), {"a": 1}, owner=(6543, 6544), mode=0o640)
    info = os.stat(str(sub / "new.yaml"))
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (6543, 6544, 0o640)


def test_set_config_without_create_says_a_missing_directory_does_not_exist(tmp_path):
    with pytest.raises(hermes_config.ConfigError, match="does not exist"):
        hermes_config.set_config(str(tmp_path / "nope" / "config.yaml"), {"a": 1}, create=False)
    with pytest.raises(hermes_config.ConfigError, match="create the Hermes home first"):
        hermes_config.set_config(str(tmp_path / "nope" / "config.yaml"), {"a": 1})
