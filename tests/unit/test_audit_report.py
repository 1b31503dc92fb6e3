# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The fleet audit reports: records, summary, JSON (against the schema), JUnit, HTML, merge of slices."""
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest
from sandboxguard._fleet import audit_report as ar

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(TOP, "docs", "schemas", "boundary-audit.schema.json")
SUID = {"path": "/srv/h/sandboxes/docker/t1/workspace/sh", "mode": "04755", "caps": None, "uid": 0, "gid": 0,
        "reasons": ["setuid"]}
CAPS = {"path": "/srv/h/sandboxes/docker/t1/workspace/ping", "mode": "0755", "caps": "cap_net_raw=ep", "uid": 0,
        "gid": 0, "reasons": ["caps"]}


def check(status, findings=(), reason=None):
    return {"status": status, "findings": list(findings), "reason": reason, "errors": []}


def record(privileged=None, **others):
    checks = {"privileged_files": privileged or check("clean"), "home_mode": check("skipped", reason="no mode"),
              "leaks": check("clean"), "bwrap": check("skipped", reason="no agent user"),
              "runtime": check("clean")}
    checks.update(others)
    return ar.host_record(checks)


def fleet():
    """Five hosts: two with findings (one with more), one error, one clean, one unreachable."""
    results = {
        "web-clean": {"record": record(), "changed": False},
        "a-one-finding": {"record": record(check("findings", [SUID]))},
        "z-two-findings": {"record": record(check("findings", [SUID, CAPS]))},
        "m-error": {"record": record(leaks=check("error", reason="/var/spool/cron/crontabs: Permission denied"))},
        "b-failed": {"failed": True, "msg": "/usr/bin/python3: not found"},
    }
    return ar.collect(results, ["web-clean", "a-one-finding", "z-two-findings", "m-error", "b-failed",
                                "gone-unreachable"])


@pytest.fixture(scope="module")
def validator():
    # jsonschema is in the dev requirements; the per-Python unit venvs have only pytest.
    jsonschema = pytest.importorskip("jsonschema")
    with open(SCHEMA) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_host_status_is_findings_over_error_over_clean():
    assert record(check("findings", [SUID]), leaks=check("error", reason="x"))["status"] == "findings"
    assert record(leaks=check("error", reason="x"))["status"] == "error"
    assert record()["status"] == "clean"


def test_a_check_without_a_result_is_an_error_not_clean():
    rec = ar.host_record({"privileged_files": check("clean")})
    assert rec["checks"]["leaks"]["status"] == "error"
    assert rec["status"] == "error"


def test_hosts_without_a_result_are_unreachable_and_a_failed_audit_is_an_error():
    hosts = fleet()
    assert hosts["gone-unreachable"]["status"] == "unreachable"
    assert hosts["b-failed"]["status"] == "error"
    assert "python3: not found" in hosts["b-failed"]["reason"]
    unreachable = ar.collect({"x": {"unreachable": True, "msg": "ssh: connect to host x port 22: No route"}}, ["x"])
    assert unreachable["x"]["status"] == "unreachable" and "No route" in unreachable["x"]["reason"]


def test_hosts_are_ordered_worst_first():
    report = ar.fleet_report(fleet())
    assert list(report["hosts"]) == ["gone-unreachable", "z-two-findings", "a-one-finding", "b-failed", "m-error",
                                     "web-clean"]


def test_summary_counts_hosts_and_checks():
    summary = ar.fleet_report(fleet())["summary"]
    assert (summary["hosts_total"], summary["hosts_with_findings"], summary["hosts_error"],
            summary["hosts_unreachable"], summary["hosts_clean"]) == (6, 2, 3, 1, 1)
    assert summary["checks"]["privileged_files"] == {"findings": 2, "clean": 2, "error": 2, "not_checked": 0,
                                                     "skipped": 0, "items": 3}
    assert summary["checks"]["leaks"]["error"] == 3
    assert summary["counts"] == {"privileged_files": 3, "home_mode": 0, "leaks": 0, "bwrap": 0, "runtime": 0}


