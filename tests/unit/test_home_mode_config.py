# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Setting terminal.home_mode in config.yaml and TERMINAL_HOME_MODE in .env, text in, text out."""
import os
import stat

import pytest
from sandboxguard import home_mode as hm
from sandboxguard import yamlconf as yc
from sandboxguard._terminal.configure import hermes_homes

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


# --- through descriptors (issue 19): what the agent can plant in its own home --------------

ROOT = os.geteuid() == 0


def test_a_fifo_config_is_refused_at_once_and_the_other_profiles_are_still_configured(tmp_path):
    import time

    home = make_home(tmp_path)
    os.mkfifo(str(home / "profiles" / "dev" / "config.yaml"))
    started = time.monotonic()
    report = hm.configure_terminal_home(str(home), "profile")
    assert time.monotonic() - started < 5
    by_name = {os.path.basename(h["hermes_home"]): h for h in report["homes"]}
    assert "FIFO" in by_name["dev"]["error"] and "regular file" in by_name["dev"]["error"]
    assert [e["path"] for e in report["errors"]] == [str(home / "profiles" / "dev")]
    assert by_name["work"]["error"] is None and by_name["work"]["config_changed"]
    assert yc.read_nested((home / "profiles" / "work" / "config.yaml").read_text(), "terminal", "home_mode") == \
        "profile"
    assert stat.S_ISFIFO(os.lstat(str(home / "profiles" / "dev" / "config.yaml")).st_mode)


def test_a_fifo_config_is_an_audit_error_not_a_hang(tmp_path):
    from sandboxguard._fleet import audit

    home = make_home(tmp_path, profiles=())
    os.unlink(str(home / "config.yaml"))
    os.mkfifo(str(home / "config.yaml"))
    result = audit.check_home_mode([str(home)], "profile")
    assert any("FIFO" in error["error"] for error in result["errors"])


def test_a_hard_linked_config_is_refused_naming_the_fix(tmp_path):
    home = make_home(tmp_path, profiles=())
    os.link(str(home / "config.yaml"), str(tmp_path / "elsewhere.yaml"))
    before = (home / "config.yaml").read_text()
    report = hm.configure_terminal_home(str(home), "profile", create_profile_home=False)
    error = report["homes"][0]["error"]
    assert "2 hard links" in error and "remove the extra links" in error and str(home / "config.yaml") in error
    assert (tmp_path / "elsewhere.yaml").read_text() == before


def test_a_symlinked_config_is_refused_and_its_target_left_alone(tmp_path):
    home = make_home(tmp_path, profiles=())
    target = tmp_path / "target.yaml"
    target.write_text("secret: 1\n")
    os.unlink(str(home / "config.yaml"))
    os.symlink(str(target), str(home / "config.yaml"))
    report = hm.configure_terminal_home(str(home), "profile", create_profile_home=False)
    assert "symlink" in report["homes"][0]["error"]
    assert target.read_text() == "secret: 1\n" and os.path.islink(str(home / "config.yaml"))


def test_a_setid_config_is_rewritten_without_its_setid_bits(tmp_path):
    home = make_home(tmp_path, profiles=())
    os.chmod(str(home / "config.yaml"), 0o6755)
    hm.configure_terminal_home(str(home), "profile", create_profile_home=False)
    assert stat.S_IMODE(os.stat(str(home / "config.yaml")).st_mode) == 0o755


def test_a_setid_group_writable_profile_home_becomes_0755_not_06755(tmp_path):
    home = make_home(tmp_path, profiles=())
    (home / "home").mkdir()
    os.chmod(str(home / "home"), 0o6777)
    report = hm.configure_terminal_home(str(home), "profile")
    assert report["homes"][0]["profile_home_changed"]
    assert stat.S_IMODE(os.stat(str(home / "home")).st_mode) == 0o755


@pytest.mark.skipif(not ROOT, reason="giving files to another owner needs root")
def test_owners_come_from_the_files_and_directories_themselves(tmp_path):
    home = make_home(tmp_path, profiles=("work",))
    os.chown(str(home / "config.yaml"), 4321, 4322)
    os.chown(str(home / "profiles" / "work"), 5432, 5433)  # no config yet: a new one is the directory's
    hm.configure_terminal_home(str(home), "profile", where="both")
    assert (os.stat(str(home / "config.yaml")).st_uid, os.stat(str(home / "config.yaml")).st_gid) == (4321, 4322)
    for name in ("config.yaml", ".env", "home"):
        info = os.stat(str(home / "profiles" / "work" / name))
        assert (info.st_uid, info.st_gid) == (5432, 5433), name
    assert os.stat(str(home / ".env")).st_uid == os.stat(str(home)).st_uid


def test_a_symlinked_profile_home_is_a_per_home_error(tmp_path):
    home = make_home(tmp_path, profiles=("work",))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chmod(str(elsewhere), 0o777)
    (home / "profiles" / "work" / "home").symlink_to(elsewhere)
    report = hm.configure_terminal_home(str(home), "profile")
    by_name = {os.path.basename(h["hermes_home"]): h for h in report["homes"]}
    assert "symlink" in by_name["work"]["error"] and "profile home must be a real directory" in by_name["work"]["error"]
    assert by_name[".hermes"]["error"] is None
    assert stat.S_IMODE(os.stat(str(elsewhere)).st_mode) == 0o777


def test_a_symlinked_profiles_directory_configures_no_profile_and_warns(tmp_path):
    home = make_home(tmp_path, profiles=())
    (tmp_path / "other" / "evil").mkdir(parents=True)
    (home / "profiles").symlink_to(tmp_path / "other")
    report = hm.configure_terminal_home(str(home), "profile")
    assert [h["hermes_home"] for h in report["homes"]] == [str(home)]
    assert any("profiles" in warning for warning in report["warnings"])
    assert list((tmp_path / "other" / "evil").iterdir()) == []
    assert hermes_homes(str(home)) == [str(home)]


def test_profiles_named_with_a_dot_are_not_profiles(tmp_path):
    home = make_home(tmp_path, profiles=("work", ".trash"))
    assert hermes_homes(str(home)) == [str(home), str(home / "profiles" / "work")]


def test_a_hermes_home_through_a_symlink_others_can_change_is_refused_naming_the_real_path(tmp_path):
    os.chmod(str(tmp_path), 0o777)
    real = make_home(tmp_path, profiles=())
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(hm.HomeModeError) as caught:
        hm.configure_terminal_home(str(tmp_path / "link"), "profile")
    assert "(it leads to %s now)" % real in str(caught.value)
    assert "\n" not in str(caught.value)
