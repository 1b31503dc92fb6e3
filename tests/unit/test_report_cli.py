# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard report merge --out DIR IN...`: slices in, one set of reports out, exit code by status."""
import json
import os

from sandboxguard._fleet import audit_report as ar
from sandboxguard_cli import main

SUID = {"path": "/srv/h/sandboxes/docker/t1/workspace/sh", "mode": "04755", "caps": None, "uid": 0, "gid": 0,
        "reasons": ["setuid"]}


def record(findings=()):
    status = "findings" if findings else "clean"
    checks = {name: {"status": "clean", "findings": [], "reason": None} for name in ar.CHECKS}
    checks["privileged_files"] = {"status": status, "findings": list(findings), "reason": None}
    return ar.host_record(checks)


def slices(tmp_path, dirty=True):
    ar.write_reports(ar.fleet_report({"web-1": record([SUID] if dirty else []), "web-2": record()}),
                     str(tmp_path / "slice-1"))
    ar.write_reports(ar.fleet_report({"db-1": record(), "gone": ar.unreachable_record("timeout")} if dirty else
                                     {"db-1": record()}), str(tmp_path / "slice-2"))
    return [str(tmp_path / "slice-1"), str(tmp_path / "slice-2")]


def test_merge_writes_one_set_of_reports_and_exits_1_on_findings(tmp_path, capsys):
    out = tmp_path / "merged"
    assert main.main(["report", "merge", "--out", str(out), *slices(tmp_path)]) == 1
    with open(out / ar.JSON_NAME) as f:
        report = json.load(f)
    assert list(report["hosts"]) == ["gone", "web-1", "db-1", "web-2"]
    assert report["summary"]["hosts_total"] == 4 and report["summary"]["hosts_unreachable"] == 1
    assert sorted(os.listdir(out)) == ["boundary-audit.html", "boundary-audit.json", "boundary-audit.sarif",
                                      "boundary-audit.xml", "hosts"]
    assert "4 host(s), 1 with findings" in capsys.readouterr().out


def test_merge_of_clean_slices_exits_0_and_json_prints_the_summary(tmp_path, capsys):
    out = tmp_path / "merged"
    assert main.main(["report", "merge", "--json", "--format", "json", "--no-host-files", "--out", str(out),
                      *slices(tmp_path, dirty=False)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["summary"]["hosts_clean"] == 3 and os.listdir(out) == ["boundary-audit.json"]


def test_merge_of_something_that_is_not_a_report_is_a_usage_error_naming_it(tmp_path, capsys):
    bad = tmp_path / "empty"
    bad.mkdir()
    assert main.main(["report", "merge", "--out", str(tmp_path / "o"), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sandboxguard report: ") and str(bad) in err and "\n" == err[-1] and err.count("\n") == 1


def test_merge_json_is_the_report_envelope_with_the_inputs_as_roots(tmp_path, capsys):
    from sandboxguard import report

    out = tmp_path / "merged"
    inputs = slices(tmp_path)
    main.main(["report", "merge", "--json", "--format", "json", "--no-host-files", "--out", str(out), *inputs])
    printed = json.loads(capsys.readouterr().out)
    assert set(report.ENVELOPE_KEYS) <= set(printed)
    assert printed["roots"] == [str(i) for i in inputs] and printed["out"] == str(out)
    assert printed["files"] and printed["changed"] is True and printed["counts"]["hosts"] >= 1
