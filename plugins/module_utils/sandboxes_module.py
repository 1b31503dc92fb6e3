# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PRIVATE to the library and the collection.

Module-side glue for the Docker sandbox modules: shared options and the engine connection."""

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import docker_engine
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._privileged import runners
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_list

# The options the host derives the <sandbox>/docker roots from (sweep.derive_roots): the
# sweep's, the mounts info's and nosuid_mount's (doc fragment sandboxguard.boundary.sandboxes.roots).
ROOTS_ARGUMENT_SPEC = dict(
    hermes_home=dict(type="list", elements="path", aliases=["hermes_homes"], default=[]),
    sandbox_dir=dict(type="path"),
    roots=dict(type="list", elements="path", default=[]),
    github_runners=dict(type="list", elements="path", default=[]),
    gitlab_config=dict(type="path"),
)


def runner_providers(params):
    """The scope providers of the CI runner options (github_runners, gitlab_config)."""
    return runners.runner_providers(as_list(params["github_runners"]), params["gitlab_config"])


SANDBOX_ARGUMENT_SPEC = dict(
    ROOTS_ARGUMENT_SPEC,
    containers=dict(type="list", elements="str", default=[]),
    include_stopped=dict(type="bool", default=True),
    docker_host=dict(type="str"),
)


def connect_or_fail(module):
    try:
        # each engine asked on its own, DEFAULT_TIMEOUT_S overall per engine (a user's stuck socket: once)
        return docker_engine.connect_engines(module.params["docker_host"], docker_engine.DEFAULT_TIMEOUT_S)
    except docker_engine.EngineError as exc:
        fail(module, str(exc))
