# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The fleet audit on one host: every boundary in one read-only pass.

``audit_host`` runs each check and returns one record (see audit_record.host_record):

- ``privileged_files``: setuid/setgid bits and file capabilities under the Docker
  sandboxes the engine reports in scope (when an engine answers), under the sandbox
  directories of the given Hermes homes and profiles, and under the operator's paths;
- ``home_mode``: TERMINAL_HOME_MODE of each Hermes home and profile against the mode the
  operator asked for (what the terminal_home module would change, in check mode);
- ``leaks``: what agents left outside their sandbox (leaks.audit);
- ``bwrap``: bubblewrap probed as the agent user (bwrap.probe), when one is named;
- ``runtime``: the sandbox's own settings: the Hermes configs' docker arguments, volumes and
  secret isolation, each running agent container's inspect, a runner host's daemon
  (runtime_host.check_runtime, runtime's rules).

Each check says ``findings``, ``clean``, ``error`` (it could not run, or not completely,
and found nothing: ``reason`` says why), ``not_checked`` (selected, but it covered nothing:
no root in scope, no Hermes home found, no agent account or user, no mode to compare
against; ``reason`` names the variable to set) or ``skipped`` (not selected; ``reason``).
A path that does not exist on this host is listed in the check's ``absent``, never an
error that hides the rest; when nothing given exists the check is ``not_checked``, never
clean. Nothing here changes the host.
"""
import os
import stat
import time

from .. import report as envelope
from .. import strip as stripmod
from .._core import defaults, inputs
from .._core.text import escape
from .._privileged import scope as _scopemod
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
    result["complete"] = (status not in (audit_record.ERROR, audit_record.NOT_CHECKED)) if complete is None \
        else bool(complete)
    result.update(details)
    return result


def _verdict(findings, errors, complete=True, reason=None, **details):
    """A check's result by the one verdict (audit_record.verdict): findings, error or clean."""
    status, reason, complete = audit_record.verdict(findings, errors, complete, reason)
    return _result(status, findings, reason, errors, complete=complete, **details)


def _error(op, path, error):
    return envelope.error_entry(path, op, error)


# --- privileged_files ---------------------------------------------------------------------

def scope_request(paths=(), hermes_homes=(), sandbox_dir=None, docker=DEFAULT_DOCKER_MODE, docker_host=None,
                  github_runners=(), gitlab_config=None, providers=(), task_dirs=False):
    """The scope.Request of the audit's (and remediate's) scope options (pure)."""
    return _scopemod.Request(hermes_homes, sandbox_dir, paths, github_runners, gitlab_config, docker=docker,
                             docker_host=docker_host, providers=providers, task_dirs=task_dirs,
                             engine_timeout=DEFAULT_ENGINE_TIMEOUT_S)


def _finding_of(entry):
    return {"path": entry["path"], "mode": entry["mode_before"], "caps": entry["caps_before"],
            "uid": entry["uid"], "gid": entry["gid"],
            "reasons": [a for a in entry["actions"] if a in ("setuid", "setgid", "caps", "device")]}


NOTHING_GIVEN = "no paths, Hermes homes or sandbox directory given"
# what the privileged-files check reads its roots from (audit_record.set_hint names them)
SCOPE_INPUTS = ("hermes_homes", "sandbox_dir", "paths", "github_runners")


def privileged_scope(found):
    """What the privileged-files check walks (and remediate fixes), from a derived scope.Scope
    (pure over it): a dict with ``walk`` (the held roots to walk: scope.Scope.walk_roots),
    ``paths`` (their realpaths), ``absent``, ``errors`` (refused roots, what CI runner providers
    reported, every engine that could not be asked), ``warnings``, ``owned`` (the roots whose
    provider names their owner: a CI runner's work folder) and ``engine_summary`` (as the check
    reports it: answered, reason, targets, and ``engines``, each engine's {name, url, kind, error}).
    """
    request = found.request
    errors = [_error("root", item["path"], item["reason"]) for item in found.refused]
    errors += [_error(e.get("op", "root"), e.get("path", ""), e.get("error", "")) for e in found.errors]
    warnings = []
    healthy = [a for a in found.engines if not a.get("error")]
    for answer in found.engine_errors():
        errors.append(_error("engine", answer.get("url") or answer["name"], "engine %s: %s"
                             % (answer["name"], answer["error"])))
    if request.docker == "always" and not found.engines:
        errors.append(_error("engine", request.docker_host or "docker", found.engine_note or "no engine answered"))
    elif request.docker == "auto" and not found.engines:
        warnings.append("Docker sandboxes were not asked for: %s" % (found.engine_note or "no engine"))
    for answer in healthy:
        if answer.get("facts") and answer["facts"].get("rootless"):
            warnings.append(answer["facts"]["reason"])
    walk = found.walk_roots()
    note = "not asked (docker: never)" if request.docker == "never" else found.engine_note
    summary = {"answered": bool(healthy), "reason": note if not healthy else None,
               "targets": [t.realpath for t in found.targets], "engines": found.engine_summary()}
    return {"walk": walk, "paths": [root.realpath for root in walk], "absent": list(found.absent), "errors": errors,
            "warnings": warnings, "owned": [root for root in found.owned if root.is_dir],
            "engine_summary": summary,
            "homes": [*request.hermes_homes, *([request.sandbox_dir] if request.sandbox_dir else [])]}


def check_privileged_files(paths=(), hermes_homes=(), sandbox_dir=None, docker=DEFAULT_DOCKER_MODE,
                           docker_host=None, budget=stripmod.DEFAULT_BUDGET_S, max_listed=MAX_LISTED_FINDINGS,
                           providers=(), scope=None):
    """setuid/setgid bits, file capabilities and device nodes under every root in scope (walks
    from the scope's held descriptors, read-only); and, in each root whose provider names its
    owner (a CI runner's work folder, runners.runner_providers), the files and directories not
    owned by that owner (uid or gid): what makes the runner's next ``actions/checkout`` fail.
    Those are findings with reasons ``["owner"]`` and ``owner`` (the runner's [uid, gid]),
    counted in ``counts.not_runner_owned``; ``runner_roots`` lists those roots ({path, owner,
    source}: what remediate gives back to each owner).

    ``scope``: the scope.Scope of this audit (derived once by audit_host); without one, one is
    derived here from the other keywords (and closed again).
    """
    own = scope is None
    if own:
        request = scope_request(paths, hermes_homes, sandbox_dir, docker, docker_host, providers=providers)
        if request.empty:
            return _not_given()
        scope = _scopemod.derive(request)
    try:
        return _check_privileged(privileged_scope(scope), budget, max_listed)
    finally:
        if own:
            scope.close()


def _not_given():
    return _result(audit_record.NOT_CHECKED, reason="%s: %s" % (NOTHING_GIVEN, audit_record.set_hint(
        *SCOPE_INPUTS)), absent=[])


def _check_privileged(view, budget, max_listed):
    walk, absent, errors, warnings = view["walk"], view["absent"], view["errors"], view["warnings"]
    engine_summary, owned = view["engine_summary"], view["owned"]
    if not walk:
        if errors:
            return _verdict([], errors, absent=absent, engine=engine_summary, warnings=warnings)
        counts = {"setid": 0, "caps": 0, "device": 0, "files": 0, "dirs": 0, "unlisted": 0, "not_runner_owned": 0}
        homes = _existing_dirs(view["homes"])
        if homes:  # a Hermes home found without a sandbox in it yet: looked, nothing there
            return _result(audit_record.CLEAN, reason="no sandbox directory under %s yet" % ", ".join(
                escape(h) for h in homes), absent=absent, engine=engine_summary, warnings=warnings, counts=counts)
        return _result(audit_record.NOT_CHECKED, reason="none of the paths, Hermes homes or sandbox directory given "
                       "exist on this host (%s): %s" % (", ".join(escape(a) for a in absent) or "no root",
                                                        audit_record.set_hint(*SCOPE_INPUTS)),
                       absent=absent, engine=engine_summary, warnings=warnings, counts=counts)
    report = stripmod.run_opened([root.held for root in walk], actions=("setid", "caps", "device"), dry_run=True,
                                 budget=budget, max_listed=max_listed)
    findings = [_finding_of(e) for e in report["files"]]
    errors += [_error(e.get("op", "walk"), e["path"], e["error"]) for e in report["errors"]]
    reason = None
    complete = report["complete"]
    if not report["complete"]:
        reason = "the walk of %s stopped after %.1fs (budget %.1fs): raise the budget" % (
            ", ".join(escape(w) for w in view["paths"]), report["elapsed"], budget or 0)
        warnings.append(reason)
    counts = {k: report["counts"][k] for k in ("setid", "caps", "device", "files", "dirs", "unlisted")}
    counts["not_runner_owned"] = 0
    for root in owned:
        complete = _runner_ownership(root, budget, max_listed, findings, errors, warnings, counts) and complete
    runner_roots = [{"path": r.realpath, "owner": list(r.owner), "source": r.source} for r in owned]
    return _verdict(findings, errors, complete, reason, roots=view["paths"], absent=absent,
                    engine=engine_summary, warnings=warnings, counts=counts, runner_roots=runner_roots)


def _existing_dirs(paths):
    """The *paths* that are directories themselves (lstat: a symlink is none), for a reason's words."""
    found = []
    for path in paths:
        try:
            if os.path.isabs(path) and stat.S_ISDIR(os.lstat(path).st_mode):
                found.append(path)
        except OSError:
            continue
    return found


def _runner_ownership(root, budget, max_listed, findings, errors, warnings, counts):
    """Add the files under the held ``root`` not owned by its provider's owner (the runner
    user) to ``findings``/``counts``: a dry run of the ownership return runner-cleanup does
    (strip's chown from "others", never following a link). False when the walk stopped early."""
    owner = tuple(root.owner)
    report = stripmod.run_opened([root.held], actions=("chown",), chown_to=owner, chown_from=CHOWN_FROM_OTHERS,
                                 dry_run=True, budget=budget, max_listed=max_listed)
    for entry in report["files"]:
        if "chown" in entry["actions"] or entry.get("owner_kept"):
            findings.append({"path": entry["path"], "mode": entry["mode_before"], "caps": None, "uid": entry["uid"],
                             "gid": entry["gid"], "owner": list(owner), "reasons": ["owner"],
                             "source": root.source})
    counts["not_runner_owned"] += report["counts"].get("chown", 0)
    counts["unlisted"] += report["counts"].get("unlisted", 0)
    errors += [_error(e.get("op", "walk"), e["path"], e["error"]) for e in report["errors"]]
    if not report["complete"]:
        warnings.append("the ownership walk of %s stopped after %.1fs (budget %.1fs): raise the budget" % (
            escape(root.realpath), report["elapsed"], budget or 0))
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
        return _result(audit_record.NOT_CHECKED, reason="no Hermes home given: %s%s" % (audit_record.set_hint(
            "hermes_homes"), "" if mode else "; and no mode asked for: %s" % audit_record.set_hint("home_mode")))
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
    if not homes and not errors:
        return _result(audit_record.NOT_CHECKED, reason="none of the Hermes homes given exist on this host (%s): %s"
                       % (", ".join(escape(a) for a in absent), audit_record.set_hint("hermes_homes")),
                       roots=list(hermes_homes), homes=homes, absent=absent, wanted=wanted)
    if wanted is None and not errors:
        return _result(audit_record.NOT_CHECKED, reason="no mode asked for to compare against (the modes read are "
                       "in homes): %s to auto, real or profile" % audit_record.set_hint("home_mode"),
                       roots=list(hermes_homes), homes=homes, absent=absent, wanted=None)
    return _verdict(findings, errors, roots=list(hermes_homes), homes=homes, absent=absent, wanted=wanted)


# --- leaks --------------------------------------------------------------------------------

def agent_accounts(hermes_homes=(), sandbox_dir=None, agent_user=None, scope=None):
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
    *scope*: the scope.Scope already derived (its ``accounts``); without one, one is derived.
    """
    if scope is None:
        with _scopemod.derive(_scopemod.Request(hermes_homes, sandbox_dir)) as found:
            accounts = found.accounts
    else:
        accounts = scope.accounts
    sources = {name: list(why) for name, why in accounts.items()}
    if agent_user and str(agent_user) != "root":
        sources.setdefault(str(agent_user), []).append("the agent user")
    names = sorted(n for n in sources if n != "root")
    return names, sources


def leak_scope(users=(), hermes_homes=(), sandbox_dir=None, agent_user=None, where="the leak users",
               homes_word="the Hermes homes, the sandbox directory or the agent user", scope=None):
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
    chosen, sources = agent_accounts(hermes_homes, sandbox_dir, agent_user, scope)
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


LEAK_USERS_WORD = "sandboxguard_leak_users (boundary_audit_leak_users)"
LEAK_HOMES_WORD = "sandboxguard_hermes_homes, sandboxguard_sandbox_dir or sandboxguard_agent_user"
LEAK_USERS_FIX = "name the accounts that run agents in %s, or give %s" % (LEAK_USERS_WORD, LEAK_HOMES_WORD)


def check_leaks(users=(), tmp_patterns=None, min_age=0, tmp_dir=None, spool_dir=None, hermes_homes=(),
                sandbox_dir=None, agent_user=None, scope=None):
    """What agents left outside their sandbox (leaks.audit; reads only).

    *users* names the accounts to audit; by default the accounts that run agents
    (agent_accounts: the Hermes homes' and sandboxes' owners, the agent user; never
    root). With none of those known the check is ``not_checked`` with the reason: every job
    of an audited user's table counts as a leak, so guessing the accounts would report
    (and remediate would quarantine) an operator's own cron jobs.
    """
    from .. import leaks  # noqa: PLC0415
    from .._leaks.cron import SPOOL_DIR  # noqa: PLC0415
    from .._leaks.home import TMP_DIR  # noqa: PLC0415

    chosen, whose, reason = leak_scope(users, hermes_homes, sandbox_dir, agent_user, where=LEAK_USERS_WORD,
                                       homes_word=LEAK_HOMES_WORD, scope=scope)
    if not chosen:
        return _result(audit_record.NOT_CHECKED, users=[], scope={}, reason=reason)
    kwargs = {"users": chosen, "min_age": int(min_age)}
    if tmp_patterns:
        kwargs["tmp_patterns"] = tuple(tmp_patterns)
    if tmp_dir:
        kwargs["tmp_dir"] = tmp_dir
    if spool_dir:
        kwargs["spool_dir"] = spool_dir
    report = leaks.audit(**kwargs)
    # A temp directory or spool that does not exist on this host is absent, not an error.
    missing = {kwargs.get("tmp_dir", TMP_DIR), kwargs.get("spool_dir", SPOOL_DIR)}
    absent = [e["path"] for e in report["errors"] if e["path"] in missing and not os.path.lexists(e["path"])]
    errors = [_error("read", e["path"], e["error"]) for e in report["errors"] if e["path"] not in absent]
    warnings = []
    unknown = sorted(set(chosen) - set(report["users"]))
    if unknown and not report["users"]:
        return _result(audit_record.NOT_CHECKED, users=[], scope=whose, absent=absent, reason=(
            "none of the accounts to audit exists on this host (%s): %s" % (", ".join(unknown), LEAK_USERS_FIX)))
    if unknown:
        warnings.append("no such account on this host (not audited for leaks): %s" % ", ".join(unknown))
    return _verdict(report["findings"], errors, not errors, counts=report["counts"], users=report["users"],
                    absent=absent, scope=whose, warnings=warnings)


# --- bwrap --------------------------------------------------------------------------------

def check_bwrap(agent_user=None, min_version=None, checks=None, timeout=None):
    """bubblewrap probed as the agent user (bwrap.probe); not checked without an agent user."""
    if not agent_user:
        # before the import: without an agent user the probe's code is never compiled on the host
        return _result(audit_record.NOT_CHECKED, reason="no agent user given (the probe never runs as root): %s"
                       % audit_record.set_hint("agent_user"))
    from .. import bwrap  # noqa: PLC0415
    from .._bwrap.diagnosis import DEFAULT_MIN_VERSION  # noqa: PLC0415

    kwargs = {"min_version": min_version or DEFAULT_MIN_VERSION, "checks": list(checks or ()) or None}
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


# --- runtime ------------------------------------------------------------------------------

def _check_runtime(*args):
    """The sandbox's own settings (runtime_host.check_runtime; compiled only when it runs)."""
    from .runtime_host import check_runtime  # noqa: PLC0415

    return check_runtime(*args)


# --- the host record ----------------------------------------------------------------------

SCOPE_KEYS = ("paths", "hermes_homes", "sandbox_dir", "docker", "docker_host", "github_runners", "gitlab_config")
SETTING_DEFAULTS = {
    "budget": stripmod.DEFAULT_BUDGET_S, "max_listed": MAX_LISTED_FINDINGS, "home_mode": None,
    "home_where": defaults.HOME_WHERE, "profiles": True, "create_profile_home": True, "leak_users": (),
    "leak_tmp_patterns": None, "leak_min_age": 0, "leak_tmp_dir": None, "leak_spool_dir": None, "agent_user": None,
    "bwrap_min_version": None, "bwrap_checks": None, "bwrap_timeout": None,
}


class Settings:
    """What the checks (and remediate's fixes) take besides the scope: one value, built once
    from the module's options (audit_module.host_inputs) or keywords (SETTING_DEFAULTS names,
    and ``more``: the caller's own defaults for names it adds, e.g. remediate's owner)."""

    def __init__(self, more=None, **values):
        known = dict(SETTING_DEFAULTS, **(more or {}))
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise TypeError("unknown setting(s): %s" % ", ".join(unknown))
        self.__dict__.update(dict(known, **values))
        self.budget = inputs.budget(self.budget)  # InputError before any check runs

    def __repr__(self):
        return "Settings(%s)" % ", ".join("%s=%r" % item for item in sorted(self.__dict__.items()))


def host_inputs(given, more_settings=None, **request_extra):
    """(scope.Request, Settings) from one dict of the old keyword names (SCOPE_KEYS go to the
    request, the rest to the settings): how audit_host and remediate_host keep their keyword
    form while every layer below takes the two values."""
    scope_given = {key: given[key] for key in SCOPE_KEYS if key in given}
    settings = Settings(more_settings, **{k: v for k, v in given.items() if k not in SCOPE_KEYS})
    return scope_request(**dict(scope_given, **request_extra)), settings


def audit_host(checks=audit_record.CHECKS, request=None, settings=None, skip_reason="not selected", **given):
    """Run the selected *checks* on this host; return the host record (read-only).

    *request*: the scope.Request of the audit (the Hermes homes, sandbox directory, paths,
    CI runners, engines), derived once here into one scope.Scope that privileged_files and
    the leak accounts share; *settings*: a Settings. Or the old keywords (*given*: paths,
    hermes_homes, sandbox_dir, docker, docker_host, github_runners, gitlab_config and the
    SETTING_DEFAULTS names), which build both. A check that raises is an ``error`` with the
    exception text, and the others still run. Checks not in *checks* are ``skipped`` with
    *skip_reason* (the only skipped ones: a selected check that covered nothing is
    ``not_checked``).
    """
    unknown = [c for c in checks if c not in audit_record.CHECKS]
    if unknown:
        raise InputError("unknown check(s) %s: choose from %s" % (", ".join(unknown), ", ".join(audit_record.CHECKS)))
    if request is None or settings is None:
        built_request, built_settings = host_inputs(given)
        request, settings = request or built_request, settings or built_settings
    elif given:
        raise TypeError("give request and settings, or keywords, not both")
    started = time.monotonic()
    found = failed = None
    if not request.empty and ({"privileged_files", "leaks", "runtime"} & set(checks)):
        asks = {"privileged_files", "runtime"} & set(checks)
        try:
            found = _scopemod.derive(request if asks else request.replace(docker="never"))
        except Exception as exc:  # the scope itself could not be decided: its checks say so, the others run
            failed = exc
    try:
        results = _run_checks(checks, request, settings, found, skip_reason, failed)
    finally:
        if found is not None:
            found.close()
    return audit_record.host_record(results, elapsed=round(time.monotonic() - started, 3))


def _run_checks(checks, request, settings, found, skip_reason, failed=None):
    s = settings
    if failed is not None:
        def broken():
            raise failed
    runners = {
        "privileged_files": lambda: (_check_privileged(privileged_scope(found), s.budget, s.max_listed)
                                     if found is not None else _not_given()),
        "home_mode": lambda: check_home_mode(request.hermes_homes, s.home_mode, s.home_where, s.profiles,
                                             s.create_profile_home),
        "leaks": lambda: check_leaks(s.leak_users, s.leak_tmp_patterns, s.leak_min_age, s.leak_tmp_dir,
                                     s.leak_spool_dir, request.hermes_homes, request.sandbox_dir, s.agent_user,
                                     scope=found),
        "bwrap": lambda: check_bwrap(s.agent_user, s.bwrap_min_version, s.bwrap_checks or (), s.bwrap_timeout),
        "runtime": lambda: (_check_runtime(found, bool(request.github_runners or request.gitlab_config))
                            if found is not None else _result(audit_record.NOT_CHECKED, reason="nothing to read: %s"
                                                              % audit_record.set_hint(*SCOPE_INPUTS))),
    }
    if failed is not None:
        runners["privileged_files"] = runners["leaks"] = runners["runtime"] = broken
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
    return results
