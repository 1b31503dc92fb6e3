# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Options shared by the modules that look for leaks (leaks_info, leaks_remove): one text, one source.

The argument spec they document is module_utils/leaks_module.py's LEAKS_ARGUMENT_SPEC.
"""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  users:
    description:
      - Account names to look at (any uid; root only when named here).
      - Every job line of an audited user's cron table counts as a leak, so by default only the accounts that run
        agents are looked at, as the fleet audit does - the owners of the O(hermes_home) directories and their
        profiles, of O(sandbox_dir) and of the C(<sandbox>/docker) directories (not of the task directories below
        them, which a root container can chown), and O(agent_user) - never root. With none of those given (or all
        owned by root) and no O(users), the module fails and says so instead of looking at every account.
      - The result's C(scope) says why each account was looked at.
      - A comma-separated string is accepted (AWX surveys send strings).
    type: list
    elements: str
  hermes_home:
    description:
      - HERMES_HOME directories whose owners (and whose profiles' and C(sandboxes/docker) directories' owners) are
        the accounts looked at when O(users) is not given. A symlink is never followed to find an owner.
    type: list
    elements: path
    aliases: [hermes_homes]
    default: []
  sandbox_dir:
    description: The agent's C(TERMINAL_SANDBOX_DIR), when set; its owner and its C(docker) directory's are in scope.
    type: path
  agent_user:
    description: The unprivileged user the agent runs as; in scope when O(users) is not given.
    type: str
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
    description:
      - Leave out leaks younger than this many seconds (a run still in progress is not a leak yet); they are
        neither reported nor removed.
    type: int
    default: 0
  at_spool_dirs:
    description: The atd spools holding one file per queued C(at)/C(batch) job; missing ones are skipped.
    type: list
    elements: path
    default: [/var/spool/cron/atjobs, /var/spool/at]
  runtime_root:
    description: Where the users' runtime directories (C(XDG_RUNTIME_DIR)) live, one per uid.
    type: path
    default: /run/user
"""
