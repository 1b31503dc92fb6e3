# GENERATED from python/src/sandboxguard/_fleet/audit.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The fleet audit on one host: all four boundaries in one read-only pass.

``audit_host`` runs each check and returns one record (see audit_record.host_record):

- ``privileged_files``: setuid/setgid bits and file capabilities under the Docker
  sandboxes the engine reports in scope (when an engine answers), under the sandbox
  directories of the given Hermes homes and profiles, and under the operator's paths;
- ``home_mode``: TERMINAL_HOME_MODE of each Hermes home and profile against the mode the
  operator asked for (what the terminal_home module would change, in check mode);
- ``leaks``: what agents left outside their sandbox (leaks.audit);
- ``bwrap``: bubblewrap probed as the agent user (bwrap.probe), when one is named.

Each check says ``findings``, ``clean``, ``error`` (it could not run, or not completely,
and found nothing: ``reason`` says why) or ``skipped`` (not asked for; ``reason``). A
path that does not exist on this host is listed in the check's ``absent``, never an
error that hides the rest. Nothing here changes the host.
"""
import glob
import os
import time

from .. import report as envelope
from .. import strip as stripmod
from .._core import defaults
from .._core.pathnames import is_within
from .._core.text import escape
from .._privileged import scope
from .._privileged.runners import runner_providers
from .._walk.fileops import CHOWN_FROM_OTHERS
from ..errors import InputError
from . import audit_record

DOCKER_MODES = ("auto", "always", "never")
DEFAULT_DOCKER_MODE = "auto"
DEFAULT_ENGINE_TIMEOUT_S = 10
DEFAULT_ENGINE_SOCKET = defaults.DOCKER_SOCKET
PODMAN_ENGINE_SOCKET = defaults.PODMAN_SOCKET
MAX_LISTED_FINDINGS = 200


def _result(status, findings=(), reason=None, errors=(), roots=(), complete=None, **details):
    """A check's result: the report envelope (report.new_report) plus status, findings, reason."""
    result = envelope.new_report(list(roots), status=status, findings=list(findings), reason=reason)
    for error in errors:
        envelope.add_error(result, error["path"], error["op"], error["error"])
    for line in details.pop("warnings", ()):
        envelope.add_warning(result, line)
    result["counts"].update(details.pop("counts", {}))
    result["complete"] = (status != audit_record.ERROR) if complete is None else bool(complete)
    result.update(details)
    return result


def _verdict(findings, errors, complete=True, reason=None, **details):
    """findings if anything was found; error if something could not be looked at; else clean."""
    if findings:
        status = audit_record.FINDINGS
    elif errors or not complete:
        status = audit_record.ERROR
        if reason is None:
            first = errors[0] if errors else None
            reason = ("%s: %s" % (escape(first["path"] or ""), first["error"]) if first
                      else "the check did not complete")
            if len(errors) > 1:
                reason += " (and %d more error(s))" % (len(errors) - 1)
    else:
        status = audit_record.CLEAN
    return _result(status, findings, reason, errors, complete=complete and not errors, **details)


def _error(op, path, error):
    return envelope.error_entry(path, op, error)


# --- privileged_files ---------------------------------------------------------------------

