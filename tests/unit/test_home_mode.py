# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""TERMINAL_HOME_MODE: normalisation, precedence, env application, protected homes."""
import os
import tempfile

import pytest
from sandboxguard import home_mode as hm

HH = "/srv/hermes"
PROFILE = "/srv/hermes/home"
REAL = "/home/agent"


def exists(*dirs):
    """An isdir() that answers True only for *dirs*."""
    wanted = {os.path.normpath(d) for d in dirs}
    return lambda path: os.path.normpath(path) in wanted


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        (None, "auto"),
        ("", "auto"),
        ("   ", "auto"),
        ("auto", "auto"),
        ("AUTO", "auto"),
        ("real", "real"),
        ("profile", "profile"),
        (" Profile ", "profile"),
        ("isolated", "profile"),
        ("profile_home", "profile"),
        ("profile-home", "profile"),
        ("PROFILE-HOME", "profile"),
        ("host", "real"),
        ("user", "real"),
        ("real_home", "real"),
        ("real-home", "real"),
    ],
)
def test_normalize_mode_maps_every_value_and_alias(value, mode):
    assert hm.normalize_mode(value) == mode


@pytest.mark.parametrize("value", ["sandbox", "profiles", "home", "realhome", "0", "auto profile"])
def test_unknown_mode_is_an_error_naming_the_accepted_values(value):
    with pytest.raises(hm.HomeModeError) as caught:
        hm.normalize_mode(value)
    message = str(caught.value)
    assert repr(value) in message
    for accepted in ("auto", "real", "profile", "isolated", "profile_home", "real-home"):
        assert accepted in message


# (name, env, in_container, existing dirs, account home, expected subprocess HOME)
PRECEDENCE = [
    ("profile mode uses the profile home on a host",
     {"TERMINAL_HOME_MODE": "profile", "HERMES_HOME": HH, "HOME": REAL}, False, [PROFILE], REAL, PROFILE),
    ("alias isolated is profile",
     {"TERMINAL_HOME_MODE": "isolated", "HERMES_HOME": HH, "HOME": REAL}, False, [PROFILE], REAL, PROFILE),
    ("profile mode without the directory changes nothing",
     {"TERMINAL_HOME_MODE": "profile", "HERMES_HOME": HH, "HOME": REAL}, False, [], REAL, None),
    ("profile mode without HERMES_HOME changes nothing",
     {"TERMINAL_HOME_MODE": "profile", "HOME": REAL}, False, [], REAL, None),
    ("real mode keeps a real HOME as it is",
     {"TERMINAL_HOME_MODE": "real", "HERMES_HOME": HH, "HOME": REAL}, True, [PROFILE], REAL, None),
    ("real mode repairs a profile HOME back to the account home",
     {"TERMINAL_HOME_MODE": "real", "HERMES_HOME": HH, "HOME": PROFILE}, False, [PROFILE], REAL, REAL),
    ("real mode prefers HERMES_REAL_HOME over the account home",
     {"TERMINAL_HOME_MODE": "host", "HERMES_HOME": HH, "HOME": PROFILE, "HERMES_REAL_HOME": "/data/me"},
     False, [PROFILE], REAL, "/data/me"),
    ("auto on a host keeps the real HOME",
     {"HERMES_HOME": HH, "HOME": REAL}, False, [PROFILE], REAL, None),
    ("auto in a container uses the profile home",
     {"HERMES_HOME": HH, "HOME": REAL}, True, [PROFILE], REAL, PROFILE),
    ("auto in a container without the directory keeps HOME",
     {"HERMES_HOME": HH, "HOME": REAL}, True, [], REAL, None),
    ("auto on a host repairs a parent whose HOME is the profile home",
     {"HERMES_HOME": HH, "HOME": PROFILE}, False, [PROFILE], REAL, REAL),
    ("auto on a host repairs a parent with no HOME",
     {"HERMES_HOME": HH}, False, [PROFILE], REAL, REAL),
    ("auto repair compares normalised paths",
     {"HERMES_HOME": HH + "/", "HOME": PROFILE + "/"}, False, [PROFILE], REAL, REAL),
    ("an empty mode is auto",
     {"TERMINAL_HOME_MODE": " ", "HERMES_HOME": HH, "HOME": REAL}, True, [PROFILE], REAL, PROFILE),
]


