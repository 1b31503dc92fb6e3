# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter runner_cleanup_helper: the root helper's text, from its one source in the library
(sandboxguard._privileged.runner_texts.helper_script)."""

from ansible.errors import AnsibleFilterError

from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.errors import InputError
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._privileged import runner_texts


def runner_cleanup_helper(python, install_dir, helper):
    try:
        return runner_texts.helper_script(python=python, install_dir=install_dir, helper=helper)
    except InputError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """The runner_cleanup role's root helper."""

    def filters(self):
        return {"runner_cleanup_helper": runner_cleanup_helper}
