#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
module: file_caps
short_description: List or clear file capabilities under sandbox directories or on single files
version_added: 1.0.0
description:
  - Reads C(security.capability) of every regular file under each path in one race-safe walk,
    decodes it (revisions 1, 2 and 3 of C(vfs_cap_data)) into the text C(getcap) prints, and
    with O(state=absent) removes it.
  - A file capability such as C(cap_net_raw=ep) or C(cap_sys_admin=ep) written by a root
    container into a bind mount keeps working on the host; removing it is as important as
    removing a setuid bit (see M(sandboxguard.boundary.setid_strip)).
  - Unlike C(community.general.capabilities), the xattr is removed entirely (no empty
    C(security.capability) is left behind) and a second run reports no change. No libcap
    tools are needed on the target.
author:
  - sandboxguard contributors (@sandboxguard)
options:
  state:
    description:
      - V(absent) removes file capabilities; V(query) only lists them (never changes anything).
    type: str
    choices: [absent, query]
    default: absent
  method:
    description:
      - V(xattr) removes the C(security.capability) xattr.
      - V(chown) re-chowns each file to its own uid and gid, which makes the kernel drop the
        capability (capabilities(7)); as a side effect the kernel also clears the setuid bit,
        and the setgid bit of a group-executable file. This is the method the Hermes strip
        container uses when it holds no CAP_SETFCAP.
    type: str
    choices: [xattr, chown]
    default: xattr
extends_documentation_fragment:
  - sandboxguard.boundary.walk
  - sandboxguard.boundary.names
attributes:
  check_mode:
    support: full
    description: Reports what would be cleared and changes nothing.
  diff_mode:
    support: full
    description: Shows each file's capabilities before and after.
  platform:
    platforms: posix
    support: full
    description: Linux only.
"""

EXAMPLES = r"""
- name: List file capabilities in a sandbox (read-only)
  become: true
  sandboxguard.boundary.file_caps:
    paths: ["/srv/hermes/sandboxes/docker"]
    state: query
  register: caps

- name: Show them
  ansible.builtin.debug:
    msg: "{{ caps.files | map(attribute='path') | zip(caps.files | map(attribute='caps_before')) | list }}"

- name: Clear every file capability below the sandbox directories
  become: true
  sandboxguard.boundary.file_caps:
    paths:
      - /srv/hermes/sandboxes/docker/task-42/workspace
    state: absent

- name: Clear the capability of one file
  become: true
  sandboxguard.boundary.file_caps:
    paths: [/srv/hermes/sandboxes/docker/task-42/workspace/dist/ping]
"""

RETURN = r"""
changed:
  description: Whether a capability was removed (in check mode, whether one would be). Always false for O(state=query).
  returned: always
  type: bool
roots:
  description: The resolved paths that were walked.
  returned: always
  type: list
  elements: str
  sample: ["/srv/hermes/sandboxes/docker/task1/workspace"]
complete:
  description: False when the budget ran out before the walk finished.
  returned: always
  type: bool
dry_run:
  description: True in check mode; RV(files) then says what would change.
  returned: always
  type: bool
files:
  description:
    - One entry per file (or directory, for ownership return) that was, or in check mode
      would be, changed. At most O(max_listed) entries.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description:
        - Path of the file, as it is when it is valid UTF-8.
        - 'A path holding bytes that are not UTF-8 is shown escaped (C(\xff), C(\n), a backslash doubled) and
          RV(files[].path_b64) holds its bytes.'
      type: str
      returned: always
    path_b64:
      description: 'Base64 of the bytes of a path that is not UTF-8.'
      type: str
      returned: when RV(files[].path) is not UTF-8
      version_added: 1.1.0
    type:
      description: 'C(file) or C(directory).'
      type: str
      returned: always
    mode_before:
      description: 'Permission bits before, octal.'
      type: str
      returned: always
      sample: "04755"
    mode_after:
      description: 'Permission bits after (or that would be after), octal.'
      type: str
      returned: always
      sample: "0755"
    caps_before:
      description: 'File capabilities before, as getcap prints them, or null.'
      type: str
      returned: always
      sample: "cap_net_raw=ep"
    uid:
      description: 'Owner uid before.'
      type: int
      returned: always
    gid:
      description: 'Group gid before.'
      type: int
      returned: always
    nlink:
      description: 'Number of hard links of the file.'
      type: int
      returned: always
    actions:
      description: 'What was done, from C(chown), C(setuid), C(setgid), C(caps).'
      type: list
      elements: str
      returned: always
    error:
      description: 'Why the change failed, when it did.'
      type: str
      returned: when a change failed
counts:
  description: Totals for the walk.
  returned: always
  type: dict
  sample: {dirs: 12, files: 340, setid: 1, caps: 1, chown: 0, hardlinks: 0, special: 1, symlinks: 3, skipped: 0, errors: 0, unlisted: 0}
pruned_mounts:
  description: Mount points below the roots that were not walked.
  returned: always
  type: list
  elements: str
roots_b64:
  description: Base64 of the bytes of every entry of RV(roots), parallel to it; give it to O(paths_b64) to walk them again.
  returned: when a root is not UTF-8
  type: list
  elements: str
  version_added: 1.1.0
pruned_mounts_b64:
  description: Base64 of the bytes of every entry of RV(pruned_mounts), parallel to it.
  returned: when a pruned mount point is not UTF-8
  type: list
  elements: str
  version_added: 1.1.0
errors:
  description: Per-file errors (at most O(max_listed)), each with C(path), C(op) and C(error).
  returned: always
  type: list
  elements: dict
elapsed:
  description: Seconds the walk took.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._walk.fileops import (
    CAPS_METHODS,
    OPTION_DEFAULTS,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.walk_module import (
    WALK_ARGUMENT_SPEC,
    run_walk_module,
)


def main():
    argument_spec = dict(WALK_ARGUMENT_SPEC)
    argument_spec.update(
        state=dict(type="str", choices=["absent", "query"], default="absent"),
        method=dict(type="str", choices=list(CAPS_METHODS), default=OPTION_DEFAULTS["caps_method"]),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    query = module.params["state"] == "query"
    run_walk_module(module, actions=["caps"], caps_method=module.params["method"], dry_run=query, query=query)


if __name__ == "__main__":
    main()