@pytest.mark.parametrize(
    ("env", "in_container", "dirs", "account", "expected"),
    [case[1:] for case in PRECEDENCE],
    ids=[case[0] for case in PRECEDENCE],
)
def test_subprocess_home_precedence(env, in_container, dirs, account, expected):
    assert hm.resolve_subprocess_home(env, in_container, account, exists(*dirs)) == expected


def test_resolve_rejects_an_unknown_mode():
    with pytest.raises(hm.HomeModeError):
        hm.resolve_subprocess_home({"TERMINAL_HOME_MODE": "jail"}, False, REAL, exists())


def test_real_home_never_returns_the_profile_home():
    env = {"HERMES_HOME": HH, "HOME": PROFILE, "HERMES_REAL_HOME": PROFILE}
    assert hm.real_home(env, REAL, exists(PROFILE)) == REAL


def test_real_home_is_none_when_every_candidate_is_the_profile_home():
    env = {"HERMES_HOME": HH, "HOME": PROFILE}
    assert hm.real_home(env, PROFILE, exists(PROFILE)) is None


def test_apply_sets_home_records_real_home_and_points_temp_at_scratch():
    env = {"TERMINAL_HOME_MODE": "profile", "HERMES_HOME": HH, "HOME": REAL}
    hm.apply_subprocess_home_env(env, False, REAL, exists(PROFILE), create_scratch=False)
    scratch = HH + "/cache/scratch"
    assert env["HOME"] == PROFILE
    assert env["HERMES_REAL_HOME"] == REAL
    assert (env["TMPDIR"], env["TMP"], env["TEMP"]) == (scratch, scratch, scratch)
    assert env["HERMES_SCRATCH_DIR"] == scratch


@pytest.mark.parametrize("key", ["TMPDIR", "TMP", "TEMP"])
def test_apply_keeps_a_temp_dir_the_user_set(key):
    env = {"TERMINAL_HOME_MODE": "profile", "HERMES_HOME": HH, "HOME": REAL, key: "/var/tmp/mine"}
    hm.apply_subprocess_home_env(env, False, REAL, exists(PROFILE), create_scratch=False)
    assert env[key] == "/var/tmp/mine"
    assert all(env.get(other) in (None, "/var/tmp/mine") for other in ("TMPDIR", "TMP", "TEMP"))
    assert env["HOME"] == PROFILE


def test_apply_rederives_a_temp_dir_the_agent_exported_for_another_home():
    old = "/srv/other/cache/scratch"
    env = {"HERMES_HOME": HH, "HOME": REAL, "TMPDIR": old, "HERMES_SCRATCH_DIR": old}
    hm.apply_subprocess_home_env(env, False, REAL, exists(), create_scratch=False)
    assert env["TMPDIR"] == HH + "/cache/scratch"


def test_apply_in_real_mode_leaves_a_real_home_alone():
    env = {"TERMINAL_HOME_MODE": "real", "HERMES_HOME": HH, "HOME": REAL}
    hm.apply_subprocess_home_env(env, True, REAL, exists(PROFILE), create_scratch=False)
    assert env["HOME"] == REAL


def test_apply_creates_the_scratch_dir_private():
    with tempfile.TemporaryDirectory() as top:
        env = {"HERMES_HOME": top, "HOME": REAL}
        hm.apply_subprocess_home_env(env, False, REAL, exists())
        assert os.path.isdir(env["TMPDIR"])
        assert os.stat(env["TMPDIR"]).st_mode & 0o777 == 0o700


def test_protected_homes_is_the_union_of_process_real_subprocess_and_profile_homes():
    env = {"TERMINAL_HOME_MODE": "profile", "HERMES_HOME": HH, "HOME": PROFILE, "HERMES_REAL_HOME": REAL}
    homes = hm.protected_homes(env, process_home="/root", account="/home/acct", isdir=exists(PROFILE))
    assert homes == sorted({"/root", REAL, PROFILE, "/home/acct"})