def test_fleet_report_and_host_files_validate_against_the_schema(tmp_path, validator):
    report = ar.fleet_report(fleet())
    validator.validate(json.loads(ar.to_json(report)))
    ar.write_reports(report, str(tmp_path))
    for name in os.listdir(tmp_path / "hosts"):
        with open(tmp_path / "hosts" / name) as f:
            validator.validate(json.load(f))


def test_schema_rejects_a_findings_check_without_findings_and_an_error_without_reason(validator):
    report = ar.fleet_report({"h": record()})
    report["hosts"]["h"]["checks"]["leaks"] = {"status": "findings", "findings": [], "reason": None}
    assert list(validator.iter_errors(report))
    report["hosts"]["h"]["checks"]["leaks"] = {"status": "error", "findings": [], "reason": None}
    assert list(validator.iter_errors(report))
    report["hosts"]["h"]["status"] = "broken"
    assert list(validator.iter_errors(report))


def test_junit_has_a_suite_per_host_and_a_case_per_check():
    xml = ar.to_junit(ar.fleet_report(fleet()))
    root = ET.fromstring(xml.encode())  # noqa: S314
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == set(fleet())
    for suite in suites.values():
        assert [c.get("name") for c in suite.findall("testcase")] == list(ar.CHECKS)
    failure = suites["z-two-findings"].find("testcase[@name='privileged_files']/failure")
    assert SUID["path"] in failure.get("message") and CAPS["path"] in failure.get("message")
    assert "cap_net_raw=ep" in failure.text
    assert suites["m-error"].find("testcase[@name='leaks']/error") is not None
    gone = suites["gone-unreachable"].findall("testcase/error")
    assert len(gone) == len(ar.CHECKS) and all(e.get("type") == "unreachable" for e in gone)
    assert suites["web-clean"].find("testcase[@name='bwrap']/skipped") is not None
    assert root.get("failures") == "2" and root.get("tests") == str(6 * len(ar.CHECKS))


def test_junit_carries_paths_with_control_characters():
    weird = dict(SUID, path="/srv/h/sandboxes/docker/t1/a\x01b\nc")
    xml = ar.to_junit(ar.fleet_report({"h": record(check("findings", [weird]))}))
    failure = ET.fromstring(xml.encode()).find("testsuite/testcase/failure")  # noqa: S314
    assert "a\\x01b" in failure.get("message")


