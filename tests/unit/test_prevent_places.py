# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The prevention's places (issue 28): docker_extra_args, daemon.json, containers.conf; install from a base file."""
import json
import os
import shutil
import tempfile

import pytest
from sandboxguard import hermes_config
from sandboxguard._prevent import places, prevent, seccomp
from test_seccomp import docker_like, podman_like

P = "/etc/sandboxguard/seccomp/docker.json"
BLOCK = ["--security-opt", "seccomp=" + P, "--cap-drop", "SETFCAP", "--cap-drop", "MKNOD",
         "--security-opt", "no-new-privileges"]


@pytest.mark.parametrize("before", [
    [], ["--cap-add", "SYS_PTRACE"], ["--shm-size=2g"], ["-v", "/srv:/srv:ro", "--init"],
])
def test_hermes_args_append_the_block_once_and_removal_gives_them_back(before):
    after, warnings = places.hermes_args(before, P)
    assert after == [*before, *BLOCK] and warnings == []
    assert places.hermes_args(after, P) == (after, [])
    assert places.hermes_args(after, P, "absent") == (before, [])
    assert places.hermes_args(before, P, "absent") == (before, [])


def test_what_the_operator_already_has_is_not_added_and_stays_on_removal():
    before = ["--cap-drop=MKNOD", "--security-opt", "no-new-privileges"]
    after, _ = places.hermes_args(before, P)
    assert after == [*before, "--security-opt", "seccomp=" + P, "--cap-drop", "SETFCAP"]
    assert places.hermes_args(after, P, "absent")[0] == before
    assert places.hermes_args(["--cap-drop", "ALL"], P)[0] == ["--cap-drop", "ALL", "--security-opt",
                                                                "seccomp=" + P, "--security-opt",
                                                                "no-new-privileges"]


def test_another_seccomp_option_is_replaced_with_a_warning():
    after, warnings = places.hermes_args(["--security-opt", "seccomp=unconfined", "--init"], P)
    assert after == ["--init", *BLOCK]
    assert "seccomp=unconfined" in warnings[0]


def test_a_cap_add_that_undoes_the_drop_is_warned_about():
    _after, warnings = places.hermes_args(["--cap-add", "SETFCAP"], P)
    assert any("adds SETFCAP" in w for w in warnings)


def test_no_new_privileges_can_be_left_out():
    assert "no-new-privileges" not in places.hermes_args([], P, no_new_privileges=False)[0]


def test_daemon_json_keeps_the_other_keys_and_leaves_a_profile_not_ours():
    text = '{"log-driver": "json-file", "live-restore": true}'
    after, previous, _w = places.daemon_json(text, P)
    assert json.loads(after) == {"log-driver": "json-file", "live-restore": True, "seccomp-profile": P}
    assert previous is None and places.daemon_json(after, P)[0] == after
    assert json.loads(places.daemon_json(after, P, "absent")[0]) == json.loads(text)
    other = '{"seccomp-profile": "/etc/mine.json"}'
    kept, previous, warnings = places.daemon_json(other, P, "absent")
    assert kept == other and previous == "/etc/mine.json" and "left in place" in warnings[0]


@pytest.mark.parametrize("text", ["{", "[1]"])
def test_a_daemon_json_that_is_not_an_object_is_refused(text):
    with pytest.raises(seccomp.SeccompError, match=r"daemon\.json"):
        places.daemon_json(text, P)


CONF = '# mine\n[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"  # here\n'


@pytest.mark.parametrize("text", [CONF, "", None, '[engine]\nruntime = "runc"\n',
                                  '[containers]\nseccomp_profile = "/usr/share/containers/seccomp.json"\n'])
def test_containers_conf_gets_one_line_and_loses_only_it(text):
    tomllib = pytest.importorskip("tomllib")
    after, _previous, _w = places.containers_conf(text, P)
    assert tomllib.loads(after)["containers"]["seccomp_profile"] == P
    assert places.containers_conf(after, P)[0] == after
    removed = places.containers_conf(after, P, "absent")[0]
    assert "seccomp_profile" not in tomllib.loads(removed).get("containers", {})
    if text == CONF:
        assert removed == CONF and after.replace('seccomp_profile = "%s"\n' % P, "") == CONF


