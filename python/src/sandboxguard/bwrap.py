# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Facts about bubblewrap on a host, and a probe of the real sandbox as the agent user.

The bubblewrap terminal backend needs bwrap >= 0.9.0, prlimit from util-linux and
unprivileged user namespaces (or a setuid bwrap). Hosts fail that in known ways; this
module turns each into a ``reason`` and a ``remediation`` the caller can act on.

This module is the public face (``probe``, ``apparmor_profile``) and the probe's
orchestration; the pieces live in the private package ``_bwrap`` (the modules, the CLI and
the tests import them from there, never through this module): ``diagnosis`` (reasons, remediations, versions, stderr
classification; pure), ``host`` (host facts and AppArmor under a ``root`` directory, so tests
can fake an Ubuntu 24.04 host; the AppArmor profile text), ``argv`` (the backend's sandbox
argv and limits; pure), ``checks`` (the isolation checks, one table ``{name: (plan,
script)}``), ``run`` (the probe user, never root, and running the sandbox as them).

The probe never runs as root: root bypasses the user namespace restrictions and
gives a false pass. Called as root, the probe drops to the agent user in the child.
"""
import os
import shutil
import stat
import time

from . import report as envelope
from ._bwrap.argv import (
    DEFAULT_LIMITS,
    DEFAULT_PROFILE,
    PROFILES,
    _limit_int,
    inherited_hard_limits,
    sandbox_argv,
)
from ._bwrap.checks import (
    ISOLATION_CHECKS,
    isolation_script,
    parse_isolation_output,
    plan_isolation_checks,
    unknown_checks_error,
)
from ._bwrap.diagnosis import (
    DEFAULT_MIN_VERSION,
    REASON_MESSAGES,
    REMEDIATIONS,
    _format,
    classify_stderr,
    remediation_text,
    sysctl_fix,
    userns_blocker,
    version_at_least,
    version_string,
)
from ._bwrap.host import (
    SEARCH_PATH,
    apparmor_profile,
    existing_docker_sockets,
    find_bwrap,
    hidden_paths,
    read_bwrap_version,
    read_host_facts,
)
from ._bwrap.run import DEFAULT_TIMEOUT_S, ProbeUserRefused, resolve_probe_user, run_sandbox_probe
from .errors import InputError

__all__ = ["apparmor_profile", "probe"]


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
    error = unknown_checks_error(checks)
    if error:
        raise error
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
