# GENERATED from python/src/sandboxguard/bwrap.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Facts about bubblewrap on a host, and a probe of the real sandbox as the agent user.

The bubblewrap terminal backend needs bwrap >= 0.9.0, prlimit from util-linux and
unprivileged user namespaces (or a setuid bwrap). Hosts fail that in known ways; this
module turns each into a ``reason`` and a ``remediation`` the caller can act on.

Pure parts (version parsing, stderr classification, the sandbox argv, the AppArmor
profile text, judging the isolation checks) take plain values. The effectful parts say
so in their names: ``read_host_facts`` reads procfs/sysfs/etc under a ``root`` directory
(so tests can fake an Ubuntu 24.04 host), ``run_sandbox_probe`` and ``probe`` start
processes.

The probe never runs as root: root bypasses the user namespace restrictions and
gives a false pass. Called as root, the probe drops to the agent user in the child.
"""
import fnmatch
import os
import re
import shlex
import shutil
import stat
import time

from . import credentials, defaults, proc
from . import report as envelope
from .container import detect_container
from .errors import InputError
from .pathnames import is_within

DEFAULT_MIN_VERSION = defaults.BWRAP_MIN_VERSION
DEFAULT_TIMEOUT_S = defaults.BWRAP_PROBE_TIMEOUT_S
# Seed 004's profile table and Hermes' tests: network is the default.
DEFAULT_PROFILE = "network"
PROFILES = ("restricted", "workspace", "network")
# Seed 004's defaults for the per-command resource limits (0 disables a limit).
DEFAULT_LIMITS = {"memory_mb": 256, "cpu_seconds": 30, "max_procs": 256}
SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DOCKER_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock")
APPARMOR_PROFILE_NAME = "sandboxguard-bwrap"

# Every check the probe can run inside the sandbox, in report order.
ISOLATION_CHECKS = (
    "user_namespace", "root_readonly", "tmp_fresh", "pid_private", "network_loopback_only",
    "credentials_hidden", "run_user_empty", "docker_socket_masked", "rlimit_as", "rlimit_cpu", "rlimit_nproc",
)
# /proc/self/limits label and the field (space-separated, after squeezing) of the soft limit.
_LIMIT_LINES = {"rlimit_as": ("Max address space", 4), "rlimit_cpu": ("Max cpu time", 4),
                "rlimit_nproc": ("Max processes", 3)}

# ---------------------------------------------------------------------------
# Reasons and remediations
# ---------------------------------------------------------------------------

# What fixes each problem, in library terms: the caller that has its own knobs (the role's
# variables, the module's options, the CLI's flags) adds their names in its own messages.
REMEDIATIONS = {
    "none": "nothing to do",
    "install": "install bubblewrap >= {min_version}: build an upstream release tarball (meson and ninja) or "
               "install a package from a repository that carries that version",
    "install_prlimit": "install util-linux, which provides prlimit",
    "apparmor_profile": "load an AppArmor profile for {bwrap} that grants 'userns' (the report's apparmor_profile "
                        "text, in /etc/apparmor.d, loaded with apparmor_parser -r), or host-wide: "
                        "sysctl kernel.apparmor_restrict_unprivileged_userns=0",
    "sysctl": "enable unprivileged user namespaces host-wide: {sysctl}",
    "container_options": "inside a container, start it with --security-opt seccomp=unconfined "
                         "--security-opt systempaths=unconfined (Docker's default seccomp profile blocks "
                         "namespace creation and Docker masks /proc paths bwrap mounts over), "
                         "or run the agent on the host",
    "remove_setuid": "this bwrap was built without setuid support: chmod u-s {bwrap} and enable unprivileged "
                     "user namespaces instead",
    "setuid": "the kernel has no user namespaces: install a setuid bwrap built with -Dsupport_setuid=true, "
              "or use a kernel with CONFIG_USER_NS",
    "agent_user": "probe as the unprivileged user the agent runs as, never as root",
    "investigate": "read the probe's stderr; no known cause matched",
}

# (reason, remediation, patterns) in match order; the first matching pattern wins.
# Spellings seen in bubblewrap.c and in the field (FACTS.md): the EPERM message said
# "creating" up to 0.11.0, "create a new" from 0.11.1, and Debian patches 0.8.0 to
# "create new".
_STDERR_RULES = (
    ("setuid-unsupported", "remove_setuid", (r"setuid use of bubblewrap is not supported",)),
    ("uid-map-denied", "apparmor_profile", (r"setting up uid map: Permission denied",
                                            r"setting up gid map: Permission denied")),
    ("namespace-denied", "sysctl", (r"No permissions to creating new namespace",
                                    r"No permissions to create a new namespace",
                                    r"No permissions to create new namespace")),
    ("userns-unsupported", "setuid", (r"Creating new namespace failed, likely because the kernel does not "
                                      r"support user namespaces",)),
    ("userns-exhausted", "sysctl", (r"Creating new namespace failed: No space left on device",)),
    ("namespace-failed", "container_options", (r"Creating new namespace failed",)),
    ("mount-propagation-denied", "container_options", (r"Failed to make / slave",)),
    # 0.8.0 names the path under its staging root, 0.12.0 the sandbox path.
    ("proc-mount-denied", "container_options", (r"Can't mount proc on (?:/newroot)?/proc",)),
    ("loopback-failed", "container_options", (r"loopback: Failed RTM_NEWADDR",)),
)

REASON_MESSAGES = {
    "ok": "the sandbox starts and every isolation check that could run passed",
    "bwrap-missing": "bwrap was not found on {path}",
    "version-unknown": "could not read a version from '{bwrap} --version'",
    "version-too-old": "bwrap {version} at {bwrap} is older than the minimum {min_version}",
    "prlimit-missing": "prlimit was not found (util-linux); the resource limits cannot be applied",
    "setuid-unsupported": "{bwrap} is setuid but was built without setuid support",
    "uid-map-denied": "the user namespace was created but writing its uid map was denied",
    "userns-restricted": "unprivileged user namespaces are restricted by AppArmor "
                         "(kernel.apparmor_restrict_unprivileged_userns=1) and no profile grants bwrap 'userns'",
    "userns-disabled": "unprivileged user namespaces are disabled ({knob})",
    "namespace-denied": "bwrap has no permission to create a new namespace",
    "namespace-blocked": "namespace creation is blocked by the container's seccomp profile",
    "userns-unsupported": "the kernel does not support user namespaces",
    "userns-exhausted": "no user namespace may be created (user.max_user_namespaces is used up or 0)",
    "namespace-failed": "creating the namespaces failed",
    "mount-propagation-denied": "bwrap cannot change mount propagation (typical inside a container)",
    "proc-mount-denied": "bwrap cannot mount /proc (Docker masks /proc paths)",
    "loopback-failed": "bwrap cannot configure loopback in the new network namespace",
    "timeout": "the sandbox did not finish within {timeout} s",
    "isolation-failed": "the sandbox starts but isolation checks failed: {failed}",
    "root-probe-refused": "refusing to probe as root: root bypasses user namespace restrictions and passes "
                          "where the agent user fails",
    "user-unknown": "no such user: {user}",
    "user-switch-denied": "only root can probe as another user",
    "exec-failed": "could not run the probe: {error}",
    "unknown": "bwrap failed: {stderr}",
}


def _format(template, **values):
    class _Default(dict):
        def __missing__(self, key):
            return "<%s>" % key
    return template.format_map(_Default(values))


# ---------------------------------------------------------------------------
# Versions
# ---------------------------------------------------------------------------

_VERSION_RE = re.compile(r"(?:^|\s|v)(\d+)\.(\d+)(?:\.(\d+))?(?=$|[\s~+\-])")


def parse_version(text):
    """Return (major, minor, patch) from ``bwrap --version`` output, or None.

    >>> parse_version("bubblewrap 0.8.0")
    (0, 8, 0)
    """
    if not isinstance(text, str):
        return None
    match = _VERSION_RE.search(text.strip())
    if not match:
        return None
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


def version_string(version):
    return None if version is None else "%d.%d.%d" % tuple(version)


def version_at_least(version, minimum):
    """True when ``version`` >= ``minimum``; both a tuple or a string. Unknown is False."""
    if isinstance(version, str):
        version = parse_version(version)
    if isinstance(minimum, str):
        parsed = parse_version(minimum)
        if parsed is None:
            raise InputError("min_version %r is not a version like %s" % (minimum, DEFAULT_MIN_VERSION))
        minimum = parsed
    if version is None:
        return False
    return tuple(version) >= tuple(minimum)


# ---------------------------------------------------------------------------
# Host facts (read under ``root`` so tests can fake a host)
# ---------------------------------------------------------------------------

def _read_text(root, path):
    try:
        with open(os.path.join(root, path.lstrip("/")), encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _read_int(root, path):
    text = _read_text(root, path)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def loaded_apparmor_profiles(root="/"):
    """Names of the loaded AppArmor profiles (from securityfs), or None without AppArmor."""
    text = _read_text(root, "/sys/kernel/security/apparmor/profiles")
    if text is None:
        return None
    names = set()
    for line in text.splitlines():
        # "name (mode)"; names may contain spaces only when quoted, which we keep whole.
        name = line.rsplit(" (", 1)[0].strip()
        if name:
            names.add(name)
    return names


_PROFILE_HEADER_RE = re.compile(
    r"^\s*(?:profile\s+(?P<name>\S+)\s+(?P<attach>/\S*)|(?P<path>/\S+))\s*(?:flags\s*=\s*\([^)]*\)\s*)?\{",
)


def apparmor_profiles_for(bwrap_path, root="/"):
    """Profiles in ``root``/etc/apparmor.d whose attachment matches ``bwrap_path``.

    Each entry: name, file, loaded (the name is in the kernel's loaded list), and
    grants_userns (the file holds a ``userns,`` rule). A parsed profile is not an
    attached one: only a loaded profile whose attachment matches applies to bwrap.
    """
    found = []
    if not bwrap_path:
        return found
    policy_dir = os.path.join(root, "etc/apparmor.d")
    try:
        names = sorted(os.listdir(policy_dir))
    except OSError:
        return found
    loaded = loaded_apparmor_profiles(root) or set()
    for entry in names:
        path = os.path.join(policy_dir, entry)
        if not os.path.isfile(path):
            continue
        text = _read_text(root, os.path.join("/etc/apparmor.d", entry)) or ""
        for line in text.splitlines():
            match = _PROFILE_HEADER_RE.match(line)
            if not match:
                continue
            attach = match.group("attach") or match.group("path")
            name = match.group("name") or attach
            # AppArmor globs: '*' within a component, '**' across; fnmatch is close enough here.
            if attach == bwrap_path or fnmatch.fnmatchcase(bwrap_path, attach.replace("**", "*")):
                found.append({
                    "name": name,
                    "file": os.path.join("/etc/apparmor.d", entry),
                    "loaded": name in loaded,
                    "grants_userns": bool(re.search(r"^\s*userns\b", text, re.MULTILINE)),
                })
    return found


def read_host_facts(bwrap_path=None, root="/"):
    """Read the user namespace knobs and AppArmor state under ``root`` (effectful: reads files)."""
    apparmor_enabled = (_read_text(root, "/sys/module/apparmor/parameters/enabled") or "").strip() == "Y"
    profiles = apparmor_profiles_for(bwrap_path, root) if apparmor_enabled else []
    return {
        "userns": {
            "max_user_namespaces": _read_int(root, "/proc/sys/user/max_user_namespaces"),
            "unprivileged_userns_clone": _read_int(root, "/proc/sys/kernel/unprivileged_userns_clone"),
            "apparmor_restrict": _read_int(root, "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        },
        "apparmor": {
            "enabled": apparmor_enabled,
            "profiles": profiles,
            "attached": any(p["loaded"] and p["grants_userns"] for p in profiles),
        },
        "in_container": detect_container(root),
    }


def userns_blocker(facts):
    """The host knob that blocks unprivileged user namespaces, as (reason, remediation, knob) or None.

    Pure: takes the dict ``read_host_facts`` returns.
    """
    userns = facts.get("userns", {})
    if userns.get("unprivileged_userns_clone") == 0:
        return ("userns-disabled", "sysctl", "kernel.unprivileged_userns_clone=0")
    if userns.get("max_user_namespaces") == 0:
        return ("userns-disabled", "sysctl", "user.max_user_namespaces=0")
    if userns.get("apparmor_restrict") == 1 and not facts.get("apparmor", {}).get("attached"):
        return ("userns-restricted", "apparmor_profile", "kernel.apparmor_restrict_unprivileged_userns=1")
    return None


def sysctl_fix(facts):
    """The sysctl settings that would enable unprivileged user namespaces on this host."""
    userns = facts.get("userns", {})
    settings = []
    if userns.get("unprivileged_userns_clone") == 0:
        settings.append("kernel.unprivileged_userns_clone=1")
    if userns.get("max_user_namespaces") == 0:
        settings.append("user.max_user_namespaces=15000")
    if userns.get("apparmor_restrict") == 1:
        settings.append("kernel.apparmor_restrict_unprivileged_userns=0")
    return settings


# ---------------------------------------------------------------------------
# Classification
# ---------------------------------------------------------------------------

def classify_stderr(stderr, facts=None):
    """Map bwrap's stderr (and the host facts) to (reason, remediation).

    Pure. The message alone names the symptom; the facts name the cause: an EPERM
    on a host whose AppArmor restricts user namespaces is ``userns-restricted``
    (fix: a profile), on a host with a sysctl at 0 ``userns-disabled`` (fix: the
    sysctl), and inside a container with both knobs open ``namespace-blocked``
    (fix: the container's seccomp options).
    """
    facts = facts or {}
    text = stderr or ""
    for rule_reason, rule_remediation, patterns in _STDERR_RULES:
        if any(re.search(p, text) for p in patterns):
            reason, remediation = rule_reason, rule_remediation
            break
    else:
        return ("unknown", "investigate")
    if reason in ("namespace-denied", "uid-map-denied", "userns-exhausted"):
        blocker = userns_blocker(facts)
        if blocker:
            return blocker[0], blocker[1]
        if reason == "namespace-denied" and facts.get("in_container"):
            return ("namespace-blocked", "container_options")
        if reason == "uid-map-denied" and facts.get("in_container"):
            return (reason, "container_options")
    return reason, remediation


def remediation_text(remediation, facts=None, bwrap_path=None, min_version=DEFAULT_MIN_VERSION):
    facts = facts or {}
    sysctl = " ".join("sysctl -w %s" % s for s in sysctl_fix(facts)) or "sysctl -w user.max_user_namespaces=15000"
    return _format(REMEDIATIONS.get(remediation, REMEDIATIONS["investigate"]),
                   bwrap=bwrap_path or "bwrap", min_version=min_version, sysctl=sysctl)


# ---------------------------------------------------------------------------
# The sandbox invocation and the isolation checks run inside it
# ---------------------------------------------------------------------------

# bwrap's pid-1 init and the shell that runs the command live beside the command for its
# whole run and count against the process limit set inside, so they come on top of
# max_procs (Hermes: SANDBOX_BASE_PROCESSES in tools/environments/bubblewrap.py).
SANDBOX_BASE_PROCESSES = 2


def _limit_int(limits, key):
    return int((limits or {}).get(key, 0) or 0)


def _clamp(value, hard):
    """A value above an inherited hard limit is clamped to it: raising one needs CAP_SYS_RESOURCE."""
    return value if hard is None or hard < 0 else min(value, hard)


def prlimit_args(limits, hard_limits=None):
    """prlimit options set in front of bwrap: memory (RLIMIT_AS) and CPU time (RLIMIT_CPU). Pure.

    These are per process and hold inside the sandbox as they do outside. 0 disables one;
    ``hard_limits`` ({"as": n, "cpu": n}, -1 or None for unlimited) clamps each value.
    """
    hard_limits = hard_limits or {}
    args = []
    memory_mb = _limit_int(limits, "memory_mb")
    cpu_seconds = _limit_int(limits, "cpu_seconds")
    if memory_mb > 0:
        args.append("--as=%d" % _clamp(memory_mb * 1024 * 1024, hard_limits.get("as")))
    if cpu_seconds > 0:
        args.append("--cpu=%d" % _clamp(cpu_seconds, hard_limits.get("cpu")))
    return args


def nproc_args(limits, hard_limits=None):
    """prlimit options set inside the sandbox, after bwrap made its user namespace: the process limit. Pure.

    The kernel counts RLIMIT_NPROC per user and per user namespace (Linux 5.14+). Set in
    front of bwrap it is compared with every process and thread the agent's uid runs on
    the host, so on a busy account bwrap fails with a spurious namespace error; set inside,
    it counts the sandbox alone (Hermes does the same). max_procs plus
    ``SANDBOX_BASE_PROCESSES``; 0 disables it.
    """
    max_procs = _limit_int(limits, "max_procs")
    if max_procs <= 0:
        return []
    return ["--nproc=%d" % _clamp(max_procs + SANDBOX_BASE_PROCESSES, (hard_limits or {}).get("nproc"))]


def inherited_hard_limits():
    """This process's hard limits for AS, CPU and NPROC (effectful: getrlimit), -1 for unlimited."""
    import resource  # noqa: PLC0415  (Unix only; imported where used)

    found = {}
    for key, res in (("as", resource.RLIMIT_AS), ("cpu", resource.RLIMIT_CPU), ("nproc", resource.RLIMIT_NPROC)):
        hard = resource.getrlimit(res)[1]
        found[key] = -1 if hard == resource.RLIM_INFINITY else hard
    return found


def sandbox_argv(bwrap_path, *, home=None, run_user=None, profile=DEFAULT_PROFILE, prlimit_path=None,
                 limits=None, hidden_dirs=(), hidden_files=(), masked_sockets=(), empty_fds=(),
                 command=("/bin/true",), hard_limits=None, nproc_inside=True):
    """The argv of the real invocation, the way the backend starts a command. Pure.

    ``--unshare-all`` plus an explicit ``--unshare-user`` (``--unshare-all`` only
    *tries* the user namespace; the probe must fail when it cannot have one).
    Hidden directories get an empty tmpfs; hidden files and the docker socket get an
    empty file read from ``empty_fds`` (``--ro-bind-data``, one fd per path: bwrap closes
    each fd after reading it); ``run_user`` (/run/user/<uid>,
    when it exists on the host: the root is read-only, so a mount point must exist) is a tmpfs.

    The limits as Hermes applies them: ``prlimit --as --cpu`` in front of bwrap (prlimit
    stops parsing at the first non-option, so bwrap follows with no separator), and
    ``prlimit --nproc`` inside, after bwrap's ``--`` and before the command
    (``nproc_inside=False`` leaves it out, for a kernel that does not count it per
    namespace). With every limit 0 there is no prlimit at all.
    """
    if profile not in PROFILES:
        raise InputError("profile %r is not one of %s" % (profile, ", ".join(PROFILES)))
    limits = DEFAULT_LIMITS if limits is None else limits
    argv = []
    outside = prlimit_args(limits, hard_limits) if prlimit_path else []
    inside = nproc_args(limits, hard_limits) if prlimit_path and nproc_inside else []
    if outside:
        argv += [prlimit_path, *outside]
    argv += [bwrap_path, "--unshare-all", "--unshare-user"]
    if profile == "network":
        argv.append("--share-net")
    argv += ["--die-with-parent", "--new-session",
             "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if run_user:
        argv += ["--tmpfs", run_user]
    for path in hidden_dirs:
        argv += ["--tmpfs", path]
    masked = [*hidden_files, *masked_sockets]
    if masked:
        if len(empty_fds) != len(masked):
            raise ValueError("need one empty fd per masked path (%d paths, %d fds)" % (len(masked), len(empty_fds)))
        for fd, path in zip(empty_fds, masked):
            argv += ["--ro-bind-data", str(fd), path]
    if home:
        argv += ["--setenv", "HOME", home]
    argv += ["--", *([prlimit_path, *inside] if inside else []), *command]
    return argv


def _sh_check(name, condition, ok_detail, fail_detail):
    return ("if %s; then echo %s; else echo %s; fi\n"
            % (condition, shlex.quote("SG|%s|pass|%s" % (name, ok_detail)),
               shlex.quote("SG|%s|fail|%s" % (name, fail_detail))))


def isolation_script(plan):
    """The /bin/sh script run inside the sandbox; one ``SG|name|status|detail`` line per check. Pure.

    ``plan`` maps a check name to its inputs (or to a skip reason string); see
    ``plan_isolation_checks``. Only POSIX sh and coreutils are used.
    """
    lines = ["exec 2>/dev/null\n"]
    for name in ISOLATION_CHECKS:
        spec = plan.get(name)
        if spec is None:
            continue
        if isinstance(spec, str):
            lines.append("echo %s\n" % shlex.quote("SG|%s|skipped|%s" % (name, spec)))
            continue
        if name == "user_namespace":
            lines.append(_sh_check(name, "[ \"$(tr -s ' ' </proc/self/uid_map | sed 's/^ //')\" != '0 0 4294967295' ]",
                                   "running in a user namespace", "uid_map is the initial namespace's"))
        elif name == "root_readonly":
            for path in spec["probe_dirs"]:
                target = shlex.quote(os.path.join(path, ".sandboxguard-probe-%d" % spec["nonce"]))
                lines.append(_sh_check(name, "! ( : > %s )" % target,
                                       "%s (writable on the host) is read-only" % path,
                                       "%s is writable inside the sandbox" % path))
                lines.append("rm -f %s\n" % target)
        elif name == "tmp_fresh":
            marker = shlex.quote(spec["marker"])
            lines.append(_sh_check(name, "[ ! -e %s ] && [ -z \"$(ls -A /tmp)\" ] && : > /tmp/.sg-fresh" % marker,
                                   "/tmp is an empty writable tmpfs",
                                   "/tmp shows host files or is not writable"))
        elif name == "pid_private":
            lines.append(_sh_check(
                name,
                "[ ! -e /proc/%d ] && [ \"$(ls /proc | grep -c '^[0-9][0-9]*$')\" -le 6 ]" % spec["host_pid"],
                "host processes are invisible", "host processes are visible in /proc"))
        elif name == "network_loopback_only":
            lines.append(_sh_check(
                name, "[ \"$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')\" = 'lo ' ]",
                "only lo exists", "interfaces besides lo are visible"))
        elif name == "credentials_hidden":
            for path in spec["dirs"]:
                quoted = shlex.quote(path)
                lines.append(_sh_check(name, "[ -d %s ] && [ -z \"$(ls -A %s)\" ]" % (quoted, quoted),
                                       "%s is empty" % path, "%s shows host content" % path))
            for path in spec["files"]:
                quoted = shlex.quote(path)
                lines.append(_sh_check(name, "[ ! -s %s ]" % quoted,
                                       "%s is empty" % path, "%s shows host content" % path))
        elif name == "run_user_empty":
            quoted = shlex.quote(spec["path"])
            lines.append(_sh_check(name, "[ -d %s ] && [ -z \"$(ls -A %s)\" ]" % (quoted, quoted),
                                   "%s is an empty tmpfs" % spec["path"], "%s shows host sockets" % spec["path"]))
        elif name == "docker_socket_masked":
            for path in spec["paths"]:
                quoted = shlex.quote(path)
                lines.append(_sh_check(name, "[ -f %s ] && [ ! -S %s ] && [ ! -s %s ]" % (quoted, quoted, quoted),
                                       "%s is an empty file" % path, "%s is still a socket" % path))
        elif name in _LIMIT_LINES:
            label, field = _LIMIT_LINES[name]
            lines.append(_sh_check(
                name,
                "[ \"$(grep '^%s' /proc/self/limits | tr -s ' ' | cut -d' ' -f%d)\" = '%d' ]"
                % (label, field, spec["value"]),
                "%s is %d" % (label.lower(), spec["value"]), "%s is not %d" % (label.lower(), spec["value"])))
    lines.append("echo SG-END\n")
    return "".join(lines)


def parse_isolation_output(stdout, plan, not_run_reason=None):
    """Turn the script's lines into one entry per planned check. Pure.

    A check with several lines (one per path) passes only when every line passed.
    A planned check with no line at all did not run, and says why.
    """
    seen = {}
    for line in (stdout or "").splitlines():
        parts = line.split("|", 3)
        if len(parts) != 4 or parts[0] != "SG":
            continue
        seen.setdefault(parts[1], []).append((parts[2], parts[3]))
    results = []
    for name in ISOLATION_CHECKS:
        if name not in plan:
            continue
        entries = seen.get(name)
        if not entries:
            why = not_run_reason or "the sandbox exited before reporting this check"
            results.append({"name": name, "status": "not_run", "ok": None, "detail": why})
            continue
        statuses = [status for status, _detail in entries]
        if "fail" in statuses:
            status, ok = "fail", False
            details = [d for s, d in entries if s == "fail"]
        elif all(s == "skipped" for s in statuses):
            status, ok = "skipped", None
            details = [d for _status, d in entries]
        else:
            status, ok = "pass", True
            details = [d for _status, d in entries]
        results.append({"name": name, "status": status, "ok": ok, "detail": "; ".join(details)})
    return results


def plan_isolation_checks(*, home, uid, profile, limits, prlimit_path, host_pid, marker, nonce, checks=None,
                          root="/", hidden_dirs=(), hidden_files=(), masked_sockets=(), hard_limits=None,
                          nproc_scoped=True):
    """Decide what each check tests, or why it cannot run (a string). Reads only under ``root``."""
    wanted = ISOLATION_CHECKS if checks is None else tuple(checks)
    unknown = [c for c in wanted if c not in ISOLATION_CHECKS]
    if unknown:
        raise InputError("unknown isolation check(s) %s; known: %s" % (", ".join(unknown), ", ".join(ISOLATION_CHECKS)))
    plan = {}
    for name in wanted:
        if name == "user_namespace":
            plan[name] = {}
        elif name == "root_readonly":
            # Paths the agent can write on the host, so read-only inside is the sandbox's doing.
            dirs = ["/var/tmp"]
            if home and os.path.isdir(home):
                dirs.append(home)
            plan[name] = {"probe_dirs": dirs, "nonce": nonce}
        elif name == "tmp_fresh":
            plan[name] = {"marker": marker}
        elif name == "pid_private":
            plan[name] = {"host_pid": host_pid}
        elif name == "network_loopback_only":
            if profile == "network":
                plan[name] = "the network profile shares the host network"
            else:
                plan[name] = {}
        elif name == "credentials_hidden":
            if not hidden_dirs and not hidden_files:
                plan[name] = "no credential store exists in %s" % (home or "the home directory")
            else:
                plan[name] = {"dirs": list(hidden_dirs), "files": list(hidden_files)}
        elif name == "run_user_empty":
            path = "/run/user/%d" % uid
            if os.path.isdir(os.path.join(root, path.lstrip("/"))):
                plan[name] = {"path": path}
            else:
                plan[name] = "%s does not exist on the host" % path
        elif name == "docker_socket_masked":
            if masked_sockets:
                plan[name] = {"paths": list(masked_sockets)}
            else:
                plan[name] = "no docker socket exists on the host"
        elif name in _LIMIT_LINES:
            plan[name] = _plan_limit(name, limits, prlimit_path, hard_limits, nproc_scoped)
    return plan


def _plan_limit(name, limits, prlimit_path, hard_limits, nproc_scoped):
    """The value /proc/self/limits must show inside the sandbox for one limit check, or why it cannot run."""
    key = {"rlimit_as": "memory_mb", "rlimit_cpu": "cpu_seconds", "rlimit_nproc": "max_procs"}[name]
    value = _limit_int(limits, key)
    hard = hard_limits or {}
    if not prlimit_path:
        return "prlimit was not found, so no limit is applied"
    if value <= 0:
        return "%s is 0 (limit disabled)" % key
    if name == "rlimit_as":
        return {"value": _clamp(value * 1024 * 1024, hard.get("as"))}
    if name == "rlimit_cpu":
        return {"value": _clamp(value, hard.get("cpu"))}
    if not nproc_scoped:
        return ("this kernel does not count the process limit per sandbox (Linux 5.14 or later does), so "
                "max_procs is not applied; memory and CPU limits still are")
    return {"value": _clamp(value + SANDBOX_BASE_PROCESSES, hard.get("nproc"))}


def _root_relative(full, root):
    return full if root == "/" else "/" + os.path.relpath(full, root).lstrip("/")


def hidden_paths(home, root="/", hermes_home=None):
    """(directories, files) the sandbox must hide for ``home``: every credential store of the
    one list (``credentials.home_stores("bwrap")``, the Hermes home ``~/.hermes`` included)
    and ``hermes_home`` when it lies elsewhere, that exists under ``root``.

    Reads the file system (lstat/stat/realpath under ``root``). A store that is a symlink (a
    dotfiles repository) is hidden at its target; one that resolves to the home directory
    or above it is skipped, since hiding it would hide the home; a path inside another
    hidden path is covered by it and dropped.
    """
    dirs, files = [], []
    if not home:
        return dirs, files
    real_home = _root_relative(os.path.realpath(os.path.join(root, home.lstrip("/"))), root)
    found = []
    for path in credentials.hidden_roots(home, hermes_home, "bwrap"):
        full = os.path.join(root, path.lstrip("/"))
        try:
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                target = os.path.realpath(full)
                st = os.stat(target)
                path = _root_relative(target, root)
        except OSError:
            continue
        if is_within(real_home, path) or path in (p for p, _d in found):
            continue
        found.append((path, stat.S_ISDIR(st.st_mode)))
    for path, is_dir in found:
        if any(is_within(path, other, strict=True) for other, _d in found):
            continue
        (dirs if is_dir else files).append(path)
    return dirs, files


def existing_docker_sockets(root="/"):
    found = []
    seen = set()
    for path in DOCKER_SOCKETS:
        full = os.path.join(root, path.lstrip("/"))
        try:
            st = os.stat(full)
        except OSError:
            continue
        if stat.S_ISSOCK(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            found.append(path)
    return found


# ---------------------------------------------------------------------------
# Users: the probe never runs as root
# ---------------------------------------------------------------------------

class ProbeUserRefused(InputError):
    """The probe cannot run as the user asked for; ``reason`` is one of PROBE_ERRORS'
    user codes (root-probe-refused, user-unknown, user-switch-denied), str() the message."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


def resolve_probe_user(user=None, euid=None):
    """Decide whom to probe as: a dict with uid, gid, name, home, groups and switch.

    Pure apart from the passwd lookup. As root, ``user`` is required and must not be
    root; as an unprivileged user, the probe runs as that user (``user``, if given,
    must name it: only root can switch users). Raises ProbeUserRefused otherwise.
    """
    import pwd  # noqa: PLC0415  (Unix only; imported where used)

    euid = os.geteuid() if euid is None else euid
    if user is None or user == "":
        if euid == 0:
            raise ProbeUserRefused("root-probe-refused",
                                   "running as root: name the agent user to probe as (the probe never runs as root)")
        entry = pwd.getpwuid(euid)
    else:
        try:
            entry = pwd.getpwuid(int(user)) if str(user).isdigit() else pwd.getpwnam(str(user))
        except (KeyError, ValueError):
            raise ProbeUserRefused("user-unknown", "no such user: %s" % user) from None
    if entry.pw_uid == 0:
        raise ProbeUserRefused("root-probe-refused",
                               "refusing to probe as root (%s): root bypasses user namespace restrictions and "
                               "passes where the agent user fails; name the agent user instead" % entry.pw_name)
    if euid not in (0, entry.pw_uid):
        raise ProbeUserRefused("user-switch-denied",
                               "only root can probe as another user; run as %s or as root" % entry.pw_name)
    try:
        groups = os.getgrouplist(entry.pw_name, entry.pw_gid)
    except OSError:
        groups = [entry.pw_gid]
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir,
            "groups": sorted(set(groups)), "switch": euid != entry.pw_uid}


def _user_env(user):
    return {
        "HOME": user["home"], "USER": user["name"], "LOGNAME": user["name"],
        "PATH": SEARCH_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
    }


# ---------------------------------------------------------------------------
# Effectful: running things
# ---------------------------------------------------------------------------

def find_bwrap(bwrap=None, path=None):
    """Absolute path of bwrap: ``bwrap`` if given (a path or a name), else the first on ``path``."""
    search = path or (os.environ.get("PATH", "") + os.pathsep + SEARCH_PATH)
    if bwrap:
        if os.sep in bwrap:
            return os.path.abspath(bwrap) if os.path.isfile(bwrap) else None
        return shutil.which(bwrap, path=search)
    return shutil.which("bwrap", path=search)


def read_bwrap_version(bwrap_path, timeout=10):
    """Run ``bwrap --version`` (effectful) and return (text, parsed tuple or None)."""
    try:
        done = proc.run([bwrap_path, "--version"], capture_output=True, text=True, timeout=timeout,
                        check=False)
    except (OSError, proc.TimeoutExpired) as exc:
        return str(exc), None
    text = (done.stdout or done.stderr).strip()
    return text, parse_version(text)


def run_sandbox_probe(argv, user, timeout=DEFAULT_TIMEOUT_S, pass_fds=()):
    """Run ``argv`` as ``user`` (effectful). Returns returncode, stdout, stderr, timed_out, elapsed.

    Privileges are dropped in the child (``subprocess`` user/group/extra_groups, Python
    >= 3.9) when the caller is root; the environment is the agent user's, not ours.
    """
    kwargs = {}
    if user.get("switch"):
        kwargs.update(user=user["uid"], group=user["gid"], extra_groups=user["groups"])
    cwd = "/"
    started = time.monotonic()
    try:
        done = proc.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                        env=_user_env(user), check=False, stdin=proc.DEVNULL,
                        pass_fds=tuple(pass_fds), **kwargs)
        return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
                "timed_out": False, "elapsed": round(time.monotonic() - started, 3)}
    except proc.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return {"returncode": None, "stdout": out, "stderr": err, "timed_out": True,
                "elapsed": round(time.monotonic() - started, 3)}
    except OSError as exc:
        return {"returncode": None, "stdout": "", "stderr": "", "timed_out": False, "error": str(exc),
                "elapsed": round(time.monotonic() - started, 3)}


def _not_run(plan, why):
    return parse_isolation_output("", plan, not_run_reason=why)


def check_request(min_version=DEFAULT_MIN_VERSION, bwrap=None, limits=None, timeout=DEFAULT_TIMEOUT_S, checks=None,
                  profile=DEFAULT_PROFILE):
    """The probe's inputs, checked once for the library, the module and the CLI: raises
    InputError naming the option. ``bwrap``: a path the operator named that does not exist
    is refused by the module and the CLI; :func:`probe` passes None, because for the probe
    itself a missing bwrap is a finding (bwrap-missing: install it). The user is
    resolve_probe_user's: the probe reports a user it cannot run as, the callers refuse it."""
    version_at_least("0.0.0", min_version)
    if bwrap and find_bwrap(bwrap) is None:
        raise InputError("bwrap %s: no such executable; give the path of the bwrap binary" % bwrap)
    bad = {k: v for k, v in (limits or {}).items()
           if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0)}
    if bad:
        raise InputError("limits %s: each is a whole number, 0 (disabled) or more" % bad)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise InputError("timeout %r: the probe's seconds must be more than 0" % (timeout,))
    unknown = [c for c in (checks or ()) if c not in ISOLATION_CHECKS]
    if unknown:
        raise InputError("unknown isolation check(s) %s; known: %s" % (", ".join(unknown), ", ".join(ISOLATION_CHECKS)))
    if profile not in PROFILES:
        raise InputError("profile %r is not one of %s" % (profile, ", ".join(PROFILES)))


def probe(user=None, *, min_version=DEFAULT_MIN_VERSION, checks=None, profile=DEFAULT_PROFILE, limits=None,
          bwrap=None, root="/", timeout=DEFAULT_TIMEOUT_S, euid=None, hermes_home=None):
    """Probe bubblewrap on this host as the agent user and run the isolation checks (effectful).

    Reads facts under ``root`` and starts ``bwrap --version`` and the real sandbox; changes
    nothing on the host (a marker file in /tmp lives for the duration of the probe).
    Returns the report envelope (sandboxguard.report) plus the probe's own keys: ``ok`` is
    True only when bwrap meets ``min_version``, prlimit exists, the sandbox starts as the
    agent user and no isolation check failed; ``reason`` and ``remediation`` name the first
    problem and its fix (see :func:`_verdict` for ``findings``, ``errors``, ``complete``).
    Bad input raises InputError (:func:`check_request`).
    """
    started = time.monotonic()
    check_request(min_version, None, limits, timeout, checks, profile)
    limits = dict(DEFAULT_LIMITS, **(limits or {}))
    bwrap_path = find_bwrap(bwrap)
    report = envelope.new_report(
        [bwrap_path or bwrap] if (bwrap_path or bwrap) else [],
        ok=False, reason=None, message=None, remediation="none", remediation_text=None,
        min_version=min_version, profile=profile, limits=limits,
        bwrap={"path": bwrap_path, "version": None, "version_text": None, "setuid": False, "meets_min": False},
        prlimit={"path": None, "found": False},
        user=None, probe={"ran": False, "ok": False, "reason": None, "remediation": None,
                          "stderr": "", "returncode": None, "timed_out": False, "argv": []},
        isolation=[], findings=[])
    problems = []  # (reason, remediation, message) in priority order

    facts = read_host_facts(bwrap_path, root)
    report.update(facts)
    report["sysctl_fix"] = sysctl_fix(facts)
    if bwrap_path is None:
        missing = _format(REASON_MESSAGES["bwrap-missing"], path=bwrap or SEARCH_PATH)
        problems.append(("bwrap-missing", "install", missing))
    else:
        problems.extend(_check_bwrap_binary(report["bwrap"], min_version))

    prlimit_path = shutil.which("prlimit", path=SEARCH_PATH)
    report["prlimit"] = {"path": prlimit_path, "found": prlimit_path is not None}

    try:
        who = resolve_probe_user(user, euid)
    except ProbeUserRefused as exc:
        problems.insert(0, (exc.reason, "agent_user", str(exc)))
        if exc.reason == "root-probe-refused":
            envelope.add_warning(report, str(exc))
        plan = {name: {} for name in (checks or ISOLATION_CHECKS)}
        report["isolation"] = _not_run(plan, "the probe did not run: %s" % exc)
    else:
        report["user"] = {"name": who["name"], "uid": who["uid"], "home": who["home"]}
        _probe_sandbox(report, who, bwrap_path, prlimit_path, facts, problems, profile=profile, limits=limits,
                       checks=checks, root=root, hermes_home=hermes_home, timeout=timeout)
    if prlimit_path is None:
        problems.append(("prlimit-missing", "install_prlimit", REASON_MESSAGES["prlimit-missing"]))
    failed = [c["name"] for c in report["isolation"] if c["status"] == "fail"]
    if failed and report["probe"]["ok"]:
        problems.append(("isolation-failed", "investigate",
                         _format(REASON_MESSAGES["isolation-failed"], failed=", ".join(failed))))
    _verdict(report, problems, facts, min_version, who=user)
    return envelope.finish(report, started)


def _check_bwrap_binary(info, min_version):
    """Fill ``info`` (the report's ``bwrap``) from the binary at ``info["path"]``; return its problems."""
    text, version = read_bwrap_version(info["path"])
    try:
        mode = os.stat(info["path"]).st_mode
    except OSError:
        mode = 0
    info.update({"version": version_string(version), "version_text": text,
                 "setuid": bool(mode & stat.S_ISUID), "meets_min": version_at_least(version, min_version)})
    if version is None:
        return [("version-unknown", "install", _format(REASON_MESSAGES["version-unknown"], bwrap=info["path"]))]
    if not info["meets_min"]:
        return [("version-too-old", "install", _format(
            REASON_MESSAGES["version-too-old"], bwrap=info["path"], version=info["version"],
            min_version=min_version))]
    return []


# Problems that leave the probe without a verdict on bubblewrap: the report's errors, not findings.
PROBE_ERRORS = ("root-probe-refused", "user-unknown", "user-switch-denied", "exec-failed")


def _verdict(report, problems, facts, min_version, who=None):
    """Turn the probe's ``problems`` into the envelope's findings, errors, complete and counts.

    - ``findings``: what stops the agent user's sandbox or weakens it (``bwrap-missing``,
      ``version-too-old``, ``userns-restricted``, ``isolation-failed``, ...), each
      ``{path, reason, remediation, message}``: the path at fault is the bwrap binary, or
      ``prlimit``. A finding is an answer: the probe ran as far as the host let it.
    - ``errors``: the probe could not answer (:data:`PROBE_ERRORS`: refused or unknown user,
      the probe process would not start), ``{path, op: "probe", error}``; the path is the
      user asked for, or the bwrap binary for ``exec-failed``.
    - ``complete``: False when there are errors or the sandbox ran out of time.
    - ``problems``: deprecated after 1.0.0 (removed in 2.0.0): findings and errors together
      as ``{reason, remediation, message}`` in priority order, the 1.0.0 shape.
    """
    bwrap_path = report["bwrap"]["path"]
    for reason, remedy, message in problems:
        if reason in PROBE_ERRORS:
            path = bwrap_path if reason == "exec-failed" else (who if who is not None else "(unset)")
            envelope.add_error(report, str(path), "probe", message)
        else:
            path = "prlimit" if reason == "prlimit-missing" else bwrap_path or (report["roots"] or ["bwrap"])[0]
            report["findings"].append({"path": path, "reason": reason, "remediation": remedy, "message": message})
    report["complete"] = not report["errors"] and not report["probe"]["timed_out"]
    statuses = [c["status"] for c in report["isolation"]]
    report["counts"].update({"checks": len(statuses), "findings": len(report["findings"]),
                             **{status: statuses.count(status) for status in ("pass", "fail", "skipped", "not_run")}})
    report["counts"].setdefault("errors", 0)
    report["problems"] = [{"reason": r, "remediation": m, "message": t} for r, m, t in problems]
    if problems:
        reason, remedy, message = problems[0]
        report.update(ok=False, reason=reason, message=message, remediation=remedy,
                      remediation_text=remediation_text(remedy, facts, bwrap_path, min_version))
    else:
        report.update(ok=True, reason="ok", message=REASON_MESSAGES["ok"], remediation="none",
                      remediation_text=REMEDIATIONS["none"])


def _probe_sandbox(report, who, bwrap_path, prlimit_path, facts, problems, *, profile, limits, checks, root,
                   hermes_home, timeout):
    """Plan the isolation checks for ``who``, start the sandbox once, record the result in ``report``."""
    hidden_dirs, hidden_files = hidden_paths(who["home"], root, hermes_home)
    sockets = existing_docker_sockets(root)
    hard_limits = inherited_hard_limits()
    nproc_scoped = None
    if bwrap_path and prlimit_path and _limit_int(limits, "max_procs") > 0:
        nproc_scoped = process_limit_is_scoped(bwrap_path, prlimit_path, who, timeout)
    report["process_limit_scoped"] = nproc_scoped
    marker_fd, marker = _make_marker()
    try:
        plan = plan_isolation_checks(
            home=who["home"], uid=who["uid"], profile=profile, limits=limits, prlimit_path=prlimit_path,
            host_pid=os.getpid(), marker=marker, nonce=os.getpid(), checks=checks, root=root,
            hidden_dirs=hidden_dirs, hidden_files=hidden_files, masked_sockets=sockets, hard_limits=hard_limits,
            nproc_scoped=nproc_scoped is not False)
        if bwrap_path is None:
            report["isolation"] = _not_run(plan, "bwrap is not installed")
        else:
            run_user = "/run/user/%d" % who["uid"]
            run_user = run_user if os.path.isdir(os.path.join(root, run_user.lstrip("/"))) else None
            argv_options = {"home": who["home"], "run_user": run_user, "profile": profile,
                            "prlimit_path": prlimit_path, "limits": limits, "hidden_dirs": hidden_dirs,
                            "hidden_files": hidden_files, "masked_sockets": sockets, "hard_limits": hard_limits,
                            "nproc_inside": nproc_scoped is not False}
            report["probe"], report["isolation"] = _run_probe(bwrap_path, who, argv_options, plan, timeout=timeout,
                                                              facts=facts)
    finally:
        os.close(marker_fd)
        os.unlink(marker)
    if report["probe"]["ran"] and not report["probe"]["ok"]:
        reason, remedy = report["probe"]["reason"], report["probe"]["remediation"]
        knob = (userns_blocker(facts) or (None, None, "a sysctl"))[2]
        problems.append((reason, remedy, _format(REASON_MESSAGES.get(reason, REASON_MESSAGES["unknown"]),
                                                 bwrap=bwrap_path, knob=knob, timeout=timeout,
                                                 stderr=report["probe"]["stderr"].strip()[:300],
                                                 error=report["probe"].get("error"))))
    elif nproc_scoped is False and report["probe"]["ok"]:
        envelope.add_warning(
            report, "this kernel does not count the process limit per sandbox (Linux 5.14 or later does), so the "
            "backend cannot apply max_procs; the memory and CPU limits still apply")


# The process limit the scoped-limit probe sets inside its sandbox: room for bwrap's init,
# the shell and the one child it forks, far below what a uid runs on a host with an agent.
PROCESS_LIMIT_PROBE_VALUE = 4


def process_limit_is_scoped(bwrap_path, prlimit_path, who, timeout=DEFAULT_TIMEOUT_S):
    """True when a process limit set inside a sandbox counts that sandbox alone (effectful: runs bwrap).

    Linux counts RLIMIT_NPROC per user namespace from 5.14; before that the count is every
    thread of the uid on the host and a limit set inside would stop every fork. No flag
    says which, so (as Hermes does) a sandbox sets a limit of PROCESS_LIMIT_PROBE_VALUE and
    forks once: the fork passes only where the count is the sandbox's own. Any other
    outcome, bwrap failing to start included, counts as not scoped.
    """
    argv = [bwrap_path, "--unshare-all", "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/", "--",
            prlimit_path, "--nproc=%d" % PROCESS_LIMIT_PROBE_VALUE, "/bin/sh", "-c", "( : ) && exit 0"]
    done = run_sandbox_probe(argv, who, timeout)
    return done["returncode"] == 0


def _make_marker():
    import tempfile  # noqa: PLC0415

    return tempfile.mkstemp(prefix="sandboxguard-probe-marker-", dir="/tmp")


def _run_probe(bwrap_path, who, argv_options, plan, *, timeout, facts):
    """Start the real sandbox once as ``who`` with the check script; classify a failure."""
    # One empty pipe per masked path: each --ro-bind-data target becomes an empty file.
    read_fds = []
    try:
        for _path in [*argv_options["hidden_files"], *argv_options["masked_sockets"]]:
            read_fd, write_fd = os.pipe()
            os.close(write_fd)
            read_fds.append(read_fd)
        argv = sandbox_argv(bwrap_path, empty_fds=read_fds, command=("/bin/sh", "-c", isolation_script(plan)),
                            **argv_options)
        done = run_sandbox_probe(argv, who, timeout, pass_fds=read_fds)
    finally:
        for read_fd in read_fds:
            os.close(read_fd)
    result = {"ran": True, "ok": False, "returncode": done["returncode"], "stderr": done["stderr"],
              "timed_out": done["timed_out"], "elapsed": done["elapsed"],
              "argv": [*argv[:-1], "<isolation checks>"], "reason": None, "remediation": None}
    finished = "SG-END" in (done["stdout"] or "")
    if done.get("error"):
        result.update(reason="exec-failed", remediation="investigate", error=done["error"])
        why = "the probe could not start: %s" % done["error"]
    elif done["timed_out"]:
        result.update(reason="timeout", remediation="investigate")
        why = "the sandbox did not finish within %s s" % timeout
    elif done["returncode"] == 0 and finished:
        result.update(ok=True, reason="ok", remediation="none")
        why = None
    else:
        reason, remedy = classify_stderr(done["stderr"], facts)
        result.update(reason=reason, remediation=remedy)
        why = "the sandbox did not start (%s): %s" % (reason, (done["stderr"] or "").strip()[:200])
    return result, parse_isolation_output(done["stdout"] if result["ok"] else "", plan, not_run_reason=why)


def apparmor_profile(bwrap_path, name=APPARMOR_PROFILE_NAME):
    """Text of an AppArmor profile that lets ``bwrap_path`` create user namespaces. Pure.

    The ``userns`` rule needs AppArmor 4.0 (abi 4.0), which is also the first version
    that can restrict unprivileged user namespaces (Ubuntu 23.10+). ``unconfined``
    keeps bwrap otherwise unrestricted, as Ubuntu's own profiles for such tools do.
    """
    if not bwrap_path or not bwrap_path.startswith("/") or re.search(r"[\s{},\"#]", bwrap_path):
        raise InputError("bwrap path %r must be absolute and free of spaces, quotes, braces and commas" % bwrap_path)
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", name):
        raise InputError("profile name %r must be letters, digits, '.', '_' or '-'" % name)
    return (
        "# Managed by sandboxguard (bwrap.apparmor_profile): lets bubblewrap at %(path)s create\n"
        "# unprivileged user namespaces where kernel.apparmor_restrict_unprivileged_userns=1.\n"
        "abi <abi/4.0>,\n"
        "include <tunables/global>\n"
        "\n"
        "profile %(name)s %(path)s flags=(unconfined) {\n"
        "  userns,\n"
        "\n"
        "  # Site-specific additions and overrides.\n"
        "  include if exists <local/%(name)s>\n"
        "}\n"
    ) % {"path": bwrap_path, "name": name}
