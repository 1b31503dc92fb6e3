#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
module: sandbox_mounts_info
short_description: List Docker containers' bind mounts and decide which lie in a sandbox sweep's scope
version_added: 1.0.0
description:
  - Asks the Docker engine for its containers and their mounts, derives the C(<sandbox>/docker)
    roots from the host's own Hermes configuration, and decides for every mount whether a sweep may
    touch it, with the reason.
  - Read-only; the targets it returns are what M(sandboxguard.boundary.sandbox_sweep) would sweep.
author:
  - sandboxguard contributors (@sandboxguard)
extends_documentation_fragment:
  - sandboxguard.boundary.sandboxes.roots
  - sandboxguard.boundary.sandboxes
  - sandboxguard.boundary.names
attributes:
  check_mode:
    support: full
    description: Changes nothing in any mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to diff.
  platform:
    platforms: posix
    support: full
    description: Linux hosts with a Docker engine.
"""

EXAMPLES = r"""
- name: Which bind mounts would a sweep touch?
  sandboxguard.boundary.sandbox_mounts_info:
    hermes_home: /home/hermes/.hermes
  register: mounts

- name: Show the out-of-scope mounts and why
  ansible.builtin.debug:
    msg: "{{ mounts.containers | map(attribute='mounts') | flatten | rejectattr('in_scope') | map(attribute='reason') }}"
"""

RETURN = r"""
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
engine:
  description: What the engine's info says about ownership of container-written files.
  returned: always
  type: dict
  contains:
    os:
      description: 'The engine''s OSType.'
      type: str
      returned: always
    rootless:
      description: 'Rootless engine.'
      type: bool
      returned: always
    userns_remap:
      description: 'userns-remap is on.'
      type: bool
      returned: always
    remap_root:
      description: 'Host uid and gid container root maps to, with userns-remap.'
      type: list
      elements: int
      returned: always
    sweepable:
      description: 'Whether a sweep runs on this engine at all.'
      type: bool
      returned: always
    reason:
      description: 'What the sweep does differently here, or why it does not run (with several engines, each one''s, named).'
      type: str
      returned: always
    name:
      description: 'The engine''s name (C(docker), C(podman), C(podman-rootless-<uid>)); with several, their names joined.'
      type: str
      returned: always
    engines:
      description:
        - 'The facts of each engine asked (these same keys, plus C(url)); with several engines the keys above sum them up:
          C(sweepable) when one is, C(rootless) when all are.'
      type: list
      elements: dict
      returned: always
roots:
  description: The host-derived roots' realpaths, as every report of the collection lists its roots.
  returned: always
  type: list
  elements: str
root_sources:
  description: >-
    The host-derived roots with where each came from (C(path), C(realpath), C(source), and C(owner), the
    (uid, gid) a scope provider knows the files there belong to, else null); what C(roots) held in earlier releases.
  returned: always
  type: list
  elements: dict
refused_roots:
  description: Roots that were refused (C(path), C(reason)), such as system paths.
  returned: always
  type: list
  elements: dict
containers:
  description: Every container looked at, with its mounts and the decision for each.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: 'Short container id.'
      type: str
      returned: always
    name:
      description: 'Container name.'
      type: str
      returned: always
    status:
      description: 'Container state.'
      type: str
      returned: always
    hermes:
      description: 'Whether it carries the C(hermes-agent=1) label (informational; never widens scope).'
      type: bool
      returned: always
    engine:
      description: 'The engine it came from (C(docker), C(podman), C(podman-rootless-<uid>)).'
      type: str
      returned: always
    mounts:
      description: One decision per mount.
      type: list
      elements: dict
      returned: always
      contains:
        source:
          description: 'The mount''s source as the engine reports it.'
          type: str
          returned: always
        realpath:
          description: 'The resolved source (null when it was not resolved).'
          type: str
          returned: always
        destination:
          description: 'Where the container sees it.'
          type: str
          returned: always
        in_scope:
          description: 'Whether a sweep may touch it.'
          type: bool
          returned: always
        reason:
          description: 'Why.'
          type: str
          returned: always
targets:
  description: The distinct in-scope directories (C(realpath), C(root), C(containers), C(engines) of those containers), what a sweep walks.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report, fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxes_module import (
    SANDBOX_ARGUMENT_SPEC,
    connect_or_fail,
    runner_providers,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import sweep
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_list


def main():
    module = AnsibleModule(argument_spec=dict(SANDBOX_ARGUMENT_SPEC), supports_check_mode=True)
    p = module.params
    client = connect_or_fail(module)
    try:
        info = sweep.mounts_info(client, as_list(p["hermes_home"]), p["sandbox_dir"], as_list(p["roots"]),
                                 as_list(p["containers"]) or None, p["include_stopped"],
                                 providers=runner_providers(p))
    except Exception as exc:  # the engine's own errors (a container named that does not exist)
        fail(module, str(exc))
    exit_report(module, info, changed=False)


if __name__ == "__main__":
    main()