def test_html_is_self_contained_summary_first_hosts_worst_first():
    page = ar.to_html(ar.fleet_report(fleet()))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<script" not in page and "@import" not in page and "url(" not in page
    assert page.index("Checks across the fleet") < page.index("Hosts, worst first")
    order = [page.index('<span class="name">%s</span>' % n) for n in
             ("gone-unreachable", "z-two-findings", "a-one-finding", "b-failed", "m-error", "web-clean")]
    assert order == sorted(order)
    assert "<details" in page and SUID["path"] in page


def test_html_escapes_what_the_sandbox_controls():
    evil = dict(SUID, path="/srv/h/sandboxes/docker/t1/<script>alert(1)</script>")
    page = ar.to_html(ar.fleet_report({"h": record(check("findings", [evil]))}))
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_write_reports_writes_the_four_reports_and_one_file_per_host(tmp_path):
    written = ar.write_reports(ar.fleet_report(fleet()), str(tmp_path / "out"))
    names = sorted(os.path.relpath(p, tmp_path / "out") for p in written)
    assert names[:4] == ["boundary-audit.html", "boundary-audit.json", "boundary-audit.sarif", "boundary-audit.xml"]
    assert sorted(os.listdir(tmp_path / "out" / "hosts")) == sorted(n + ".json" for n in fleet())


def test_host_file_names_stay_inside_the_hosts_directory_and_never_collide():
    assert ar.host_file_name("web-01.example.com") == "web-01.example.com.json"
    for name in ("../../etc/passwd", "a/b", "..", ".hidden", "x\ny"):
        assert "/" not in ar.host_file_name(name) and not ar.host_file_name(name).startswith(".")
    assert ar.host_file_name("a/b") != ar.host_file_name("a_b")


def test_merge_of_slices_is_the_report_of_the_whole_run(tmp_path):
    hosts = fleet()
    names = sorted(hosts)
    whole = ar.fleet_report(hosts)
    for i, part in enumerate((names[:3], names[3:])):
        ar.write_reports(ar.fleet_report({n: hosts[n] for n in part}), str(tmp_path / ("slice%d" % i)))
    merged = ar.merge([str(tmp_path / "slice0"), str(tmp_path / "slice1")])
    assert merged["hosts"] == whole["hosts"]
    assert merged["summary"] == whole["summary"]
    assert list(merged["hosts"]) == list(whole["hosts"])


def test_merge_keeps_a_reachable_record_over_an_unreachable_one(tmp_path):
    ar.write_reports(ar.fleet_report({"h": ar.unreachable_record("timeout")}, generated="2026-12-01T10:00:00Z"),
                     str(tmp_path / "late"))
    ar.write_reports(ar.fleet_report({"h": record(check("findings", [SUID]))}, generated="2026-12-01T09:00:00Z"),
                     str(tmp_path / "early"))
    merged = ar.merge([str(tmp_path / "early"), str(tmp_path / "late")])
    assert merged["hosts"]["h"]["status"] == "findings"


def test_merge_reads_a_fleet_report_file_too(tmp_path):
    ar.write_reports(ar.fleet_report(fleet()), str(tmp_path), host_files=False)
    merged = ar.merge([str(tmp_path / ar.JSON_NAME)])
    assert set(merged["hosts"]) == set(fleet())


@pytest.mark.parametrize("content, message", [
    ("{}", "no schema_version"), ('{"schema_version": 99, "hosts": {}}', "schema_version 99"),
    ("not json", "cannot read a report")])
def test_merge_refuses_what_is_not_a_report_naming_the_file(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(ar.ReportError, match=re.escape(str(bad)) + ".*" + message):
        ar.merge([str(bad)])


def test_gate_fails_on_findings_and_errors_unless_told_not_to():
    summary = ar.fleet_report(fleet())["summary"]
    assert "2 of 6 host(s) have findings (privileged_files on 2)" in ar.gate(summary)
    assert "1 unreachable" in ar.gate(summary)
    assert ar.gate(summary, fail_on_findings=False, fail_on_errors=False) is None
    clean = ar.fleet_report({"h": record()})["summary"]
    assert ar.gate(clean) is None


def test_stats_are_the_summary_awx_reads():
    stats = ar.stats(ar.fleet_report(fleet())["summary"])
    assert stats["hosts_total"] == 6 and stats["hosts_with_findings"] == 2 and stats["hosts_error"] == 3
    assert stats["counts"]["privileged_files"] == 3 and stats["checks"]["leaks"]["error"] == 3


# --- hostile names (issue 19 item 5) ---------------------------------------------------------

RAW_BAD = b"/srv/h/sandboxes/docker/t\xff/workspace/bad\xff\xfe"
HOSTILE_PATHS = [os.fsdecode(RAW_BAD), "/srv/h/two\nlines\x07", "/srv/h/<script>alert(1)</script>&amp;",
                 "/srv/h/cdata]]>end\x1b[2J", "/srv/h/bidi\u202eevil"]


def hostile_fleet():
    """One host with a finding per hostile name, its record as a module result carries it."""
    from sandboxguard._core.text import for_result

    findings = [dict(SUID, path=p) for p in HOSTILE_PATHS]
    leak = {"kind": "cron_job", "path": "/var/spool/cron/crontabs/agent", "age": 3, "user": "agent",
            "entry": os.fsdecode(b"* * * * * /tmp/x\xff ]]> <b>&amp;\n")}
    rec = record(check("findings", findings), leaks=check("findings", [leak]))
    rec["checks"]["privileged_files"]["roots"] = [os.fsdecode(b"/srv/h/sandboxes/docker/t\xff"), "/srv/ok"]
    rec["checks"]["home_mode"]["absent"] = ["/srv/gone\n<i>"]
    failed = {"failed": True, "msg": os.fsdecode(b"/opt/py\xff/bin/python3: not found")}  # not a result's form
    return ar.collect({"h<1>&": for_result({"record": rec}), "failed": failed}, ["h<1>&", "failed"])


def test_hostile_names_stay_exact_in_the_json_reports_and_validate(tmp_path, validator):
    import base64

    from sandboxguard._core.text import from_result

    report = ar.fleet_report(hostile_fleet())
    text = ar.to_json(report)
    text.encode("utf-8")  # strict: what ansible-core and jq read
    doc = json.loads(text)
    validator.validate(doc)
    priv = doc["hosts"]["h<1>&"]["checks"]["privileged_files"]
    assert priv["findings"][0]["path"] == "/srv/h/sandboxes/docker/t\\xff/workspace/bad\\xff\\xfe"
    assert base64.b64decode(priv["findings"][0]["path_b64"]) == RAW_BAD
    assert [base64.b64decode(c) for c in priv["roots_b64"]] == [b"/srv/h/sandboxes/docker/t\xff", b"/srv/ok"]
    assert priv["findings"][1]["path"] == "/srv/h/two\nlines\x07" and "path_b64" not in priv["findings"][1]
    assert doc["hosts"]["failed"]["reason"] == "/opt/py\\xff/bin/python3: not found"
    restored = from_result(doc)["hosts"]["h<1>&"]["checks"]["privileged_files"]["findings"]
    assert [f["path"] for f in restored] == HOSTILE_PATHS
    ar.write_reports(report, str(tmp_path / "out"))
    merged = ar.merge([str(tmp_path / "out")])
    assert json.loads(ar.to_json(merged))["hosts"] == doc["hosts"]  # merge keeps the names exact
    for name in os.listdir(tmp_path / "out" / "hosts"):
        with open(tmp_path / "out" / "hosts" / name, encoding="utf-8") as f:  # strict
            validator.validate(json.load(f))


def test_junit_shows_hostile_names_escaped_and_stays_xml_1_0():
    xml = ar.to_junit(ar.fleet_report(hostile_fleet()))
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff\u202e]", xml)
    root = ET.fromstring(xml.encode("utf-8"))  # noqa: S314
    failure = root.find("testsuite/testcase[@name='privileged_files']/failure")
    message, body = failure.get("message"), failure.text
    assert "/srv/h/sandboxes/docker/t\\xff/workspace/bad\\xff\\xfe" in message
    assert "/srv/h/two\\nlines\\x07" in message and "\\x1b[2J" in message and "bidi\\u202eevil" in message
    assert "/srv/h/cdata]]>end" in body and "<script>alert(1)</script>&amp;" in body  # text, parsed back
    assert all(line.startswith("/srv/h/") for line in body.splitlines())  # one line per finding
    leaks = root.find("testsuite/testcase[@name='leaks']/failure").text
    assert leaks.count("\n") == 0 and "/tmp/x\\xff ]]> <b>&amp;\\n" in leaks
    assert root.find("testsuite").get("name") == "h<1>&"


def test_html_shows_hostile_names_escaped_with_markup_escaped():
    page = ar.to_html(ar.fleet_report(hostile_fleet()))
    assert "<script>" not in page and "<b>" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;" in page
    assert "t\\xff/workspace/bad\\xff\\xfe" in page and "two\\nlines\\x07" in page and "bidi\\u202eevil" in page
    assert "cdata]]&gt;end\\x1b[2J" in page and "/srv/gone\\n&lt;i&gt;" in page
    assert "h&lt;1&gt;&amp;" in page
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\u202e]", page)


