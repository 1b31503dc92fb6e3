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
      - Account names to look at. By default root and every regular account (uid 1000 and above, not nobody), plus
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
