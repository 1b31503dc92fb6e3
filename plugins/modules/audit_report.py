#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# This is a virtual module: it is entirely implemented by the action plugin of the same
# name (plugins/action/audit_report.py), which runs on the controller. This file carries
# its documentation for ansible-doc.

DOCUMENTATION = r"""
module: audit_report
short_description: Write the fleet audit reports on the controller from every host's audit result
version_added: 1.0.0
description:
  - Runs on the controller (run it with C(run_once)). Reads the result of M(sandboxguard.boundary.audit_info)
    that each host of the play registered under O(result_var), builds the fleet report and writes into
    O(report_dir) C(boundary-audit.json) (the shape of C(docs/schemas/boundary-audit.schema.json)),
    C(boundary-audit.xml) (JUnit, a testsuite per host and a testcase per check), C(boundary-audit.html)
    (one self-contained page, fleet summary first, hosts worst first), C(boundary-audit.sarif) (SARIF 2.1.0
    for GitHub code scanning and other SARIF readers, one result per finding) and C(hosts/<host>.json), one per
    host, which C(sandboxguard report merge) combines across AWX job slices.
  - A check that was selected and covered nothing (no root in scope, no Hermes home found, a required input
    missing) is C(not_checked), never clean, and its host C(not_audited) (amber in the HTML report, an C(error)
    of type C(not_checked) in JUnit, an error notification in SARIF). RV(gate) names such hosts unless
    O(allow_not_checked).
  - A host whose container engine discovery was off or failed has a warning in every report and on the console.
  - A host of the play without a result (unreachable, or removed from the play by an earlier failure)
    appears as C(unreachable) in every report; a host whose audit module failed appears as C(error).
  - It never fails because of findings; it returns RV(gate), the message to fail with, for the task after it.
  - The controller needs nothing but ansible-core and the collection; the report code is the collection's
    own C(module_utils).
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  report_dir:
    description: Directory on the controller for the reports; created when missing. A relative path is relative to the directory C(ansible-playbook) runs in.
    type: path
    default: boundary-audit
  result_var:
    description: The variable each host registered the audit result under.
    type: str
    default: boundary_audit_result
  hosts:
    description: The hosts to report on; default every host of the play (C(ansible_play_hosts_all)).
    type: list
    elements: str
  formats:
    description: Which reports to write (C(json), C(junit), C(html), C(sarif)); a comma-separated string is accepted.
    type: raw
    default: [json, junit, html, sarif]
  host_files:
    description: Write C(hosts/<host>.json) too. The strings C("true") and C("false") are accepted.
    type: raw
    default: true
  fail_on_findings:
    description: RV(gate) names hosts with findings.
    type: raw
    default: true
  fail_on_errors:
    description: RV(gate) names hosts that could not be audited completely (a check in error, unreachable).
    type: raw
    default: true
  allow_not_checked:
    description:
      - RV(gate) leaves out hosts where a selected check was C(not_checked) (it covered nothing). By default such a
        host fails the gate, as nothing checked is never clean; set it when a check cannot apply to some hosts
        and you have narrowed nothing else (better - select the checks that apply with tags or C(checks)).
        The strings C("true") and C("false") are accepted.
    type: raw
    default: false
  title:
    description: Title of the HTML page.
    type: str
    default: sandboxguard boundary audit
attributes:
  check_mode:
    support: full
    description: The reports are written in check mode too (they are the point of an audit); hosts are not touched.
  diff_mode:
    support: none
    description: No diff.
  platform:
    platforms: posix
    support: full
    description: Runs on the controller.
"""

EXAMPLES = r"""
- name: Audit every host
  sandboxguard.boundary.audit_info:
    hermes_home: /home/hermes/.hermes
  register: boundary_audit_result
  ignore_unreachable: true
  ignore_errors: true

- name: Write the reports
  sandboxguard.boundary.audit_report:
    report_dir: reports/
  run_once: true
  register: audit

- name: Fail on findings, after the reports are written
  ansible.builtin.fail:
    msg: "{{ audit.gate }}"
  run_once: true
  when: audit.gate is not none
"""

RETURN = r"""
report_dir:
  description: Where the reports are.
  returned: always
  type: str
files:
  description: The files written.
  returned: always
  type: list
  elements: str
summary:
  description: The C(summary) of C(boundary-audit.json).
  returned: always
  type: dict
stats:
  description: The aggregate for C(set_stats) (C(hosts_total), C(hosts_with_findings), C(hosts_error),
    C(hosts_unreachable), C(hosts_not_audited), C(hosts_not_checked), C(hosts_with_warnings), C(hosts_clean),
    C(checks) per check and status, C(counts) findings per check).
  returned: always
  type: dict
gate:
  description: Why the play should fail (findings, errors, hosts not audited), or null when it passes.
  returned: always
  type: str
hosts:
  description: Each host's status.
  returned: always
  type: dict
host_errors:
  description:
    - Why each reached host has a check in C(error) or C(not_checked), one line each (C(host check - reason),
      C(host check not checked - reason)), worst host first, at most five and then how many more. A Hermes home
      or root refused because it goes through a symlink another user could have planted names the real path it
      leads to, the path to give instead (after checking it); a check not checked names the variable to set.
  returned: always
  type: list
  elements: str
host_warnings:
  description:
    - Each host's warnings (C(host - warning)), e.g. container engine discovery off or failed, at most five and
      then how many more. They are also the task's warnings, shown on the console.
  returned: always
  type: list
  elements: str
msg:
  description: The fleet summary in one line (hosts per status, where the reports are), RV(host_errors) and RV(host_warnings).
  returned: always
  type: str
"""