def test_error_lines_name_each_reached_host_s_check_in_error_with_its_reason():
    clean = {"status": "clean", "reason": None, "findings": [], "errors": []}
    why = "hermes_home /a/link/.hermes: goes through a symlink; give the real path (it leads to /a/real/.hermes now)"
    refused = {"status": "error", "findings": [], "errors": [], "reason": why}
    report = ar.fleet_report({
        "ok": ar.host_record({"privileged_files": clean, "home_mode": clean, "leaks": clean, "bwrap": clean,
                              "runtime": clean}),
        "bad": ar.host_record({"privileged_files": clean, "home_mode": refused, "leaks": clean, "bwrap": clean,
                               "runtime": clean}),
        "gone": ar.unreachable_record("ssh: connection refused")})
    assert ar.error_lines(report) == ["bad home_mode: " + why]
    many = ar.fleet_report({"h%d" % i: ar.host_record({"privileged_files": refused}) for i in range(7)})
    lines = ar.error_lines(many, limit=3)
    assert len(lines) == 4 and lines[-1] == "and %d more (see the reports)" % (len(ar.error_lines(many, 99)) - 3)


# --- issue 27: nothing checked is never clean ------------------------------------------------

NOT_CHECKED = check("not_checked", reason="no Hermes home given: set sandboxguard_hermes_homes")


