# GENERATED from python/src/sandboxguard/_bwrap/diagnosis.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Why a bubblewrap probe failed and what fixes it: the reason and remediation tables, bwrap
versions, and the classification of bwrap's stderr against the host facts. Pure: plain values in,
plain values out (the facts come from ``_bwrap.host.read_host_facts``).
"""
import re

from .._core import defaults
from ..errors import InputError

DEFAULT_MIN_VERSION = defaults.BWRAP_MIN_VERSION


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


# bwrap's pid-1 init and the shell that runs the command live beside the command for its
