# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The prevention seccomp profile (issue 28): made from the engine's own default, and checked."""
import copy
import json

import pytest
from sandboxguard._prevent import seccomp

ALLOWED = ["read", "write", "close", "chmod", "fchmod", "fchmodat", "open", "openat", "openat2", "creat", "mkdir",
           "mkdirat", "mknod", "mknodat", "io_uring_setup", "io_uring_enter", "io_uring_register", "clone"]


def docker_like():
    """The shape of Docker's default as a container's OCI runtime spec holds it (resolved)."""
    return {"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"],
            "syscalls": [{"names": list(ALLOWED), "action": "SCMP_ACT_ALLOW"},
                         {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
                          "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}]},
                         {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}]}


def podman_like():
    """The shape of containers-common's seccomp.json: includes/excludes by capability, archMap."""
    return {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
            "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
            "syscalls": [{"names": [*ALLOWED, "unshare", "keyctl", "mount", "clone3"], "action": "SCMP_ACT_ALLOW",
                          "args": [], "includes": {}, "excludes": {}},
                         {"names": ["setns"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
                         {"names": ["setns"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                          "excludes": {"caps": ["CAP_SYS_ADMIN"]}}]}


SOURCE = {"engine": "docker", "engine_version": "20.10.24", "origin": "a test"}


def rules_for(profile, name):
    return [r for r in profile["syscalls"] if name in r.get("names", ())]


@pytest.mark.parametrize("name", sorted(seccomp.MODE_ARGUMENT))
def test_each_mode_syscall_leaves_the_unconditional_allow_and_is_allowed_only_without_setid_bits(name):
    base = docker_like()
    base["syscalls"][0]["names"].append("fchmodat2")
    profile = seccomp.build_profile(base, SOURCE)
    index = seccomp.MODE_ARGUMENT[name]
    allows = [r for r in rules_for(profile, name) if r["action"] == "SCMP_ACT_ALLOW"]
    assert allows, name
    for rule in allows:
        assert rule["args"] == [{"index": index, "value": 3072, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]
    denies = [r for r in rules_for(profile, name) if r["action"] == "SCMP_ACT_ERRNO"]
    assert sorted((r["errnoRet"], r["args"][0]["value"], r["args"][0]["valueTwo"], r["args"][0]["index"])
                  for r in denies) == [(1, 1024, 1024, index), (1, 2048, 2048, index)]


def test_openat2_fails_with_enosys_and_io_uring_with_eperm():
    profile = seccomp.build_profile(docker_like(), SOURCE)
    assert [(r["action"], r["errnoRet"]) for r in rules_for(profile, "openat2")] == [("SCMP_ACT_ERRNO", 38)]
    for name in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        assert [(r["action"], r["errnoRet"]) for r in rules_for(profile, name)] == [("SCMP_ACT_ERRNO", 1)]
    assert "openat2" not in seccomp.resolve(profile) and "io_uring_setup" not in seccomp.resolve(profile)


def test_everything_else_of_the_base_is_kept_and_the_base_is_not_changed():
    base = docker_like()
    before = copy.deepcopy(base)
    profile = seccomp.build_profile(base, SOURCE)
    assert base == before
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO" and profile["architectures"] == base["architectures"]
    assert {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38} in profile["syscalls"]
    assert base["syscalls"][1] in profile["syscalls"]
    assert {"read", "write", "close", "clone"} <= set(profile["syscalls"][0]["names"])
    assert not set(seccomp.TAKEN) & set(profile["syscalls"][0]["names"])


def test_a_mode_syscall_the_base_denies_stays_denied():
    # Docker 20.10's libseccomp does not know fchmodat2: its default does not name it
    profile = seccomp.build_profile(docker_like(), SOURCE)
    assert "fchmodat2" not in seccomp.resolve(profile)
    assert rules_for(profile, "fchmodat2") == []
    assert "fchmodat2" not in profile[seccomp.META_KEY]["filtered"]


def test_a_base_rules_own_conditions_and_includes_stay_on_the_copy():
    base = podman_like()
    base["syscalls"].append({"names": ["mkdirat"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_X"]},
                             "args": [{"index": 0, "value": 5, "op": "SCMP_CMP_EQ"}]})
    profile = seccomp.build_profile(base, dict(SOURCE, engine="podman"))
    copied = [r for r in rules_for(profile, "mkdirat") if r.get("includes") == {"caps": ["CAP_X"]}]
    assert [r["args"] for r in copied] == [[{"index": 0, "value": 5, "op": "SCMP_CMP_EQ"},
                                            {"index": 2, "value": 3072, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]]
    assert profile["archMap"] == base["archMap"] and profile["defaultErrnoRet"] == 38


def test_a_base_condition_on_the_mode_argument_is_refused():
    base = docker_like()
    base["syscalls"].append({"names": ["chmod"], "action": "SCMP_ACT_ALLOW",
                             "args": [{"index": 1, "value": 1, "op": "SCMP_CMP_EQ"}]})
    with pytest.raises(seccomp.SeccompError, match="condition on the mode argument of chmod"):
        seccomp.build_profile(base, SOURCE)


def test_the_x_sandboxguard_key_names_the_base_and_its_checksum():
    base = docker_like()
    meta = seccomp.build_profile(base, SOURCE)[seccomp.META_KEY]
    assert meta["base"] == {"engine": "docker", "engine_version": "20.10.24", "origin": "a test",
                            "sha256": seccomp.base_sha256(base)}
    from sandboxguard import __version__
    assert meta["version"] == __version__
    assert len(meta["base"]["sha256"]) == 64


def test_the_checksum_ignores_layout_and_key_order_but_not_content():
    base = docker_like()
    relaid = json.loads(json.dumps(base, indent=7, sort_keys=True))
    assert seccomp.base_sha256(relaid) == seccomp.base_sha256(base)
    base["syscalls"][0]["names"].append("unshare")
    assert seccomp.base_sha256(relaid) != seccomp.base_sha256(base)


def test_the_same_base_gives_the_same_bytes():
    assert (seccomp.profile_text(seccomp.build_profile(docker_like(), SOURCE))
            == seccomp.profile_text(seccomp.build_profile(docker_like(), SOURCE)))


@pytest.mark.parametrize("action", ["SCMP_ACT_ALLOW", "SCMP_ACT_LOG", None])
def test_a_base_that_is_not_default_deny_is_refused_in_one_line(action):
    base = docker_like()
    base["defaultAction"] = action
    with pytest.raises(seccomp.SeccompError) as caught:
        seccomp.build_profile(base, SOURCE)
    assert "not a default-deny profile" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("base", [[], "x", {"defaultAction": "SCMP_ACT_ERRNO"},
                                  {"defaultAction": "SCMP_ACT_ERRNO", "syscalls": ["chmod"]}])
def test_what_is_not_a_profile_is_refused(base):
    with pytest.raises(seccomp.SeccompError):
        seccomp.build_profile(base, SOURCE)


def test_a_profile_of_ours_is_refused_as_a_base_even_without_its_key():
    profile = seccomp.build_profile(docker_like(), SOURCE)
    with pytest.raises(seccomp.SeccompError, match="already a sandboxguard profile"):
        seccomp.build_profile(profile, SOURCE)
    del profile[seccomp.META_KEY]  # the resolved spec of a container that ran with it
    with pytest.raises(seccomp.SeccompError, match="already a sandboxguard profile"):
        seccomp.build_profile(profile, SOURCE)


def test_check_passes_a_profile_made_from_the_running_engines_base():
    base = docker_like()
    report = seccomp.check_profile(seccomp.build_profile(base, SOURCE), base, "docker")
    assert report["ok"], report["problems"]
    assert report["made_by"]["base"]["engine"] == "docker"


def test_check_fails_the_default_profile_itself_naming_every_mode_syscall():
    report = seccomp.check_profile(docker_like(), docker_like(), "docker")
    assert not report["ok"]
    by_rule = {p["rule"]: p["syscalls"] for p in report["problems"]}
    assert by_rule["setid-unconditional"] == sorted(n for n in seccomp.MODE_ARGUMENT if n != "fchmodat2")
    assert by_rule["mode-unseen-allowed"] == sorted(["openat2", *seccomp.DENIED_SYSCALLS])
    assert any("not made by sandboxguard" in n for n in report["notes"])


def test_check_flags_errno_rules_added_beside_the_unconditional_allow():
    # what the issue measured to deny nothing: the unconditional allow wins
    profile = docker_like()
    profile["syscalls"].append({"names": ["chmod"], "action": "SCMP_ACT_ERRNO",
                                "args": [{"index": 1, "value": 2048, "valueTwo": 2048, "op": "SCMP_CMP_MASKED_EQ"}]})
    problems = {p["rule"]: p["syscalls"] for p in seccomp.check_profile(profile)["problems"]}
    assert "chmod" in problems["setid-unconditional"]


def test_check_flags_a_conditional_allow_without_the_mode_condition():
    profile = seccomp.build_profile(docker_like(), SOURCE)
    profile["syscalls"].append({"names": ["mkdir"], "action": "SCMP_ACT_ALLOW",
                                "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_NE"}]})
    problems = {p["rule"]: p["syscalls"] for p in seccomp.check_profile(profile)["problems"]}
    assert problems == {"setid-condition-missing": ["mkdir"]}


def test_check_flags_missing_eperm_rules():
    profile = seccomp.build_profile(docker_like(), SOURCE)
    profile["syscalls"] = [r for r in profile["syscalls"]
                           if not (r["action"] == "SCMP_ACT_ERRNO" and r.get("names") == ["open"])]
    problems = {p["rule"]: p["syscalls"] for p in seccomp.check_profile(profile)["problems"]}
    assert problems == {"setid-errno-missing": ["open"]}


def test_a_profile_from_podmans_base_under_docker_is_flagged_with_what_it_reopens():
    podman_profile = seccomp.build_profile(podman_like(), dict(SOURCE, engine="podman"))
    report = seccomp.check_profile(podman_profile, docker_like(), "docker")
    by_rule = {p["rule"]: p["syscalls"] for p in report["problems"]}
    assert by_rule["base-denial-lost"] == ["clone3", "keyctl", "mount", "unshare"]
    assert "other-engine-base" in by_rule and "base-changed" in by_rule
    assert not report["ok"]


def test_a_reopened_syscall_is_found_without_our_key_too():
    profile = seccomp.build_profile(docker_like(), SOURCE)
    del profile[seccomp.META_KEY]
    profile["syscalls"].append({"names": ["unshare"], "action": "SCMP_ACT_ALLOW"})
    by_rule = {p["rule"]: p["syscalls"] for p in seccomp.check_profile(profile, docker_like(), "docker")["problems"]}
    assert by_rule == {"base-denial-lost": ["unshare"]}


def test_a_conditional_allow_made_unconditional_is_flagged():
    profile = seccomp.build_profile(docker_like(), SOURCE)
    profile["syscalls"].append({"names": ["personality"], "action": "SCMP_ACT_ALLOW"})
    by_rule = {p["rule"]: p["syscalls"] for p in seccomp.check_profile(profile, docker_like(), "docker")["problems"]}
    assert by_rule == {"base-condition-lost": ["personality"]}


def test_a_changed_base_asks_for_the_profile_to_be_made_again():
    old = docker_like()
    profile = seccomp.build_profile(old, SOURCE)
    new = docker_like()
    new["syscalls"][0]["names"].append("landlock_create_ruleset")
    by_rule = {p["rule"] for p in seccomp.check_profile(profile, new, "docker")["problems"]}
    assert by_rule == {"base-changed"}


def test_capability_conditions_follow_the_engines_default_capabilities():
    base = podman_like()
    assert "setns" not in seccomp.resolve(base, seccomp.DEFAULT_CAPS["podman"])
    assert seccomp.resolve(base, ("CAP_SYS_ADMIN",))["setns"] == "allow"


def test_devices_leaves_character_and_block_nodes_out_of_mknods_allow():
    base = docker_like()
    plain = seccomp.build_profile(base, SOURCE)
    strict = seccomp.build_profile(base, SOURCE, devices=True)
    assert not seccomp.check_profile(plain, base, "docker")["devices_denied"]
    report = seccomp.check_profile(strict, base, "docker")
    assert report["ok"], report["problems"]
    assert report["devices_denied"] and strict[seccomp.META_KEY]["devices"] is True
    allows = [r for r in rules_for(strict, "mknodat") if r["action"] == "SCMP_ACT_ALLOW"]
    assert sorted(r["args"][0]["valueTwo"] for r in allows) == [0, 0o10000, 0o100000, 0o140000]
    assert all(r["args"][0]["value"] == 0o176000 for r in allows)
    denied = sorted(r["args"][0]["valueTwo"] for r in rules_for(strict, "mknod")
                    if r["action"] == "SCMP_ACT_ERRNO" and r["args"][0]["value"] == 0o170000)
    assert denied == [0o20000, 0o60000]
    # chmod keeps the plain rule
    assert [r["args"] for r in rules_for(strict, "chmod") if r["action"] == "SCMP_ACT_ALLOW"] == [
        [{"index": 1, "value": 3072, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]]


def test_load_profile_names_the_file_when_it_is_not_json():
    with pytest.raises(seccomp.SeccompError, match=r"/etc/x\.json is not JSON"):
        seccomp.load_profile("{", "/etc/x.json")


def test_an_unconditional_allow_is_not_hidden_by_a_later_conditional_one():
    profile = {"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
        {"names": ["chmod"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["chmod"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 1, "value": 3072, "valueTwo": 0,
                                                                    "op": "SCMP_CMP_MASKED_EQ"}]}]}
    assert seccomp.resolve(profile)["chmod"] == "allow"
    assert "chmod" in {n for p in seccomp.check_profile(profile)["problems"] for n in p["syscalls"]}


def test_rules_excluded_on_new_kernels_or_other_architectures_do_not_apply():
    profile = {"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
        {"names": ["a"], "action": "SCMP_ACT_ALLOW", "excludes": {"minKernel": "4.8"}},
        {"names": ["b"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["s390x"]}},
        {"names": ["c"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["amd64"]}},
        {"names": ["d"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "4.8", "arches": ["amd64"]}}]}
    assert seccomp.resolve(profile) == {"d": "allow"}
    assert seccomp.resolve(profile, arch="s390x") == {"b": "allow", "c": "allow"}