def engine_targets(docker=DEFAULT_DOCKER_MODE, docker_host=None, hermes_homes=(), sandbox_dir=None, extra_roots=(),
                   timeout=DEFAULT_ENGINE_TIMEOUT_S):
    """Ask the engines which bind mounts are in scope (touches the engines, read-only).

    Returns dict: answered (bool: at least one engine answered), reason (why not, or the
    engines that failed, or None), targets (realpaths, from every engine that answered),
    error (True when an engine socket present could not be asked, or *docker* is ``always``
    and none is there: an engine the audit could not ask is an error of the host, never
    clean), engines ([{name, url, kind, error}] of every engine considered: ``auto`` asks
    each socket present on its own); when one answered, also engine (the facts) and
    warnings (engines that did not answer, rootless ones).
    """
    if docker == "never":
        return {"answered": False, "reason": "not asked (docker: never)", "targets": [], "error": False,
                "engines": []}
    engine_present = any((docker_host, os.environ.get("DOCKER_HOST"), os.path.exists(DEFAULT_ENGINE_SOCKET),
                          os.path.exists(PODMAN_ENGINE_SOCKET), glob.glob(defaults.ROOTLESS_PODMAN_SOCKETS)))
    if not engine_present:
        # no engine to ask: answer before compiling the engine client on the host
        return {"answered": False, "reason": "no container engine: %s and %s do not exist and DOCKER_HOST is unset"
                % (DEFAULT_ENGINE_SOCKET, PODMAN_ENGINE_SOCKET), "targets": [], "error": docker == "always",
                "engines": []}
    from .. import docker_engine  # noqa: PLC0415 - the engine is optional

    try:
        # auto: every engine present (Docker's and Podman's sockets), each asked on its own
        client = docker_engine.engines_present(docker_host or None, timeout=timeout)
    except docker_engine.EngineError as exc:
        return {"answered": False, "reason": str(exc), "targets": [], "error": docker == "always", "engines": []}
    if not len(client):
        # sockets are there and none answered: an engine the audit could not ask is an error, never clean
        rows = client.report()
        return {"answered": False, "reason": "no engine answered: %s" % _failed_engines(rows), "targets": [],
                "error": True, "engines": rows, "warnings": list(client.warnings)}
    from .. import sweep  # noqa: PLC0415 - compiled on the host only when an engine answers

    try:
        info = sweep.mounts_info(client, list(hermes_homes), sandbox_dir, list(extra_roots))
    except docker_engine.EngineError as exc:  # every engine failed after it answered
        return {"answered": False, "reason": "the engines answered with errors: %s" % exc, "targets": [],
                "error": True, "engines": client.report(), "warnings": list(client.warnings)}
    finally:
        client.close()
    failed = _failed_engines(info["engines"])
    return {"answered": True, "reason": failed or None, "targets": [t["realpath"] for t in info["targets"]],
            "error": bool(failed), "engine": info["engine"], "engines": info["engines"],
            "warnings": list(info["warnings"])}


def _failed_engines(rows):
    """One line naming each engine of ``rows`` ({name, url, kind, error}) that failed, and why."""
    return "; ".join("engine %s (%s): %s" % (r["name"], r["url"], r["error"]) for r in rows if r["error"])


def _candidate_roots(paths, hermes_homes, sandbox_dir, providers=()):
    """(candidates, errors, owned): [(path, source)] of scope.derive's roots (the
    Hermes-derived ones, the providers' (CI runners), then the operator's paths), a root
    error for each root it refused, and the roots whose provider names their owner (a
    runner's work folder): [root dict of scope.derive]."""
    found = scope.derive(hermes_homes, sandbox_dir or None, paths, providers)
    errors = [_error("root", item["path"], item["reason"]) for item in found["refused"]]
    errors += [_error(e.get("op", "root"), e.get("path", ""), e.get("error", "")) for e in found["errors"]]
    owned = [root for root in found["roots"] if root.get("owner")]
    return [(root["path"], root["source"]) for root in found["roots"]], errors, owned


def walk_roots(candidates, errors=None):
    """Split candidate roots into (walk, absent, errors): existing roots to walk (nested
    ones dropped, their parent covers them), missing ones, and refused ones (added to
    ``errors`` when given)."""
    from ..roots import RootRefused, check_root  # noqa: PLC0415

    walk, absent, errors = [], [], [] if errors is None else errors
    for path, source in candidates:
        if not os.path.isabs(path):
            errors.append(_error("root", path, "not an absolute path (%s)" % source))
            continue
        try:
            os.lstat(path)
        except FileNotFoundError:
            absent.append(path)
            continue
        except OSError as exc:
            errors.append(_error("root", path, exc.strerror or str(exc)))
            continue
        try:
            real = check_root(path, allow_file=True)
        except RootRefused as exc:
            errors.append(_error("root", path, exc.reason))
            continue
        if real not in walk:
            walk.append(real)
    walk.sort(key=lambda p: (p.count("/"), p))
    kept = []
    for path in walk:
        if not any(is_within(path, parent) for parent in kept):
            kept.append(path)
    return kept, absent, errors


