# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The fleet audit as SARIF 2.1.0 (boundary-audit.sarif), for GitHub code scanning and other
SARIF readers.

One run of the tool ``sandboxguard``: one result per finding, its ``ruleId`` one of the
driver's rules (a rule per check and finding kind - ``privileged_files/setuid``,
``leaks/cron_job``, ``bwrap/version-too-old`` ... - with its help text and fix; a kind the
catalogue does not know, or a check added later, gets a rule of its own made from its name),
its level from the rule's severity, one location: the file, as an absolute ``file://`` URI
whose path is the file's exact bytes percent-encoded (RFC 3986: any byte, a newline or one
that is not UTF-8 included, is a valid URI). The host is in the result's properties and
message, and in the ``partialFingerprints`` that tell GitHub two uploads found the same thing.

What could not be looked at is never silent: each unreachable host, check in error or check
not checked (selected, it covered nothing) is a ``toolExecutionNotifications`` entry of level
``error``, each host warning (container engine discovery off or failed) one of level
``warning``, and ``executionSuccessful`` is false when a host was not audited completely.
GitHub's limits are kept: at most MAX_RESULTS results per run (the rest counted in a
notification and in the run's properties). Pure: data in, data out.
"""
import hashlib
import json
import re
from urllib.parse import quote

from .._core.text import escape, from_result, one_line
from .audit_record import CHECKS, ERROR, NOT_CHECKED, SKIPPED, UNREACHABLE
from .audit_text import check_title, finding_line, worst_first
from .runtime import CRITICAL, HIGH, LOW, MEDIUM
from .runtime import RULES as RUNTIME_RULES

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL_NAME = "sandboxguard"
TOOL_URI = "https://github.com/sandboxguard/boundary"
# GitHub code scanning rejects a run with more results than this (it shows the top 5,000 by severity)
MAX_RESULTS = 25000
# GitHub's limits on a rule's descriptions and on a message
MAX_DESCRIPTION = 1000
FINGERPRINT_KEY = "sandboxguardFinding/v1"
LEVELS = ("error", "warning", "note")
_KIND = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")

# (check, kind) -> (security-severity, short description, help: what it is and the fix); the level
# follows from the severity (level_of); the runtime check's rules are its own (runtime.RULES)
_STRIP = ("Fix: ansible-playbook sandboxguard.boundary.remediate (or sandboxguard strip PATH) strips it "
          "host-side, never following a symlink; keep root containers from writing into bind mounts "
          "(--cap-drop ALL or at least SETFCAP, --security-opt no-new-privileges, nosuid mounts).")
RULES = {
    ("privileged_files", "setuid"): ("8.8", "Setuid file left in a sandbox bind mount",
                                     "A container wrote a setuid file into a directory the host shares with it; "
                                     "on the host any user who can reach it runs it with its owner's (often "
                                     "root's) privileges. " + _STRIP),
    ("privileged_files", "setgid"): ("7.8", "Setgid file left in a sandbox bind mount",
                                     "A container wrote a setgid file into a directory the host shares with it; "
                                     "on the host it runs with its group's privileges. " + _STRIP),
    ("privileged_files", "caps"): ("7.8", "File capabilities left in a sandbox bind mount",
                                   "A container set security.capability on a file in a directory the host "
                                   "shares with it (Docker's default capabilities include SETFCAP); on the host "
                                   "it runs with those capabilities. " + _STRIP),
    ("privileged_files", "device"): ("8.8", "Device node left in a sandbox bind mount",
                                     "A container made a block or character device node in a directory the host "
                                     "shares with it; on the host whoever can open it reaches that device (a disk, "
                                     "memory). Fix: ansible-playbook sandboxguard.boundary.remediate makes it "
                                     "root-owned 0000; keep containers from making them (--cap-drop MKNOD, nodev "
                                     "mounts)."),
    ("privileged_files", "owner"): ("4.0", "File in a CI runner's work folder not owned by the runner",
                                    "A root container job left a file whose uid or gid is not the runner user's: "
                                    "the runner's next actions/checkout fails with Permission denied. Fix: the "
                                    "runner_cleanup role gives the work folder back after every job; remediate "
                                    "with sandboxguard_github_runners gives these back now."),
    ("home_mode", "mismatch"): ("5.0", "TERMINAL_HOME_MODE is not the mode asked for",
                                "Terminal children of this Hermes home or profile inherit the real HOME, crontab "
                                "and user D-Bus, which is how a finished eval keeps running jobs. Fix: "
                                "ansible-playbook sandboxguard.boundary.remediate -e sandboxguard_home_mode=profile "
                                "(or the terminal_home role) sets it and creates the profile home 0700."),
    ("bwrap", "bwrap-missing"): ("5.0", "bubblewrap is not installed",
                                 "The bubblewrap backend cannot sandbox the agent. Fix: the bwrap role installs "
                                 "bubblewrap >= 0.9.0 and prlimit and makes user namespaces work."),
    ("bwrap", "version-too-old"): ("5.0", "bubblewrap is older than the version asked for",
                                   "Older bubblewrap lacks what the agent's sandbox relies on. Fix: the bwrap role "
                                   "(bwrap_install_method=source builds 0.12.0 on Debian 12)."),
    ("bwrap", "userns-restricted"): ("5.0", "Unprivileged user namespaces are restricted",
                                     "bubblewrap cannot create its namespaces as the agent user. Fix: the bwrap "
                                     "role (an AppArmor profile for bwrap, or the sysctl when asked)."),
    ("bwrap", "isolation-failed"): ("7.0", "A bubblewrap isolation check failed",
                                    "The sandbox started but did not isolate what it must. Fix: see the finding's "
                                    "remediation; the bwrap role probes again as the agent user."),
}
# a runtime rule's severity word as GitHub's security-severity score (critical > 9.0, high 7.0 to 8.9,
# medium 4.0 to 6.9, low below 4.0)
SEVERITY_SCORES = {CRITICAL: "9.5", HIGH: "8.0", MEDIUM: "5.5", LOW: "3.0"}


def level_of(severity):
    """The SARIF level of a security-severity score: error from high (7.0) up, warning below."""
    return "error" if float(severity) >= 7.0 else "warning"


_LEAK_HELP = ("Fix: ansible-playbook sandboxguard.boundary.remediate --tags leaks moves it into a quarantine "
              "directory (nothing is deleted); TERMINAL_HOME_MODE=profile and the crontab shim keep eval runs "
              "from leaving more.")
LEAK_TITLES = {"cron_job": "A cron job an agent left in a user's crontab",
               "at_job": "An at job an agent left queued",
               "hermes_script": "A script an agent left under ~/.hermes/scripts",
               "user_unit": "A systemd user unit an agent left",
               "enabled_timer": "A systemd user timer an agent enabled",
               "enabled_unit": "A systemd user unit an agent enabled",
               "transient_unit": "A transient systemd unit an agent left running",
               "autostart": "An autostart entry an agent left",
               "ssh_file": "An SSH file a run added or changed",
               "shell_rc": "A shell startup file a run changed",
               "tmp_run_dir": "A run directory an agent left in the temp directory"}
NOTIFICATIONS = {
    "unreachable": ("error", "A host returned no audit result",
                    "The host was unreachable or failed before the audit ran: nothing on it was checked."),
    "check_error": ("error", "A check could not look at everything",
                    "A check stopped early or could not read something; what it did not see is not clean."),
    NOT_CHECKED: ("error", "A selected check covered nothing",
                  "No root in scope, no Hermes home found, no agent account or user, or no mode to compare "
                  "against: the reason names the variable to set. Nothing checked is never clean."),
    "engine_discovery": ("warning", "Container engine discovery was off or failed",
                         "The Docker sandboxes' bind mounts were not asked of a container engine on the host."),
    "truncated": ("warning", "Results left out",
                  "More findings than one SARIF run may carry; the JSON report has them all."),
}


def finding_kind(check_name, finding):
    """The kind of a finding, the second half of its ruleId."""
    if check_name == "privileged_files":
        reasons = finding.get("reasons") or ()
        return next((r for r in ("setuid", "setgid", "caps", "device", "owner") if r in reasons), "finding")
    if check_name == "home_mode":
        return "mismatch"
    if check_name == "runtime":
        value = finding.get("rule")
    elif check_name == "leaks":
        value = finding.get("kind")
    else:
        value = finding.get("reason") or finding.get("kind")
    return value if isinstance(value, str) and _KIND.match(value) else "finding"


def _rule(check_name, kind):
    """The reportingDescriptor of (check, kind): the catalogue's, or one made from the names."""
    known = RULES.get((check_name, kind))
    if known is None and check_name == "runtime" and kind in RUNTIME_RULES:
        severity, cis, fix = RUNTIME_RULES[kind]
        known = (SEVERITY_SCORES[severity], "Sandbox setting weakens its isolation: %s" % kind.replace("-", " "),
                 "The sandbox container's own settings (its Hermes config, the container as the engine runs it, "
                 "or the engine's defaults) give it more than the sandbox needs%s. Fix: %s."
                 % (" (CIS Docker Benchmark %s)" % cis if cis else "", fix))
    if known is None and check_name == "leaks":
        known = ("6.0", LEAK_TITLES.get(kind, "Something an agent left outside its sandbox (%s)" % kind),
                 "An agent run left this outside its sandbox, where it outlives the run. " + _LEAK_HELP)
    if known is None:
        known = ("5.0", "%s: %s" % (check_title(check_name), kind.replace("_", " ")),
                 "Found by the %s check of the sandboxguard boundary audit; the finding's message says what and "
                 "the check's documentation how to fix it." % check_name)
    severity, short, text = known
    level = level_of(severity)
    rule_id = "%s/%s" % (check_name, kind)
    return {"id": rule_id, "name": "".join(p.capitalize() for p in re.split(r"[/_.-]", rule_id) if p),
            "shortDescription": {"text": short[:MAX_DESCRIPTION]},
            "fullDescription": {"text": text[:MAX_DESCRIPTION]},
            "help": {"text": text, "markdown": "**%s**\n\n%s" % (short, text)},
            "defaultConfiguration": {"level": level},
            "properties": {"tags": ["security", "sandboxguard", check_name], "precision": "very-high",
                           "problem.severity": "error" if level == "error" else "warning",
                           "security-severity": severity}}


