#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
module: setid_strip
short_description: Remove setuid and setgid bits from regular files under sandbox directories
version_added: 1.0.0
description:
  - Walks each path once, race-safely, and clears S_ISUID and S_ISGID on every regular file,
    keeping all other permission bits, the owner, the contents and the mtime.
  - Files a root container writes into a bind mount arrive on the host root-owned, and a
    setuid bit on such a file is a privilege escalation for anyone on the host who runs it;
    container hardening (C(--cap-drop ALL), C(nosuid), C(no-new-privileges)) does not travel
    with the file.
  - Optionally gives ownership back first (O(owner), O(group)), as the Hermes teardown does;
    the kernel clears setuid, setgid and file capabilities on a file it chowns.
  - In the same walk, O(caps=true) also removes C(security.capability) (see
    M(sandboxguard.boundary.file_caps) for capabilities alone).
  - Setgid directories, FIFOs, sockets and device nodes are never changed or opened.
author:
  - sandboxguard contributors (@sandboxguard)
options:
  setuid:
    description: Clear the setuid bit.
    type: bool
    default: true
  setgid:
    description: Clear the setgid bit (on regular files only; setgid directories keep it).
    type: bool
    default: true
  caps:
    description: Also remove file capabilities (C(security.capability)) in the same walk.
    type: bool
    default: false
  owner:
    description:
      - Give files and directories owned by root back to this user (name or uid) before
        stripping (ownership return). Unset means owners are not changed.
      - C(USER:GROUP) text is accepted too, as the CLI's C(--chown-to) takes it (then leave O(group) unset).
    type: str
  group:
    description:
      - Group (name or gid) for O(owner)'s ownership return. Defaults to O(owner)'s primary group.
    type: str
  chown_from:
    description:
      - Which files O(owner) gets back. V(root) gives back the files and directories owned by root (uid 0).
      - V(others) gives back every file and directory whose uid or gid is not O(owner)'s and O(group)'s, for a CI
        runner's work folder, where a file of another uid or of group root makes the next C(actions/checkout)
        fail (what C(sandboxguard runner-cleanup) does).
    type: str
    choices: [root, others]
    default: root
extends_documentation_fragment:
  - sandboxguard.boundary.walk
  - sandboxguard.boundary.names
attributes:
  check_mode:
    support: full
    description: Reports what would be stripped and changes nothing.
  diff_mode:
    support: full
    description: Shows each file's mode (and owner) before and after.
  platform:
    platforms: posix
    support: full
    description: Linux only (C(/proc/self/fd) and C(/proc/self/mountinfo)).
"""

EXAMPLES = r"""
- name: Strip setuid/setgid bits from a sandbox's bind-mount sources
  become: true
  sandboxguard.boundary.setid_strip:
    paths:
      - /srv/hermes/sandboxes/docker/task-42/workspace
      - /srv/hermes/sandboxes/docker/task-42/home

- name: Audit only (check mode) and show what would change
  become: true
  sandboxguard.boundary.setid_strip:
    paths: ["{{ hermes_home }}/sandboxes/docker"]
  check_mode: true
  diff: true
  register: setid_audit

- name: Give ownership back to the agent user, then strip bits and capabilities in one walk
  become: true
  sandboxguard.boundary.setid_strip:
    paths: ["{{ hermes_home }}/sandboxes/docker"]
    owner: hermes
    caps: true
    budget: 30
"""

RETURN = r"""
changed:
  description: Whether any file was changed (in check mode, whether any would be).
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
from ansible_collections.sandboxguard.boundary.plugins.module_utils.owner import resolve_owner
from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._walk import fileops
from ansible_collections.sandboxguard.boundary.plugins.module_utils.walk_module import (
    WALK_ARGUMENT_SPEC,
    check_owner,
    run_walk_module,
)


def main():
    argument_spec = dict(WALK_ARGUMENT_SPEC)
    argument_spec.update(
        setuid=dict(type="bool", default=True),
        setgid=dict(type="bool", default=True),
        caps=dict(type="bool", default=False),
        owner=dict(type="str"),
        group=dict(type="str"),
        chown_from=dict(type="str", choices=list(fileops.CHOWN_FROM_CHOICES), default=fileops.CHOWN_FROM_ROOT),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_by={"group": "owner"})
    p = module.params
    actions = []
    chown_to = None
    if p["owner"] is not None:
        chown_to = check_owner(module, resolve_owner(module, p["owner"], p["group"]), p["owner"], p["group"])
        actions.append("chown")
    if p["setuid"] or p["setgid"]:
        actions.append("setid")
    if p["caps"]:
        actions.append("caps")
    if not actions:
        fail(module, "nothing to do: setuid, setgid and caps are all false and no owner is given")
    ownership = {"chown_from": fileops.CHOWN_FROM_OTHERS} if chown_to and p["chown_from"] != fileops.CHOWN_FROM_ROOT else {}
    run_walk_module(module, actions=actions, chown_to=chown_to, setuid=p["setuid"], setgid=p["setgid"], **ownership)


if __name__ == "__main__":
    main()