def _finding_of(entry):
    return {"path": entry["path"], "mode": entry["mode_before"], "caps": entry["caps_before"],
            "uid": entry["uid"], "gid": entry["gid"],
            "reasons": [a for a in entry["actions"] if a in ("setuid", "setgid", "caps")]}


NOTHING_GIVEN = "no paths, Hermes homes or sandbox directory given"


def privileged_scope(paths=(), hermes_homes=(), sandbox_dir=None, docker=DEFAULT_DOCKER_MODE, docker_host=None,
                     engine=None, providers=()):
    """The roots the privileged-files check walks (and remediate fixes), as the audit decides them.

    Returns None when no paths, Hermes homes or sandbox directory are given (the engine's
    mounts are in scope only below roots derived from these: nothing to look under), else a
    dict: walk (existing roots, realpaths, nested ones dropped), absent, errors (refused
    roots, an engine that had to answer and did not), warnings, engine (the engine_targets()
    result; *engine* is one to use instead of asking), engine_summary (as the check reports it)
    and owned (the roots whose provider names their owner: a CI runner's work folder, scope.derive's
    root dicts). *providers*: more scope providers (runners.runner_providers).
    Touches the system (lstat, opens, asks the engine) but changes nothing.
    """
    if docker not in DOCKER_MODES:
        raise InputError("docker must be one of %s, not %r" % (", ".join(DOCKER_MODES), docker))
    if not paths and not hermes_homes and not sandbox_dir and not providers:
        return None
    engine = engine if engine is not None else engine_targets(docker, docker_host, hermes_homes, sandbox_dir, paths)
    candidates, refused, owned = _candidate_roots(paths, hermes_homes, sandbox_dir, providers)
    candidates += [(target, "docker") for target in engine["targets"]]
    walk, absent, errors = walk_roots(candidates, refused)
    warnings = list(engine.get("warnings", []))
    failed = [row for row in engine.get("engines", ()) if row.get("error")]
    for row in failed:  # each engine that could not be asked is an error of the host, the others' targets stand
        errors.append(_error("engine", row["url"] or row["name"], "engine %s: %s" % (row["name"], row["error"])))
    if engine["error"] and not failed:
        errors.append(_error("engine", docker_host or "docker", engine["reason"]))
    elif not engine["answered"] and docker != "never":
        warnings.append("Docker sandboxes were not asked for: %s" % engine["reason"])
    return {"walk": walk, "absent": absent, "errors": errors, "warnings": warnings, "engine": engine, "owned": owned,
            "engine_summary": {"answered": engine["answered"], "reason": engine["reason"],
                               "targets": engine["targets"], "engines": engine.get("engines", [])}}


