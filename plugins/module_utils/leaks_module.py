# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module-side glue shared by leaks_info and leaks_remove: the options that find leaks, one spec.

Documented once, in plugins/doc_fragments/leaks.py (``extends_documentation_fragment:
sandboxguard.boundary.leaks``); the defaults come from the library.
"""

from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import leaks
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.inputs import as_list

LEAKS_ARGUMENT_SPEC = dict(
    users=dict(type="list", elements="str"),
    tmp_dir=dict(type="path", default=leaks.TMP_DIR),
    tmp_patterns=dict(type="list", elements="str", default=list(leaks.DEFAULT_TMP_PATTERNS)),
    spool_dir=dict(type="path", default=leaks.SPOOL_DIR),
    min_age=dict(type="int", default=0),
    at_spool_dirs=dict(type="list", elements="path", default=list(leaks.AT_SPOOL_DIRS)),
    runtime_root=dict(type="path", default=leaks.RUNTIME_ROOT),
)


def audit_kwargs(params):
    """The keyword arguments of ``leaks.audit`` from a module's params (AWX strings parsed once)."""
    return dict(users=as_list(params["users"]) or None, tmp_dir=params["tmp_dir"],
                tmp_patterns=tuple(as_list(params["tmp_patterns"])), spool_dir=params["spool_dir"],
                min_age=params["min_age"], at_spool_dirs=tuple(as_list(params["at_spool_dirs"])),
                runtime_root=params["runtime_root"])