def test_three_of_four_checks_not_checked_is_not_audited_never_clean():
    rec = record(home_mode=NOT_CHECKED, leaks=NOT_CHECKED, bwrap=NOT_CHECKED)
    assert rec["status"] == "not_audited" and rec["not_checked"] == ["home_mode", "leaks", "bwrap"]
    assert "home_mode (no Hermes home given" in rec["reason"]
    one = record(bwrap=NOT_CHECKED)
    assert one["status"] == "not_audited" and one["not_checked"] == ["bwrap"]


def test_findings_and_errors_outrank_not_audited_and_none_selected_is_not_audited():
    assert record(check("findings", [SUID]), bwrap=NOT_CHECKED)["status"] == "findings"
    assert record(leaks=check("error", reason="x"), bwrap=NOT_CHECKED)["status"] == "error"
    skipped = ar.host_record({c: check("skipped", reason="not selected (checks or tags)") for c in ar.CHECKS})
    assert skipped["status"] == "not_audited" and "no check selected" in skipped["reason"]
    assert skipped["not_checked"] == list(ar.CHECKS)


def not_checked_fleet():
    return ar.fleet_report({"clean": record(), "na": record(bwrap=NOT_CHECKED),
                            "dirty-na": record(check("findings", [SUID]), home_mode=NOT_CHECKED),
                            "gone": ar.unreachable_record("timeout")})


def test_summary_counts_hosts_not_audited_and_every_host_with_a_check_not_checked():
    summary = not_checked_fleet()["summary"]
    assert (summary["hosts_not_audited"], summary["hosts_not_checked"], summary["hosts_clean"]) == (1, 2, 1)
    assert summary["hosts_error"] == 1, "unreachable only: not audited is its own state"
    assert summary["checks"]["bwrap"]["not_checked"] == 1 and summary["checks"]["home_mode"]["not_checked"] == 1
    assert list(not_checked_fleet()["hosts"]) == ["gone", "dirty-na", "na", "clean"], "worst first"


def test_the_gate_fails_on_a_check_not_checked_unless_allowed():
    summary = ar.fleet_report({"na": record(bwrap=NOT_CHECKED)})["summary"]
    message = ar.gate(summary)
    assert "1 host(s) not audited" in message and "bwrap on 1" in message
    assert "sandboxguard_allow_not_checked" in message
    assert ar.gate(summary, allow_not_checked=True) is None
    both = not_checked_fleet()["summary"]
    assert "2 host(s) not audited" in ar.gate(both, fail_on_findings=False, fail_on_errors=False)
    assert ar.gate(both, fail_on_findings=False, fail_on_errors=False, allow_not_checked=True) is None


def test_stats_carry_the_hosts_not_audited_for_awx():
    stats = ar.stats(not_checked_fleet()["summary"])
    assert (stats["hosts_not_audited"], stats["hosts_not_checked"]) == (1, 2)
    assert stats["checks"]["bwrap"]["not_checked"] == 1


def test_junit_shows_a_check_not_checked_as_an_error_of_its_own_type():
    root = ET.fromstring(ar.to_junit(not_checked_fleet()).encode())  # noqa: S314
    suite = next(s for s in root.findall("testsuite") if s.get("name") == "na")
    error = suite.find("testcase[@name='bwrap']/error")
    assert error.get("type") == "not_checked" and "sandboxguard_hermes_homes" in error.get("message")
    assert suite.find("properties/property[@name='status']").get("value") == "not_audited"
    assert suite.get("errors") == "1"


def test_html_shows_hosts_not_audited_in_amber_never_all_clean():
    page = ar.to_html(ar.fleet_report({"na": record(bwrap=NOT_CHECKED)}))
    assert '<div class="verdict warn">' in page and "not audited" in page and "all 1 host(s) clean" not in page
    assert '<span class="b not_audited">' in page and '<span class="b not_checked">' in page
    assert ".b.not_audited,.b.not_checked{background:var(--warn-bg)" in page
    assert '<div class="verdict ok">all 1 host(s) clean</div>' in ar.to_html(ar.fleet_report({"c": record()}))


