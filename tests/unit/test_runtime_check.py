# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The audit's runtime check (issue 28): the rules over config, inspect documents and roots, without an engine."""
import pytest
from sandboxguard._fleet import runtime, runtime_host
from sandboxguard._prevent import hermes
from sandboxguard._privileged import scope

ROOTS = ["/home/hermes/.hermes/sandboxes/docker"]
CFG = "/home/hermes/.hermes/config.yaml"


def rules(found):
    return sorted({f["rule"] for f in found})


@pytest.mark.parametrize(("args", "rule", "cis"), [
    (["--privileged"], "privileged", "5.4"),
    (["--privileged=true"], "privileged", "5.4"),
    (["--cap-add", "ALL"], "cap-add", "5.3"),
    (["--cap-add=SYS_ADMIN"], "cap-add", "5.3"),
    (["--cap-add", "cap_setfcap"], "cap-add", "5.3"),
    (["--cap-add", "MKNOD"], "cap-add", "5.3"),
    (["--cap-add", "DAC_READ_SEARCH"], "cap-add", "5.3"),
    (["--security-opt", "seccomp=unconfined"], "seccomp-unconfined", "5.21"),
    (["--security-opt=seccomp:unconfined"], "seccomp-unconfined", "5.21"),
    (["--security-opt", "apparmor=unconfined"], "apparmor-unconfined", "5.1"),
    (["--pid", "host"], "host-namespace", "5.15"),
    (["--pid=host"], "host-namespace", "5.15"),
    (["--userns", "host"], "host-namespace", "5.30"),
    (["--network", "host"], "host-namespace", "5.9"),
    (["--net=host"], "host-namespace", "5.9"),
    (["-v", "/var/run/docker.sock:/var/run/docker.sock"], "engine-socket", "5.31"),
    (["--volume=/run/podman/podman.sock:/run/docker.sock:ro"], "engine-socket", "5.31"),
    (["--mount", "type=bind,source=/var/run/docker.sock,target=/s"], "engine-socket", "5.31"),
    (["-v", "/etc:/host-etc:ro"], "system-dir-bind", "5.5"),
    (["-v", "/srv/data:/data"], "rw-bind-outside-roots", None),
])
def test_each_risky_docker_extra_arg_is_a_finding_with_its_cis_id(args, rule, cis):
    found = runtime.args_findings(CFG, args, ROOTS)
    assert rules(found) == [rule]
    assert found[0]["cis"] == cis and found[0]["where"] == CFG
    assert found[0]["severity"] in runtime.SEVERITIES and found[0]["fix"]


@pytest.mark.parametrize("args", [
    [], ["--cap-add", "NET_BIND_SERVICE"], ["--cap-drop", "ALL", "--cap-add", "CHOWN"],
    ["--security-opt", "seccomp=/etc/sandboxguard/seccomp/docker.json", "--cap-drop", "SETFCAP"],
    ["-v", "/srv/data:/data:ro"], ["-v", "named-volume:/data"], ["--network", "none"],
    ["-v", "/home/hermes/.hermes/sandboxes/docker/t1/workspace:/workspace"],
    ["-e", "X=--privileged"], ["--label", "--pid=host"],
])
def test_what_does_not_widen_the_sandbox_is_not_a_finding(args):
    assert runtime.args_findings(CFG, args, ROOTS) == []


def test_docker_volumes_rw_outside_the_roots_and_secret_isolation():
    settings = {"extra_args": [], "volumes": ["/srv/data:/data", "/srv/ro:/ro:ro",
                                              "/home/hermes/.hermes/sandboxes/docker/t/home:/root"],
                "secret_isolation": "off", "secret_isolation_raw": "off"}
    found = runtime.config_findings(CFG, settings, ROOTS, landlock=True)
    assert rules(found) == ["rw-bind-outside-roots", "secret-isolation-off"]
    assert [f["source"] for f in found if f["rule"] == "rw-bind-outside-roots"] == ["/srv/data"]


@pytest.mark.parametrize(("mode", "landlock", "expected"), [
    ("auto", False, ["secret-isolation-no-landlock"]), ("auto", True, []), ("auto", None, []),
    ("require", False, []), ("off", True, ["secret-isolation-off"]),
])
def test_secret_isolation_auto_is_a_finding_only_without_landlock(mode, landlock, expected):
    settings = {"extra_args": [], "volumes": [], "secret_isolation": mode, "secret_isolation_raw": mode}
    assert rules(runtime.config_findings(CFG, settings, ROOTS, landlock)) == expected


def inspect(host=None, mounts=(), labels=None, name="/hermes-1"):
    base = {"Privileged": False, "CapAdd": None, "SecurityOpt": ["no-new-privileges"], "NetworkMode": "none",
            "PidMode": "", "UsernsMode": "", "Runtime": "runc"}
    base.update(host or {})
    return {"Id": "abc123" * 8, "Name": name, "HostConfig": base, "Mounts": list(mounts),
            "Config": {"Labels": {"hermes-agent": "1"} if labels is None else labels}}


