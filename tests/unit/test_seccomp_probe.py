# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The seccomp probe's pure parts: how a container is started, how attempts are judged (issue 28)."""
import json

import pytest
from sandboxguard._prevent import dockerargs, probe, probe_script


def item(name, succeeded, errno_name=None):
    return {"name": name, "succeeded": succeeded, "errno": errno_name, "detail": ""}


def test_every_attempt_of_the_script_has_an_expectation_and_the_script_runs_them_all():
    assert [name for name, _words in probe_script.ATTEMPTS] == list(probe.EXPECT)
    for name in probe.EXPECT:
        assert '"%s"' % name in probe_script.SCRIPT
    compile(probe_script.SCRIPT, "probe", "exec")


@pytest.mark.parametrize("name", [n for n, e in probe.EXPECT.items() if e == probe.DENIED])
def test_a_denied_attempt_passes_only_when_refused_with_eperm(name):
    assert probe.judge(name, item(name, False, "EPERM"), None)["ok"]
    made = probe.judge(name, item(name, True), None)
    assert not made["ok"] and made["outcome"] == "allowed" and made["fix"]
    assert not probe.judge(name, item(name, False, "EACCES"), None)["ok"]
    assert probe.judge(name, None, None)["outcome"] == "not_run" and not probe.judge(name, None, None)["ok"]


def test_fchmodat2_may_be_unknown_to_the_engine():
    assert probe.judge("fchmodat2_4755", item("fchmodat2_4755", False, "ENOSYS"), None)["ok"]
    assert not probe.judge("chmod_4755", item("chmod_4755", False, "ENOSYS"), None)["ok"]


def test_a_file_made_setid_is_a_finding_even_when_the_tool_said_eperm():
    # what matters is the mode read back, not the exit code
    assert not probe.judge("chmod_4755", item("chmod_4755", True, "EPERM"), None)["ok"]


@pytest.mark.parametrize("name", ["chmod_755", "mkdir_p", "venv"])
def test_what_must_keep_working_fails_the_probe_when_refused(name):
    assert probe.judge(name, item(name, True), None)["ok"]
    row = probe.judge(name, item(name, False, "EPERM"), None)
    assert not row["ok"] and row["outcome"] == "denied"


@pytest.mark.parametrize("name", ["unshare_user", "keyctl"])
def test_the_engines_own_denials_must_hold_but_what_its_default_allows_may_stay(name):
    assert probe.judge(name, item(name, False, "EPERM"), item(name, False, "EPERM"))["ok"]
    assert not probe.judge(name, item(name, True), item(name, False, "EPERM"))["ok"]
    assert not probe.judge(name, item(name, True), None)["ok"]  # no reference: must be denied
    allowed = probe.judge(name, item(name, True), item(name, True))
    assert allowed["ok"] and "engine's own default allows" in allowed["detail"]


def test_io_uring_must_be_denied_whatever_the_default_does():
    assert not probe.judge("io_uring_setup", item("io_uring_setup", True), item("io_uring_setup", True))["ok"]


def test_the_output_is_read_line_by_line_and_unfinished_output_is_said():
    lines = [json.dumps(item("chmod_4755", False, "EPERM")), "garbage", json.dumps({"name": "nope"})]
    found, done = probe.parse_output("\n".join(lines).encode())
    assert list(found) == ["chmod_4755"] and not done
    found, done = probe.parse_output(("\n".join(lines) + '\n{"done": true}\n').encode())
    assert done


def test_hermes_mode_starts_the_container_with_hermes_arguments_then_the_extra_ones(tmp_path):
    profile = tmp_path / "p.json"
    profile.write_text('{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": []}')
    config, seccomp_opt, warnings = probe.host_config(
        "hermes", ["--security-opt", "seccomp=%s" % profile, "--cap-drop", "SETFCAP", "--cap-drop=MKNOD",
                   "-v", "/etc:/host-etc", "--network", "host", "--frobnicate"])
    assert config["NetworkMode"] == "none" and "Binds" not in config
    assert config["CapDrop"] == ["ALL", "CAP_SETFCAP", "CAP_MKNOD"]
    assert set(config["CapAdd"]) == {"CAP_DAC_OVERRIDE", "CAP_CHOWN", "CAP_FOWNER", "CAP_SETUID", "CAP_SETGID"}
    assert "no-new-privileges" in config["SecurityOpt"]
    assert json.loads(config["SecurityOpt"][-1][len("seccomp="):]) == json.loads(profile.read_text())
    assert config["Tmpfs"]["/tmp"] == "rw,nosuid,size=512m"
    assert seccomp_opt == str(profile)
    assert any("/etc:/host-etc" in w and "--network" in w for w in warnings)
    assert any("--frobnicate" in w for w in warnings)


