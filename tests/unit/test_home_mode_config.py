# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Setting terminal.home_mode in config.yaml and TERMINAL_HOME_MODE in .env, text in, text out."""
import os
import stat

import pytest
from sandboxguard import home_mode as hm
from sandboxguard import yamlconf as yc

CASES = [
    ("missing file", "", "terminal:\n  home_mode: profile\n"),
    ("no terminal section: appended after a blank line",
     "# Hermes config\nmodel: x  # the model\n",
     "# Hermes config\nmodel: x  # the model\n\nterminal:\n  home_mode: profile\n"),
    ("value replaced, comment kept",
     "terminal:\n  backend: local\n  home_mode: auto   # was auto\nother: 1\n",
     "terminal:\n  backend: local\n  home_mode: profile # was auto\nother: 1\n"),
    ("quoted value replaced",
     "terminal:\n  home_mode: \"real\"\n",
     "terminal:\n  home_mode: profile\n"),
    ("key inserted with the children's indentation",
     "terminal:\n    backend: docker\n    cwd: /w\nmodel: y\n",
     "terminal:\n    home_mode: profile\n    backend: docker\n    cwd: /w\nmodel: y\n"),
    ("empty section",
     "terminal:\nmodel: y\n",
     "terminal:\n  home_mode: profile\nmodel: y\n"),
    ("null section with a comment",
     "terminal: ~  # nothing yet\n",
     "terminal: # nothing yet\n  home_mode: profile\n"),
    ("empty flow mapping",
     "terminal: {}\n",
     "terminal:\n  home_mode: profile\n"),
    ("nested keys of the same name are not touched",
     "terminal:\n  docker:\n    home_mode: real\n",
     "terminal:\n  home_mode: profile\n  docker:\n    home_mode: real\n"),
    ("a home_mode elsewhere is not touched",
     "home_mode: real\nbrowser:\n  home_mode: real\n",
     "home_mode: real\nbrowser:\n  home_mode: real\n\nterminal:\n  home_mode: profile\n"),
    ("comments and blank lines around the block survive",
     "# top\n\nterminal:  # the terminal\n  # the mode:\n  home_mode: real\n\n# after\nx: 1\n",
     "# top\n\nterminal:  # the terminal\n  # the mode:\n  home_mode: profile\n\n# after\nx: 1\n"),
    ("CRLF line ends are kept",
     "a: 1\r\nterminal:\r\n  home_mode: real\r\n",
     "a: 1\r\nterminal:\r\n  home_mode: profile\r\n"),
    ("a document start marker is fine",
     "---\nterminal:\n  home_mode: real\n",
     "---\nterminal:\n  home_mode: profile\n"),
    ("no newline at end of file",
     "terminal:\n  home_mode: real",
     "terminal:\n  home_mode: profile\n"),
    ("a hash inside quotes is not a comment",
     "terminal:\n  home_mode: 'a#b' # c\n",
     "terminal:\n  home_mode: profile # c\n"),
]


@pytest.mark.parametrize(("before", "after"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_set_nested(before, after):
    assert yc.set_nested(before, "terminal", "home_mode", "profile") == after


@pytest.mark.parametrize(("before", "after"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_set_nested_is_idempotent(before, after):
    assert yc.set_nested(after, "terminal", "home_mode", "profile") == after


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("terminal: {backend: docker}\n", "flow mapping"),
        ("terminal: docker\n", "not a mapping"),
        ("terminal: &t\n  home_mode: real\n", "anchor"),
        ("terminal:\n  - a\n", "sequence"),
        ("terminal:\n  home_mode: *mode\n", "does not change"),
        ("terminal:\n  home_mode: |\n    real\n", "does not change"),
        ("terminal:\n  home_mode:\n    real: 1\n", "nested value"),
        ("terminal:\n  home_mode: \"real\n    x\"\n", "multi-line"),
        ("terminal:\n  home_mode: real\n    continued\n", "continued on the next line"),
        ("terminal:\n  a: 1\nterminal:\n  b: 2\n", "more than once"),
        ("terminal:\n  home_mode: a\n  home_mode: b\n", "more than once"),
        ("a: 1\n---\nterminal:\n  b: 2\n", "several YAML documents"),
        ("terminal:\n\thome_mode: real\n", "tab"),
    ],
)
def test_refused_shapes_name_the_problem(text, words):
    with pytest.raises(yc.YamlEditError) as caught:
        yc.set_nested(text, "terminal", "home_mode", "profile")
    assert words in str(caught.value)


@pytest.mark.parametrize("value", ["yes", "true", "a b", "", "x: y"])
def test_only_plain_words_are_written(value):
    with pytest.raises(ValueError):
        yc.set_nested("", "terminal", "home_mode", value)


@pytest.mark.parametrize(
    ("text", "value"),
    [("", None), ("terminal:\n  home_mode: real  # c\n", "real"), ("terminal:\n  home_mode: 'auto'\n", "auto"),
     ("terminal:\n  home_mode: ~\n", None), ("terminal:\n  backend: x\n", None)],
)
def test_read_nested(text, value):
    assert yc.read_nested(text, "terminal", "home_mode") == value


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("", "TERMINAL_HOME_MODE=profile\n"),
        ("OPENAI_API_KEY=sk-x\n", "OPENAI_API_KEY=sk-x\nTERMINAL_HOME_MODE=profile\n"),
        ("# c\nTERMINAL_HOME_MODE=real\nX=1\n", "# c\nTERMINAL_HOME_MODE=profile\nX=1\n"),
        ("export TERMINAL_HOME_MODE=real\n", "export TERMINAL_HOME_MODE=profile\n"),
        ("TERMINAL_HOME_MODE=a\nTERMINAL_HOME_MODE=b\n", "TERMINAL_HOME_MODE=profile\n"),
        ("MY_TERMINAL_HOME_MODE=a\n", "MY_TERMINAL_HOME_MODE=a\nTERMINAL_HOME_MODE=profile\n"),
    ],
)
def test_set_env_line(before, after):
    assert yc.set_env_line(before, "TERMINAL_HOME_MODE", "profile") == after