def file_uri(path):
    """A URI for a path: an absolute one as ``file:///...``, a relative one relative; every byte
    but the unreserved ones and ``/`` percent-encoded (the exact bytes, whatever they are)."""
    raw = path.encode("utf-8", "surrogateescape") if isinstance(path, str) else bytes(path)
    encoded = quote(raw, safe="/")
    return "file://" + encoded if raw.startswith(b"/") else encoded


def _location(path, host):
    return {"physicalLocation": {"artifactLocation": {"uri": file_uri(path)}},
            "message": {"text": "on host %s" % escape(host)}}


def _fingerprint(host, rule_id, path, finding):
    extra = finding.get("entry") or finding.get("unit") or finding.get("where") or ""
    key = "\0".join((host, rule_id, path, str(extra))).encode("utf-8", "surrogateescape")
    return hashlib.sha256(key).hexdigest()


def _result(host, check_name, finding, rule_id, index, rule):
    path = finding.get("path")
    if not isinstance(path, str) or not path:  # a runtime finding is where it was set: a config file's path
        where = finding.get("where")
        path = where if isinstance(where, str) and where.startswith("/") else finding.get("hermes_home") or "/"
    message = "%s: %s" % (escape(host), finding_line(check_name, finding))
    properties = {"host": escape(host), "check": check_name}
    for key in ("reasons", "kind", "mode", "caps", "uid", "gid", "user", "wanted", "remediation", "rule", "severity",
                "cis", "where", "detail", "fix"):
        if finding.get(key) is not None:
            properties[key] = finding[key] if not isinstance(finding[key], str) else one_line(escape(finding[key]))
    return {"ruleId": rule_id, "ruleIndex": index, "level": rule["defaultConfiguration"]["level"], "kind": "fail",
            "message": {"text": one_line(message)}, "locations": [_location(path, host)],
            "partialFingerprints": {FINGERPRINT_KEY: _fingerprint(host, rule_id, path, finding)},
            "properties": properties}


