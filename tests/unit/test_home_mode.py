# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""TERMINAL_HOME_MODE: normalisation, precedence, env application, protected homes."""
import os
import tempfile

import pytest
from sandboxguard import home_mode as hm
from sandboxguard._terminal.dirs import set_dir_mode
from sandboxguard._terminal.eval_tools import eval_wrapper_text
from sandboxguard._terminal.modes import XDG_BASE_ENV_VARS
from sandboxguard.container import detect_container

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
    assert detect_container(str(tmp_path)) is expected


# --- XDG base directories and the scratch dir's mode (issue 10 item 14) -------------------

INHERITED_XDG = {"XDG_CONFIG_HOME": REAL + "/.config", "XDG_DATA_HOME": REAL + "/.local/share",
                 "XDG_STATE_HOME": REAL + "/.local/state", "XDG_CACHE_HOME": REAL + "/.cache"}


def xdg_under(home):
    return {"XDG_CONFIG_HOME": home + "/.config", "XDG_DATA_HOME": home + "/.local/share",
            "XDG_STATE_HOME": home + "/.local/state", "XDG_CACHE_HOME": home + "/.cache"}


def mode_of(path):
    return os.stat(path).st_mode & 0o7777


@pytest.mark.parametrize("inherited", [INHERITED_XDG, {}], ids=["inherited-from-the-real-home", "unset"])
def test_isolated_env_points_the_xdg_base_dirs_into_the_profile_home(inherited):
    env = hm.isolated_env(dict(inherited, HOME=REAL, PATH="/bin"), "/runs/r1", real=REAL)
    assert {key: env[key] for key in XDG_BASE_ENV_VARS} == xdg_under("/runs/r1/home")


def test_eval_isolation_points_the_xdg_base_dirs_into_the_profile_home_and_restores_them(tmp_path):
    environ = dict(INHERITED_XDG, HOME=REAL, PATH="/usr/bin")
    before = dict(environ)
    with hm.eval_isolation(str(tmp_path), shim_bin=str(tmp_path / "bin"), environ=environ) as layout:
        assert {key: environ[key] for key in XDG_BASE_ENV_VARS} == xdg_under(layout["home"])
    assert environ == before


@pytest.mark.parametrize("mode", ["profile", "isolated"])
def test_apply_moves_the_xdg_base_dirs_with_home_into_the_profile_home(mode):
    env = dict(INHERITED_XDG, TERMINAL_HOME_MODE=mode, HERMES_HOME=HH, HOME=REAL)
    hm.apply_subprocess_home_env(env, False, REAL, exists(PROFILE), create_scratch=False)
    assert env["HOME"] == PROFILE
    assert {key: env[key] for key in XDG_BASE_ENV_VARS} == xdg_under(PROFILE)


def test_apply_leaves_the_xdg_base_dirs_alone_when_home_stays_real():
    env = dict(INHERITED_XDG, TERMINAL_HOME_MODE="auto", HERMES_HOME=HH, HOME=REAL)
    hm.apply_subprocess_home_env(env, False, REAL, exists(PROFILE), create_scratch=False)
    assert env["HOME"] == REAL
    assert {key: env[key] for key in XDG_BASE_ENV_VARS} == INHERITED_XDG


def make_scratch(tmp_path, mode=0o750):
    scratch = tmp_path / "cache" / "scratch"
    scratch.mkdir(parents=True)
    os.chmod(scratch, mode)
    return scratch


@pytest.mark.parametrize("mode", [0o750, 0o755, 0o2770, 0o711], ids=lambda m: "%04o" % m)
def test_existing_scratch_dir_is_tightened_to_0700_on_a_host(tmp_path, mode):
    scratch = make_scratch(tmp_path, mode)
    env = {"HERMES_HOME": str(tmp_path), "HOME": REAL}
    hm.apply_subprocess_home_env(env, False, REAL, exists())
    assert env["TMPDIR"] == str(scratch)
    assert mode_of(scratch) == 0o700


