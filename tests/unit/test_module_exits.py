# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Every result leaves through text.for_result: the one way out of each module and plugin.

ansible-core 2.19+ refuses a whole module result holding one string that is not UTF-8
(what os.fsdecode makes of a hostile file name), so the audit of a host reported the host
as an error and never named the setuid shell beside the name (issue 19). A module that
calls exit_json, fail_json or warn itself would bring that back: each goes through
plugins/module_utils/report_module.py (exit_report, exit_result, fail, warn), and each
action plugin and JSON writer calls for_result. A refusal of the library (errors.InputError)
fails the module's task with its one line (report_module.input_errors_fail), never a traceback.
"""
import re

import repo_scan as scan

DIRECT = re.compile(r"\b(module|self\._module|mod)\.(exit_json|fail_json|warn)\(")
ONE_WAY_OUT = scan.MODULE_UTILS + "/report_module.py"


def _files(top):
    return scan.python_files(top, recursive=False)


def test_no_module_or_module_util_exits_or_warns_by_itself():
    found = ["%s: %s" % (rel, m.group(0)) for rel in _files(scan.MODULES) + _files(scan.MODULE_UTILS)
             if rel != ONE_WAY_OUT for m in DIRECT.finditer(scan.read(rel))]
    assert found == []


def test_the_one_way_out_applies_for_result_and_one_line():
    text = scan.read(ONE_WAY_OUT)
    assert "module.exit_json(**for_result(result))" in text and "diff_for_people" in text
    assert "module.fail_json(msg=one_line(msg), **for_result(result))" in text
    assert "module.warn(one_line(text))" in text


def test_every_module_leaves_through_report_module_and_runs_the_library_inside_input_errors_fail():
    # safe_fetch and audit_report have no main: their action plugins run
    mains = [rel for rel in _files(scan.MODULES) if "def main" in scan.read(rel)]
    assert mains and [rel for rel in mains if not re.search(r"(report|walk)_module import", scan.read(rel))] == []
    # a module that calls the library with no adapter lets an InputError out as a traceback
    ways = ("input_errors_fail", "run_walk_module", "except InputError", "except Exception")
    assert [rel for rel in mains if not any(way in scan.read(rel) for way in ways)] == []


def test_action_plugins_and_json_writers_carry_results_through_for_result():
    for rel in _files(scan.ACTION):
        assert "for_result(" in scan.read(rel), rel
    assert scan.read(scan.CLI + "/output.py").count("json.dumps(for_result(") == 2  # emit --json and json_line
    assert "json.dumps(for_result(report)" in scan.read(scan.LIBRARY + "/_fleet/audit_report.py")