def _notification(descriptor_id, index, text, host, check_name=None):
    level = NOTIFICATIONS[descriptor_id][0]
    note = {"level": level, "message": {"text": one_line(text)},
            "descriptor": {"id": descriptor_id, "index": index}, "properties": {"host": escape(host)}}
    if check_name:
        note["properties"]["check"] = check_name
    return note


def _host_notifications(host, record, index):
    shown = escape(host)
    if record["status"] == UNREACHABLE:
        return [_notification("unreachable", index["unreachable"], "%s: unreachable: %s"
                              % (shown, record.get("reason") or "no result"), host)]
    out = []
    checks = record["checks"]
    if checks and all(c.get("status") == SKIPPED for c in checks.values()):
        out.append(_notification(NOT_CHECKED, index[NOT_CHECKED], "%s: %s" % (
            shown, record.get("reason") or "no check selected"), host))
    for check_name, result in checks.items():
        if result.get("status") == ERROR:
            out.append(_notification("check_error", index["check_error"], "%s %s: %s" % (
                shown, check_name, result.get("reason") or "error"), host, check_name))
        elif result.get("status") == NOT_CHECKED:
            out.append(_notification(NOT_CHECKED, index[NOT_CHECKED], "%s %s not checked: %s" % (
                shown, check_name, result.get("reason") or "it covered nothing"), host, check_name))
    out.extend(_notification("engine_discovery", index["engine_discovery"], "%s: %s" % (shown, w), host)
               for w in record.get("warnings") or ())
    return out


