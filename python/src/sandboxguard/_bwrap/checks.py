# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The isolation checks the probe runs inside the sandbox, as one table: each check's name maps
to (plan, script). ``plan(ctx)`` decides what the check tests on this host (a dict of inputs) or
why it cannot run (a string); ``script(name, spec)`` is the /bin/sh that tests it and prints one
``SG|name|status|detail`` line per path. ``plan_isolation_checks`` (reads under ``root``),
``isolation_script`` and ``parse_isolation_output`` (pure) walk the table in its order.
"""
import os
import shlex

from ..errors import InputError
from .argv import SANDBOX_BASE_PROCESSES, _clamp, _limit_int

# /proc/self/limits label and the field (space-separated, after squeezing) of the soft limit.
_LIMIT_LINES = {"rlimit_as": ("Max address space", 4), "rlimit_cpu": ("Max cpu time", 4),
                "rlimit_nproc": ("Max processes", 3)}
_LIMIT_KEYS = {"rlimit_as": "memory_mb", "rlimit_cpu": "cpu_seconds", "rlimit_nproc": "max_procs"}


def _sh_check(name, condition, ok_detail, fail_detail):
    return ("if %s; then echo %s; else echo %s; fi\n"
            % (condition, shlex.quote("SG|%s|pass|%s" % (name, ok_detail)),
               shlex.quote("SG|%s|fail|%s" % (name, fail_detail))))


def _empty_dir_check(name, path, ok_detail, fail_detail):
    quoted = shlex.quote(path)
    return _sh_check(name, "[ -d %s ] && [ -z \"$(ls -A %s)\" ]" % (quoted, quoted), ok_detail, fail_detail)


# --- plans: ctx is a dict of plan_isolation_checks' keywords --------------------------------

def _plan_root_readonly(ctx):
    # Paths the agent can write on the host, so read-only inside is the sandbox's doing.
    dirs = ["/var/tmp"]
    if ctx["home"] and os.path.isdir(ctx["home"]):
        dirs.append(ctx["home"])
    return {"probe_dirs": dirs, "nonce": ctx["nonce"]}


def _plan_network(ctx):
    return "the network profile shares the host network" if ctx["profile"] == "network" else {}


def _plan_credentials(ctx):
    if not ctx["hidden_dirs"] and not ctx["hidden_files"]:
        return "no credential store exists in %s" % (ctx["home"] or "the home directory")
    return {"dirs": list(ctx["hidden_dirs"]), "files": list(ctx["hidden_files"])}


def _plan_run_user(ctx):
    path = "/run/user/%d" % ctx["uid"]
    if os.path.isdir(os.path.join(ctx["root"], path.lstrip("/"))):
        return {"path": path}
    return "%s does not exist on the host" % path


def _plan_docker_socket(ctx):
    if ctx["masked_sockets"]:
        return {"paths": list(ctx["masked_sockets"])}
    return "no docker socket exists on the host"


def _plan_limit(name):
    """The value /proc/self/limits must show inside the sandbox for one limit check, or why it cannot run."""
    def plan(ctx):
        key = _LIMIT_KEYS[name]
        value = _limit_int(ctx["limits"], key)
        hard = ctx["hard_limits"] or {}
        if not ctx["prlimit_path"]:
            return "prlimit was not found, so no limit is applied"
        if value <= 0:
            return "%s is 0 (limit disabled)" % key
        if name == "rlimit_as":
            return {"value": _clamp(value * 1024 * 1024, hard.get("as"))}
        if name == "rlimit_cpu":
            return {"value": _clamp(value, hard.get("cpu"))}
        if not ctx["nproc_scoped"]:
            return ("this kernel does not count the process limit per sandbox (Linux 5.14 or later does), so "
                    "max_procs is not applied; memory and CPU limits still are")
        return {"value": _clamp(value + SANDBOX_BASE_PROCESSES, hard.get("nproc"))}
    return plan


# --- scripts --------------------------------------------------------------------------------

def _sh_user_namespace(name, _spec):
    return [_sh_check(name, "[ \"$(tr -s ' ' </proc/self/uid_map | sed 's/^ //')\" != '0 0 4294967295' ]",
                      "running in a user namespace", "uid_map is the initial namespace's")]


def _sh_root_readonly(name, spec):
    lines = []
    for path in spec["probe_dirs"]:
        target = shlex.quote(os.path.join(path, ".sandboxguard-probe-%d" % spec["nonce"]))
        lines.append(_sh_check(name, "! ( : > %s )" % target, "%s (writable on the host) is read-only" % path,
                               "%s is writable inside the sandbox" % path))
        lines.append("rm -f %s\n" % target)
    return lines


def _sh_tmp_fresh(name, spec):
    marker = shlex.quote(spec["marker"])
    return [_sh_check(name, "[ ! -e %s ] && [ -z \"$(ls -A /tmp)\" ] && : > /tmp/.sg-fresh" % marker,
                      "/tmp is an empty writable tmpfs", "/tmp shows host files or is not writable")]


def _sh_pid_private(name, spec):
    return [_sh_check(name, "[ ! -e /proc/%d ] && [ \"$(ls /proc | grep -c '^[0-9][0-9]*$')\" -le 6 ]"
                      % spec["host_pid"], "host processes are invisible", "host processes are visible in /proc")]


def _sh_network(name, _spec):
    return [_sh_check(name, "[ \"$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')\" = 'lo ' ]",
                      "only lo exists", "interfaces besides lo are visible")]


def _sh_credentials(name, spec):
    lines = [_empty_dir_check(name, path, "%s is empty" % path, "%s shows host content" % path)
             for path in spec["dirs"]]
    lines += [_sh_check(name, "[ ! -s %s ]" % shlex.quote(path), "%s is empty" % path, "%s shows host content" % path)
              for path in spec["files"]]
    return lines


def _sh_run_user(name, spec):
    return [_empty_dir_check(name, spec["path"], "%s is an empty tmpfs" % spec["path"],
                             "%s shows host sockets" % spec["path"])]


def _sh_docker_socket(name, spec):
    lines = []
    for path in spec["paths"]:
        quoted = shlex.quote(path)
        lines.append(_sh_check(name, "[ -f %s ] && [ ! -S %s ] && [ ! -s %s ]" % (quoted, quoted, quoted),
                               "%s is an empty file" % path, "%s is still a socket" % path))
    return lines


def _sh_limit(name, spec):
    label, field = _LIMIT_LINES[name]
    return [_sh_check(name, "[ \"$(grep '^%s' /proc/self/limits | tr -s ' ' | cut -d' ' -f%d)\" = '%d' ]"
                      % (label, field, spec["value"]),
                      "%s is %d" % (label.lower(), spec["value"]), "%s is not %d" % (label.lower(), spec["value"]))]


# Every check the probe can run inside the sandbox, in report order: {name: (plan, script)}.
CHECKS = {
    "user_namespace": (lambda _ctx: {}, _sh_user_namespace),
    "root_readonly": (_plan_root_readonly, _sh_root_readonly),
    "tmp_fresh": (lambda ctx: {"marker": ctx["marker"]}, _sh_tmp_fresh),
    "pid_private": (lambda ctx: {"host_pid": ctx["host_pid"]}, _sh_pid_private),
    "network_loopback_only": (_plan_network, _sh_network),
    "credentials_hidden": (_plan_credentials, _sh_credentials),
    "run_user_empty": (_plan_run_user, _sh_run_user),
    "docker_socket_masked": (_plan_docker_socket, _sh_docker_socket),
    "rlimit_as": (_plan_limit("rlimit_as"), _sh_limit),
    "rlimit_cpu": (_plan_limit("rlimit_cpu"), _sh_limit),
    "rlimit_nproc": (_plan_limit("rlimit_nproc"), _sh_limit),
}
ISOLATION_CHECKS = tuple(CHECKS)


def unknown_checks_error(checks):
    """InputError naming the checks that are not in the table, or None."""
    unknown = [c for c in (checks or ()) if c not in CHECKS]
    if unknown:
        return InputError("unknown isolation check(s) %s; known: %s" % (", ".join(unknown), ", ".join(CHECKS)))
    return None


def isolation_script(plan):
    """The /bin/sh script run inside the sandbox; one ``SG|name|status|detail`` line per check. Pure.

    ``plan`` maps a check name to its inputs (or to a skip reason string); see
    ``plan_isolation_checks``. Only POSIX sh and coreutils are used.
    """
    lines = ["exec 2>/dev/null\n"]
    for name, (_plan, script) in CHECKS.items():
        spec = plan.get(name)
        if spec is None:
            continue
        if isinstance(spec, str):
            lines.append("echo %s\n" % shlex.quote("SG|%s|skipped|%s" % (name, spec)))
        else:
            lines.extend(script(name, spec))
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
    error = unknown_checks_error(wanted)
    if error:
        raise error
    ctx = {"home": home, "uid": uid, "profile": profile, "limits": limits, "prlimit_path": prlimit_path,
           "host_pid": host_pid, "marker": marker, "nonce": nonce, "root": root, "hidden_dirs": hidden_dirs,
           "hidden_files": hidden_files, "masked_sockets": masked_sockets, "hard_limits": hard_limits,
           "nproc_scoped": nproc_scoped}
    return {name: CHECKS[name][0](ctx) for name in wanted}
