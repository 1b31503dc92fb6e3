# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""bubblewrap facts: versions, stderr classification, fake hosts, the never-as-root rule."""
import os
import re
import shutil
import subprocess
import tempfile

import pytest
from sandboxguard import bwrap, container, credentials
from sandboxguard._bwrap import host as bwrap_host
from sandboxguard._bwrap.argv import DEFAULT_LIMITS, SANDBOX_BASE_PROCESSES, sandbox_argv
from sandboxguard._bwrap.checks import ISOLATION_CHECKS, isolation_script, parse_isolation_output, plan_isolation_checks
from sandboxguard._bwrap.diagnosis import (
    _STDERR_RULES,
    DEFAULT_MIN_VERSION,
    REASON_MESSAGES,
    REMEDIATIONS,
    classify_stderr,
    parse_version,
    remediation_text,
    userns_blocker,
    version_at_least,
    version_string,
)
from sandboxguard._bwrap.host import hidden_paths, read_host_facts
from sandboxguard._bwrap.run import ProbeUserRefused, resolve_probe_user
from sandboxguard.errors import InputError

# ---------------------------------------------------------------------------
# Versions
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("bubblewrap 0.8.0", (0, 8, 0)),
    ("bubblewrap 0.11.1", (0, 11, 1)),
    ("bubblewrap 0.12.0\n", (0, 12, 0)),
    ("bubblewrap 0.9", (0, 9, 0)),
])
def test_parse_version_reads_bwrap_version_output(text, expected):
    assert parse_version(text) == expected


@pytest.mark.parametrize("garbage", [
    "", "bubblewrap", "bwrap: command not found", "version x.y.z", "bubblewrap 0.x.1", None, 12,
])
def test_parse_version_returns_none_for_garbage(garbage):
    assert parse_version(garbage) is None


def test_debian_12_version_is_below_the_default_minimum():
    assert not version_at_least("bubblewrap 0.8.0", DEFAULT_MIN_VERSION)


def test_versions_compare_numerically_not_as_text():
    assert version_at_least("bubblewrap 0.11.1", "0.9.0")
    assert version_at_least("bubblewrap 0.12.0", "0.11.1")


def test_the_minimum_itself_is_enough():
    assert version_at_least("bubblewrap 0.9.0", "0.9.0")


def test_an_unreadable_version_never_meets_the_minimum():
    assert not version_at_least(None, "0.9.0")


def test_a_malformed_minimum_is_an_error():
    with pytest.raises(ValueError, match="min_version"):
        version_at_least("bubblewrap 0.12.0", "latest")


# ---------------------------------------------------------------------------
# stderr classification
# ---------------------------------------------------------------------------

OPEN_HOST = {"userns": {"max_user_namespaces": 63000, "unprivileged_userns_clone": None, "apparmor_restrict": None},
             "apparmor": {"enabled": False, "attached": False}, "in_container": False}
CONTAINER = dict(OPEN_HOST, in_container=True)
DEBIAN_KNOB_OFF = dict(OPEN_HOST, userns=dict(OPEN_HOST["userns"], unprivileged_userns_clone=0))
UBUNTU_2404 = {"userns": {"max_user_namespaces": 63000, "unprivileged_userns_clone": 1, "apparmor_restrict": 1},
               "apparmor": {"enabled": True, "attached": False}, "in_container": False}

NAMESPACE_SPELLINGS = [
    # up to 0.11.0
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'.",
    # 0.11.1 and later
    "bwrap: No permissions to create a new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. See <https://deb.li/bubblewrap> or <file:///usr/share/doc/bubblewrap/README.Debian.gz>.",
    # Debian's 0.8.0
    "bwrap: No permissions to create new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. See <https://deb.li/bubblewrap> or <file:///usr/share/doc/bubblewrap/README.Debian.gz>.",
]


@pytest.mark.parametrize("stderr", NAMESPACE_SPELLINGS)
def test_every_namespace_permission_spelling_is_recognised(stderr):
    assert classify_stderr(stderr, OPEN_HOST) == ("namespace-denied", "sysctl")


@pytest.mark.parametrize("stderr", NAMESPACE_SPELLINGS)
def test_namespace_denied_with_debians_knob_off_is_userns_disabled(stderr):
    assert classify_stderr(stderr, DEBIAN_KNOB_OFF) == ("userns-disabled", "sysctl")


@pytest.mark.parametrize("stderr", NAMESPACE_SPELLINGS)
def test_namespace_denied_inside_a_container_with_open_knobs_is_blocked_by_seccomp(stderr):
    assert classify_stderr(stderr, CONTAINER) == ("namespace-blocked", "container_options")


