# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PRIVATE to the library and the collection.

Module-side glue shared by leaks_info and leaks_remove: the options that find leaks, one spec.

Documented once, in plugins/doc_fragments/leaks.py (``extends_documentation_fragment:
sandboxguard.boundary.leaks``); the defaults come from the library.
"""

from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._fleet import audit
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._leaks.home import (
    DEFAULT_TMP_PATTERNS,
    RUNTIME_ROOT,
    TMP_DIR,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._leaks.cron import SPOOL_DIR
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._leaks.atjobs import AT_SPOOL_DIRS
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_list, as_value

LEAKS_ARGUMENT_SPEC = dict(
    users=dict(type="list", elements="str"),
    hermes_home=dict(type="list", elements="path", aliases=["hermes_homes"], default=[]),
    sandbox_dir=dict(type="path"),
    agent_user=dict(type="str"),
    tmp_dir=dict(type="path", default=TMP_DIR),
    tmp_patterns=dict(type="list", elements="str", default=list(DEFAULT_TMP_PATTERNS)),
    spool_dir=dict(type="path", default=SPOOL_DIR),
    min_age=dict(type="int", default=0),
    at_spool_dirs=dict(type="list", elements="path", default=list(AT_SPOOL_DIRS)),
    runtime_root=dict(type="path", default=RUNTIME_ROOT),
)


def leak_scope(params):
    """(users, scope, reason) from a module's params: the named ``users``, else the accounts
    that run agents (audit.leak_scope); ``users`` is [] and ``reason`` says why when none is known."""
    return audit.leak_scope(as_list(params["users"]), as_list(params["hermes_home"]),
                            as_value(params["sandbox_dir"]), as_value(params["agent_user"]),
                            where="users", homes_word="hermes_home, sandbox_dir or agent_user")


def audit_kwargs(params, users=None):
    """The keyword arguments of ``leaks.audit`` from a module's params (AWX strings parsed once).

    *users*: the accounts to audit (leak_scope); None takes ``users`` as given.
    """
    return dict(users=(as_list(params["users"]) if users is None else users) or None, tmp_dir=params["tmp_dir"],
                tmp_patterns=tuple(as_list(params["tmp_patterns"])), spool_dir=params["spool_dir"],
                min_age=params["min_age"], at_spool_dirs=tuple(as_list(params["at_spool_dirs"])),
                runtime_root=params["runtime_root"])
