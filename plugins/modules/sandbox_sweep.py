#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
module: sandbox_sweep
short_description: Return ownership, strip setuid/setgid bits and clear file capabilities in Docker sandboxes
version_added: 1.0.0
description:
  - For every bind mount in scope (see M(sandboxguard.boundary.sandbox_mounts_info)), runs three steps
    in the order the Hermes teardown uses, each with its own budget so one huge tree cannot starve
    the next step.
  - "C(chown): files and directories owned by root (or the engine's remapped root) go back to the
    sandbox directory's owner. The kernel clears setuid, setgid and file capabilities on a file it
    chowns, which is why this runs first."
  - "C(setid): setuid and setgid bits are cleared on every regular file."
  - "C(caps): file capabilities are cleared."
  - Running containers are swept too (persistent sandboxes are never removed), and exited ones
    before they are reaped.
author:
  - sandboxguard contributors (@sandboxguard)
options:
  method:
    description:
      - V(native) walks each target on the host with the race-safe walker (the task needs
        C(become=true)).
      - V(container) runs each step in a disposable container. The container has no network, drops
        every capability but C(CHOWN), C(DAC_OVERRIDE) and C(FOWNER), runs with C(no-new-privileges)
        and a read-only root, resets C(PATH) and the loader variables, and mounts only the target, as
        a non-recursive bind (never C(--volumes-from)). The engine is never given the agent's path
        (it would resolve it through whatever the agent swapped in); the target is proven on the host
        and cloned through its descriptor onto a root-owned staging directory under
        C(/run/sandboxguard/staging), which the container mounts, and each step first checks it got
        the proven directory. That needs root (C(CAP_SYS_ADMIN)), unless only root and the caller can
        change the target's path, and the engine in this task's mount namespace. Its steps use C(find -P -xdev), C(chown -h),
        C(chmod), C(ls -n) and C(sort); GNU findutils and busybox both work and no C(stat) is needed.
        The capability step re-chowns every regular file to its own owner (one walk per owner),
        because find cannot see xattrs; it reports the step as run, not which files changed.
    type: str
    choices: [native, container]
    default: native
  image:
    description:
      - The image for O(method=container). Use an image you trust (a pinned busybox or Debian slim),
        never the sandbox's own image.
    type: str
  owner:
    description:
      - User (name or uid) that ownership return gives files to. Default is the owner of each
        sandbox directory (C(<sandbox>), the parent of C(<sandbox>/docker)); below a GitHub runner's
        work folder (O(github_runners)), the runner user, who gets back every file whose uid or gid is
        not its own (with O(method=native); the container method takes back the engine root's files only).
      - C(USER:GROUP) text is accepted too, as the CLI's C(--owner) takes it (then leave O(group) unset); a user
        alone gets its primary group; a uid with no passwd entry needs a group.
      - When the owner is root (the agent itself runs as root), no ownership is returned.
    type: str
  group:
    description: Group (name or gid) for O(owner). Default is O(owner)'s primary group.
    type: str
  return_ownership:
    description: Run the ownership return step.
    type: bool
    default: true
  budget_per_step:
    description:
      - Seconds each step may take, per sandbox. V(0) means no limit.
      - A finite number of seconds, V(0) or more; NaN, infinity, negatives and words fail the task with the library's one budget message.
    type: raw
    default: 10
  fail_on_warnings:
    description:
      - Fail the task when a sandbox could not be swept completely. By default each such sandbox
        gives one warning naming its path and the result's RV(warnings) lists them.
    type: bool
    default: false
extends_documentation_fragment:
  - sandboxguard.boundary.sandboxes.roots
  - sandboxguard.boundary.sandboxes
  - sandboxguard.boundary.names
attributes:
  check_mode:
    support: full
    description:
      - With O(method=native), reports exactly what would change. With O(method=container), lists
        the files the ownership and setid steps would change; the capability step is not run.
  diff_mode:
    support: none
    description: No diff; RV(sandboxes) lists what each step changed.
  platform:
    platforms: posix
    support: full
    description: Linux hosts with a Docker engine.
"""

EXAMPLES = r"""
- name: Sweep every Hermes sandbox on the host
  become: true
  sandboxguard.boundary.sandbox_sweep:
    hermes_home: /home/hermes/.hermes

- name: Sweep through the engine only (no root on the host)
  sandboxguard.boundary.sandbox_sweep:
    hermes_home: /home/hermes/.hermes
    method: container
    image: busybox:1.36.1

- name: Sweep one container's sandboxes before removing it
  become: true
  sandboxguard.boundary.sandbox_sweep:
    hermes_home: /home/hermes/.hermes
    containers: [hermes-task-42]
    budget_per_step: 30
"""

RETURN = r"""
roots:
  description: The host-derived C(<sandbox>/docker) roots (realpaths) the scope was decided against.
  returned: always
  type: list
  elements: str
root_sources:
  description: Each root with where it came from, as C({realpath, source}) (the dicts C(roots) held in earlier releases).
  returned: always
  type: list
  elements: dict
changed:
  description: Something changed; in check mode, something would change (both methods).
  returned: always
  type: bool
complete:
  description: Every step of every sandbox finished within its budget and without an error.
  returned: always
  type: bool
errors:
  description: Every step's errors, each C({path, op, error}); C(op) is the file operation or the step name.
  returned: always
  type: list
  elements: dict
counts:
  description: The steps' counts summed (C(files), C(dirs), C(setid), C(caps), C(chown), C(errors), ...) and C(sandboxes).
  returned: always
  type: dict
elapsed:
  description: Seconds the sweep took.
  returned: always
  type: float
sandboxes:
  description: One entry per swept target.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: 'The target directory (realpath).'
      type: str
      returned: always
    owner:
      description: 'The uid and gid ownership was returned to.'
      type: list
      elements: int
      returned: always
    method:
      description: 'native or container.'
      type: str
      returned: always
    changed:
      description: 'Whether this sandbox changed.'
      type: bool
      returned: always
    steps:
      description:
        - C(chown), C(setid), C(caps) in that order, each with C(complete), C(changed), C(ran), C(skipped),
          C(errors) (C({path, op, error})), C(error) (the first error as text) and its C(report).
        - C(report) is the same envelope for both methods; its C(files) are the same dicts (C(path), C(type),
          C(mode_before), C(mode_after), C(caps_before), C(uid), C(gid), C(nlink), C(actions)); method
          C(container) sees only paths, so the other keys are null there.
        - C(would_change) (container method, check mode) is deprecated; read C(changed), which means the same.
      type: list
      elements: dict
      returned: always
warnings:
  description:
    - One entry per sandbox that could not be swept completely, naming its path (Ansible's standard
      warnings list, shown by every callback).
  returned: when a sandbox was not swept completely
  type: list
  elements: str
engine:
  description: Engine facts, as M(sandboxguard.boundary.sandbox_mounts_info) returns them.
  returned: always
  type: dict
engines:
  description:
    - Every engine socket considered (C(auto) asks each one present, on its own), with its error when it could not
      be asked (refused socket, timeout, HTTP error, an answer that is not the Engine API's). A failed engine is
      also an error of the result (C(op) C(engine), C(path) its URL), and the result is not complete.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: C(docker), C(podman), C(podman-rootless-<uid>) (from where the socket is, never from what it says).
      type: str
      returned: always
    url:
      description: The engine's URL.
      type: str
      returned: always
    kind:
      description: C(docker) or C(podman) as it answered, or null when it never did.
      type: str
      returned: always
    error:
      description: null, or one line saying why this engine could not be asked.
      type: str
      returned: always
targets:
  description: The in-scope directories.
  returned: always
  type: list
  elements: dict
containers:
  description: Every container looked at, with a scope decision per mount.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sandboxguard.boundary.plugins.module_utils.owner import resolve_owner
from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report, fail, input_errors_fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxes_module import (
    SANDBOX_ARGUMENT_SPEC,
    connect_or_fail,
    runner_providers,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import sweep
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_list, budget


def main():
    argument_spec = dict(SANDBOX_ARGUMENT_SPEC)
    argument_spec.update(
        method=dict(type="str", choices=list(sweep.METHODS), default=sweep.DEFAULT_METHOD),
        image=dict(type="str"),
        owner=dict(type="str"),
        group=dict(type="str"),
        return_ownership=dict(type="bool", default=True),
        budget_per_step=dict(type="raw", default=sweep.DEFAULT_BUDGET_PER_STEP_S),  # the library decides
        fail_on_warnings=dict(type="bool", default=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_if=[("method", "container", ("image",))], required_by={"group": "owner"})
    p = module.params
    with input_errors_fail(module):
        budget_per_step = budget(p["budget_per_step"], "budget_per_step")
    owner = resolve_owner(module, p["owner"], p["group"])
    client = connect_or_fail(module)
    try:
        result = sweep.sweep(
            client, as_list(p["hermes_home"]), p["sandbox_dir"], as_list(p["roots"]),
            as_list(p["containers"]) or None, p["include_stopped"], p["method"], p["image"], owner,
            budget_per_step, dry_run=module.check_mode, chown=p["return_ownership"],
            providers=runner_providers(p))
    except Exception as exc:  # engine errors, a named container that does not exist
        fail(module, str(exc))
    fail_msg = None
    if result["warnings"] and p["fail_on_warnings"]:
        fail_msg = "%d sandbox(es) not swept completely: %s" % (len(result["warnings"]), "; ".join(result["warnings"]))
    exit_report(module, result, fail_msg=fail_msg)


if __name__ == "__main__":
    main()