def test_uid_map_denied_on_ubuntu_2404_is_the_apparmor_restriction():
    stderr = "bwrap: setting up uid map: Permission denied\n"
    assert classify_stderr(stderr, UBUNTU_2404) == ("userns-restricted", "apparmor_profile")


def test_uid_map_denied_without_facts_still_points_at_apparmor():
    assert classify_stderr("bwrap: setting up uid map: Permission denied", None) == (
        "uid-map-denied", "apparmor_profile")


def test_creating_namespace_failed_without_userns_support_needs_setuid():
    stderr = ("bwrap: Creating new namespace failed, likely because the kernel does not support user "
              "namespaces.  bwrap must be installed setuid on such systems.")
    assert classify_stderr(stderr, OPEN_HOST) == ("userns-unsupported", "setuid")


def test_creating_namespace_failed_with_no_namespaces_left_is_the_sysctl():
    stderr = "bwrap: Creating new namespace failed: No space left on device"
    facts = dict(OPEN_HOST, userns=dict(OPEN_HOST["userns"], max_user_namespaces=0))
    assert classify_stderr(stderr, facts) == ("userns-disabled", "sysctl")


def test_creating_namespace_failed_otherwise_is_namespace_failed():
    stderr = "bwrap: Creating new namespace failed: Operation not permitted"
    assert classify_stderr(stderr, CONTAINER) == ("namespace-failed", "container_options")


@pytest.mark.parametrize(("stderr", "reason", "remediation"), [
    ("bwrap: Failed to make / slave: Permission denied", "mount-propagation-denied", "container_options"),
    ("bwrap: Can't mount proc on /newroot/proc: Operation not permitted", "proc-mount-denied", "container_options"),
    ("bwrap: Can't mount proc on /proc: Operation not permitted", "proc-mount-denied", "container_options"),
    ("bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted", "loopback-failed", "container_options"),
    ("bwrap: setuid use of bubblewrap is not supported", "setuid-unsupported", "remove_setuid"),
    ("bwrap: execvp /bin/frobnicate: No such file or directory", "unknown", "investigate"),
    ("", "unknown", "investigate"),
])
def test_other_bwrap_failures_map_to_a_reason_and_a_remediation(stderr, reason, remediation):
    assert classify_stderr(stderr, OPEN_HOST) == (reason, remediation)


def test_every_remediation_named_by_a_rule_has_a_text():
    named = {rule[1] for rule in _STDERR_RULES} | {"namespace-blocked", "container_options"}
    for remediation in named - {"namespace-blocked"}:
        assert remediation in REMEDIATIONS


def test_sysctl_remediation_names_the_knob_that_is_off():
    text = remediation_text("sysctl", DEBIAN_KNOB_OFF)
    assert "sysctl -w kernel.unprivileged_userns_clone=1" in text


# ---------------------------------------------------------------------------
# A fake Ubuntu 24.04 host, read through the root parameter
# ---------------------------------------------------------------------------

UBUNTU_PROFILES = "snap.lxd.lxc (enforce)\nunprivileged_userns (enforce)\nbusybox (unconfined)\n"


def _write(root, path, text):
    full = root / path.lstrip("/")
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(text)


@pytest.fixture
def ubuntu_2404(tmp_path):
    """procfs, sysfs and /etc/apparmor.d as Ubuntu 24.04 shows them: restriction on, no bwrap profile."""
    _write(tmp_path, "/proc/sys/user/max_user_namespaces", "63493\n")
    _write(tmp_path, "/proc/sys/kernel/unprivileged_userns_clone", "1\n")
    _write(tmp_path, "/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1\n")
    _write(tmp_path, "/sys/module/apparmor/parameters/enabled", "Y\n")
    _write(tmp_path, "/sys/kernel/security/apparmor/profiles", UBUNTU_PROFILES)
    _write(tmp_path, "/etc/apparmor.d/busybox",
           "abi <abi/4.0>,\ninclude <tunables/global>\nprofile busybox /usr/bin/busybox flags=(unconfined) {\n"
           "  userns,\n}\n")
    (tmp_path / "proc/1").mkdir(parents=True)
    _write(tmp_path, "/proc/1/cgroup", "0::/init.scope\n")
    return tmp_path


def test_ubuntu_2404_facts_show_the_apparmor_restriction(ubuntu_2404):
    facts = read_host_facts("/usr/bin/bwrap", str(ubuntu_2404))
    assert facts["userns"] == {"max_user_namespaces": 63493, "unprivileged_userns_clone": 1, "apparmor_restrict": 1}
    assert facts["apparmor"]["enabled"] is True
    assert facts["apparmor"]["attached"] is False
    assert facts["in_container"] is False


