# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Options shared by the modules that scope Docker sandboxes."""


class ModuleDocFragment:
    # The engine options of the modules that scope Docker sandboxes (sandbox_mounts_info,
    # sandbox_sweep); they take the roots options from ROOTS below as well (both fragments named),
    # so each option is written once.
    DOCUMENTATION = r"""
options:
  containers:
    description:
      - Only these containers (names or ids). Default is every container of the engine.
    type: list
    elements: str
    default: []
  include_stopped:
    description:
      - Include exited containers (orphans about to be reaped still hold root-written files).
    type: bool
    default: true
  docker_host:
    description:
      - The engine's URL, Docker's or rootful Podman's (C(unix:///run/podman/podman.sock)); only that engine is asked.
      - C(unix:///path) or C(tcp://host:port); TLS from C(DOCKER_TLS_VERIFY), C(DOCKER_TLS) and C(DOCKER_CERT_PATH) in the
        module's environment, as the Docker CLI reads them.
      - Default (auto) asks every engine socket present, not only the first - C(DOCKER_HOST) when set,
        C(/var/run/docker.sock), C(/run/podman/podman.sock) and rootless Podman's
        C(/run/user/<uid>/podman/podman.sock) - each on its own, in parallel, each call within 10 s, all of an engine's within 60 s, answers size-capped.
      - An engine that does not answer, answers with an error or with garbage is reported in RV(engines) with its
        C(error) (and as an error of the result); the other engines' containers are still scoped and swept.
      - A unix socket is asked only when it is a socket and it and every directory above it belong to root or to
        the user whose runtime directory (C(/run/user/<uid>)) holds it; one that is not is reported, not asked.
    type: str
notes:
  - A bind mount is in scope only when the realpath of its source lies below one of the roots the
    host derives from the roots options (O(hermes_home), O(sandbox_dir), O(roots), O(github_runners),
    O(gitlab_config)). Container labels (C(hermes-agent), C(hermes-task-id),
    C(hermes-profile)), image labels, extra arguments and the mount's destination never add a root.
    Every mount is reported with the reason for its decision.
  - A bind source that does not exist is skipped and never recreated.
  - With rootless Docker, files written by container root belong to the engine's user, not to root,
    so no ownership is returned; with userns-remap, ownership return takes files from the remapped
    root uid (from the engine's C(DockerRootDir) suffix) instead of 0. Engines that are not Linux
    are not swept. Rootless Podman maps container root to the user who runs it, so its engine is named
    C(podman-rootless-<uid>), reported in a warning, and treated as rootless.
requirements:
  - Python (>= 3.9) on the target, its standard library alone; the engines are asked with the collection's own
    Engine API client (no Docker SDK).
"""

    # The options the roots are derived from (sandbox_mounts_info, sandbox_sweep and nosuid_mount,
    # which takes the sweep's roots and asks no engine).
    ROOTS = r"""
options:
  hermes_home:
    description:
      - HERMES_HOME directories. Each gives the root C(<HERMES_HOME>/sandboxes/docker) and, for every
        directory under C(<HERMES_HOME>/profiles/), C(<HERMES_HOME>/profiles/<name>/sandboxes/docker).
      - A comma-separated string is accepted (AWX surveys have no list type), and so is a single path, as in
        M(sandboxguard.boundary.terminal_home) (which takes a list too).
    type: list
    elements: path
    aliases: [hermes_homes]
    default: []
  sandbox_dir:
    description:
      - The agent's C(TERMINAL_SANDBOX_DIR), when it sets one; gives the root C(<sandbox_dir>/docker).
    type: path
  roots:
    description:
      - Extra C(<sandbox>/docker) roots the operator names explicitly. System paths are refused.
    type: list
    elements: path
    default: []
  github_runners:
    description:
      - GitHub Actions self-hosted runner directories (the ones holding C(.runner)). Each gives its work
        folder (C(.runner)'s C(workFolder), default C(_work)) as a root, read as root through descriptors,
        never through a symlink; ownership return there gives files back to the runner user (the owner of
        the runner directory), every file whose uid or gid is not the runner's (what breaks the next
        C(actions/checkout)). The work folder is swept whole (the runner binds it whole as C(/__w)).
      - A runner directory that is refused (owned by root, no C(.runner), a work folder through a symlink)
        is a refused root with the reason; the other roots are still used.
      - A comma-separated string is accepted (AWX surveys have no list type).
    type: list
    elements: path
    default: []
  gitlab_config:
    description:
      - GitLab Runner's C(config.toml). The absolute host paths of its docker executors'
        C([runners.docker] volumes) (and a host C(cache_dir)) are roots; named volumes are out of scope.
        Needs Python 3.11 or later on the host (C(tomllib)).
    type: path
"""