def check_privileged_files(paths=(), hermes_homes=(), sandbox_dir=None, docker=DEFAULT_DOCKER_MODE,
                           docker_host=None, budget=stripmod.DEFAULT_BUDGET_S, max_listed=MAX_LISTED_FINDINGS,
                           engine=None, providers=()):
    """setuid/setgid and file capabilities under every root in scope (walks, read-only);
    and, in each root whose provider names its owner (a CI runner's work folder,
    runners.runner_providers), the files and directories not owned by that owner (uid or
    gid): what makes the runner's next ``actions/checkout`` fail. Those are findings with
    reasons ``["owner"]`` and ``owner`` (the runner's [uid, gid]), counted in
    ``counts.not_runner_owned``; ``runner_roots`` lists those roots ({path, owner, source}:
    what remediate gives back to each owner).

    *engine*: an engine_targets() result to use instead of asking the engine.
    *providers*: more scope providers (runners.runner_providers).
    """
    scope = privileged_scope(paths, hermes_homes, sandbox_dir, docker, docker_host, engine, providers)
    if scope is None:
        return _result(audit_record.SKIPPED, reason=NOTHING_GIVEN, absent=[])
    walk, absent, errors, warnings = scope["walk"], scope["absent"], scope["errors"], scope["warnings"]
    engine_summary, owned = scope["engine_summary"], scope["owned"]
    if not walk:
        if errors:
            return _verdict([], errors, absent=absent, engine=engine_summary, warnings=warnings)
        reason = "none of the paths exist on this host" if absent else "nothing to look under"
        return _result(audit_record.CLEAN, reason=reason, absent=absent, engine=engine_summary,
                       warnings=warnings, counts={"setid": 0, "caps": 0, "files": 0, "dirs": 0, "unlisted": 0,
                                                  "not_runner_owned": 0})
    report = stripmod.run(walk, actions=("setid", "caps"), dry_run=True, budget=budget, max_listed=max_listed)
    findings = [_finding_of(e) for e in report["files"]]
    errors += [_error(e.get("op", "walk"), e["path"], e["error"]) for e in report["errors"]]
    reason = None
    complete = report["complete"]
    if not report["complete"]:
        reason = "the walk of %s stopped after %.1fs (budget %.1fs): raise the budget" % (
            ", ".join(escape(w) for w in walk), report["elapsed"], budget or 0)
        warnings.append(reason)
    counts = {k: report["counts"][k] for k in ("setid", "caps", "files", "dirs", "unlisted")}
    counts["not_runner_owned"] = 0
    for root in owned:
        complete = _runner_ownership(root, budget, max_listed, findings, errors, warnings, counts) and complete
    runner_roots = [{"path": r["realpath"], "owner": list(r["owner"]), "source": r["source"]} for r in owned]
    return _verdict(findings, errors, complete, reason, roots=walk, absent=absent,
                    engine=engine_summary, warnings=warnings, counts=counts, runner_roots=runner_roots)


def _runner_ownership(root, budget, max_listed, findings, errors, warnings, counts):
    """Add the files under ``root`` not owned by its provider's owner (the runner user) to
    ``findings``/``counts``: a dry run of the ownership return runner-cleanup does (strip's
    chown from "others", never following a link). False when the walk stopped early."""
    if not os.path.isdir(root["realpath"]):
        return True
    owner = tuple(root["owner"])
    report = stripmod.run([root["realpath"]], actions=("chown",), chown_to=owner, chown_from=CHOWN_FROM_OTHERS,
                          dry_run=True, budget=budget, max_listed=max_listed)
    for entry in report["files"]:
        if "chown" in entry["actions"]:
            findings.append({"path": entry["path"], "mode": entry["mode_before"], "caps": None, "uid": entry["uid"],
                             "gid": entry["gid"], "owner": list(owner), "reasons": ["owner"],
                             "source": root["source"]})
    counts["not_runner_owned"] += report["counts"].get("chown", 0)
    counts["unlisted"] += report["counts"].get("unlisted", 0)
    errors += [_error(e.get("op", "walk"), e["path"], e["error"]) for e in report["errors"]]
    if not report["complete"]:
        warnings.append("the ownership walk of %s stopped after %.1fs (budget %.1fs): raise the budget" % (
            escape(root["realpath"]), report["elapsed"], budget or 0))
    return report["complete"]


# --- home_mode ----------------------------------------------------------------------------