def test_ubuntu_2404_without_a_profile_is_userns_restricted_with_the_apparmor_remedy(ubuntu_2404):
    facts = read_host_facts("/usr/bin/bwrap", str(ubuntu_2404))
    assert classify_stderr("bwrap: setting up uid map: Permission denied\n", facts) == (
        "userns-restricted", "apparmor_profile")
    assert userns_blocker(facts)[:2] == ("userns-restricted", "apparmor_profile")


def test_a_profile_on_disk_that_is_not_loaded_does_not_attach(ubuntu_2404):
    _write(ubuntu_2404, "/etc/apparmor.d/sandboxguard-bwrap", bwrap.apparmor_profile("/usr/bin/bwrap"))
    facts = read_host_facts("/usr/bin/bwrap", str(ubuntu_2404))
    assert [p["name"] for p in facts["apparmor"]["profiles"]] == ["sandboxguard-bwrap"]
    assert facts["apparmor"]["attached"] is False
    assert userns_blocker(facts)[0] == "userns-restricted"


def test_a_loaded_profile_granting_userns_for_the_bwrap_path_attaches(ubuntu_2404):
    _write(ubuntu_2404, "/etc/apparmor.d/sandboxguard-bwrap", bwrap.apparmor_profile("/usr/bin/bwrap"))
    _write(ubuntu_2404, "/sys/kernel/security/apparmor/profiles",
           UBUNTU_PROFILES + "sandboxguard-bwrap (unconfined)\n")
    facts = read_host_facts("/usr/bin/bwrap", str(ubuntu_2404))
    assert facts["apparmor"]["attached"] is True
    assert userns_blocker(facts) is None


def test_a_loaded_profile_for_another_path_does_not_attach_to_bwrap(ubuntu_2404):
    _write(ubuntu_2404, "/etc/apparmor.d/sandboxguard-bwrap", bwrap.apparmor_profile("/usr/local/bin/bwrap"))
    _write(ubuntu_2404, "/sys/kernel/security/apparmor/profiles",
           UBUNTU_PROFILES + "sandboxguard-bwrap (unconfined)\n")
    facts = read_host_facts("/usr/bin/bwrap", str(ubuntu_2404))
    assert facts["apparmor"]["attached"] is False


def test_debian_12_host_without_apparmor_has_no_restriction(tmp_path):
    _write(tmp_path, "/proc/sys/user/max_user_namespaces", "96365\n")
    facts = read_host_facts("/usr/bin/bwrap", str(tmp_path))
    assert facts["userns"]["apparmor_restrict"] is None
    assert facts["apparmor"]["enabled"] is False
    assert userns_blocker(facts) is None


def test_a_docker_container_root_is_recognised(tmp_path):
    _write(tmp_path, "/.dockerenv", "")
    assert read_host_facts(None, str(tmp_path))["in_container"] is True


@pytest.mark.parametrize("files", [
    {"/proc/1/environ": "PATH=/bin\0container=lxc\0"},
    {"/proc/1/cgroup": "12:devices:/lxc.payload.c1\n"},
    {"/run/systemd/container": "lxc\n"},
])
def test_an_lxc_container_is_a_container_for_the_probe_and_the_home_mode_alike(tmp_path, files):
    # One detection function (container.py): the probe and the home mode cannot disagree.
    for name, text in files.items():
        _write(tmp_path, name, text)
    assert read_host_facts(None, str(tmp_path))["in_container"] is True
    assert container.detect_container(str(tmp_path)) is True
    assert bwrap_host.detect_container is container.detect_container


# ---------------------------------------------------------------------------
# The probe never runs as root
# ---------------------------------------------------------------------------


def _refusal(user, euid):
    with pytest.raises(ProbeUserRefused) as caught:
        resolve_probe_user(user, euid=euid)
    assert isinstance(caught.value, InputError)  # the one class the adapters catch
    return caught.value.reason


def test_asking_root_to_probe_as_root_is_refused():
    assert _refusal("root", 0) == "root-probe-refused"


def test_asking_root_to_probe_as_uid_0_is_refused():
    assert _refusal("0", 0) == "root-probe-refused"


def test_root_without_an_agent_user_is_refused():
    assert _refusal(None, 0) == "root-probe-refused"


def test_root_probing_as_nobody_switches_to_nobody():
    who = resolve_probe_user("nobody", euid=0)
    assert (who["name"], who["switch"]) == ("nobody", True)
    assert who["uid"] != 0


