# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""boundary-audit.sarif: SARIF 2.1.0 valid against the OASIS schema (vendored under tests/unit/data),
within what GitHub code scanning's upload accepts (github/codeql-action's upload-lib and fingerprints,
docs.github.com "SARIF support for code scanning"), one result per finding, what was not looked at
never silent."""
import gzip
import json
import os
import re
from urllib.parse import unquote_to_bytes

import pytest
from sandboxguard._core.text import for_result
from sandboxguard._fleet import audit_report as ar
from sandboxguard._fleet import audit_sarif, runtime

HERE = os.path.dirname(os.path.abspath(__file__))
SARIF_SCHEMA = os.path.join(HERE, "data", "sarif-schema-2.1.0.json")
SUID = {"path": "/srv/h/sandboxes/docker/t1/workspace/sh", "mode": "04755", "caps": None, "uid": 0, "gid": 0,
        "reasons": ["setuid"]}
CAPS = {"path": "/srv/h/sandboxes/docker/t1/workspace/ping", "mode": "0755", "caps": "cap_net_raw=ep", "uid": 0,
        "gid": 0, "reasons": ["caps"]}
BOTH = dict(SUID, path="/srv/h/sandboxes/docker/t1/workspace/both", mode="06755", reasons=["setuid", "setgid"])
LEAK = {"kind": "cron_job", "path": "/var/spool/cron/crontabs/agent", "age": 30, "user": "agent",
        "entry": "*/5 * * * * /home/agent/.hermes/scripts/keepalive.sh"}
HOME = {"path": "/home/agent/.hermes", "mode": "real", "wanted": "profile", "files": [],
        "reason": "TERMINAL_HOME_MODE is real, asked for profile"}
BWRAP = {"path": "/usr/bin/bwrap", "reason": "version-too-old", "message": "bwrap 0.8.0 < 0.9.0",
         "remediation": "bwrap_install_method=source"}
# RFC 3986 URI-reference characters (what a percent-encoded file URI may hold)
URI_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")


def check(status, findings=(), reason=None):
    return {"status": status, "findings": list(findings), "reason": reason, "errors": []}


def record(privileged=None, **others):
    checks = {name: check("clean") for name in ar.CHECKS}
    checks["privileged_files"] = privileged or check("clean")
    checks.update(others)
    return ar.host_record(checks)


def fleet():
    return ar.fleet_report({
        "web-1": record(check("findings", [SUID, CAPS, BOTH]), leaks=check("findings", [LEAK]),
                        home_mode=check("findings", [HOME]), bwrap=check("findings", [BWRAP])),
        "web-2": record(check("findings", [SUID])),
        "clean": record(),
        "na": record(bwrap=check("not_checked", reason="no agent user given: set sandboxguard_agent_user")),
        "broken": record(leaks=check("error", reason="/var/spool/cron/crontabs: Permission denied")),
        "gone": ar.unreachable_record("ssh: connect to host gone port 22: No route to host")})


def sarif(report, **kwargs):
    return json.loads(audit_sarif.to_sarif(report, **kwargs))


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    with open(SARIF_SCHEMA) as handle:
        schema = json.load(handle)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_the_sarif_log_is_valid_against_the_sarif_2_1_0_schema(validator):
    log = sarif(fleet())
    validator.validate(log)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-schema-2.1.0.json")


def test_the_vendored_schema_rejects_what_is_not_sarif(validator):
    log = sarif(fleet())
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert list(validator.iter_errors(log))
    log = sarif(fleet())
    del log["runs"][0]["tool"]["driver"]["name"]
    assert list(validator.iter_errors(log))


def test_one_result_per_finding_with_the_host_in_its_properties_and_message():
    log = sarif(fleet())
    results = log["runs"][0]["results"]
    assert len(results) == 7  # web-1: 3 files, 1 leak, 1 home, 1 bwrap; web-2: 1 file
    by_host = {}
    for result in results:
        by_host.setdefault(result["properties"]["host"], []).append(result)
        assert result["message"]["text"].startswith(result["properties"]["host"] + ": ")
    assert {h: len(r) for h, r in by_host.items()} == {"web-1": 6, "web-2": 1}


def test_every_rule_id_is_among_the_driver_s_rules_with_help_and_the_fix():
    run = sarif(fleet())["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    for result in run["results"]:
        assert result["ruleId"] in ids and rules[result["ruleIndex"]]["id"] == result["ruleId"]
    assert set(ids) == {"privileged_files/setuid", "privileged_files/caps", "leaks/cron_job", "home_mode/mismatch",
                        "bwrap/version-too-old"}
    for rule in rules:
        assert rule["shortDescription"]["text"] and "fix" in rule["help"]["text"].lower(), rule["id"]
        assert 0.0 <= float(rule["properties"]["security-severity"]) <= 10.0
        assert len(rule["properties"]["tags"]) <= 20
        assert len(rule["shortDescription"]["text"]) <= 1024 and len(rule["fullDescription"]["text"]) <= 1024


def test_levels_follow_the_rule_severity():
    run = sarif(fleet())["runs"][0]
    level = {r["ruleId"]: r["level"] for r in run["results"]}
    assert level["privileged_files/setuid"] == "error" and level["privileged_files/caps"] == "error"
    assert level["home_mode/mismatch"] == "warning" and level["leaks/cron_job"] == "warning"


def test_a_finding_with_several_reasons_is_one_result_under_its_worst_reason():
    results = sarif(fleet())["runs"][0]["results"]
    [both] = [r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("/both")]
    assert both["ruleId"] == "privileged_files/setuid" and both["properties"]["reasons"] == ["setuid", "setgid"]


def test_each_result_has_one_absolute_file_uri_location_as_github_wants():
    for result in sarif(fleet())["runs"][0]["results"]:
        [location] = result["locations"]
        uri = location["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.startswith("file:///") and URI_CHARS.match(uri), uri
        assert "region" not in location["physicalLocation"], "no line: upload-sarif hashes no host file"
        assert result["partialFingerprints"][audit_sarif.FINGERPRINT_KEY]


RAW = b"/srv/h/sandboxes/docker/t\xff/a b%20\n<x>#?\x1b[2J"


def test_a_path_of_any_bytes_is_an_exact_percent_encoded_file_uri(validator):
    finding = dict(SUID, path=os.fsdecode(RAW))
    report = ar.fleet_report(ar.collect({"h": for_result({"record": record(check("findings", [finding]))})}, ["h"]))
    text = audit_sarif.to_sarif(report)
    text.encode("utf-8")  # strict
    log = json.loads(text)
    validator.validate(log)
    [result] = log["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert URI_CHARS.match(uri) and unquote_to_bytes(uri[len("file://"):]) == RAW
    assert "\n" not in result["message"]["text"] and "\\xff" in result["message"]["text"]


def test_the_same_finding_keeps_its_fingerprint_and_another_host_gets_another():
    first = sarif(fleet())["runs"][0]["results"]
    again = sarif(fleet())["runs"][0]["results"]
    assert [r["partialFingerprints"] for r in first] == [r["partialFingerprints"] for r in again]
    web1 = next(r for r in first if r["properties"]["host"] == "web-1" and r["ruleId"] == "privileged_files/setuid")
    web2 = next(r for r in first if r["properties"]["host"] == "web-2")
    assert web1["partialFingerprints"] != web2["partialFingerprints"]


def test_what_was_not_looked_at_is_a_tool_execution_notification_and_the_run_not_successful():
    run = sarif(fleet())["runs"][0]
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False
    notes = {(n["descriptor"]["id"], n["properties"]["host"]): n for n in invocation["toolExecutionNotifications"]}
    assert notes[("not_checked", "na")]["level"] == "error"
    assert "sandboxguard_agent_user" in notes[("not_checked", "na")]["message"]["text"]
    assert notes[("check_error", "broken")]["properties"]["check"] == "leaks"
    assert "No route to host" in notes[("unreachable", "gone")]["message"]["text"]
    descriptors = [n["id"] for n in run["tool"]["driver"]["notifications"]]
    for note in invocation["toolExecutionNotifications"]:
        assert descriptors[note["descriptor"]["index"]] == note["descriptor"]["id"]


def test_a_clean_fleet_is_a_successful_run_with_no_results(validator):
    log = sarif(ar.fleet_report({"a": record(), "b": record()}))
    validator.validate(log)
    run = log["runs"][0]
    assert run["results"] == [] and run["invocations"][0]["executionSuccessful"] is True
    assert run["invocations"][0]["toolExecutionNotifications"] == []


def test_engine_discovery_off_is_a_warning_notification():
    privileged = dict(check("clean"), engine={"answered": False, "reason": "no container engine", "targets": []})
    run = sarif(ar.fleet_report({"h": record(privileged)}))["runs"][0]
    [note] = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "warning" and note["descriptor"]["id"] == "engine_discovery"
    assert run["invocations"][0]["executionSuccessful"] is True


def test_github_s_limits_hold_past_25000_findings_the_rest_counted():
    """GitHub rejects a run with more than 25,000 results and a file over 10 MB gzipped; one run
    per file (at most 20), one location per result (at most 1,000)."""
    findings = [dict(SUID, path="/srv/h/sandboxes/docker/t1/workspace/f%05d" % i) for i in range(25003)]
    report = ar.fleet_report({"big": record(check("findings", findings))})
    text = audit_sarif.to_sarif(report)
    log = json.loads(text)
    assert len(log["runs"]) == 1  # GitHub: at most 20 runs per file
    run = log["runs"][0]
    assert len(run["results"]) == audit_sarif.MAX_RESULTS == 25000
    assert run["properties"]["results_left_out"] == 3 and run["properties"]["findings"] == 25003
    [note] = [n for n in run["invocations"][0]["toolExecutionNotifications"] if n["descriptor"]["id"] == "truncated"]
    assert "3 of 25003" in note["message"]["text"]
    assert len(gzip.compress(text.encode("utf-8"))) < 10 * 1024 * 1024
    assert all(len(r["locations"]) == 1 for r in run["results"])


def test_a_check_added_later_gets_a_rule_of_its_own():
    rec = record()
    rec["checks"]["later"] = check("findings", [{"path": "/etc/docker/daemon.json", "reason": "no-seccomp-profile",
                                                 "message": "the engine runs containers without our profile"}])
    report = ar.fleet_report(ar.collect({"h": {"record": rec}}, ["h"]))
    run = sarif(report)["runs"][0]
    [result] = run["results"]
    assert result["ruleId"] == "later/no-seccomp-profile"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["later/no-seccomp-profile"]


def test_runtime_findings_are_results_under_their_own_rule_severity_place_and_fix(validator):
    """The runtime check's findings as runtime.finding makes them: a rule each (not one
    catch-all), the level and security-severity from runtime.RULES' severity word, the config
    file as the location, each container a result of its own."""
    config = "/home/hermes/.hermes/config.yaml"
    findings = [runtime.finding("privileged", "container sbx-1", "Privileged: true"),
                runtime.finding("privileged", "container sbx-2", "Privileged: true"),
                runtime.finding("no-new-privileges-off", config, "no-new-privileges=false"),
                runtime.finding("daemon-profile-allows-setid", "docker daemon", "the default lets setuid through")]
    rec = record()
    rec["checks"]["runtime"] = check("findings", findings)
    log = sarif(ar.fleet_report(ar.collect({"h": {"record": rec}}, ["h"])))
    validator.validate(log)
    run = log["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert sorted(rules) == ["runtime/daemon-profile-allows-setid", "runtime/no-new-privileges-off",
                             "runtime/privileged"]
    assert [(r["defaultConfiguration"]["level"], r["properties"]["security-severity"])
            for r in (rules["runtime/privileged"], rules["runtime/no-new-privileges-off"],
                      rules["runtime/daemon-profile-allows-setid"])] == [("error", "9.5"), ("warning", "5.5"),
                                                                         ("warning", "3.0")]
    assert "CIS Docker Benchmark 5.4" in rules["runtime/privileged"]["help"]["text"]
    assert runtime.RULES["privileged"][2] in rules["runtime/privileged"]["help"]["text"]
    results = run["results"]
    assert [r["level"] for r in results] == ["error", "error", "warning", "warning"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert uris[2] == "file://" + config and uris[0] == "file:///"
    prints = [r["partialFingerprints"][audit_sarif.FINGERPRINT_KEY] for r in results]
    assert len(set(prints)) == 4  # two containers with the same setting are two results
    assert results[0]["properties"]["where"] == "container sbx-1" and results[0]["properties"]["severity"] == "critical"


def test_every_runtime_rule_has_a_score_github_reads():
    assert {severity for severity, _cis, _fix in runtime.RULES.values()} <= set(audit_sarif.SEVERITY_SCORES)


def test_write_reports_writes_the_sarif_beside_the_others(tmp_path, validator):
    ar.write_reports(fleet(), str(tmp_path))
    with open(tmp_path / ar.SARIF_NAME, encoding="utf-8") as handle:
        validator.validate(json.load(handle))


def test_hostile_host_and_finding_fields_stay_one_line_valid_utf8(validator):
    finding = dict(SUID, path="/srv/x", mode="04755", caps=os.fsdecode(b"cap\xff\n"))
    report = ar.fleet_report(ar.collect({"h\n<1>": for_result({"record": record(check("findings", [finding]))})},
                                        ["h\n<1>"]))
    text = audit_sarif.to_sarif(report)
    text.encode("utf-8")
    log = json.loads(text)
    validator.validate(log)
    [result] = log["runs"][0]["results"]
    assert "\n" not in result["message"]["text"] and "\n" not in result["properties"]["caps"]
    assert result["properties"]["host"] == "h\\n<1>" and result["message"]["text"].startswith("h\\n<1>: ")


def test_a_device_node_finding_has_its_own_rule():
    device = {"path": "/srv/h/sandboxes/docker/t1/workspace/sda", "mode": "060666", "caps": None, "uid": 0, "gid": 0,
              "reasons": ["device"]}
    run = sarif(ar.fleet_report({"h": record(check("findings", [device]))}))["runs"][0]
    [result] = run["results"]
    assert result["ruleId"] == "privileged_files/device" and result["level"] == "error"
    assert "MKNOD" in run["tool"]["driver"]["rules"][0]["help"]["text"]
