# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of sandboxguard.boundary.safe_fetch (documented in plugins/modules/safe_fetch.py).

Runs on the controller. The sandbox side is the task's own connection (ssh, docker, local,
...): the library's shell program goes over ``_low_level_execute_command``; every check,
the decoding and the landing are the library's (``module_utils/sandboxguard/fetch.py``).
Nothing runs through Python on the target, so targets without Python work too. The
task's result passes through text.for_result, as every module's does (a name from the
sandbox that is not UTF-8 is carried escaped, its bytes in a ``<key>_b64`` sibling).
"""

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.action import ActionBase

from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import fetch as fetchlib
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._fetch.policy import (
    DEFAULT_MAX_BYTES,
    DEFAULT_OPEN_TIMEOUT_S,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._fetch.program import shell_join
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.text import escape, for_result, one_line

ARGUMENT_SPEC = {
    "src": {"type": "str", "required": True},
    "dest": {"type": "path", "required": True},
    "name": {"type": "str"},
    "max_bytes": {"type": "int", "default": DEFAULT_MAX_BYTES},
    "remote_home": {"type": "str"},
    "remote_hermes_home": {"type": "str"},
    "strict": {"type": "bool", "default": False},
    "private": {"type": "bool", "default": False},
    "executable": {"type": "bool", "default": False},
    "fail_on_refused": {"type": "bool", "default": True},
    "open_timeout": {"type": "int", "default": DEFAULT_OPEN_TIMEOUT_S},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def _exec(self, argv):
        """The exec channel: the task's connection, with become if the task asks for it."""
        result = self._low_level_execute_command(shell_join(argv), sudoable=True,
                                                 encoding_errors="surrogateescape")
        stdout = to_bytes(result.get("stdout", ""), errors="surrogate_or_strict")
        stderr = to_bytes(result.get("stderr", ""), errors="surrogate_or_strict")
        return result.get("rc"), stdout, stderr

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if args["max_bytes"] < 0:
            raise AnsibleActionFail("max_bytes must be 0 or more, got %d" % args["max_bytes"])
        dest_dir = self._loader.path_dwim(args["dest"])
        try:
            # create_dest: the library makes a missing dest only when a file is about to land,
            # so a refusal (or check mode, or strict mode) writes nothing on the controller.
            report = fetchlib.fetch(
                self._exec, args["src"], dest_dir, max_bytes=args["max_bytes"], remote_home=args["remote_home"],
                remote_hermes_home=args["remote_hermes_home"], strict=args["strict"], name=args["name"],
                private=args["private"], executable=args["executable"], open_timeout=args["open_timeout"],
                dry_run=bool(self._task.check_mode), create_dest=True,
            )
        except fetchlib.FetchError as exc:
            raise AnsibleActionFail(one_line(to_text(exc))) from None
        result.update(for_result(report))
        result["changed"] = bool(report["changed"])
        if report["refused"]:
            result["msg"] = one_line("refused %s (%s): %s"
                                     % (escape(args["src"]), report["refused_code"], report["refused"]))
            if args["fail_on_refused"]:
                result["failed"] = True
        else:
            result["msg"] = "%s %s -> %s (%s bytes, sha256 %s)" % (
                "would fetch" if self._task.check_mode else "fetched", escape(args["src"]), escape(report["dest"]),
                report["size"], report["sha256"])
        return result
