# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Every result leaves through text.for_result: the one way out of each module and plugin.

ansible-core 2.19+ refuses a whole module result holding one string that is not UTF-8
(what os.fsdecode makes of a hostile file name), so the audit of a host reported the host
as an error and never named the setuid shell beside the name (issue 19). A module that
calls exit_json, fail_json or warn itself would bring that back: each goes through
plugins/module_utils/report_module.py (exit_report, exit_result, fail, warn), and each
action plugin and JSON writer calls for_result.
"""
import os
import re

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRECT = re.compile(r"\b(module|self\._module|mod)\.(exit_json|fail_json|warn)\(")


def _sources(*parts):
    folder = os.path.join(TOP, *parts)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                yield name, handle.read()


def test_no_module_or_module_util_exits_or_warns_by_itself():
    found = []
    for folder in (("plugins", "modules"), ("plugins", "module_utils")):
        for name, text in _sources(*folder):
            if name == "report_module.py":
                continue
            found += ["%s: %s" % (name, m.group(0)) for m in DIRECT.finditer(text)]
    assert found == []


def test_the_one_way_out_applies_for_result_and_one_line():
    text = dict(_sources("plugins", "module_utils"))["report_module.py"]
    assert "module.exit_json(**for_result(result))" in text and "diff_for_people" in text
    assert "module.fail_json(msg=one_line(msg), **for_result(result))" in text
    assert "module.warn(one_line(text))" in text


def test_every_module_leaves_through_report_module():
    missing = [name for name, text in _sources("plugins", "modules")
               if not re.search(r"report_module import|walk_module import", text) and "def main" in text]
    assert missing == []  # safe_fetch and audit_report have no main: their action plugins run


def test_action_plugins_and_json_writers_carry_results_through_for_result():
    for name, text in _sources("plugins", "action"):
        assert "for_result(" in text, name
    with open(os.path.join(TOP, "python", "src", "sandboxguard_cli", "output.py"), encoding="utf-8") as handle:
        output = handle.read()
    assert output.count("json.dumps(for_result(") == 2  # emit --json and json_line
    report_py = os.path.join(TOP, "python", "src", "sandboxguard", "_fleet", "audit_report.py")
    with open(report_py, encoding="utf-8") as handle:
        assert "json.dumps(for_result(report)" in handle.read()
