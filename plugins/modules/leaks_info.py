#!/usr/bin/python
# Copyright: sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: leaks_info
short_description: List what agents left outside their sandbox on a host
description:
  - Finds the leftovers an agent's terminal children leave when they inherit the real C(HOME), crontab and
    user D-Bus, one finding per item with its path and age in seconds.
  - C(cron_job) for each job line in a user's table in the cron spool (comments and environment lines are not
    jobs); C(hermes_script) for each file under C(~/.hermes/scripts/); C(user_unit) for each unit file under
    C(~/.config/systemd/user/); C(enabled_timer) and C(enabled_unit) for each link in a C(*.wants/) directory
    there (what C(systemctl --user enable) leaves); C(tmp_run_dir) for each entry of the temp directory whose
    name matches O(tmp_patterns).
  - Read only; symbolic links are never followed. Reading other users' crontabs needs C(become).
version_added: 0.1.0
author:
  - sandboxguard contributors (@sandboxguard)
options:
  users:
    description:
      - Account names to audit. By default root and every regular account (uid 1000 and above, not nobody), plus
        any user with a table in the spool.
      - A comma-separated string is accepted (AWX surveys send strings).
    type: list
    elements: str
  tmp_dir:
    description: The temp directory to look for leftover run directories in.
    type: path
    default: /tmp
  tmp_patterns:
    description: Shell patterns of run directory names in O(tmp_dir).
    type: list
    elements: str
    default: ["ab-*"]
  spool_dir:
    description: The cron spool holding one table per user (Debian's location by default).
    type: path
    default: /var/spool/cron/crontabs
  min_age:
    description: Leave out findings younger than this many seconds (a run still in progress is not a leak yet).
    type: int
    default: 0
  fail_on_leaks:
    description: Fail when anything is found (for a CI gate); otherwise the module only reports.
    type: bool
    default: false
notes:
  - Supports check mode (it never changes anything).
  - Named C(sandboxguard.boundary.boundary_leaks_info) before 0.2.0; that name redirects here with a deprecation
    warning until 2.0.0.
seealso:
  - module: sandboxguard.boundary.terminal_home
"""

EXAMPLES = r"""
- name: What did eval runs leave behind?
  sandboxguard.boundary.leaks_info:
  become: true
  register: leaks

- name: Show each leak
  ansible.builtin.debug:
    msg: "{{ item.kind }} {{ item.path }} ({{ (item.age / 86400) | round(1) }} days old)"
  loop: "{{ leaks.findings }}"

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
      description: C(cron_job), C(hermes_script), C(user_unit), C(enabled_timer), C(enabled_unit) or C(tmp_run_dir).
      type: str
    path:
      description: The file, link or directory (for C(cron_job), the user's table in the spool).
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
    user:
      description: The account it belongs to (null for a run directory of an unknown owner).
      type: str
    line:
      description: For C(cron_job), the line as C(crontab -l) numbers it.
      type: int
    entry:
      description: For C(cron_job), the job line.
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
  sample: {"cron_job": 3, "hermes_script": 2, "user_unit": 0, "enabled_timer": 0, "enabled_unit": 0,
           "tmp_run_dir": 24}
leaks:
  description: Total number of findings.
  returned: always
  type: int
users:
  description: The accounts whose spool table was read.
  returned: always
  type: list
  elements: str
errors:
  description: Paths that could not be read, each C({path, op, error}) (C(op) is new; it names the call that failed).
  returned: always
  type: list
  elements: dict
roots:
  description: The cron spool, the homes and the temporary directory looked at.
  returned: always
  type: list
  elements: str
complete:
  description: False when an error may have hidden a leak.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.leaks import audit
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.inputs import as_list


def main():
    module = AnsibleModule(
        argument_spec=dict(
            users=dict(type="list", elements="str"),
            tmp_dir=dict(type="path", default="/tmp"),
            tmp_patterns=dict(type="list", elements="str", default=["ab-*"]),
            spool_dir=dict(type="path", default="/var/spool/cron/crontabs"),
            min_age=dict(type="int", default=0),
            fail_on_leaks=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    report = audit(users=as_list(p["users"]) or None, tmp_dir=p["tmp_dir"], tmp_patterns=tuple(as_list(p["tmp_patterns"])),
                   spool_dir=p["spool_dir"], min_age=p["min_age"])
    fail_msg = None
    if p["fail_on_leaks"] and report["leaks"]:
        counts = ", ".join("%s=%s" % (kind, count) for kind, count in report["counts"].items() if count)
        fail_msg = "%s leak(s) outside the sandbox: %s" % (report["leaks"], counts)
    exit_report(module, report, fail_msg=fail_msg)


if __name__ == "__main__":
    main()
