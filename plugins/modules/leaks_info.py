#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
---
module: leaks_info
short_description: List what agents left outside their sandbox on a host
description:
  - Finds the leftovers an agent's terminal children leave when they inherit the real C(HOME), crontab and
    user D-Bus, one finding per item with its C(kind), C(path), a one-line C(reason) and its age in seconds.
  - C(cron_job) for each job in a user's table in the cron spool, the whole table read streamed (comments and
    environment lines are not jobs; a NUL splits a line as cron's reader does); C(at_job) for each job queued
    with C(at) or C(batch) in the atd spool; C(hermes_script) for each file under C(~/.hermes/scripts/);
    C(user_unit) for each unit file under C(~/.config/systemd/user/), C(~/.local/share/systemd/user/) or the
    runtime C(/run/user/UID/systemd/user/); C(enabled_timer) and C(enabled_unit) for each link in a
    C(*.wants/) directory there (what C(systemctl --user enable) leaves); C(transient_unit) for each unit
    under C(/run/user/UID/systemd/transient/) (C(systemd-run --user) leftovers); C(autostart) for each entry of
    C(~/.config/autostart/); C(tmp_run_dir) for each entry of the temp directory whose name matches
    O(tmp_patterns).
  - With O(baseline), a snapshot taken before an eval run is compared with the host afterwards and only what
    the run added or changed is reported, including C(ssh_file) (a new file in the real C(~/.ssh/), which
    C(ssh-keygen) writes whatever C(HOME) says) and C(shell_rc) (a new or changed C(~/.bashrc), C(~/.profile),
    ...). Without a baseline these two kinds are not reported (every host has such files).
  - Problems that do not stop the audit (an incomplete baseline) are Ansible warnings.
  - By default only the accounts that run agents are looked at (see O(users)); root only when named.
  - Read only; symbolic links are never followed below a home or a spool. Reading other users' crontabs and
    homes needs C(become).
version_added: 1.0.0
author:
  - sandboxguard contributors (@sandboxguard)
options:
  baseline:
    description:
      - A JSON snapshot file on the target for baseline mode. See O(baseline_mode).
      - Run once before an eval run (the snapshot is written) and once after (only what the run added or
        changed is reported). The file is the audit's own record and is written in check mode too.
    type: path
  baseline_mode:
    description:
      - V(auto) writes O(baseline) when it does not exist and compares with it when it does.
      - V(write) writes a new snapshot (replacing one) and reports the plain audit.
      - V(compare) requires O(baseline) to exist and reports only what was added or changed since.
    type: str
    choices: [auto, write, compare]
    default: auto
  fail_on_leaks:
    description: Fail when anything is found (for a CI gate); otherwise the module only reports.
    type: bool
    default: false
extends_documentation_fragment:
  - sandboxguard.boundary.leaks
  - sandboxguard.boundary.names
notes:
  - Supports check mode (it never changes anything).
  - Named C(sandboxguard.boundary.boundary_leaks_info) before 0.2.0; that name redirects here with a deprecation
    warning until 2.0.0.
seealso:
  - module: sandboxguard.boundary.terminal_home
"""

EXAMPLES = r"""
- name: What did eval runs leave behind? (the accounts that own the Hermes home and run the agent)
  sandboxguard.boundary.leaks_info:
    hermes_home: /home/hermes/.hermes
    agent_user: hermes
  become: true
  register: leaks

- name: Show each leak
  ansible.builtin.debug:
    msg: "{{ item.kind }} {{ item.path }} ({{ (item.age / 86400) | round(1) }} days old)"
  loop: "{{ leaks.findings }}"

- name: Before the eval run, record what the host holds
  sandboxguard.boundary.leaks_info:
    agent_user: hermes
    baseline: /var/lib/sandboxguard/leaks-before.json
    baseline_mode: write
  become: true

- name: After the eval run, fail on anything the run added (new cron jobs, at jobs, units, ~/.ssh keys...)
  sandboxguard.boundary.leaks_info:
    agent_user: hermes
    baseline: /var/lib/sandboxguard/leaks-before.json
    baseline_mode: compare
    fail_on_leaks: true
  become: true

- name: Gate a CI host on a clean state
  sandboxguard.boundary.leaks_info:
    users: [ci-agent]
    min_age: 3600
    fail_on_leaks: true
  become: true