def test_read_env_line():
    assert yc.read_env_line('A=1\nTERMINAL_HOME_MODE="real" # x\n', "TERMINAL_HOME_MODE") == "real"
    assert yc.read_env_line("A=1\n", "TERMINAL_HOME_MODE") is None


def make_home(tmp_path, profiles=("work", "dev")):
    home = tmp_path / ".hermes"
    home.mkdir()
    (home / "config.yaml").write_text("# mine\nmodel: x\nterminal:\n  backend: local  # keep\n")
    for name in profiles:
        (home / "profiles" / name).mkdir(parents=True)
    return home


def test_configure_sets_the_mode_in_every_profile_and_creates_profile_homes(tmp_path):
    home = make_home(tmp_path)
    report = hm.configure_terminal_home(str(home), "isolated")
    assert report["mode"] == "profile"
    assert report["changed"]
    assert [os.path.basename(h["hermes_home"]) for h in report["homes"]] == [".hermes", "dev", "work"]
    assert (home / "config.yaml").read_text() == (
        "# mine\nmodel: x\nterminal:\n  home_mode: profile\n  backend: local  # keep\n")
    for sub in (home, home / "profiles" / "dev", home / "profiles" / "work"):
        assert yc.read_nested((sub / "config.yaml").read_text(), "terminal", "home_mode") == "profile"
        assert stat.S_IMODE((sub / "home").stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "profiles" / "dev" / "config.yaml").stat().st_mode) == 0o600


def test_configure_twice_changes_nothing_the_second_time(tmp_path):
    home = make_home(tmp_path)
    hm.configure_terminal_home(str(home), "profile", where="both")
    again = hm.configure_terminal_home(str(home), "profile", where="both")
    assert not again["changed"]
    assert again["diff"] == []
    assert again["previous"] == "profile"


def test_check_mode_reports_and_writes_nothing(tmp_path):
    home = make_home(tmp_path)
    before = (home / "config.yaml").read_text()
    report = hm.configure_terminal_home(str(home), "profile", where="both", dry_run=True)
    assert report["changed"]
    assert (home / "config.yaml").read_text() == before
    assert not (home / ".env").exists()
    assert not (home / "home").exists()
    assert len(report["diff"]) == 6


def test_env_only_leaves_config_alone(tmp_path):
    home = make_home(tmp_path, profiles=())
    (home / ".env").write_text("KEY=v\n")
    report = hm.configure_terminal_home(str(home), "real", where="env", create_profile_home=False)
    assert (home / ".env").read_text() == "KEY=v\nTERMINAL_HOME_MODE=real\n"
    assert "home_mode" not in (home / "config.yaml").read_text()
    assert report["homes"][0]["env_previous"] is None


def test_existing_file_mode_is_kept(tmp_path):
    home = make_home(tmp_path, profiles=())
    os.chmod(str(home / "config.yaml"), 0o640)
    hm.configure_terminal_home(str(home), "profile")
    assert stat.S_IMODE((home / "config.yaml").stat().st_mode) == 0o640


def test_group_writable_profile_home_is_tightened(tmp_path):
    home = make_home(tmp_path, profiles=())
    (home / "home").mkdir()
    os.chmod(str(home / "home"), 0o777)
    report = hm.configure_terminal_home(str(home), "profile")
    assert report["homes"][0]["profile_home_changed"]
    assert stat.S_IMODE((home / "home").stat().st_mode) == 0o755


def test_symlinked_profiles_are_not_followed(tmp_path):
    home = make_home(tmp_path, profiles=())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "profiles").mkdir()
    (home / "profiles" / "evil").symlink_to(elsewhere)
    hm.configure_terminal_home(str(home), "profile")
    assert list(elsewhere.iterdir()) == []


def test_missing_hermes_home_is_an_error(tmp_path):
    with pytest.raises(hm.HomeModeError) as caught:
        hm.configure_terminal_home(str(tmp_path / "nope"), "profile")
    assert "not a directory" in str(caught.value)


def test_bad_where_is_an_error(tmp_path):
    with pytest.raises(hm.HomeModeError):
        hm.configure_terminal_home(str(tmp_path), "profile", where="registry")
