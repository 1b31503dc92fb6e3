# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The audit's ``runtime`` check: what the sandbox's own settings let through (issue 28).

The rules are pure functions over plain data: a Hermes config's sandbox settings
(``_prevent.hermes.settings_of``), the engine's inspect documents of the agent's containers, the
sandbox roots (``scope.derive``'s realpaths) and a few host facts (Landlock, the engine the
``docker`` backend drives, the daemon's info for a runner host). Each finding: ``rule`` (an id),
``severity`` (critical, high, medium, low), ``where`` (the config file or the container),
``detail``, ``fix`` and ``cis`` (the CIS Docker Benchmark recommendation it matches, or None).
docker-bench-security checks the same fields host-wide; this reads them for the agent's own
containers and config, across a fleet. :func:`check_runtime` (in ``runtime_host``) gathers the
data and calls these.
"""
import posixpath

from .._core.pathnames import is_within
from .._core.text import escape
from .._prevent import dockerargs

CRITICAL, HIGH, MEDIUM, LOW = "critical", "high", "medium", "low"
SEVERITIES = (CRITICAL, HIGH, MEDIUM, LOW)
RISKY_CAPS = ("ALL", "CAP_SYS_ADMIN", "CAP_SETFCAP", "CAP_MKNOD", "CAP_DAC_READ_SEARCH")
HOST_NAMESPACES = {"pid": ("5.15", "the host's process namespace"), "network": ("5.9", "the host's network"),
                   "userns": ("5.30", "the host's user namespace"), "ipc": ("5.16", "the host's IPC namespace"),
                   "uts": ("5.20", "the host's UTS namespace")}
ENGINE_SOCKETS = ("docker.sock", "podman.sock", "containerd.sock")
SYSTEM_DIRS = ("/", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/sys", "/usr", "/var", "/bin", "/sbin",
               "/root")
# Each rule once: (severity, CIS Docker Benchmark id or None, the fix)
RULES = {
    "privileged": (CRITICAL, "5.4", "remove --privileged: it turns off seccomp, AppArmor and the capability set"),
    "cap-add": (HIGH, "5.3", "remove the --cap-add (Hermes keeps only DAC_OVERRIDE, CHOWN, FOWNER, SETUID, SETGID)"),
    "seccomp-unconfined": (HIGH, "5.21", "remove seccomp=unconfined (or use sandboxguard's profile: "
                                         "sandbox_prevent)"),
    "apparmor-unconfined": (HIGH, "5.1", "remove apparmor=unconfined"),
    "selinux-disabled": (HIGH, "5.2", "remove label=disable"),
    "no-new-privileges-off": (MEDIUM, "5.25", "keep --security-opt no-new-privileges"),
    "host-namespace": (HIGH, None, "remove the host namespace option"),
    "engine-socket": (CRITICAL, "5.31", "do not mount the engine's socket: whoever holds it is root on the host"),
    "system-dir-bind": (HIGH, "5.5", "do not bind system directories of the host into the sandbox"),
    "rw-bind-outside-roots": (HIGH, None, "bind it read-only (:ro), or move it below the sandbox directory"),
    "secret-isolation-off": (HIGH, None, "set security.terminal_secret_isolation: require (or auto on a kernel "
                                         "with Landlock)"),
    "secret-isolation-no-landlock": (HIGH, None, "set security.terminal_secret_isolation: require, or run on a "
                                                 "kernel with Landlock (auto runs unprotected without it)"),
    "profile-other-engine": (HIGH, None, "make the profile from the default of the engine the docker backend "
                                         "drives (sandboxguard seccomp-profile --engine ...)"),
    "daemon-seccomp-off": (HIGH, "5.21", "remove seccomp-profile=unconfined from daemon.json"),
    "daemon-no-userns-remap": (MEDIUM, "2.8", "set userns-remap in daemon.json (container root is then not host "
                                              "root)"),
    "daemon-profile-allows-setid": (LOW, None, "set the daemon's default to sandboxguard's profile "
                                               "(sandbox_prevent_docker_daemon: true)"),
}


def finding(rule, where, detail, **extra):
    """One finding of ``rule`` about ``where`` (pure)."""
    severity, cis, fix = RULES[rule]
    found = {"rule": rule, "severity": severity, "where": where, "detail": detail, "fix": fix, "cis": cis}
    found.update(extra)
    return found


def _caps(names):
    return [c for c in dockerargs.capabilities(names) if c in RISKY_CAPS]


def _security_findings(where, security_opts):
    out = []
    for option in security_opts:
        key, _sep, value = str(option).replace(":", "=", 1).partition("=")
        if key == "seccomp" and value == "unconfined":
            out.append(finding("seccomp-unconfined", where, "seccomp=unconfined: no seccomp filter at all"))
        elif key == "apparmor" and value == "unconfined":
            out.append(finding("apparmor-unconfined", where, "apparmor=unconfined"))
        elif key == "label" and value == "disable":
            out.append(finding("selinux-disabled", where, "label=disable: no SELinux separation"))
        elif key == "no-new-privileges" and value.lower() == "false":
            out.append(finding("no-new-privileges-off", where, "no-new-privileges=false: setuid binaries elevate"))
    return out


def bind_findings(where, source, destination, read_only, roots):
    """Findings for one host bind (pure): the engine's socket, a system directory, or a
    writable bind outside every sandbox root. A named volume (no ``/``) is the engine's."""
    if not source or not source.startswith("/"):
        return []
    clean = posixpath.normpath(source)
    if posixpath.basename(clean) in ENGINE_SOCKETS:
        return [finding("engine-socket", where, "the engine's socket %s is mounted at %s" % (
            escape(clean), escape(destination)), source=clean)]
    if clean in SYSTEM_DIRS:
        return [finding("system-dir-bind", where, "the host's %s is mounted at %s%s" % (
            escape(clean), escape(destination), " read-only" if read_only else ""), source=clean)]
    if read_only or any(is_within(clean, root) for root in roots):
        return []
    return [finding("rw-bind-outside-roots", where, "%s is mounted writable at %s, outside every sandbox root"
                    % (escape(clean), escape(destination)), source=clean)]


def args_findings(where, args, roots):
    """Findings for ``docker run`` options as Hermes' docker_extra_args holds them (pure)."""
    parsed = dockerargs.parse_run_args(args)
    out = []
    if parsed["privileged"]:
        out.append(finding("privileged", where, "--privileged"))
    risky = _caps(parsed["cap_add"])
    if risky:
        out.append(finding("cap-add", where, "--cap-add %s" % ", ".join(risky), capabilities=risky))
    out += _security_findings(where, parsed["security_opt"])
    for option, (cis, words) in HOST_NAMESPACES.items():
        if parsed[option] == "host":
            out.append(finding("host-namespace", where, "--%s host: %s" % (option, words), cis=cis))
    for spec in parsed["volumes"]:
        source, destination, read_only = dockerargs.volume_parts(spec)
        out += bind_findings(where, source, destination, read_only, roots)
    for spec in parsed["mounts"]:
        kind, source, destination, read_only = dockerargs.mount_parts(spec)
        if kind == "bind":
            out += bind_findings(where, source, destination, read_only, roots)
    return out


def config_findings(path, settings, roots, landlock):
    """Findings for one Hermes config's sandbox settings (pure). ``landlock``: True, False
    or None (unknown) for the kernel's Landlock."""
    out = args_findings(path, settings.get("extra_args") or (), roots)
    for spec in settings.get("volumes") or ():
        if isinstance(spec, str):
            source, destination, read_only = dockerargs.volume_parts(spec.strip())
            out += bind_findings(path, source, destination, read_only, roots)
    mode = settings.get("secret_isolation")
    if mode == "off":
        out.append(finding("secret-isolation-off", path, "security.terminal_secret_isolation is %s: the agent's "
                           "host-side children can read Hermes' secrets" % settings.get("secret_isolation_raw")))
    elif mode == "auto" and landlock is False:
        out.append(finding("secret-isolation-no-landlock", path, "security.terminal_secret_isolation is auto and "
                           "this kernel has no Landlock: the agent's host-side children run unprotected"))
    return out


def container_name(inspect):
    return (inspect.get("Name") or "").lstrip("/") or (inspect.get("Id") or "")[:12]


def container_findings(inspect, roots):
    """Findings for one agent container's inspect document (pure)."""
    where = "container %s" % escape(container_name(inspect))
    host = inspect.get("HostConfig") or {}
    out = []
    if host.get("Privileged"):
        out.append(finding("privileged", where, "Privileged: true"))
    risky = _caps(host.get("CapAdd") or ())
    if risky:
        out.append(finding("cap-add", where, "CapAdd %s" % ", ".join(risky), capabilities=risky))
    security = [str(o) for o in host.get("SecurityOpt") or ()]
    out += _security_findings(where, security)
    if not host.get("Privileged") and not dockerargs.has_no_new_privileges(security):
        out.append(finding("no-new-privileges-off", where, "no no-new-privileges in SecurityOpt: a setuid binary in "
                           "the container elevates (unless the daemon sets it for every container)"))
    for key, option in (("PidMode", "pid"), ("NetworkMode", "network"), ("UsernsMode", "userns"),
                        ("IpcMode", "ipc"), ("UTSMode", "uts")):
        if host.get(key) == "host":
            cis, words = HOST_NAMESPACES[option]
            out.append(finding("host-namespace", where, "%s host: %s" % (key, words), cis=cis))
    for mount in inspect.get("Mounts") or ():
        if mount.get("Type") == "bind":
            out += bind_findings(where, mount.get("Source") or "", mount.get("Destination") or "",
                                 not mount.get("RW", True), roots)
    return out


def is_agent_container(inspect, roots):
    """An agent's container of the audited homes (pure): one that binds a directory below a
    sandbox root, or a Hermes-labelled one that binds no host directory at all (a sandbox
    without persistence). A Hermes-labelled container whose binds are all elsewhere is another
    Hermes home's (another user's, or a test's): the audit of that home reads it."""
    binds = [posixpath.normpath(str(m.get("Source") or "")) for m in inspect.get("Mounts") or ()
             if m.get("Type") == "bind" and str(m.get("Source") or "").startswith("/")]
    if any(is_within(source, root) for source in binds for root in roots):
        return True
    labels = (inspect.get("Config") or {}).get("Labels") or {}
    return labels.get("hermes-agent") == "1" and not binds


def daemon_findings(info, daemon_profile_has_setid_rules):
    """Findings about a runner host's Docker daemon from its info (pure): its default
    seccomp profile and userns-remap."""
    where = "docker daemon"
    options = [str(o) for o in info.get("SecurityOptions") or ()]
    names = {p.split("=", 1)[1] for o in options for p in o.split(",") if p.startswith("name=")}
    profile = None
    for option in options:
        parts = dict(p.split("=", 1) for p in option.split(",") if "=" in p)
        if parts.get("name") == "seccomp":
            profile = parts.get("profile", "default")
    out = []
    if "seccomp" not in names or profile == "unconfined":
        out.append(finding("daemon-seccomp-off", where, "containers run without seccomp by default (%s)"
                           % (profile or "seccomp not in the daemon's security options")))
    elif not daemon_profile_has_setid_rules:
        out.append(finding("daemon-profile-allows-setid", where, "the daemon's default seccomp profile (%s) lets a "
                           "job make setuid/setgid files in its bind mounts" % profile))
    if "userns" not in names and "rootless" not in names:
        out.append(finding("daemon-no-userns-remap", where, "no userns-remap: a job's root is the host's root in "
                           "every bind mount"))
    return out