def bind(source, destination, rw=True):
    return {"Type": "bind", "Source": source, "Destination": destination, "RW": rw}


@pytest.mark.parametrize(("host", "mounts", "rule"), [
    ({"Privileged": True}, (), "privileged"),
    ({"CapAdd": ["CAP_SYS_ADMIN"]}, (), "cap-add"),
    ({"CapAdd": ["SETFCAP"]}, (), "cap-add"),
    ({"SecurityOpt": ["no-new-privileges", "seccomp=unconfined"]}, (), "seccomp-unconfined"),
    ({"SecurityOpt": ["no-new-privileges", "apparmor=unconfined"]}, (), "apparmor-unconfined"),
    ({"SecurityOpt": []}, (), "no-new-privileges-off"),
    ({"PidMode": "host"}, (), "host-namespace"),
    ({"NetworkMode": "host"}, (), "host-namespace"),
    ({"UsernsMode": "host"}, (), "host-namespace"),
    ({}, (bind("/var/run/docker.sock", "/var/run/docker.sock"),), "engine-socket"),
    ({}, (bind("/srv/data", "/data"),), "rw-bind-outside-roots"),
    ({}, (bind("/", "/host", rw=False),), "system-dir-bind"),
])
def test_each_risky_container_setting_is_a_finding(host, mounts, rule):
    assert rules(runtime.container_findings(inspect(host, mounts), ROOTS)) == [rule]


def test_a_hermes_container_as_hermes_starts_it_is_clean():
    mounts = (bind(ROOTS[0] + "/t1/home", "/root"), bind(ROOTS[0] + "/t1/workspace", "/workspace"),
              bind("/home/hermes/.hermes/skills", "/root/.hermes/skills", rw=False))
    host = {"CapAdd": ["DAC_OVERRIDE", "CHOWN", "FOWNER", "SETUID", "SETGID"], "CapDrop": ["ALL"]}
    assert runtime.container_findings(inspect(host, mounts), ROOTS) == []


def test_agent_containers_are_hermes_labelled_or_bind_a_sandbox_root():
    assert runtime.is_agent_container(inspect(), ROOTS)
    assert runtime.is_agent_container(inspect(labels={}, mounts=(bind(ROOTS[0] + "/t/home", "/root"),)), ROOTS)
    assert not runtime.is_agent_container(inspect(labels={}, mounts=(bind("/srv", "/srv"),)), ROOTS)
    assert not runtime.is_agent_container(inspect(labels={"hermes-agent": "0"}), ROOTS)
    # Hermes-labelled, but every bind belongs to another Hermes home: that home's audit reads it
    assert not runtime.is_agent_container(inspect(mounts=(bind("/home/other/.hermes/sandboxes/docker/t/home",
                                                               "/root"),)), ROOTS)


@pytest.mark.parametrize(("options", "has_rules", "expected"), [
    (["name=seccomp,profile=default"], False, ["daemon-no-userns-remap", "daemon-profile-allows-setid"]),
    (["name=seccomp,profile=/etc/sandboxguard/seccomp/docker.json", "name=userns"], True, []),
    (["name=seccomp,profile=unconfined", "name=userns"], False, ["daemon-seccomp-off"]),
    (["name=apparmor"], False, ["daemon-no-userns-remap", "daemon-seccomp-off"]),
    (["name=seccomp,profile=default", "name=rootless"], False, ["daemon-profile-allows-setid"]),
])
def test_a_runner_hosts_daemon_default_profile_and_userns_remap(options, has_rules, expected):
    found = runtime.daemon_findings({"SecurityOptions": options}, has_rules)
    assert rules(found) == expected
    assert all(f["cis"] == "2.8" for f in found if f["rule"] == "daemon-no-userns-remap")


@pytest.mark.parametrize(("path", "target", "script", "kind"), [
    ("/usr/bin/docker", "/usr/bin/docker", None, "docker"),
    ("/usr/bin/docker", "/usr/bin/podman", None, "podman"),
    ("/usr/bin/docker", "/usr/bin/docker", '#!/bin/sh\nexec /usr/bin/podman "$@"\n', "podman"),
    ("/opt/podman-remote", None, None, "podman"),
    (None, None, None, None),
])
def test_the_engine_the_docker_backend_drives(path, target, script, kind):
    assert hermes.engine_of_binary(path, target, script) == kind


def check(homes, docker="never"):
    """The runtime check over the scope of ``homes`` (what audit_host derives once): its roots,
    and, for ``docker`` auto or always, engines that answered nothing (no engine asked here)."""
    with scope.derive(scope.Request(homes)) as found:
        asked = scope.Scope(scope.Request(homes, docker=docker), found.roots, found.refused, found.accounts, {})
        return runtime_host.check_runtime(asked)