def check_home_mode(hermes_homes=(), mode=None, where=defaults.HOME_WHERE, include_profiles=True,
                    create_profile_home=True):
    """TERMINAL_HOME_MODE per Hermes home and profile against *mode* (reads only)."""
    # the two pieces of home_mode it uses, not home_mode: no eval tools in audit_info's payload
    from .._terminal.configure import configure_terminal_home  # noqa: PLC0415
    from .._terminal.modes import DEFAULT_MODE, HomeModeError, normalize_mode  # noqa: PLC0415
    from ..yamlconf import YamlEditError  # noqa: PLC0415

    if not hermes_homes:
        return _result(audit_record.SKIPPED, reason="no Hermes home given")
    wanted = normalize_mode(mode) if mode else None
    findings, errors, absent, homes = [], [], [], []
    for home in hermes_homes:
        if not os.path.isdir(home):
            if os.path.lexists(home):
                errors.append(_error("hermes_home", home, "not a directory"))
            else:
                absent.append(home)
            continue
        try:
            report = configure_terminal_home(home, wanted or DEFAULT_MODE, where, include_profiles,
                                             create_profile_home and wanted is not None, dry_run=True)
        except (HomeModeError, YamlEditError, OSError, UnicodeDecodeError) as exc:
            errors.append(_error("home_mode", home, str(exc)))
            continue
        errors.extend(_error("home_mode", error["path"], error["error"]) for error in report["errors"])
        for entry in report["homes"]:
            if entry.get("error"):
                continue  # refused (a FIFO config, a symlinked profile): an error above, not a finding
            current = entry["previous"] if "config" in report["where"] else entry["env_previous"]
            homes.append({"hermes_home": entry["hermes_home"], "mode": current, "env_mode": entry["env_previous"]})
            if wanted is None:
                continue
            what = [name for key, name in (("config_changed", entry["config_path"]), ("env_changed", entry["env_path"]))
                    if entry[key]]
            if entry["profile_home_changed"]:
                what.append(entry["profile_home"])
            if what:
                reasons = []
                if entry["config_changed"] or entry["env_changed"]:
                    reasons.append("TERMINAL_HOME_MODE is %s, asked for %s" % (current or "unset (auto)", wanted))
                if entry["profile_home_changed"]:
                    reasons.append("profile home %s is missing or writable by group/other"
                                   % escape(entry["profile_home"]))
                findings.append({"path": entry["hermes_home"], "mode": current, "wanted": wanted,
                                 "files": what, "reason": "; ".join(reasons)})
    if wanted is None and not errors:
        return _result(audit_record.SKIPPED, reason="no mode asked for: set the mode to compare against",
                       roots=list(hermes_homes), homes=homes, absent=absent, wanted=None)
    return _verdict(findings, errors, roots=list(hermes_homes), homes=homes, absent=absent, wanted=wanted)


# --- leaks --------------------------------------------------------------------------------

def agent_accounts(hermes_homes=(), sandbox_dir=None, agent_user=None):
    """The accounts that run agents on this host, for the leak check's default scope.

    scope.derive's ``accounts``: the owners of the Hermes homes and of their profiles, of
    TERMINAL_SANDBOX_DIR and of the ``<sandbox>/docker`` directories Hermes creates (never
    of the task directories below them: a root container can chown its own bind mount),
    each from the fstat of a descriptor of the walk that proves that root (no symlink
    followed anywhere: a symlinked ``profiles`` never brings the users under its target into
    scope); and the agent user. Root is never one of them (an operator's or root's own cron
    jobs are not an agent's leaks): name it in the leak users to audit it. Returns (names,
    sources): sorted names, and {name: [why it is in scope]}; *sources* also lists root
    under ``"root"`` when a path owned by root was passed over, so the check can say so.
    """
    sources = {name: list(why) for name, why in scope.derive(hermes_homes, sandbox_dir)["accounts"].items()}
    if agent_user and str(agent_user) != "root":
        sources.setdefault(str(agent_user), []).append("the agent user")
    names = sorted(n for n in sources if n != "root")
    return names, sources