def test_an_unprivileged_caller_cannot_probe_as_someone_else():
    nobody = resolve_probe_user("nobody", euid=0)["uid"]
    assert _refusal("nobody", nobody + 1) == "user-switch-denied"


def test_an_unknown_user_is_an_error():
    assert _refusal("no-such-user-sandboxguard", 0) == "user-unknown"


def test_a_probe_asked_to_run_as_root_refuses_without_starting_a_sandbox(tmp_path):
    report = bwrap.probe(user="root", bwrap=str(tmp_path / "bwrap"), euid=0)
    assert report["ok"] is False
    assert report["reason"] == "root-probe-refused"
    assert report["remediation"] == "agent_user"
    assert report["probe"]["ran"] is False
    assert report["warnings"] and "root" in report["warnings"][0]
    assert {check["status"] for check in report["isolation"]} == {"not_run"}
    assert all("did not run" in check["detail"] for check in report["isolation"])


def test_a_missing_bwrap_is_reported_with_the_install_remedy(tmp_path):
    report = bwrap.probe(user="nobody", bwrap=str(tmp_path / "bwrap"), euid=0, root=str(tmp_path))
    assert (report["reason"], report["remediation"]) == ("bwrap-missing", "install")
    assert all(check["detail"] == "bwrap is not installed" for check in report["isolation"])


# ---------------------------------------------------------------------------
# The invocation
# ---------------------------------------------------------------------------


def test_sandbox_argv_is_the_real_invocation():
    argv = sandbox_argv("/usr/bin/bwrap", home="/home/agent", run_user="/run/user/1000", profile="workspace")
    joined = " ".join(argv)
    for part in ("--unshare-all --unshare-user", "--die-with-parent", "--new-session", "--ro-bind / /",
                 "--proc /proc", "--dev /dev", "--tmpfs /tmp", "--tmpfs /run/user/1000"):
        assert part in joined
    assert "--share-net" not in argv
    assert argv[-2:] == ["--", "/bin/true"]


def test_network_profile_shares_the_network():
    assert "--share-net" in sandbox_argv("/usr/bin/bwrap", profile="network")


def test_an_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="restricted, workspace, network"):
        sandbox_argv("/usr/bin/bwrap", profile="open")


def test_prlimit_applies_the_limits_before_bwrap():
    argv = sandbox_argv("/usr/bin/bwrap", prlimit_path="/usr/bin/prlimit",
                              limits={"memory_mb": 256, "cpu_seconds": 30, "max_procs": 0})
    # prlimit stops at the first non-option: bwrap follows with no separator (as in Hermes).
    assert argv[:4] == ["/usr/bin/prlimit", "--as=268435456", "--cpu=30", "/usr/bin/bwrap"]
    assert argv[-2:] == ["--", "/bin/true"]


def test_memory_and_cpu_are_limited_outside_and_the_process_limit_inside():
    argv = sandbox_argv("/usr/bin/bwrap", prlimit_path="/usr/bin/prlimit", limits=DEFAULT_LIMITS)
    bwrap_at = argv.index("/usr/bin/bwrap")
    assert argv[:bwrap_at] == ["/usr/bin/prlimit", "--as=%d" % (256 * 1024 * 1024), "--cpu=30"]
    assert not any(a.startswith("--nproc") for a in argv[:bwrap_at])
    # After bwrap's own separator: the process limit (max_procs plus bwrap's init and the shell), then the command.
    assert argv[-4:] == ["--", "/usr/bin/prlimit", "--nproc=%d" % (256 + SANDBOX_BASE_PROCESSES), "/bin/true"]
    assert SANDBOX_BASE_PROCESSES == 2


def test_only_the_process_limit_gives_no_prlimit_in_front_of_bwrap():
    argv = sandbox_argv("/usr/bin/bwrap", prlimit_path="/usr/bin/prlimit",
                              limits={"memory_mb": 0, "cpu_seconds": 0, "max_procs": 20})
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[-4:] == ["--", "/usr/bin/prlimit", "--nproc=22", "/bin/true"]


def test_every_limit_zero_gives_no_prlimit_at_all():
    argv = sandbox_argv("/usr/bin/bwrap", prlimit_path="/usr/bin/prlimit",
                              limits={"memory_mb": 0, "cpu_seconds": 0, "max_procs": 0})
    assert "/usr/bin/prlimit" not in argv
    assert argv[0] == "/usr/bin/bwrap" and argv[-2:] == ["--", "/bin/true"]