def test_existing_scratch_dir_keeps_the_operators_mode_in_a_container(tmp_path):
    scratch = make_scratch(tmp_path)
    hm.apply_subprocess_home_env({"HERMES_HOME": str(tmp_path), "HOME": REAL}, True, REAL, exists())
    assert mode_of(scratch) == 0o750


@pytest.mark.parametrize("marker", ["nixos", "", "dir"], ids=["marker", "empty-marker", "unreadable-marker"])
def test_existing_scratch_dir_keeps_its_mode_in_a_managed_home(tmp_path, marker):
    scratch = make_scratch(tmp_path)
    if marker == "dir":
        (tmp_path / ".managed").mkdir()
    else:
        (tmp_path / ".managed").write_text(marker)
    hm.apply_subprocess_home_env({"HERMES_HOME": str(tmp_path), "HOME": REAL}, False, REAL, exists())
    assert mode_of(scratch) == 0o750


def test_existing_scratch_dir_keeps_its_mode_when_hermes_managed_is_set(tmp_path):
    scratch = make_scratch(tmp_path)
    env = {"HERMES_HOME": str(tmp_path), "HOME": REAL, "HERMES_MANAGED": "nixos"}
    hm.apply_subprocess_home_env(env, False, REAL, exists())
    assert mode_of(scratch) == 0o750


@pytest.mark.parametrize("in_container", [False, True])
def test_explicit_hermes_home_mode_is_applied_to_the_scratch_dir(tmp_path, in_container):
    scratch = make_scratch(tmp_path, 0o700)
    env = {"HERMES_HOME": str(tmp_path), "HOME": REAL, "HERMES_HOME_MODE": "0770"}
    hm.apply_subprocess_home_env(env, in_container, REAL, exists())
    assert mode_of(scratch) == 0o770


def test_a_bad_hermes_home_mode_is_an_error_naming_the_variable(tmp_path):
    with pytest.raises(hm.HomeModeError, match="HERMES_HOME_MODE"):
        hm.apply_subprocess_home_env({"HERMES_HOME": str(tmp_path), "HOME": REAL, "HERMES_HOME_MODE": "rwx"},
                                     False, REAL, exists())


def test_a_user_set_tmpdir_leaves_the_scratch_dir_alone(tmp_path):
    scratch = make_scratch(tmp_path)
    env = {"HERMES_HOME": str(tmp_path), "HOME": REAL, "TMPDIR": "/var/tmp"}
    hm.apply_subprocess_home_env(env, False, REAL, exists())
    assert mode_of(scratch) == 0o750


def test_eval_isolation_tightens_existing_run_dirs_to_0700(tmp_path):
    scratch = make_scratch(tmp_path)
    (tmp_path / "home").mkdir(mode=0o755)
    os.chmod(tmp_path / "home", 0o755)
    environ = {"HOME": REAL, "PATH": "/usr/bin"}
    with hm.eval_isolation(str(tmp_path), shim_bin=str(tmp_path / "bin"), environ=environ):
        assert mode_of(scratch) == 0o700
        assert mode_of(tmp_path / "home") == 0o700


@pytest.mark.parametrize("which", ["home", "cache/scratch"])
def test_a_symlinked_run_dir_is_refused_and_its_target_left_alone(tmp_path, which):
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.chmod(target, 0o755)
    link = tmp_path / "run" / which
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    with pytest.raises(hm.HomeModeError, match="symlink"):
        hm.ensure_isolation_dirs(str(tmp_path / "run"))
    assert mode_of(target) == 0o755


def run_wrapper(tmp_path, run_dir, environ):
    import subprocess

    wrapper = tmp_path / "sandboxguard-eval-run"
    wrapper.write_text(eval_wrapper_text(str(tmp_path / "bin")))
    os.chmod(wrapper, 0o755)
    return subprocess.run([str(wrapper), str(run_dir), "/usr/bin/env", "-0"], env=environ,
                          capture_output=True, check=False)


