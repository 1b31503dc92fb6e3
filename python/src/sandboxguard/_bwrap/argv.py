# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The argv of the real sandbox, the way the terminal backend starts a command, and the
resource limits set around it. Pure apart from ``inherited_hard_limits`` (getrlimit).
"""
from ..errors import InputError

# Seed 004's profile table and Hermes' tests: network is the default.
DEFAULT_PROFILE = "network"
PROFILES = ("restricted", "workspace", "network")
# Seed 004's defaults for the per-command resource limits (0 disables a limit).
DEFAULT_LIMITS = {"memory_mb": 256, "cpu_seconds": 30, "max_procs": 256}

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