@pytest.mark.parametrize("key", ["memory_mb", "cpu_seconds", "max_procs"])
def test_zero_leaves_that_limit_out(key):
    limits = dict(DEFAULT_LIMITS, **{key: 0})
    argv = sandbox_argv("/usr/bin/bwrap", prlimit_path="/usr/bin/prlimit", limits=limits)
    options = [a for a in argv if a.startswith(("--as=", "--cpu=", "--nproc="))]
    assert len(options) == 2
    assert not any(a.startswith({"memory_mb": "--as=", "cpu_seconds": "--cpu=", "max_procs": "--nproc="}[key])
                   for a in options)


def test_a_kernel_that_does_not_scope_the_process_limit_gets_none():
    argv = sandbox_argv("/usr/bin/bwrap", prlimit_path="/usr/bin/prlimit", limits=DEFAULT_LIMITS,
                              nproc_inside=False)
    assert not any(a.startswith("--nproc") for a in argv)
    assert argv[-2:] == ["--", "/bin/true"]


def test_limits_are_clamped_to_the_inherited_hard_limits():
    hard = {"as": 100 * 1024 * 1024, "cpu": 7, "nproc": 20}
    argv = sandbox_argv("/usr/bin/bwrap", prlimit_path="/usr/bin/prlimit", limits=DEFAULT_LIMITS,
                              hard_limits=hard)
    assert argv[:3] == ["/usr/bin/prlimit", "--as=%d" % (100 * 1024 * 1024), "--cpu=7"]
    assert "--nproc=20" in argv
    unlimited = {"as": -1, "cpu": -1, "nproc": -1}
    assert "--cpu=30" in sandbox_argv("/usr/bin/bwrap", prlimit_path="/p", hard_limits=unlimited)


def test_the_nproc_check_expects_max_procs_plus_the_wrapper_processes(tmp_path):
    plan = _plan(tmp_path)
    assert plan["rlimit_nproc"] == {"value": 256 + SANDBOX_BASE_PROCESSES}
    assert "Max processes" in isolation_script({"rlimit_nproc": plan["rlimit_nproc"]})
    plan = _plan(tmp_path, nproc_scoped=False)
    assert "not applied" in plan["rlimit_nproc"]


def test_hidden_files_and_docker_socket_become_empty_files_from_the_fd():
    argv = sandbox_argv("/usr/bin/bwrap", hidden_dirs=["/home/a/.ssh"], hidden_files=["/home/a/.netrc"],
                              masked_sockets=["/run/docker.sock"], empty_fds=[5, 6])
    joined = " ".join(argv)
    assert "--tmpfs /home/a/.ssh" in joined
    assert "--ro-bind-data 5 /home/a/.netrc" in joined
    assert "--ro-bind-data 6 /run/docker.sock" in joined


def test_each_masked_path_needs_its_own_fd_because_bwrap_closes_it():
    with pytest.raises(ValueError, match="one empty fd per masked path"):
        sandbox_argv("/usr/bin/bwrap", hidden_files=["/home/a/.netrc"], masked_sockets=["/run/docker.sock"],
                           empty_fds=[5])


def test_a_credential_store_that_is_a_symlink_is_hidden_at_its_target(tmp_path):
    (tmp_path / "dotfiles" / "ssh").mkdir(parents=True)
    (tmp_path / ".ssh").symlink_to(tmp_path / "dotfiles" / "ssh")
    dirs, files = hidden_paths(str(tmp_path))
    assert dirs == [str(tmp_path / "dotfiles" / "ssh")]
    assert files == []


def _make_store(home, rel):
    """Create ``rel`` under ``home`` the way the tool that owns it would: a file for a name
    with an extension or a known token file, a directory otherwise."""
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if rel in FILE_STORES:
        path.write_text("secret\n")
    else:
        path.mkdir(exist_ok=True)
        (path / "token").write_text("secret\n")
    return path


FILE_STORES = {".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials", ".boto", ".s3cmd", ".env",
               ".config/git/credentials", ".config/npm/npmrc", ".cargo/credentials", ".cargo/credentials.toml",
               ".gem/credentials", ".m2/settings.xml", ".gradle/gradle.properties", ".cache/huggingface/token"}


@pytest.mark.parametrize("rel", credentials.home_stores("bwrap"))
def test_every_credential_store_of_the_one_list_is_hidden(tmp_path, rel):
    path = _make_store(tmp_path, rel)
    dirs, files = hidden_paths(str(tmp_path))
    assert (dirs if path.is_dir() else files) == [str(path)]


def test_the_hidden_set_covers_hermes_denied_home_paths_that_the_old_list_missed(tmp_path):
    for rel in (".config/rclone", ".local/share/kwalletd", ".cache/huggingface/token", ".boto", ".env"):
        _make_store(tmp_path, rel)
    dirs, files = hidden_paths(str(tmp_path))
    assert str(tmp_path / ".config/rclone") in dirs and str(tmp_path / ".local/share/kwalletd") in dirs
    assert {str(tmp_path / ".cache/huggingface/token"), str(tmp_path / ".boto"), str(tmp_path / ".env")} <= set(files)


