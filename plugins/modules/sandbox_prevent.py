#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
---
module: sandbox_prevent
short_description: Stop sandbox containers from making setuid/setgid files, file capabilities and device nodes
description:
  - Installs a seccomp profile made from the running engine's own default profile, in which C(chmod), C(fchmod),
    C(fchmodat), C(fchmodat2), C(open), C(openat), C(creat), C(mkdir), C(mkdirat), C(mknod) and C(mknodat) are
    allowed only without setuid/setgid bits in the mode (EPERM otherwise), C(openat2) fails with ENOSYS (libc falls
    back to C(openat)) and C(io_uring_*) with EPERM; everything else the engine's default denies stays denied. Then
    switches it on in one O(place).
  - O(place=hermes) - the Hermes config C(<hermes_home>/config.yaml) gets, in C(terminal.docker_extra_args),
    C(--security-opt seccomp=<profile>), C(--cap-drop SETFCAP) (seccomp cannot read the name of the
    C(security.capability) xattr), C(--cap-drop MKNOD) and C(--security-opt no-new-privileges) where missing,
    appended after the operator's own items through the line editor of M(sandboxguard.boundary.hermes_config)
    (comments kept). The profile is made from the default of the engine Hermes' C(docker) backend drives
    (O(engine)).
  - O(place=docker_daemon) - C(seccomp-profile) in Docker's C(daemon.json), the default for every container of a
    dedicated runner host, with the device-node rules (no C(--cap-drop MKNOD) can be set daemon-wide). The daemon
    must be restarted (RV(restart)). A job can still override it (its own profile, C(seccomp=unconfined),
    C(--privileged)), and file capabilities are not stopped (CAP_SETFCAP stays in Docker's default set).
  - O(place=podman) - C(seccomp_profile) in the C([containers]) table of Podman's C(containers.conf).
  - O(place=profiles) with O(state=absent) removes the installed profiles (files with the C(x-sandboxguard) key)
    once no place names them.
  - The profile is made again on every run and written only when its bytes differ, so a new engine version (a
    changed default; its checksum is in the profile's C(x-sandboxguard) key) gets a new profile. Docker's default
    is read from a throwaway container's OCI runtime spec (O(image), started and removed even in check mode); the
    daemon's default must not be the sandboxguard profile itself then (remove it first, O(state=absent)).
version_added: 1.2.0
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  place:
    description: Where the prevention is switched on or off.
    type: str
    required: true
    choices: [hermes, docker_daemon, podman, profiles]
  state:
    description: C(present) switches it on; C(absent) takes out what this module put there.
    type: str
    choices: [present, absent]
    default: present
  hermes_home:
    description: The Hermes home whose C(config.yaml) is edited (O(place=hermes)); the config must exist.
    type: path
  engine:
    description:
      - For O(place=hermes), the engine whose default the profile is made from. C(auto) is the one Hermes'
        C(docker) backend drives - C(HERMES_DOCKER_BINARY) in the home's C(.env), else C(docker) on PATH (a
        C(podman) named docker is Podman), else C(podman).
    type: str
    choices: [auto, docker, podman]
    default: auto
  profile_dir:
    description: The root-owned directory the profiles are installed in (made 0755 when missing).
    type: path
    default: /etc/sandboxguard/seccomp
  image:
    description: A local image with C(sleep), for the throwaway container Docker's default is read from.
    type: str
  base:
    description: A default profile file to make the profile from, instead of the engine's.
    type: path
  docker_host:
    description: The Docker engine (default C(DOCKER_HOST) or its socket).
    type: str
  daemon_json:
    description: Docker's daemon configuration file (O(place=docker_daemon)).
    type: path
    default: /etc/docker/daemon.json
  containers_conf:
    description: The C(containers.conf) to edit (O(place=podman)).
    type: path
    default: /etc/containers/containers.conf
  no_new_privileges:
    description: Add C(--security-opt no-new-privileges) to the Hermes arguments when missing (never with C(terminal.docker_snap_compat)).
    type: bool
    default: true
seealso:
  - module: sandboxguard.boundary.seccomp_probe
  - module: sandboxguard.boundary.audit_info
attributes:
  check_mode:
    support: full
    description: Reports what would change and writes nothing (a Docker default is still read through a throwaway container).
  diff_mode:
    support: full
    description: Shows the profile and the edited file before and after.
  platform:
    platforms: posix
    support: full
    description: Linux hosts.
"""

EXAMPLES = r"""
- name: Hermes' sandboxes make no setuid file, file capability or device node
  sandboxguard.boundary.sandbox_prevent:
    place: hermes
    hermes_home: /home/hermes/.hermes
    image: nikolaik/python-nodejs:python3.11-nodejs20
  become: true

- name: A dedicated runner host's Docker daemon defaults to the profile
  sandboxguard.boundary.sandbox_prevent:
    place: docker_daemon
    image: debian:12
  become: true
  register: prevent
  notify: Restart docker
"""

RETURN = r"""
place:
  description: The place of the call.
  returned: always
  type: str
engine:
  description: The engine whose default the profile was made from (C(docker) or C(podman)).
  returned: when O(place) is not C(profiles)
  type: str
profile:
  description: The installed profile - C(path), C(changed), C(base) (C(engine), C(engine_version), C(origin)), C(sha256) of the base.
  returned: when O(state=present)
  type: dict
config:
  description: The edited file - C(path), C(changed), and C(args) (the new docker_extra_args, O(place=hermes)) or C(previous) (the value before).
  returned: when O(place) is not C(profiles)
  type: dict
restart:
  description: The engine must restart for the change to apply (a changed C(daemon.json)).
  returned: always
  type: bool
removed:
  description: The profiles removed (O(place=profiles)).
  returned: when O(place=profiles)
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report, fail, input_errors_fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import docker_engine
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._prevent import bases, prevent


def main():
    module = AnsibleModule(
        argument_spec=dict(
            place=dict(type="str", required=True, choices=list(prevent.PLACES)),
            state=dict(type="str", choices=list(prevent.STATES), default="present"),
            hermes_home=dict(type="path"),
            engine=dict(type="str", choices=list(bases.ENGINE_CHOICES), default="auto"),
            profile_dir=dict(type="path", default=prevent.DEFAULT_PROFILE_DIR),
            image=dict(type="str"),
            base=dict(type="path"),
            docker_host=dict(type="str"),
            daemon_json=dict(type="path", default=prevent.DEFAULT_DAEMON_JSON),
            containers_conf=dict(type="path", default=prevent.DEFAULT_CONTAINERS_CONF),
            no_new_privileges=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
        required_if=[("place", "hermes", ("hermes_home",))],
    )
    p = module.params
    try:
        with input_errors_fail(module):
            report = prevent.prevent(p["place"], p["state"], p["hermes_home"], p["engine"], p["profile_dir"],
                                     p["image"] or None, p["base"], p["docker_host"] or None, p["daemon_json"],
                                     p["containers_conf"], p["no_new_privileges"], dry_run=module.check_mode)
    except docker_engine.EngineError as exc:
        fail(module, "%s (or give the base with the base option)" % exc)
    except OSError as exc:
        fail(module, "%s: %s" % (exc.filename or p["place"], exc.strerror or exc))
    diff = report.pop("diff")
    extra = {"diff": diff} if module._diff and diff else {}
    exit_report(module, report, **extra)


if __name__ == "__main__":
    main()