def test_eval_run_wrapper_sets_what_isolated_env_sets(tmp_path):
    run_dir = tmp_path / "run"
    parent = dict(INHERITED_XDG, HOME=REAL, PATH="/usr/bin:/bin", XDG_RUNTIME_DIR="/run/user/1000",
                  DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/1000/bus")
    proc = run_wrapper(tmp_path, run_dir, parent)
    assert proc.returncode == 0, proc.stderr
    got = dict(item.split("=", 1) for item in proc.stdout.decode().split("\0") if item)
    want = hm.isolated_env(parent, str(run_dir), shim_bin=str(tmp_path / "bin"), real=REAL)
    want.pop("PWD", None)
    got.pop("PWD", None)
    assert {k: got.get(k) for k in want} == want
    assert mode_of(run_dir / "home") == 0o700


def test_eval_run_wrapper_tightens_an_existing_scratch_dir(tmp_path):
    scratch = make_scratch(tmp_path / "run")
    proc = run_wrapper(tmp_path, tmp_path / "run", {"HOME": REAL, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert mode_of(scratch) == 0o700


def test_eval_run_wrapper_refuses_a_symlinked_scratch_dir(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.chmod(target, 0o755)
    (tmp_path / "run" / "cache").mkdir(parents=True)
    (tmp_path / "run" / "cache" / "scratch").symlink_to(target)
    proc = run_wrapper(tmp_path, tmp_path / "run", {"HOME": REAL, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2
    assert b"symlink" in proc.stderr
    assert mode_of(target) == 0o755


# --- through descriptors (issue 19) ---------------------------------------------------------

def test_a_symlinked_cache_on_the_way_to_scratch_is_refused_and_its_target_left_alone(tmp_path):
    target = tmp_path / "elsewhere"
    (target / "scratch").mkdir(parents=True)
    os.chmod(target / "scratch", 0o755)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "cache").symlink_to(target)
    with pytest.raises(hm.HomeModeError, match=r"cache: is a symlink.*remove"):
        hm.ensure_isolation_dirs(str(tmp_path / "run"))
    env = {"HERMES_HOME": str(tmp_path / "run"), "HOME": REAL}
    with pytest.raises(hm.HomeModeError, match="goes through a symlink"):
        hm.apply_subprocess_home_env(env, False, REAL, exists())
    with pytest.raises(hm.HomeModeError, match="goes through a symlink"):
        set_dir_mode(str(tmp_path / "run" / "cache" / "scratch"))
    assert mode_of(target / "scratch") == 0o755
    assert sorted(os.listdir(target)) == ["scratch"]


def test_ensure_isolation_dirs_makes_every_missing_directory_0700(tmp_path):
    layout = hm.ensure_isolation_dirs(str(tmp_path / "new" / "run"))
    for key in ("hermes_home", "home", "scratch", "bin"):
        assert mode_of(layout[key]) == 0o700, key
    assert mode_of(tmp_path / "new" / "run" / "cache") == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="a directory of another user needs root to make")
@pytest.mark.parametrize("how", ["owned by another user", "group-writable parent", "another user's in a sticky dir"])
def test_eval_run_wrapper_refuses_a_run_dir_another_user_can_change(tmp_path, how):
    top = tmp_path / "top"
    top.mkdir()
    run_dir = top / "run"
    run_dir.mkdir()
    (run_dir / "cache").mkdir()
    (run_dir / "cache" / "scratch").mkdir()
    os.chmod(run_dir / "cache" / "scratch", 0o755)
    if how == "owned by another user":
        os.chown(run_dir / "cache", 4321, 4321)
    elif how == "group-writable parent":
        os.chmod(top, 0o775)
    else:
        os.chmod(top, 0o1777)
        os.chown(run_dir, 4321, 4321)
    proc = run_wrapper(tmp_path, run_dir, {"HOME": REAL, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2, proc.stderr
    assert b"run it as that user" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert mode_of(run_dir / "cache" / "scratch") == 0o755
    assert not (run_dir / "home").exists()


def test_eval_run_wrapper_follows_a_link_only_root_or_this_user_could_make(tmp_path):
    (tmp_path / "data" / "run").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "data")
    proc = run_wrapper(tmp_path, tmp_path / "link" / "run", {"HOME": REAL, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert mode_of(tmp_path / "data" / "run" / "home") == 0o700