def test_a_hermes_home_elsewhere_is_hidden_and_a_store_inside_a_hidden_one_is_covered(tmp_path):
    home, hermes = tmp_path / "home", tmp_path / "opt" / "hermes"
    (home / ".hermes" / "profiles").mkdir(parents=True)
    hermes.mkdir(parents=True)
    dirs, _files = hidden_paths(str(home), hermes_home=str(hermes))
    assert dirs == [str(home / ".hermes"), str(hermes)]
    dirs, _files = hidden_paths(str(home), hermes_home=str(home / ".hermes" / "profiles"))
    assert dirs == [str(home / ".hermes")]


def test_a_store_that_links_to_the_home_itself_is_not_hidden(tmp_path):
    (tmp_path / ".vaults").symlink_to(tmp_path)
    assert hidden_paths(str(tmp_path)) == ([], [])


def test_credential_stores_under_home_are_found(tmp_path):
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".netrc").write_text("machine x login y password z\n")
    (tmp_path / ".bashrc").write_text("")
    dirs, files = hidden_paths(str(tmp_path))
    assert dirs == [str(tmp_path / ".ssh")]
    assert files == [str(tmp_path / ".netrc")]


# ---------------------------------------------------------------------------
# Isolation checks
# ---------------------------------------------------------------------------


def _plan(tmp_path, **overrides):
    options = {"home": str(tmp_path), "uid": 4242, "profile": "workspace", "limits": DEFAULT_LIMITS,
               "prlimit_path": "/usr/bin/prlimit", "host_pid": os.getpid(), "marker": str(tmp_path / "marker"),
               "nonce": 7, "root": str(tmp_path)}
    options.update(overrides)
    return plan_isolation_checks(**options)


def test_network_check_is_skipped_under_the_network_profile_with_a_reason(tmp_path):
    plan = _plan(tmp_path, profile="network")
    assert plan["network_loopback_only"] == "the network profile shares the host network"


def test_limit_checks_say_why_they_cannot_run_without_prlimit(tmp_path):
    plan = _plan(tmp_path, prlimit_path=None)
    assert plan["rlimit_as"] == "prlimit was not found, so no limit is applied"


def test_a_disabled_limit_is_skipped(tmp_path):
    plan = _plan(tmp_path, limits={"memory_mb": 0, "cpu_seconds": 30})
    assert plan["rlimit_as"] == "memory_mb is 0 (limit disabled)"
    assert plan["rlimit_cpu"] == {"value": 30}


def test_an_unknown_check_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown isolation check"):
        _plan(tmp_path, checks=["root_readonly", "kernel_exploit"])


def test_a_planned_check_without_output_did_not_run_and_says_why():
    results = parse_isolation_output("SG|user_namespace|pass|ok\n", {"user_namespace": {}, "tmp_fresh": {}},
                                           not_run_reason="killed")
    assert results[0]["status"] == "pass"
    assert results[1] == {"name": "tmp_fresh", "status": "not_run", "ok": None, "detail": "killed"}


def test_a_check_with_one_failing_path_fails():
    out = "SG|credentials_hidden|pass|/h/.ssh is empty\nSG|credentials_hidden|fail|/h/.netrc shows host content\n"
    (result,) = parse_isolation_output(out, {"credentials_hidden": {}})
    assert result["status"] == "fail"
    assert result["detail"] == "/h/.netrc shows host content"


def test_the_checks_fail_outside_a_sandbox(tmp_path):
    """Run the check script directly on the host: the checks must be able to fail."""
    marker = tmp_path / "marker"
    marker.write_text("")
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "id_ed25519").write_text("secret")
    plan = _plan(tmp_path, marker=str(marker), hidden_dirs=[str(tmp_path / ".ssh")], uid=os.getuid())
    plan["run_user_empty"] = {"path": str(tmp_path)}
    done = subprocess.run(["/bin/sh", "-c", isolation_script(plan)], capture_output=True, text=True,
                          check=False, timeout=30)
    results = {r["name"]: r["status"] for r in parse_isolation_output(done.stdout, plan)}
    for name in ("root_readonly", "tmp_fresh", "pid_private", "credentials_hidden", "run_user_empty"):
        assert results[name] == "fail", (name, done.stdout)
    assert not list(tmp_path.glob(".sandboxguard-probe-*"))


# ---------------------------------------------------------------------------
# The AppArmor profile
# ---------------------------------------------------------------------------