def test_podman_gets_the_profiles_path_and_the_reference_podmans_own_default(tmp_path):
    config, _opt, _warnings = probe.host_config("hermes", ["--security-opt=seccomp=/etc/x.json"], "podman")
    assert "seccomp=/etc/x.json" in config["SecurityOpt"]
    reference = probe.reference_config(config, "hermes", "podman")
    assert "seccomp=/etc/x.json" not in reference["SecurityOpt"]
    assert "seccomp=/usr/share/containers/seccomp.json" in reference["SecurityOpt"]


def test_the_daemon_mode_has_no_options_and_no_distinct_reference():
    config, opt, warnings = probe.host_config("daemon", ["--privileged"])
    assert config == {"NetworkMode": "none"} and opt is None and warnings == []
    assert probe.reference_config(config, "daemon", "docker") is None


def test_the_probe_refuses_an_unknown_mode_and_a_missing_image():
    with pytest.raises(ValueError, match="mode 'x'"):
        probe.probe("x", "img")
    with pytest.raises(ValueError, match="needs a local image"):
        probe.probe("hermes", "")


def test_a_probe_that_cannot_reach_its_engine_says_so_and_is_not_ok():
    report = probe.probe("daemon", "img", engine_url="unix:///nonexistent/sandboxguard.sock")
    assert report["ok"] is False and report["ran"] is False and report["complete"] is False
    assert report["errors"] and "did not run" in report["reason"]


@pytest.mark.parametrize(("args", "key", "value"), [
    (["--privileged"], "privileged", True),
    (["--privileged=false"], "privileged", False),
    (["--pid", "host"], "pid", "host"),
    (["--pid=host"], "pid", "host"),
    (["--userns=host"], "userns", "host"),
    (["--net", "host"], "network", "host"),
    (["-u", "0"], "user", "0"),
    (["--cap-add", "SYS_ADMIN", "--cap-add=ALL"], "cap_add", ["SYS_ADMIN", "ALL"]),
    (["-v", "/var/run/docker.sock:/var/run/docker.sock"], "volumes", ["/var/run/docker.sock:/var/run/docker.sock"]),
    (["-e", "X=--privileged", "--name", "--privileged"], "privileged", False),
    (["--cap-add"], "unknown", ["--cap-add"]),
])
def test_run_arguments_are_read_with_either_spelling(args, key, value):
    assert dockerargs.parse_run_args(args)[key] == value


def test_seccomp_and_no_new_privileges_options():
    assert dockerargs.seccomp_option(["seccomp=a", "apparmor=b", "seccomp:unconfined"]) == "unconfined"
    assert dockerargs.has_no_new_privileges(["no-new-privileges"])
    assert dockerargs.has_no_new_privileges(["no-new-privileges:true"])
    assert not dockerargs.has_no_new_privileges(["no-new-privileges=false"])


def test_the_cli_refuses_a_bad_timeout_and_a_hermes_home_without_a_config(tmp_path, capsys):
    from sandboxguard_cli import main

    assert main.main(["seccomp-probe", "--image", "img", "--timeout", "0"]) == 2
    assert "--timeout 0" in capsys.readouterr().err
    assert main.main(["seccomp-probe", "--image", "img", "--hermes-home", str(tmp_path)]) == 2
    assert "config.yaml does not exist" in capsys.readouterr().err


def test_the_cli_says_loudly_when_the_probe_cannot_run(capsys):
    from sandboxguard_cli import main

    code = main.main(["seccomp-probe", "--image", "img", "--engine-url", "unix:///nonexistent/sg.sock", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["ran"] is False and report["ok"] is False and report["errors"]