def hermes_home(tmp_path, config=None, env=None):
    home = tmp_path / "hh"
    (home / "sandboxes" / "docker").mkdir(parents=True)
    if config is not None:
        (home / "config.yaml").write_text(config)
    if env is not None:
        (home / ".env").write_text(env)
    return str(home)


def test_the_check_reads_the_config_and_names_each_finding(tmp_path):
    home = hermes_home(tmp_path, "terminal:\n  backend: docker\n  docker_extra_args:\n    - --privileged\n"
                                 "  docker_volumes: ['/srv/data:/data']\nsecurity:\n  terminal_secret_isolation: off\n")
    result = check([home], docker="never")
    assert result["status"] == "findings"
    assert rules(result["findings"]) == ["privileged", "rw-bind-outside-roots", "secret-isolation-off"]
    assert result["configs"] == [home + "/config.yaml"]


def test_a_clean_config_is_clean(tmp_path):
    home = hermes_home(tmp_path, "terminal:\n  backend: docker\nsecurity:\n  terminal_secret_isolation: require\n")
    result = check([home], docker="never")
    assert result["status"] == "clean" and result["findings"] == []


def test_nothing_to_read_is_never_clean(tmp_path):
    result = check([hermes_home(tmp_path)], docker="never")
    assert result["status"] == runtime_host.NOT_CHECKED and "nothing to read" in result["reason"]
    assert result["complete"] is False
    assert check([], docker="never")["status"] == runtime_host.NOT_CHECKED


def test_a_config_it_cannot_read_is_an_error_naming_it(tmp_path):
    home = hermes_home(tmp_path, "terminal:\n  docker_extra_args: --privileged\n")
    result = check([home], docker="never")
    assert result["status"] == "error" and "config.yaml" in result["reason"]


def test_a_profiles_config_is_read_too(tmp_path):
    home = hermes_home(tmp_path, "terminal:\n  backend: docker\n")
    profile = tmp_path / "hh" / "profiles" / "coder"
    profile.mkdir(parents=True)
    (profile / "config.yaml").write_text("terminal:\n  docker_extra_args: [--pid, host]\n")
    result = check([home], docker="never")
    assert [f["where"] for f in result["findings"]] == [str(profile / "config.yaml")]


def test_a_profile_made_from_dockers_default_under_a_podman_backend_is_flagged(tmp_path):
    import json

    made = tmp_path / "docker.json"
    made.write_text(json.dumps({"x-sandboxguard": {"base": {"engine": "docker"}}, "defaultAction": "SCMP_ACT_ERRNO",
                                "syscalls": []}))
    podman = tmp_path / "bin" / "podman"
    podman.parent.mkdir()
    podman.write_text("#!/bin/sh\n")
    podman.chmod(0o755)
    home = hermes_home(tmp_path, "terminal:\n  docker_extra_args: ['--security-opt', 'seccomp=%s']\n" % made,
                       env="HERMES_DOCKER_BINARY=%s\n" % podman)
    result = check([home], docker="never")
    assert rules(result["findings"]) == ["profile-other-engine"]
    assert result["backends"][home + "/config.yaml"]["kind"] == "podman"


def test_landlock_is_answered_here():
    assert runtime_host.landlock_available() in (True, False, None)


def test_runtime_findings_show_in_every_report():
    from sandboxguard._fleet import audit_report as ar

    finding = runtime.finding("privileged", CFG, "--privileged")
    checks = {name: {"status": "skipped", "findings": [], "reason": "x", "errors": []} for name in ar.CHECKS}
    checks["runtime"] = {"status": "findings", "findings": [finding], "reason": None, "errors": []}
    report = ar.fleet_report(ar.collect({"h1": {"record": ar.host_record(checks)}}, ["h1"]))
    assert "privileged [critical, CIS 5.4]" in ar.to_junit(report)
    html = ar.to_html(report)
    assert "Sandbox runtime settings" in html and "remove --privileged" in html
    assert report["summary"]["counts"]["runtime"] == 1


def test_a_backend_driving_an_engine_that_did_not_answer_is_not_clean_when_engines_must_answer(tmp_path,
                                                                                                   monkeypatch):
    home = hermes_home(tmp_path, "terminal:\n  backend: docker\nsecurity:\n  terminal_secret_isolation: require\n")
    monkeypatch.setattr(hermes, "backend_engine", lambda _home: {"path": "/usr/bin/podman", "kind": "podman",
                                                                   "why": "podman on PATH (no docker)"})
    monkeypatch.setattr(runtime_host, "read_containers", lambda *a: None)
    result = check([home], docker="always")
    assert result["status"] == "error" and result["complete"] is False
    assert any("drives podman" in w for w in result["warnings"])
    warned = check([home], docker="auto")  # as privileged_files: auto warns
    assert warned["status"] == "clean" and any("drives podman" in w for w in warned["warnings"])
    assert check([home], docker="never")["status"] == "clean"
