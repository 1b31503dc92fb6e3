#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
---
module: hermes_config
short_description: Set keys in a Hermes config.yaml, keeping every comment
description:
  - Sets each key of O(settings) (a dotted path such as C(terminal.backend) or
    C(plugins.entries.bubblewrap.settings.profile)) in a Hermes C(config.yaml), creating the mappings on the
    path that are missing.
  - The edit is line based, the same one M(sandboxguard.boundary.terminal_home) uses, so comments, key order,
    quoting, blank lines and unrelated keys survive; running both modules on one home keeps what either wrote.
    Scalars are written on the key's line (a trailing comment is kept); lists and mappings replace the key's
    old value block.
  - Shapes the editor cannot change safely (a flow mapping with content, anchors, aliases or tags on the path,
    block scalars, several documents, tabs in indentation) make the module fail naming the line instead of
    rewriting the file.
  - The config lives in a tree its agent can change, so it is reached only through descriptors. Its directory
    is opened component by component (a symbolic link is followed only where only root could have made it;
    one another user could have planted is refused, naming the real path), and the file is read only when it
    is a regular file with one link (a symbolic link, FIFO or device at O(path) is refused, never opened; so
    is a hard link) and replaced atomically in the directory held open.
  - Existing files keep their owner and permission bits (never a setuid, setgid or sticky bit); a new file
    gets O(mode) and O(owner)/O(group).
version_added: 1.0.0
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  path:
    description: The config file, usually C({HERMES_HOME}/config.yaml). Its directory must exist.
    type: path
    required: true
  settings:
    description:
      - Mapping of dotted key paths to values (strings, numbers, booleans, null, lists or mappings).
    type: dict
    required: true
  create:
    description: Create the file when it does not exist; with C(false) a missing file fails the task.
    type: bool
    default: true
  owner:
    description: Owner (name or uid) of a new file; default the owner of its directory.
    type: str
  group:
    description: Group (name or gid) of a new file; default the owner's primary group.
    type: str
  mode:
    description: Mode of a new file.
    type: raw
    default: "0600"
seealso:
  - module: sandboxguard.boundary.terminal_home
attributes:
  check_mode:
    support: full
    description: Reports whether the file would change and writes nothing.
  diff_mode:
    support: full
    description: Shows the file before and after.
  platform:
    platforms: posix
    support: full
    description: Linux and other POSIX hosts.
"""

EXAMPLES = r"""
- name: Use the bubblewrap backend with the strict profile
  sandboxguard.boundary.hermes_config:
    path: /home/agent/.hermes/config.yaml
    settings:
      terminal.backend: bubblewrap
      plugins.entries.bubblewrap.settings.profile: strict
      plugins.entries.bubblewrap.settings.home_allow: [.config/nvim]
    owner: agent
"""

RETURN = r"""
path:
  description: The config file (absolute).
  returned: always
  type: str
created:
  description: The file did not exist (and was created unless in check mode).
  returned: always
  type: bool
previous:
  description: Each key's old value when it was a scalar, else null.
  returned: always
  type: dict
counts:
  description: C(keys) set and C(keys_changed).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.owner import resolve_owner
from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report, fail, input_errors_fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import hermes_config
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import report as envelope
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_mode


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            settings=dict(type="dict", required=True),
            create=dict(type="bool", default=True),
            owner=dict(type="str"),
            group=dict(type="str"),
            mode=dict(type="raw", default=envelope.mode_text(hermes_config.NEW_FILE_MODE)),
        ),
        supports_check_mode=True,
        required_by={"group": "owner"},
    )
    p = module.params
    owner = resolve_owner(module, p["owner"], p["group"])
    with input_errors_fail(module):
        mode = as_mode(p["mode"])
    try:
        with input_errors_fail(module, path=p["path"]):
            report = hermes_config.set_config(p["path"], p["settings"], dry_run=module.check_mode,
                                              create=p["create"], owner=owner, mode=mode)
    except OSError as exc:
        fail(module, "%s: %s" % (exc.filename or p["path"], exc.strerror or exc), path=p["path"])
    diff = report.pop("diff")
    extra = {"diff": diff} if module._diff and diff else {}
    exit_report(module, report, **extra)


if __name__ == "__main__":
    main()