def test_problem_lines_name_the_checks_not_checked_with_the_variable_to_set():
    lines = ar.error_lines(not_checked_fleet())
    assert "na bwrap not checked: no Hermes home given: set sandboxguard_hermes_homes" in lines
    assert "dirty-na home_mode not checked: no Hermes home given: set sandboxguard_hermes_homes" in lines


def test_engine_discovery_off_or_failed_is_a_warning_of_the_host_in_every_report():
    privileged = dict(check("clean"), engine={"answered": False, "reason": "not asked (docker: never)",
                                              "targets": [], "engines": []})
    report = ar.fleet_report({"h": record(privileged)})
    assert report["hosts"]["h"]["warnings"] == [
        "container engine discovery off or failed (Docker sandboxes not asked for): not asked (docker: never)"]
    assert report["summary"]["hosts_with_warnings"] == 1 and report["hosts"]["h"]["status"] == "clean"
    assert "docker: never" in ET.fromstring(ar.to_junit(report).encode()).find(  # noqa: S314
        "testsuite/system-err").text
    assert '<p class="warning">warning: container engine discovery' in ar.to_html(report)
    assert ar.warning_lines(report) == ["h: " + report["hosts"]["h"]["warnings"][0]]
    answered = dict(privileged, engine={"answered": True, "reason": None, "targets": [], "engines": ["docker"]})
    assert ar.fleet_report({"h": record(answered)})["hosts"]["h"]["warnings"] == []


def test_not_audited_validates_and_the_schema_wants_its_reason(validator):
    report = json.loads(ar.to_json(not_checked_fleet()))
    validator.validate(report)
    del report["hosts"]["na"]["reason"]
    assert list(validator.iter_errors(report))


def test_merge_reads_a_version_1_report_and_works_each_status_out_again(tmp_path):
    """A version 1 report (before not_checked) merges; a record whose status disagrees with its
    checks (hand-edited to clean) is restated from them."""
    doc = json.loads(ar.to_json(ar.fleet_report({"old": record(), "edited": record(bwrap=NOT_CHECKED)})))
    doc["schema_version"] = 1
    for host in doc["hosts"].values():
        del host["not_checked"], host["warnings"]
    doc["hosts"]["edited"]["status"] = "clean"
    (tmp_path / "v1.json").write_text(json.dumps(doc))
    merged = ar.merge([str(tmp_path / "v1.json")])
    assert merged["schema_version"] == 2
    assert {n: h["status"] for n, h in merged["hosts"].items()} == {"edited": "not_audited", "old": "clean"}


def test_a_check_added_later_appears_in_every_report_with_no_change_to_the_writers():
    """The writers are driven by the checks a record carries (the fifth check, runtime, comes from
    another change): it is summarized, gated, and shown in JUnit and HTML."""
    rec = record()
    rec["checks"]["runtime"] = check("findings", [{"rule": "daemon-no-seccomp-profile", "severity": "high",
                                                   "where": "/etc/docker/daemon.json", "detail": "no seccomp profile",
                                                   "fix": "set seccomp-profile"}])
    hosts = ar.collect({"h": {"record": rec}}, ["h"])
    report = ar.fleet_report(hosts)
    assert report["hosts"]["h"]["status"] == "findings" and report["summary"]["checks"]["runtime"]["findings"] == 1
    assert report["summary"]["counts"]["runtime"] == 1 and "runtime on 1" in ar.gate(report["summary"])
    root = ET.fromstring(ar.to_junit(report).encode())  # noqa: S314
    assert root.find("testsuite/testcase[@name='runtime']/failure") is not None
    assert "/etc/docker/daemon.json" in ar.to_html(report)


def test_junit_fails_a_host_where_no_check_was_selected():
    none = ar.host_record({c: check("skipped", reason="not selected (checks or tags)") for c in ar.CHECKS})
    root = ET.fromstring(ar.to_junit(ar.fleet_report({"h": none})).encode())  # noqa: S314
    error = root.find("testsuite/testcase[@name='audit']/error")
    assert error is not None and error.get("type") == "not_checked" and "no check selected" in error.get("message")
    assert root.get("errors") == "1" and root.get("skipped") == str(len(ar.CHECKS))
