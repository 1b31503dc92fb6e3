#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
module: nosuid_mount
short_description: Make sandbox roots nosuid,nodev bind mounts of themselves on the host
version_added: 1.0.0
description:
  - Makes each O(path) a bind mount of itself with C(nosuid) and C(nodev), so whatever a
    container leaves there (a setuid root shell, a file with C(cap_net_raw+ep), a device
    node) gives no privilege when run or opened from there on the host, even before any
    strip has run. The kernel ignores setuid, setgid and file capabilities on a nosuid mount.
  - An existing mount at O(path) that lacks the two flags is remounted with them, keeping
    its other per-mount flags (C(ro), C(noexec), atime).
  - The files keep their bits. A copy taken out of the mount by root (C(cp -a)) is
    privileged again, which is why M(sandboxguard.boundary.sandbox_sweep) and the guard
    still strip.
  - Containers already running keep the mounts they were started with; files they write
    appear on the host through the new mount and cannot be run with privilege from there.
    Containers started afterwards bind-mount from the new mount and get C(nosuid,nodev)
    inside as well; they still read and write their bind mounts.
  - O(state=unmounted) removes only bind mounts of O(path) onto itself (never a filesystem
    mounted there by someone else, which gets a warning) and whatever this module persisted
    for O(path) (its systemd unit or its fstab line).
author:
  - sandboxguard contributors (@sandboxguard)
options:
  path:
    description:
      - Directories to make nosuid,nodev bind mounts of themselves (typically each
        C(<sandbox>/docker) root). Absolute paths to existing directories; a symlink, C(/)
        and system paths are refused, as the strip modules refuse them.
    type: list
    elements: path
    required: true
  state:
    description: V(mounted) makes the bind mounts; V(unmounted) removes them.
    type: str
    choices: [mounted, unmounted]
    default: mounted
  persist:
    description:
      - How the mount comes back after a reboot. V(systemd) writes a mount unit per path
        (named as C(systemd-escape --path) names it) wanted by C(local-fs.target) and ordered
        before C(docker.service); V(fstab) adds a line to O(fstab); V(none) mounts only now.
    type: str
    choices: [systemd, fstab, none]
    default: systemd
  unit_dir:
    description: Where V(systemd) writes mount units.
    type: path
    default: /etc/systemd/system
  fstab:
    description: The fstab file V(fstab) edits.
    type: path
    default: /etc/fstab
attributes:
  check_mode:
    support: full
    description: Reports the mounts and files that would change and changes nothing.
  diff_mode:
    support: full
    description: Each path's mount state and each persisted file, before and after.
  platform:
    platforms: posix
    support: full
    description: Linux only (C(/proc/self/mountinfo), mount(8) from util-linux 2.27 or later).
notes:
  - Needs root (C(become=true)). Idempotent, it reads C(/proc/self/mountinfo) and changes
    nothing when the mount and its persistence are in place.
seealso:
  - module: sandboxguard.boundary.sandbox_sweep
  - name: docs/sandbox-sweep.md (the three layers)
    description: What the nosuid mount, the guard and the sweeps each cover.
    link: https://github.com/sandboxguard/boundary/blob/main/docs/sandbox-sweep.md
"""

EXAMPLES = r"""
- name: Nothing a container leaves in the sandboxes runs with privilege on the host
  become: true
  sandboxguard.boundary.nosuid_mount:
    path:
      - /home/hermes/.hermes/sandboxes/docker

- name: Persist through /etc/fstab instead of a systemd mount unit
  become: true
  sandboxguard.boundary.nosuid_mount:
    path: [/srv/sandboxes/docker]
    persist: fstab

- name: Undo it
  become: true
  sandboxguard.boundary.nosuid_mount:
    path: [/srv/sandboxes/docker]
    state: unmounted
"""

RETURN = r"""
changed:
  description: Whether a mount or a persisted file changed (in check mode, would change).
  returned: always
  type: bool
paths:
  description: One entry per resolved path.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The resolved path.
      type: str
      returned: always
    before:
      description: What the path was before, in one line.
      type: str
      returned: always
      sample: "/srv/sandboxes/docker: not a mount point"
    after:
      description: What it is after (in check mode, would be).
      type: str
      returned: always
      sample: "/srv/sandboxes/docker: bind mount of itself, rw,nosuid,nodev,relatime"
    commands:
      description: The mount(8) and umount(8) command lines run (in check mode, that would run).
      type: list
      elements: list
      returned: always
    files:
      description: Persisted files written or removed (unit, wants link, fstab).
      type: list
      elements: str
      returned: always
warnings:
  description: Paths left alone and why (a foreign mount at an O(state=unmounted) path).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import nosuid


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="list", elements="path", required=True),
            state=dict(type="str", choices=list(nosuid.STATES), default="mounted"),
            persist=dict(type="str", choices=list(nosuid.PERSIST), default="systemd"),
            unit_dir=dict(type="path", default=nosuid.UNIT_DIR),
            fstab=dict(type="path", default=nosuid.FSTAB),
        ),
        supports_check_mode=True,
    )
    p = module.params

    def run(argv):
        return module.run_command(argv)

    try:
        result = nosuid.ensure(p["path"], p["state"], p["persist"], run=run, check_mode=module.check_mode,
                               unit_dir=p["unit_dir"], fstab=p["fstab"])
    except nosuid.NosuidError as exc:
        module.fail_json(msg=str(exc))
    for warning in result["warnings"]:
        module.warn(warning)
    diff = result.pop("diff")
    if module._diff:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