@pytest.fixture
def trusted():
    """A directory only root can change (tmp_path is below the sticky /tmp, which is not)."""
    path = tempfile.mkdtemp(prefix="sg-prevent-", dir="/run" if os.geteuid() == 0 else None)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def base(tmp_path):
    path = tmp_path / "default.json"
    path.write_text(json.dumps(docker_like()))
    return str(path)


def home_with(tmp_path, text):
    home = tmp_path / "hh"
    home.mkdir()
    (home / "config.yaml").write_text(text)
    return str(home)


CONFIG = "terminal:\n  backend: docker  # the sandbox\n  docker_extra_args:\n    - --shm-size=2g  # chromium\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="the profile directory must be root's")
def test_hermes_place_installs_the_profile_and_edits_the_config_with_check_mode_diff_and_removal(tmp_path, trusted,
                                                                                                  base):
    home = home_with(tmp_path, CONFIG)
    kwargs = {"hermes_home": home, "engine": "docker", "profile_dir": trusted + "/seccomp", "base": base}
    dry = prevent.prevent("hermes", dry_run=True, **kwargs)
    assert dry["changed"] and len(dry["diff"]) == 2 and not os.path.exists(trusted + "/seccomp")
    assert open(home + "/config.yaml").read() == CONFIG
    done = prevent.prevent("hermes", **kwargs)
    profile = trusted + "/seccomp/docker.json"
    assert done["changed"] and done["profile"]["path"] == profile and oct(os.stat(profile).st_mode)[-3:] == "644"
    assert seccomp.check_profile(json.load(open(profile)), docker_like(), "docker")["ok"]
    text = open(home + "/config.yaml").read()
    assert "# the sandbox" in text and "# chromium" in text and "seccomp=%s" % profile in text
    assert not prevent.prevent("hermes", **kwargs)["changed"]
    assert prevent.prevent("hermes", state="absent", dry_run=True, **kwargs)["changed"]
    assert prevent.prevent("hermes", state="absent", **kwargs)["changed"]
    assert open(home + "/config.yaml").read() == CONFIG
    gone = prevent.prevent("profiles", state="absent", profile_dir=trusted + "/seccomp")
    assert gone["removed"] == [profile] and not os.path.exists(profile)


@pytest.mark.skipif(os.geteuid() != 0, reason="the profile directory must be root's")
def test_a_new_base_makes_a_new_profile(tmp_path, trusted, base):
    home = home_with(tmp_path, CONFIG)
    kwargs = {"hermes_home": home, "engine": "docker", "profile_dir": trusted, "base": base}
    prevent.prevent("hermes", **kwargs)
    newer = docker_like()
    newer["syscalls"][0]["names"].append("landlock_create_ruleset")
    with open(base, "w") as handle:
        json.dump(newer, handle)
    again = prevent.prevent("hermes", **kwargs)
    assert again["changed"] and again["profile"]["changed"] and not again["config"]["changed"]
    assert again["profile"]["sha256"] == seccomp.base_sha256(newer)


@pytest.mark.skipif(os.geteuid() != 0, reason="the files must be root's")
@pytest.mark.parametrize(("place", "option", "name"), [("docker_daemon", "daemon_json", "daemon.json"),
                                                        ("podman", "containers_conf", "containers.conf")])