"""

RETURN = r"""
findings:
  description: One entry per leftover item.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description:
        - C(cron_job), C(at_job), C(hermes_script), C(user_unit), C(enabled_timer), C(enabled_unit),
          C(transient_unit), C(autostart), C(ssh_file), C(shell_rc) or C(tmp_run_dir).
        - C(ssh_file) and C(shell_rc) only in baseline mode.
      type: str
    path:
      description: The file, link or directory (for C(cron_job), the user's table in the spool).
      type: str
    reason:
      description: One line saying what the item is and why it is a leak.
      type: str
    change:
      description: In baseline mode, C(added) (not in the baseline) or C(modified) (same path, other content).
      type: str
    age:
      description: Seconds since its last modification.
      type: int
    mtime:
      description: Its modification time (seconds since the epoch).
      type: int
    uid:
      description: Its owner.
      type: int
    dev:
      description: The device of the file (for C(cron_job), of the table) when the audit saw it.
      type: int
    ino:
      description: Its inode number; M(sandboxguard.boundary.leaks_remove) moves only this inode.
      type: int
    user:
      description: The account it belongs to (null for a run directory of an unknown owner).
      type: str
    line:
      description: For C(cron_job), the line as C(crontab -l) numbers it.
      type: int
    entry:
      description: For C(cron_job), the job line; for C(at_job), the command; for C(autostart), the file name.
      type: str
    job:
      description: For C(at_job), the job number (as C(atq) shows it).
      type: int
    queue:
      description: For C(at_job), the queue letter (C(a) for at, C(b) for batch, C(=) while running).
      type: str
    run_at:
      description: For C(at_job), when it runs (seconds since the epoch).
      type: int
    scope:
      description: For units and enabled links, C(persistent) (under the home) or C(runtime) (under /run/user).
      type: str
    unit:
      description: For units and enabled links, the unit name.
      type: str
    wanted_by:
      description: For enabled links, the target that wants it (C(timers.target)).
      type: str
    target:
      description: For enabled links, where the link points.
      type: str
    empty:
      description: For C(tmp_run_dir), whether the directory is empty.
      type: bool
  sample:
    - {"kind": "cron_job", "path": "/var/spool/cron/crontabs/agent", "line": 1, "age": 86400,
       "entry": "0 2 * * * /home/agent/.hermes/scripts/backup.sh", "user": "agent", "uid": 1000, "mtime": 1790000000}
counts:
  description: Number of findings per kind.
  returned: always
  type: dict
  sample: {"cron_job": 3, "at_job": 0, "hermes_script": 2, "user_unit": 0, "enabled_timer": 0,
           "enabled_unit": 0, "transient_unit": 0, "autostart": 0, "ssh_file": 0, "shell_rc": 0, "tmp_run_dir": 24}
leaks:
  description: Total number of findings.
  returned: always
  type: int
users:
  description: The accounts whose spool table was read.
  returned: always
  type: list
  elements: str
scope:
  description: Why each account was looked at ({name - [reasons]}), for instance C(owner of the Hermes home /home/agent/.hermes).
  returned: always
  type: dict
errors:
  description: Paths that could not be read, each C({path, op, error}).
  returned: always
  type: list
  elements: dict
complete:
  description: False when an error may have hidden a leak (an unreadable table, a walk cut short).
  returned: always
  type: bool
roots:
  description: The spools, temp directory and homes looked at.
  returned: always
  type: list
  elements: str
elapsed:
  description: Seconds the audit took.
  returned: always
  type: float
baseline:
  description: In baseline mode, what happened to the snapshot file.
  returned: when O(baseline) is set
  type: dict
  contains:
    path:
      description: The snapshot file.
      type: str
    action:
      description: C(written) (the findings are the plain audit) or C(compared) (only what was added or changed).
      type: str
    created:
      description: When the snapshot was taken (seconds since the epoch).
      type: int
    entries:
      description: How many items the snapshot holds (named so that C(result.baseline.entries) works in Jinja).
      type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report, fail, input_errors_fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.leaks_module import (
    LEAKS_ARGUMENT_SPEC,
    audit_kwargs,
    leak_scope,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.leaks import (
    audit,
    audit_with_baseline_file,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._leaks.baseline import (
    BASELINE_MODES,
    DEFAULT_BASELINE_MODE,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            LEAKS_ARGUMENT_SPEC,
            baseline=dict(type="path"),
            baseline_mode=dict(type="str", choices=list(BASELINE_MODES), default=DEFAULT_BASELINE_MODE),
            fail_on_leaks=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    users, scope, reason = leak_scope(p)
    if not users:
        fail(module, "leaks_info: %s" % reason, scope={})
    args = audit_kwargs(p, users)
    with input_errors_fail(module):
        if p["baseline"]:
            report = audit_with_baseline_file(p["baseline"], p["baseline_mode"], **args)
        else:
            report = audit(**args)
    report["scope"] = scope
    fail_msg = None
    if p["fail_on_leaks"] and report["leaks"]:
        counts = ", ".join("%s=%s" % (kind, count) for kind, count in report["counts"].items()
                           if count and kind != "errors")
        fail_msg = "%s leak(s) outside the sandbox: %s" % (report["leaks"], counts)
    exit_report(module, report, fail_msg=fail_msg)


if __name__ == "__main__":
    main()
