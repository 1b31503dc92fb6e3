#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
module: nosuid_mount
short_description: Make sandbox roots nosuid,nodev bind mounts of themselves on the host
version_added: 1.0.0
description:
  - Makes each sandbox root a bind mount of itself with C(nosuid) and C(nodev), so whatever a
    container leaves there (a setuid root shell, a file with C(cap_net_raw+ep), a device
    node) gives no privilege when run or opened from there on the host, even before any
    strip has run. The kernel ignores setuid, setgid and file capabilities on a nosuid mount.
  - The roots are the sweep's own (M(sandboxguard.boundary.sandbox_sweep)), derived from
    O(hermes_home) (and its profiles), O(sandbox_dir) and O(roots), plus O(path).
  - The roots lie in the agent's tree, which the agent can change at any moment, so nothing is
    done by path. Each root is opened component by component (a symlink anywhere on the way, C(/)
    and system paths are refused) and the mount is made from that descriptor with the kernel's
    mount API (C(open_tree), C(mount_setattr), C(move_mount); mount(2) on C(/proc/self/fd/N) where
    the kernel lacks them). The new mount keeps the per-mount flags of the mount the directory lies
    on (C(ro), C(noexec), atime).
  - An existing mount at a root that lacks the two flags gets them on its own descriptor, keeping
    its other per-mount flags. A root on a mount that already has both needs nothing.
  - A refused root is refused alone, with a warning naming it and why; the other roots are still
    mounted. Roots that do not exist yet are listed in RV(missing); a later run mounts them.
  - The files keep their bits. A copy taken out of the mount by root (C(cp -a)) is
    privileged again, which is why M(sandboxguard.boundary.sandbox_sweep) and the guard
    still strip.
  - Containers already running keep the mounts they were started with; files they write
    appear on the host through the new mount and cannot be run with privilege from there.
    Containers started afterwards bind-mount from the new mount and get C(nosuid,nodev)
    inside as well; they still read and write their bind mounts.
  - O(state=unmounted) removes only bind mounts of a root onto itself (never a filesystem
    mounted there by someone else, which gets a warning), each checked by its mount id, and
    takes the root out of what this module persisted.
author:
  - sandboxguard contributors (@sandboxguard)
extends_documentation_fragment:
  - sandboxguard.boundary.sandboxes.roots
  - sandboxguard.boundary.names