def to_sarif(report, max_results=MAX_RESULTS):
    """The SARIF 2.1.0 log of a fleet report, as text (JSON)."""
    report = from_result(report)
    rules, rule_index, results, total = [], {}, [], 0
    notification_ids = list(NOTIFICATIONS)
    index = {name: i for i, name in enumerate(notification_ids)}
    notes = []
    hosts = worst_first(report["hosts"])
    for host, record in hosts:
        notes.extend(_host_notifications(host, record, index))
        ordered = list(CHECKS) + [c for c in record["checks"] if c not in CHECKS]
        for check_name in ordered:
            for finding in (record["checks"].get(check_name) or {}).get("findings") or ():
                total += 1
                kind = finding_kind(check_name, finding)
                rule_id = "%s/%s" % (check_name, kind)
                if rule_id not in rule_index:
                    rule_index[rule_id] = len(rules)
                    rules.append(_rule(check_name, kind))
                if len(results) < max_results:
                    results.append(_result(host, check_name, finding, rule_id, rule_index[rule_id],
                                           rules[rule_index[rule_id]]))
    if total > len(results):
        notes.append(_notification("truncated", index["truncated"], "%d of %d findings left out of this SARIF "
                                   "run (at most %d results per run): see boundary-audit.json"
                                   % (total - len(results), total, max_results), ""))
    summary = report.get("summary") or {}
    successful = not any(summary.get(key) for key in ("hosts_error", "hosts_not_checked", "hosts_not_audited"))
    driver = {"name": TOOL_NAME, "fullName": "sandboxguard boundary audit (sandboxguard.boundary)",
              "informationUri": TOOL_URI, "rules": rules,
              "notifications": [{"id": n, "shortDescription": {"text": NOTIFICATIONS[n][1]},
                                 "fullDescription": {"text": NOTIFICATIONS[n][2]},
                                 "defaultConfiguration": {"level": NOTIFICATIONS[n][0]}} for n in notification_ids]}
    run = {"tool": {"driver": driver},
           "automationDetails": {"id": "sandboxguard/boundary-audit/"},
           "invocations": [{"executionSuccessful": successful, "endTimeUtc": report["generated"],
                            "toolExecutionNotifications": notes}],
           "results": results,
           "properties": {"generated": report["generated"], "schema_version": report.get("schema_version"),
                          "hosts": {escape(host): record["status"] for host, record in hosts},
                          "findings": total, "results_left_out": total - len(results)}}
    log = {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
