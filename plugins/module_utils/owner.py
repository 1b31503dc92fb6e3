# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PRIVATE to the library and the collection.

Owner and group options (names or numbers) to (uid, gid), for the modules that chown.

The rule lives once, in the library (sandboxguard.owners); this only turns its error into
a failed task.
"""

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import input_errors_fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import owners


def resolve_owner(module, owner, group):
    """(uid, gid) for owner/group given as names or numbers; None when owner is None."""
    with input_errors_fail(module):
        return owners.resolve_owner(owner, group)
