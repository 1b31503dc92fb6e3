#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
module: leaks_remove
short_description: Take what agents left outside their sandbox out of service, into a quarantine directory
version_added: 1.0.0
description:
  - Finds leaks exactly as M(sandboxguard.boundary.leaks_info) does (same options, same findings) and moves each
    one into O(quarantine_dir)C(/<UTC time>/), so nothing is lost and the operator can put back what was
    legitimate.
  - C(cron_job) - the job line leaves the user's table (through C(crontab -u USER -) when the real crontab is
    installed, so cron reloads it; otherwise the spool file is rewritten keeping its mode and owner and the spool
    directory's mtime is bumped); the removed lines are kept in C(crontab/<user>) in the quarantine.
  - Every other kind (C(at_job), C(hermes_script), C(user_unit), C(enabled_timer), C(enabled_unit),
    C(transient_unit), C(autostart), C(tmp_run_dir)) - the file, link or directory is moved under
    C(files/<its path>) in the quarantine; a link is moved as a link, never followed. An at job out of atd's spool
    never runs; a transient unit still loaded runs until its user manager stops it.
  - Every job line of every audited user's table is a leak, as in the audit, so by default only the accounts
    that run agents are looked at (see O(users)); root and other accounts only when named in O(users).
  - Nothing is done by path below a directory the agent can write - the directory holding each leak is opened
    component by component (no symlink followed below a directory another user can change), the leak is checked
    to be the very inode the audit saw (anything else there is left and reported), and it moves with
    C(renameat) between that directory and the quarantine's. Across file systems (a tmpfs C(/tmp)), it is copied
    through descriptors (files, symlinks as symlinks, directories never followed into a link or another mount,
    FIFOs and sockets recreated; a device node is refused) and then removed, piece by piece, only while it is
    still what was copied. Modes lose their setuid/setgid bits in the quarantine.
  - A second run finds nothing and changes nothing.
author:
  - sandboxguard contributors (@sandboxguard)
options:
  quarantine_dir:
    description:
      - Where removed leaks are kept, one directory per run (created 0700, root-owned).
      - It must be a directory only root can write; one that another user can change is refused.
    type: path
    default: /var/lib/sandboxguard/quarantine
extends_documentation_fragment:
  - sandboxguard.boundary.leaks
  - sandboxguard.boundary.names
notes:
  - Needs root (C(become)) for other users' tables and homes.
seealso:
  - module: sandboxguard.boundary.leaks_info
  - module: sandboxguard.boundary.audit_info
attributes:
  check_mode:
    support: full
    description: Reports what would be removed and changes nothing.
  diff_mode:
    support: none
    description: The report lists what was removed.
  platform:
    platforms: posix
    support: full
    description: Linux hosts.
"""

EXAMPLES = r"""
- name: Take the agent's leftovers out of service
  sandboxguard.boundary.leaks_remove:
    users: [agent]
    min_age: 3600
  become: true

- name: The same for the accounts that own the Hermes home and run the agent
  sandboxguard.boundary.leaks_remove:
    hermes_home: /home/hermes/.hermes
    agent_user: hermes
  become: true
"""

RETURN = r"""
removed:
  description: One entry per leak taken out of service (C(kind), C(path), C(user), and C(entry) or C(quarantine)).
  returned: always
  type: list
  elements: dict
quarantine:
  description: This run's quarantine directory.
  returned: always
  type: str
counts:
  description: Leaks removed per kind, and C(errors).
  returned: always
  type: dict
errors:
  description: What could not be removed (C(path), C(op), C(error)).
  returned: always
  type: list
  elements: dict
complete:
  description: False when something could not be removed.
  returned: always
  type: bool
dry_run:
  description: True in check mode (nothing was moved; RV(removed) says what would be).
  returned: always
  type: bool
scope:
  description: Why each account was looked at ({name - [reasons]}).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.leaks_module import (
    LEAKS_ARGUMENT_SPEC,
    audit_kwargs,
    leak_scope,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import (
    errors_text,
    exit_report,
    fail,
    input_errors_fail,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import leaks
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._fleet import leaks_remove


def main():
    module = AnsibleModule(
        argument_spec=dict(
            LEAKS_ARGUMENT_SPEC,
            quarantine_dir=dict(type="path", default=leaks_remove.DEFAULT_QUARANTINE),
        ),
        supports_check_mode=True,
    )
    p = module.params
    users, scope, reason = leak_scope(p)
    if not users:
        fail(module, "leaks_remove: %s" % reason, scope={}, removed=[])
    with input_errors_fail(module, removed=[]):
        found = leaks.audit(**audit_kwargs(p, users))
        report = leaks_remove.remove(found["findings"], p["quarantine_dir"], dry_run=module.check_mode)
    report["scope"] = scope
    exit_report(module, report, fail_msg=errors_text(report, "leak(s) could not be removed") if report["errors"] else None)


if __name__ == "__main__":
    main()