def test_apparmor_profile_grants_userns_to_the_bwrap_path():
    text = bwrap.apparmor_profile("/usr/local/bin/bwrap")
    assert "abi <abi/4.0>," in text
    assert re.search(r"^profile sandboxguard-bwrap /usr/local/bin/bwrap flags=\(unconfined\) \{$", text, re.M)
    assert re.search(r"^  userns,$", text, re.M)


@pytest.mark.parametrize("path", ["bwrap", "/opt/my bwrap", "/usr/bin/bwrap{,x}", ""])
def test_apparmor_profile_refuses_paths_that_would_change_its_meaning(path):
    with pytest.raises(ValueError, match="absolute"):
        bwrap.apparmor_profile(path)


def _parser_version(parser):
    done = subprocess.run([parser, "--version"], capture_output=True, text=True, check=False)
    return parse_version((done.stdout or "").replace("AppArmor parser version", "v"))


def test_apparmor_profile_parses_with_apparmor_parser(tmp_path):
    parser = shutil.which("apparmor_parser", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if parser is None:
        pytest.skip("apparmor_parser is not installed (Debian package apparmor, in tools/apt-packages.txt)")
    version = _parser_version(parser)
    if version is None or version < (4, 0, 0):
        # The userns rule exists only since AppArmor 4.0 (the first that can restrict user
        # namespaces); Debian 12 ships 3.0.8. The Debian 13 molecule scenario parses it with 4.1.
        pytest.skip("apparmor_parser %s predates the userns rule (AppArmor 4.0)" % version_string(version))
    profile = tmp_path / "sandboxguard-bwrap"
    profile.write_text(bwrap.apparmor_profile("/usr/local/bin/bwrap"))
    done = subprocess.run([parser, "-Q", "-K", str(profile)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def ubuntu_bwrap():
    """A stand-in for Ubuntu 24.04's bwrap 0.9.0: --version works, the sandbox hits the restriction."""
    workdir = tempfile.mkdtemp(prefix="sg-fake-bwrap-", dir="/tmp")
    os.chmod(workdir, 0o755)  # the probe runs it as another user when the tests run as root
    path = os.path.join(workdir, "bwrap")
    with open(path, "w") as handle:
        handle.write('#!/bin/sh\n[ "$1" = --version ] && { echo "bubblewrap 0.9.0"; exit 0; }\n'
                     'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n')
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(workdir)


def test_a_probe_on_ubuntu_2404_reports_userns_restricted_and_the_apparmor_remedy(ubuntu_2404, ubuntu_bwrap):
    user = "nobody" if os.geteuid() == 0 else None
    report = bwrap.probe(user=user, bwrap=ubuntu_bwrap, root=str(ubuntu_2404), timeout=10)
    assert report["bwrap"]["meets_min"] is True
    assert report["probe"]["ran"] is True
    assert (report["reason"], report["remediation"]) == ("userns-restricted", "apparmor_profile")
    assert "kernel.apparmor_restrict_unprivileged_userns=1" in report["message"]
    assert "AppArmor profile for %s" % ubuntu_bwrap in report["remediation_text"]
    assert report["sysctl_fix"] == ["kernel.apparmor_restrict_unprivileged_userns=0"]
    assert {check["status"] for check in report["isolation"]} == {"not_run"}


def test_library_messages_name_no_role_variable():
    # Arrows point down (issue 11 item 7): the library says what is wrong and what fixes it in
    # its own terms; the role (roles/bwrap/vars/main.yml bwrap_remediation_hints) adds its variables.
    for table in (REMEDIATIONS, REASON_MESSAGES):
        for key, text in table.items():
            assert "bwrap_" not in text and "role bwrap" not in text, key
    for key in REMEDIATIONS:
        assert "bwrap_" not in remediation_text(key, {}, "/usr/bin/bwrap"), key


def test_the_apparmor_profile_the_library_writes_names_no_role():
    # the CLI prints the same text (--print-apparmor-profile): it is the library's, not the role's
    text = bwrap.apparmor_profile("/usr/local/bin/bwrap")
    assert "role" not in text and "bwrap_" not in text.replace("sandboxguard-bwrap", "")
    assert text.startswith("# Managed by sandboxguard (bwrap.apparmor_profile):")


# ---------------------------------------------------------------------------
# The report envelope (issue 11 item 1): findings, errors, complete, counts
# ---------------------------------------------------------------------------


def _fake_bwrap(body):
    """A bwrap stand-in in a directory the probe user can read: --version says 0.9.0, then ``body``."""
    workdir = tempfile.mkdtemp(prefix="sg-fake-bwrap-", dir="/tmp")
    os.chmod(workdir, 0o755)
    path = os.path.join(workdir, "bwrap")
    with open(path, "w") as handle:
        handle.write('#!/bin/sh\n[ "$1" = --version ] && { echo "bubblewrap 0.9.0"; exit 0; }\n' + body)
    os.chmod(path, 0o755)
    return workdir, path


def _assert_envelope(report):
    from sandboxguard import report as envelope

    assert set(envelope.ENVELOPE_KEYS) <= set(report)
    assert report["changed"] is False
    assert all(set(e) == {"path", "op", "error"} for e in report["errors"])
    assert all(set(f) == {"path", "reason", "remediation", "message"} for f in report["findings"])
    assert isinstance(report["elapsed"], float)
    assert report["counts"]["errors"] == len(report["errors"])
    assert report["counts"]["findings"] == len(report["findings"])
    assert report["counts"]["checks"] == len(report["isolation"])


def test_a_probe_refused_for_root_is_an_error_of_the_envelope_not_a_finding(tmp_path):
    report = bwrap.probe(user="root", bwrap=str(tmp_path / "bwrap"), euid=0)
    _assert_envelope(report)
    assert report["errors"] == [{"path": "root", "op": "probe", "error": report["message"]}]
    assert "root-probe-refused" not in [f["reason"] for f in report["findings"]]
    assert report["complete"] is False
    assert report["counts"]["not_run"] == len(ISOLATION_CHECKS)


def test_an_unknown_probe_user_is_an_error_naming_the_user(tmp_path):
    report = bwrap.probe(user="no-such-user-sandboxguard", bwrap=str(tmp_path / "bwrap"), euid=0)
    _assert_envelope(report)
    assert [(e["path"], e["op"]) for e in report["errors"]] == [("no-such-user-sandboxguard", "probe")]
    assert report["reason"] == "user-unknown" and report["complete"] is False


def test_a_missing_bwrap_is_a_finding_with_a_complete_verdict(tmp_path):
    missing = str(tmp_path / "bwrap")
    report = bwrap.probe(user="nobody", bwrap=missing, euid=0, root=str(tmp_path))
    _assert_envelope(report)
    assert report["roots"] == [missing]
    assert report["errors"] == [] and report["complete"] is True
    assert report["findings"][0] == {"path": missing, "reason": "bwrap-missing", "remediation": "install",
                                     "message": report["message"]}


@pytest.mark.root
def test_a_sandbox_stopped_by_the_host_is_a_finding_on_the_bwrap_binary(ubuntu_2404, ubuntu_bwrap):
    report = bwrap.probe(user="nobody", bwrap=ubuntu_bwrap, root=str(ubuntu_2404), timeout=10)
    _assert_envelope(report)
    assert report["roots"] == [ubuntu_bwrap] and report["complete"] is True and report["errors"] == []
    assert [(f["path"], f["reason"]) for f in report["findings"]] == [(ubuntu_bwrap, "userns-restricted")]


@pytest.mark.root
def test_a_sandbox_that_runs_out_of_time_makes_the_verdict_incomplete():
    workdir, path = _fake_bwrap("sleep 30\n")
    try:
        report = bwrap.probe(user="nobody", bwrap=path, timeout=1, limits={"max_procs": 0})
    finally:
        shutil.rmtree(workdir)
    _assert_envelope(report)
    assert report["reason"] == "timeout" and report["probe"]["timed_out"] is True
    assert report["complete"] is False and report["errors"] == []
    assert [f["reason"] for f in report["findings"]] == ["timeout"]


def test_the_deprecated_problems_key_still_lists_findings_and_errors_in_order(tmp_path):
    report = bwrap.probe(user="root", bwrap=str(tmp_path / "bwrap"), euid=0)
    reasons = [p["reason"] for p in report["problems"]]
    assert reasons[0] == "root-probe-refused" and "bwrap-missing" in reasons
    assert set(reasons) == {"root-probe-refused"} | {f["reason"] for f in report["findings"]}
    assert all(set(p) == {"reason", "remediation", "message"} for p in report["problems"])


def test_the_module_and_the_cli_check_the_probes_inputs_with_the_librarys_one_function():
    # issue 20: the probe's inputs were checked three times (module, CLI, library)
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for path in ("plugins/modules/bwrap_probe.py", "python/src/sandboxguard_cli/commands/bwrap_probe.py"):
        with open(os.path.join(top, path), encoding="utf-8") as handle:
            text = handle.read()
        assert "check_request(" in text, path
        assert "parse_version(" not in text and "find_bwrap(args.bwrap) is None" not in text, path