def test_protected_homes_include_the_real_home_when_home_is_pinned_to_the_profile():
    # the seed's perverse case: HOME is the profile home, a write to the real home by absolute path
    env = {"TERMINAL_HOME_MODE": "profile", "HERMES_HOME": HH, "HOME": PROFILE}
    homes = hm.protected_homes(env, account=REAL, isdir=exists(PROFILE))
    assert hm.is_in_protected_home(REAL + "/.hermes/scripts/x.sh", homes)
    assert hm.is_in_protected_home(PROFILE + "/.bashrc", homes)


def test_protected_home_match_is_by_path_component():
    assert not hm.is_in_protected_home("/home/agent2/x", ["/home/agent"])
    assert hm.is_in_protected_home("/home/agent", ["/home/agent"])
    assert hm.is_in_protected_home("/home/agent/../agent/x", ["/home/agent"])


def test_isolated_env_applies_the_four_eval_changes_and_leaves_the_input_alone():
    parent = {"HOME": REAL, "PATH": "/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
              "XDG_RUNTIME_DIR": "/run/user/1000", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
    before = dict(parent)
    env = hm.isolated_env(parent, "/runs/r1", real=REAL)
    assert parent == before
    assert env["HOME"] == "/runs/r1/home"
    assert env["TERMINAL_HOME_MODE"] == "profile"
    assert env["PATH"] == "/runs/r1/cache/eval-bin:/usr/bin:/bin"
    assert "DBUS_SESSION_BUS_ADDRESS" not in env
    assert "XDG_RUNTIME_DIR" not in env
    assert env["TMPDIR"] == env["TMP"] == env["TEMP"] == "/runs/r1/cache/scratch"
    assert env["EVAL_CRONTAB_FILE"] == "/runs/r1/crontab"
    assert env["HERMES_HOME"] == "/runs/r1"
    assert env["HERMES_REAL_HOME"] == REAL
    assert env["LANG"] == "C.UTF-8"


def test_isolated_env_does_not_repeat_the_shim_dir_on_path():
    env = hm.isolated_env({"PATH": "/runs/r1/cache/eval-bin:/bin"}, "/runs/r1", real=REAL)
    assert env["PATH"] == "/runs/r1/cache/eval-bin:/bin"


def test_eval_isolation_restores_the_environment_exactly():
    with tempfile.TemporaryDirectory() as top:
        environ = {"HOME": REAL, "PATH": "/usr/bin", "XDG_RUNTIME_DIR": "/run/user/1000", "KEEP": "1"}
        before = dict(environ)
        with hm.eval_isolation(top, shim_bin=os.path.join(top, "bin"), environ=environ) as layout:
            assert environ["HOME"] == layout["home"]
            assert "XDG_RUNTIME_DIR" not in environ
            assert os.path.isdir(layout["home"]) and os.path.isdir(layout["scratch"])
        assert environ == before


def test_eval_isolation_restores_on_error_and_resets_the_temp_dir_cache():
    with tempfile.TemporaryDirectory() as top:
        environ = {"HOME": REAL, "PATH": "/usr/bin"}
        cached = tempfile.tempdir
        with pytest.raises(RuntimeError), hm.eval_isolation(top, shim_bin=top, environ=environ):
            assert tempfile.tempdir is None
            raise RuntimeError("agent code failed")
        assert environ == {"HOME": REAL, "PATH": "/usr/bin"}
        assert tempfile.tempdir == cached


def test_eval_isolation_installs_the_crontab_shim_first_on_path():
    with tempfile.TemporaryDirectory() as top:
        environ = {"HOME": REAL, "PATH": "/usr/bin"}
        with hm.eval_isolation(top, environ=environ) as layout:
            first = environ["PATH"].split(os.pathsep, maxsplit=1)[0]
            assert first == layout["bin"]
            assert os.access(os.path.join(first, "crontab"), os.X_OK)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({".dockerenv": ""}, True),
        ({"run/.containerenv": ""}, True),
        ({"proc/1/cgroup": "0::/system.slice/docker-0123.scope\n"}, True),
        ({"proc/1/cgroup": "12:pids:/kubepods/besteffort/pod1\n"}, True),
        ({"proc/1/environ": "PATH=/bin\0container=podman\0"}, True),
        ({"proc/1/cgroup": "0::/init.scope\n", "proc/1/environ": "PATH=/bin\0"}, False),
        ({}, False),
    ],
)
def test_detect_container_reads_the_usual_markers(tmp_path, files, expected):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert hm.detect_container(str(tmp_path)) is expected
