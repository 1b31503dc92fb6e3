# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard seccomp-profile` with a given base (no engine needed): output, refusals, --check."""
import json

import pytest
from sandboxguard._prevent import seccomp
from sandboxguard_cli import main
from test_seccomp import SOURCE, docker_like, podman_like


@pytest.fixture
def base_file(tmp_path):
    path = tmp_path / "default.json"
    path.write_text(json.dumps(docker_like()))
    return str(path)


def run(capsys, *argv):
    code = main.main(["seccomp-profile", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_profile_is_json_on_stdout_naming_its_base(capsys, base_file):
    code, out, err = run(capsys, "--base", base_file)
    assert code == 0 and err == ""
    profile = json.loads(out)
    meta = profile[seccomp.META_KEY]
    assert meta["base"]["origin"] == "file %s" % base_file
    assert meta["base"]["sha256"] == seccomp.base_sha256(docker_like())
    assert seccomp.check_profile(profile, docker_like())["ok"]


def test_devices_adds_the_device_rules(capsys, base_file):
    code, out, _err = run(capsys, "--base", base_file, "--devices")
    assert code == 0 and seccomp.devices_denied(json.loads(out))


def test_a_base_that_allows_by_default_is_refused_with_one_line_and_exit_2(capsys, tmp_path):
    path = tmp_path / "allow.json"
    path.write_text(json.dumps(dict(docker_like(), defaultAction="SCMP_ACT_ALLOW")))
    code, out, err = run(capsys, "--base", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "not a default-deny profile" in err and "sandboxguard seccomp-profile:" in err


@pytest.mark.parametrize(("content", "words"), [("{", "is not JSON"), ("[1]", "not a seccomp profile")])
def test_a_base_that_is_not_a_profile_is_refused(capsys, tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    code, _out, err = run(capsys, "--base", str(path))
    assert code == 2 and words in err


def test_a_missing_base_is_named(capsys, tmp_path):
    code, _out, err = run(capsys, "--base", str(tmp_path / "nope.json"))
    assert code == 2 and "nope.json does not exist" in err


def test_a_base_through_a_symlink_in_a_directory_another_user_can_write_is_refused(capsys, tmp_path, base_file):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "link.json").symlink_to(base_file)
    code, _out, err = run(capsys, "--base", str(shared / "link.json"))
    assert code == 2 and "link.json" in err


def test_docker_without_an_image_says_what_to_give(capsys):
    code, _out, err = run(capsys, "--engine", "docker")
    assert code == 2 and "name a local image" in err


def test_check_passes_a_profile_made_from_the_same_base(capsys, tmp_path, base_file):
    made = tmp_path / "made.json"
    made.write_text(seccomp.profile_text(seccomp.build_profile(docker_like(), SOURCE)))
    code, out, _err = run(capsys, "--check", str(made), "--base", base_file, "--engine", "docker")
    assert code == 0 and "OK" in out


def test_check_fails_a_profile_made_from_podmans_base_under_docker(capsys, tmp_path, base_file):
    made = tmp_path / "made.json"
    made.write_text(seccomp.profile_text(seccomp.build_profile(podman_like(), dict(SOURCE, engine="podman"))))
    code, out, _err = run(capsys, "--check", str(made), "--base", base_file, "--engine", "docker", "--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"]
    rules = {p["rule"]: p["syscalls"] for p in report["problems"]}
    assert rules["base-denial-lost"] == ["clone3", "keyctl", "mount", "unshare"] and "other-engine-base" in rules


def test_check_of_the_engines_own_default_lists_every_problem(capsys, base_file):
    code, out, _err = run(capsys, "--check", base_file, "--base", base_file)
    assert code == 1 and "setid-unconditional" in out and "not made by sandboxguard" in out


def test_check_without_a_base_to_compare_is_never_clean(capsys, tmp_path, monkeypatch):
    from sandboxguard._prevent import bases

    made = tmp_path / "made.json"
    made.write_text(seccomp.profile_text(seccomp.build_profile(podman_like(), dict(SOURCE, engine="podman"))))
    monkeypatch.setattr(bases, "PODMAN_DEFAULT_PROFILE", str(tmp_path / "absent.json"))
    code, out, _err = run(capsys, "--check", str(made), "--engine", "podman", "--json")
    report = json.loads(out)
    assert code == 1 and report["complete"] is False and report["ok"] is True
    assert any("denials were not checked" in w for w in report["warnings"])