def leak_scope(users=(), hermes_homes=(), sandbox_dir=None, agent_user=None, where="the leak users",
               homes_word="the Hermes homes, the sandbox directory or the agent user"):
    """Whose leaks to look at: (names, scope, reason).

    *users* named: exactly those (root only when named). Otherwise the accounts that run
    agents (agent_accounts); *scope* is {name: [why]}. With none known, names is [] and
    *reason* says so with the fix (every job of an audited table is a leak, so guessing the
    accounts would report, and remediation would quarantine, an operator's own cron jobs).
    *where* and *homes_word* name the caller's options in that reason.
    """
    if users:
        chosen = list(dict.fromkeys(users))
        return chosen, {name: ["named in %s" % where] for name in chosen}, None
    chosen, sources = agent_accounts(hermes_homes, sandbox_dir, agent_user)
    if chosen:
        return chosen, {name: sources[name] for name in chosen}, None
    note = (" (the paths given are owned by root, and root's cron jobs are audited only when named)"
            if "root" in sources else "")
    refused = _refusals([*hermes_homes, *([sandbox_dir] if sandbox_dir else [])])
    if refused:
        note += " (passed over: %s)" % "; ".join(refused)
    return [], {}, "no agent account known: give %s, or name the accounts in %s%s" % (homes_word, where, note)


def _refusals(paths):
    """Why each of *paths* that exists was passed over as safefs refuses it (with the real path
    it leads to, for one through a symlink another user could have planted): words for the
    reason only, nothing is used from what is opened here."""
    from .._core import safefs  # noqa: PLC0415

    lines = []
    for path in paths:
        if not isinstance(path, str) or not os.path.isabs(path) or not os.path.lexists(path):
            continue
        try:
            safefs.open_dir(path).close()
        except safefs.PathRefused as exc:
            lines.append(str(exc))
        except OSError:
            continue
    return lines


def check_leaks(users=(), tmp_patterns=None, min_age=0, tmp_dir=None, spool_dir=None, hermes_homes=(),
                sandbox_dir=None, agent_user=None):
    """What agents left outside their sandbox (leaks.audit; reads only).

    *users* names the accounts to audit; by default the accounts that run agents
    (agent_accounts: the Hermes homes' and sandboxes' owners, the agent user; never
    root). With none of those known the check is ``skipped`` with the reason: every job
    of an audited user's table counts as a leak, so guessing the accounts would report
    (and remediate would quarantine) an operator's own cron jobs.
    """
    from .. import leaks  # noqa: PLC0415

    chosen, whose, reason = leak_scope(users, hermes_homes, sandbox_dir, agent_user)
    if not chosen:
        return _result(audit_record.SKIPPED, users=[], scope={}, reason=reason)
    kwargs = {"users": chosen, "min_age": int(min_age)}
    if tmp_patterns:
        kwargs["tmp_patterns"] = tuple(tmp_patterns)
    if tmp_dir:
        kwargs["tmp_dir"] = tmp_dir
    if spool_dir:
        kwargs["spool_dir"] = spool_dir
    report = leaks.audit(**kwargs)
    # A temp directory or spool that does not exist on this host is absent, not an error.
    missing = {kwargs.get("tmp_dir", leaks.TMP_DIR), kwargs.get("spool_dir", leaks.SPOOL_DIR)}
    absent = [e["path"] for e in report["errors"] if e["path"] in missing and not os.path.lexists(e["path"])]
    errors = [_error("read", e["path"], e["error"]) for e in report["errors"] if e["path"] not in absent]
    warnings = []
    unknown = sorted(set(chosen) - set(report["users"]))
    if unknown:
        warnings.append("no such account on this host (not audited for leaks): %s" % ", ".join(unknown))
    return _verdict(report["findings"], errors, not errors, counts=report["counts"], users=report["users"],
                    absent=absent, scope=whose, warnings=warnings)


# --- bwrap --------------------------------------------------------------------------------