def test_engine_places_edit_their_file_with_check_mode_and_removal(trusted, base, tmp_path, place, option, name):
    podman = tmp_path / "podman.json"
    podman.write_text(json.dumps(podman_like()))
    path = os.path.join(trusted, "etc", name)
    kwargs = {"profile_dir": trusted + "/seccomp", "base": str(podman) if place == "podman" else base, option: path}
    assert prevent.prevent(place, dry_run=True, **kwargs)["changed"] and not os.path.exists(path)
    done = prevent.prevent(place, **kwargs)
    assert done["changed"] and done["restart"] is (place == "docker_daemon")
    expected = trusted + "/seccomp/" + ("docker-devices.json" if place == "docker_daemon" else "podman.json")
    assert expected in open(path).read() and done["profile"]["path"] == expected
    if place == "docker_daemon":
        assert seccomp.devices_denied(json.load(open(expected)))
    repeat = prevent.prevent(place, **kwargs)
    assert not repeat["changed"] and not repeat["restart"]
    assert prevent.prevent(place, state="absent", **kwargs)["changed"]
    assert expected not in open(path).read()
    assert not prevent.prevent(place, state="absent", **kwargs)["changed"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the profile directory must be root's")
def test_a_profile_directory_another_user_can_change_is_refused(tmp_path, base):
    home = home_with(tmp_path, CONFIG)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.raises(seccomp.SeccompError, match="another user can change it"):
        prevent.prevent("hermes", hermes_home=home, engine="docker", profile_dir=str(shared), base=base)


def test_a_hermes_home_without_a_config_is_named(tmp_path, base):
    (tmp_path / "hh").mkdir()
    with pytest.raises(hermes_config.ConfigError, match="run Hermes once"):
        prevent.edit_hermes(str(tmp_path / "hh"), P, "present", dry_run=True)


def test_a_symlinked_config_is_refused(tmp_path):
    home = home_with(tmp_path, CONFIG)
    os.rename(home + "/config.yaml", str(tmp_path / "real.yaml"))
    os.symlink(str(tmp_path / "real.yaml"), home + "/config.yaml")
    with pytest.raises(hermes_config.ConfigError):
        prevent.edit_hermes(home, P, "present", dry_run=False)
    assert "seccomp" not in (tmp_path / "real.yaml").read_text()


def test_bad_place_and_state_are_refused():
    with pytest.raises(seccomp.SeccompError, match="place 'x'"):
        prevent.prevent("x")
    with pytest.raises(seccomp.SeccompError, match="needs the Hermes home"):
        prevent.prevent("hermes")
    with pytest.raises(seccomp.SeccompError, match="state absent"):
        prevent.prevent("profiles", profile_dir="/nonexistent")


@pytest.mark.skipif(os.geteuid() != 0, reason="the profile directory must be root's")
def test_a_daemon_default_of_ours_hides_dockers_and_the_base_kept_beside_the_profiles_is_used(tmp_path, trusted,
                                                                                               monkeypatch):
    from sandboxguard._prevent import bases, profile

    def running(version):
        def read(engine, base, image, docker_host):
            return docker_like(), {"engine": "docker", "engine_version": version, "origin": "a test"}, "docker"
        return read

    def hidden(version):
        def read(*_args):
            raise bases.BaseHidden("the Docker daemon's default profile is already a sandboxguard profile", version)
        return read

    daemon = os.path.join(trusted, "daemon.json")
    kwargs = {"profile_dir": trusted + "/seccomp", "daemon_json": daemon, "image": "img"}
    monkeypatch.setattr(profile, "engine_base", running("20.10.24"))
    first = prevent.prevent("docker_daemon", **kwargs)
    assert first["changed"] and os.path.exists(trusted + "/seccomp/docker-base.json")
    monkeypatch.setattr(profile, "engine_base", hidden("20.10.24"))
    again = prevent.prevent("docker_daemon", **kwargs)
    assert not again["changed"] and again["profile"]["sha256"] == first["profile"]["sha256"]
    monkeypatch.setattr(profile, "engine_base", hidden("24.0.7"))
    with pytest.raises(seccomp.SeccompError, match=r"no base of Docker 24\.0\.7 kept"):
        prevent.prevent("docker_daemon", **kwargs)
    prevent.prevent("docker_daemon", state="absent", **kwargs)
    gone = prevent.prevent("profiles", state="absent", profile_dir=trusted + "/seccomp")
    assert sorted(os.path.basename(p) for p in gone["removed"]) == ["docker-base.json", "docker-devices.json"]


def test_a_home_whose_backend_is_not_docker_is_edited_with_a_warning(tmp_path):
    home = home_with(tmp_path, "terminal:\n  backend: local\n")
    done = prevent.edit_hermes(home, P, "present", dry_run=True)
    assert done["changed"] and any("terminal.backend is local" in w for w in done["warnings"])


def test_snap_compat_leaves_no_new_privileges_out(tmp_path):
    home = home_with(tmp_path, "terminal:\n  backend: docker\n  docker_snap_compat: true\n")
    done = prevent.edit_hermes(home, P, "present", dry_run=True)
    assert "no-new-privileges" not in done["args"] and any("snap" in w for w in done["warnings"])
