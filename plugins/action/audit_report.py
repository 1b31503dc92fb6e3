# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of sandboxguard.boundary.audit_report (documented in plugins/modules/audit_report.py).

Runs on the controller only, once per play: reads every play host's registered audit
result from hostvars, builds the fleet report with the library
(``module_utils/sandboxguard/_fleet/audit_report.py``, the collection's own copy: nothing is
installed on the controller) and writes the reports. Hosts of the play without a result
are unreachable hosts and appear in every report. The task's result passes through
text.for_result, as every module's does (plugins/module_utils/report_module.py).
"""

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._fleet import audit_report
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import (
    InputError,
    as_bool,
    as_list,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.text import escape, for_result, one_line

ARGUMENT_SPEC = {
    "report_dir": {"type": "path", "default": audit_report.DEFAULT_REPORT_DIR},
    "result_var": {"type": "str", "default": "boundary_audit_result"},
    "hosts": {"type": "list", "elements": "str"},
    "formats": {"type": "raw", "default": list(audit_report.FORMATS)},
    "host_files": {"type": "raw", "default": True},
    "fail_on_findings": {"type": "raw", "default": True},
    "fail_on_errors": {"type": "raw", "default": True},
    "allow_not_checked": {"type": "raw", "default": False},
    "title": {"type": "str", "default": audit_report.TITLE},
}


def plain(value):
    """Builtin types only (the registered results carry the templating engine's types)."""
    if isinstance(value, dict):
        return {to_text(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return to_text(value)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            formats = as_list(args["formats"])
            host_files = as_bool(args["host_files"], True, "host_files")
            fail_on_findings = as_bool(args["fail_on_findings"], True, "fail_on_findings")
            fail_on_errors = as_bool(args["fail_on_errors"], True, "fail_on_errors")
            allow_not_checked = as_bool(args["allow_not_checked"], False, "allow_not_checked")
        except InputError as exc:
            raise AnsibleActionFail(one_line(str(exc))) from None
        unknown = [f for f in formats if f not in audit_report.FORMATS]
        if unknown:
            raise AnsibleActionFail("formats: unknown %s; choose from %s" % (
                ", ".join(unknown), ", ".join(audit_report.FORMATS)))
        hosts = args["hosts"] or list(task_vars.get("ansible_play_hosts_all") or [])
        hostvars = task_vars.get("hostvars") or {}
        results = {}
        this_host = task_vars.get("inventory_hostname")
        for name in hosts:
            if name == this_host:
                # this host's own variables (the implicit localhost of a run without an
                # inventory is in no hostvars: it was reported unreachable)
                value = task_vars.get(args["result_var"])
                results[name] = plain(value) if isinstance(value, dict) else None
                continue
            try:
                host = hostvars[name]
            except KeyError:
                continue
            value = host.get(args["result_var"]) if hasattr(host, "get") else None
            results[name] = plain(value) if isinstance(value, dict) else None
        report = audit_report.fleet_report(audit_report.collect(results, hosts))
        # Relative to where ansible-playbook runs (AWX: the project directory), not to the playbook:
        # the collection's own playbooks live inside the installed collection.
        report_dir = os.path.abspath(os.path.expanduser(args["report_dir"]))
        try:
            written = audit_report.write_reports(report, report_dir, formats, host_files)
        except OSError as exc:
            raise AnsibleActionFail(one_line("boundary_audit_report_dir %s: %s; pick a directory the controller user "
                                             "can write" % (escape(report_dir), exc.strerror or exc))) from None
        summary = report["summary"]
        # why a reached host is in error (a refused Hermes home names the real path to give) or
        # not audited (a check not checked names the variable to set), and each host's warnings
        why = audit_report.error_lines(report)
        warnings = audit_report.warning_lines(report)
        result.update(for_result(dict(
            changed=False, report_dir=report_dir, files=written, summary=summary,
            stats=audit_report.stats(summary),
            gate=audit_report.gate(summary, fail_on_findings, fail_on_errors, allow_not_checked),
            hosts={name: record["status"] for name, record in report["hosts"].items()},
            host_errors=why, host_warnings=warnings, msg=summary_line(summary, report_dir, why, warnings))))
        # on the console as Ansible's own warnings too: engine discovery off or failed on a host
        if warnings:
            result["warnings"] = list(result.get("warnings") or []) + [one_line(w) for w in warnings]
        return result


def summary_line(summary, report_dir, why, warnings):
    """The fleet summary in one line: hosts per status, where the reports are, why hosts are
    not clean for want of a check, and the hosts' warnings."""
    return "%d host(s): %d with findings, %d error, %d not audited, %d unreachable, %d clean; reports in %s%s%s" % (
        summary["hosts_total"], summary["hosts_with_findings"], summary["hosts_error"] - summary["hosts_unreachable"],
        summary["hosts_not_audited"], summary["hosts_unreachable"], summary["hosts_clean"], escape(report_dir),
        "; not audited or errors: " + " | ".join(why) if why else "",
        "; warnings: " + " | ".join(warnings) if warnings else "")