def check_bwrap(agent_user=None, min_version=None, checks=None, timeout=None):
    """bubblewrap probed as the agent user (bwrap.probe); skipped without an agent user."""
    if not agent_user:
        # before the import: without an agent user the probe's code is never compiled on the host
        return _result(audit_record.SKIPPED, reason="no agent user given: the probe never runs as root")
    from .. import bwrap  # noqa: PLC0415

    kwargs = {"min_version": min_version or bwrap.DEFAULT_MIN_VERSION, "checks": list(checks or ()) or None}
    if timeout:
        kwargs["timeout"] = timeout
    report = bwrap.probe(str(agent_user), **kwargs)
    details = {"version": report["bwrap"]["version"], "path": report["bwrap"]["path"],
               "min_version": report["min_version"], "user": agent_user,
               "isolation": [{"name": c["name"], "status": c["status"]} for c in report["isolation"]]}
    if report["ok"]:
        return _result(audit_record.CLEAN, **details)
    if report["errors"]:
        # The probe could not answer (unknown user, root, no process): not a verdict on bwrap.
        return _result(audit_record.ERROR, reason=report["errors"][0]["error"],
                       errors=report["errors"], **details)
    return _result(audit_record.FINDINGS, report["findings"], reason=report["message"],
                   remediation_text=report.get("remediation_text"), **details)


# --- the host record ----------------------------------------------------------------------

def audit_host(checks=audit_record.CHECKS, paths=(), hermes_homes=(), sandbox_dir=None,
               docker=DEFAULT_DOCKER_MODE, docker_host=None, budget=stripmod.DEFAULT_BUDGET_S,
               max_listed=MAX_LISTED_FINDINGS,
               home_mode=None, home_where=defaults.HOME_WHERE, profiles=True, create_profile_home=True,
               leak_users=(), leak_tmp_patterns=None, leak_min_age=0, leak_tmp_dir=None, leak_spool_dir=None,
               agent_user=None, bwrap_min_version=None,
               bwrap_checks=None, bwrap_timeout=None, skip_reason="not selected", github_runners=(),
               gitlab_config=None):
    """Run the selected *checks* on this host; return the host record (read-only).

    A check that raises is an ``error`` with the exception text, and the others still
    run. Checks not in *checks* are ``skipped`` with *skip_reason*. *github_runners* (runner
    directories) and *gitlab_config* (GitLab Runner's config.toml) add the CI runners' roots
    to privileged_files (runners.runner_providers), with the runner-ownership findings.
    """
    unknown = [c for c in checks if c not in audit_record.CHECKS]
    if unknown:
        raise InputError("unknown check(s) %s: choose from %s" % (", ".join(unknown), ", ".join(audit_record.CHECKS)))
    runners = {
        "privileged_files": lambda: check_privileged_files(paths, hermes_homes, sandbox_dir, docker, docker_host,
                                                           budget, max_listed,
                                                           providers=runner_providers(github_runners, gitlab_config)),
        "home_mode": lambda: check_home_mode(hermes_homes, home_mode, home_where, profiles, create_profile_home),
        "leaks": lambda: check_leaks(leak_users, leak_tmp_patterns, leak_min_age, leak_tmp_dir, leak_spool_dir,
                                     hermes_homes, sandbox_dir, agent_user),
        "bwrap": lambda: check_bwrap(agent_user, bwrap_min_version, bwrap_checks or (), bwrap_timeout),
    }
    started = time.monotonic()
    results = {}
    for name in audit_record.CHECKS:
        if name not in checks:
            results[name] = _result(audit_record.SKIPPED, reason=skip_reason)
            continue
        began = time.monotonic()
        try:
            results[name] = runners[name]()
        except Exception as exc:  # one broken check must not hide the others
            results[name] = _result(audit_record.ERROR, reason="%s: %s" % (type(exc).__name__, exc),
                                    errors=[_error(name, "", str(exc))])
        results[name]["elapsed"] = round(time.monotonic() - began, 3)
    return audit_record.host_record(results, elapsed=round(time.monotonic() - started, 3))