options:
  path:
    description:
      - Directories to make nosuid,nodev bind mounts of themselves, taken as O(roots) are
        (typically C(<sandbox>/docker)). Absolute paths; a symlink anywhere on the way, C(/) and
        system paths are refused, each alone.
      - Give O(path), or the options the sweep derives its roots from (O(hermes_home),
        O(sandbox_dir), O(roots)), or both.
    type: list
    elements: path
    default: []
  state:
    description: V(mounted) makes the bind mounts; V(unmounted) removes them.
    type: str
    choices: [mounted, unmounted]
    default: mounted
  listed:
    description:
      - Also every root O(paths_file) lists (what earlier runs persisted, whatever scope they had). With
        O(state=unmounted) this takes them all out and, the list left empty, the unit, the program and the list
        themselves (the C(sandbox_sweep) role's C(sandbox_sweep_state=absent) uses it).
    type: bool
    default: false
  persist:
    description:
      - How the mounts come back after a reboot. V(systemd) keeps every root in O(paths_file) and
        enables the oneshot unit C(sandboxguard-nosuid.service), ordered before C(docker.service),
        which runs the standalone program O(program) at boot; it proves every root again, component
        by component, before it mounts it the same way. No root's path is written into a unit.
      - V(none) mounts only now (and takes these roots out of O(paths_file)).
      - V(fstab) is deprecated and means V(systemd), with a warning. An fstab line (what 1.0.0 wrote)
        is resolved by path at boot, so a symlink planted in the agent's tree mounted another
        directory; and the mount units 1.0.0 wrote were refused by systemd for a root whose path
        holds a symlink, so the layer was gone after a reboot. The lines and units 1.0.0 marked are
        removed when the new persistence is written (with a warning), and their roots are kept.
    type: str
    choices: [systemd, fstab, none]
    default: systemd
  unit_dir:
    description: Where the unit is written (and where the mount units of 1.0.0 are looked for).
    type: path
    default: /etc/systemd/system
  fstab:
    description: The fstab file the lines of 1.0.0 are removed from.
    type: path
    default: /etc/fstab
  program:
    description:
      - The boot program the unit runs (written root-owned, mode 0755; it needs only Python's standard
        library, not the CLI). Its directory must be changeable by root only.
    type: path
    default: /usr/local/sbin/sandboxguard-nosuid
  paths_file:
    description:
      - The root-owned list of the roots the unit mounts at boot, one per line, escaped. Its
        directory must be changeable by root only.
    type: path
    default: /etc/sandboxguard/nosuid-paths
  python:
    description:
      - The interpreter the unit runs O(program) with. Default is C(/usr/bin/python3) when it exists,
        else the Python running this module.
    type: path
attributes:
  check_mode:
    support: full
    description: Reports the mounts and files that would change and changes nothing.
  diff_mode:
    support: full
    description: Each root's mount state and each persisted file, before and after.
  platform:
    platforms: posix
    support: full
    description: Linux only (C(/proc/self/mountinfo), C(/proc/self/fd)).
notes:
  - Needs root (C(become=true)). Idempotent, it changes nothing when the mounts and their
    persistence are in place.
  - A mount or unmount that fails (the kernel's error) fails the task after the other roots
    were handled; a refused root does not.
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
    hermes_home: [/home/hermes/.hermes]

- name: One root named explicitly, mounted now only
  become: true
  sandboxguard.boundary.nosuid_mount:
    path: [/srv/sandboxes/docker]
    persist: none

- name: Undo it
  become: true
  sandboxguard.boundary.nosuid_mount:
    path: [/srv/sandboxes/docker]
    state: unmounted

- name: Undo every mount this module persisted, and the boot unit
  become: true
  sandboxguard.boundary.nosuid_mount:
    listed: true
    state: unmounted
"""

RETURN = r"""
changed:
  description: Whether a mount or a persisted file changed (in check mode, would change).
  returned: always
  type: bool
roots:
  description: The proven paths of the roots handled (mounted, already nosuid, or unmounted).
  returned: always
  type: list
  elements: str
paths:
  description: One entry per root handled.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The proven path.
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
    actions:
      description: What was done (in check mode, would be done), one line each; empty when nothing was needed.
      type: list
      elements: str
      returned: always
    how:
      description: >-
        The kernel interface used: C(open_tree), C(open_tree+remount), C(mount(2)), C(mount_setattr)
        or C(remount); null when nothing was mounted.
      type: str
      returned: always
refused:
  description: Roots refused (a symlink on the way, a system path), each with the reason; each also a warning.
  returned: always
  type: list
  elements: dict
missing:
  description: Roots that do not exist yet (not mounted; a later run mounts them).
  returned: always
  type: list
  elements: str
files:
  description: Persisted files written or removed (list, program, unit, wants link, 1.0.0's units and fstab).
  returned: always
  type: list
  elements: str
errors:
  description: Mounts or unmounts that failed, as C({path, op, error}).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import (
    errors_text,
    exit_report,
    input_errors_fail,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxes_module import (
    ROOTS_ARGUMENT_SPEC,
    runner_providers,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._privileged import nosuid
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_list


def main():
    argument_spec = dict(ROOTS_ARGUMENT_SPEC)
    argument_spec.update(
        path=dict(type="list", elements="path", default=[]),
        state=dict(type="str", choices=list(nosuid.STATES), default="mounted"),
        persist=dict(type="str", choices=list(nosuid.PERSIST), default="systemd"),
        unit_dir=dict(type="path", default=nosuid.UNIT_DIR),
        fstab=dict(type="path", default=nosuid.FSTAB),
        program=dict(type="path", default=nosuid.PROGRAM),
        paths_file=dict(type="path", default=nosuid.PATHS_FILE),
        python=dict(type="path"),
        listed=dict(type="bool", default=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    p = module.params

    def run(argv):
        return module.run_command(argv)

    with input_errors_fail(module):
        result = nosuid.ensure(
            as_list(p["path"]), p["state"], p["persist"], run=run, dry_run=module.check_mode,
            unit_dir=p["unit_dir"], fstab=p["fstab"], hermes_homes=as_list(p["hermes_home"]),
            sandbox_dir=p["sandbox_dir"], extra_roots=as_list(p["roots"]), program=p["program"],
            paths_file=p["paths_file"], python=p["python"], providers=runner_providers(p), listed=p["listed"])
    diff = result.pop("diff")
    if module._diff:
        result["diff"] = diff
    fail_msg = errors_text(result, "mount(s) failed") if result["errors"] else None
    exit_report(module, result, fail_msg=fail_msg)


if __name__ == "__main__":
    main()
