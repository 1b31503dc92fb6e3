#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# PRIVATE to the collection's glue: the logic is the library's _privileged/runner_hooks.py.

DOCUMENTATION = r"""
---
module: runner_hooks
short_description: Name root-owned cleanup hooks in a GitHub runner's .env, chaining the operator's own
version_added: 1.2.0
description:
  - Sets up (or with O(state=absent) removes) the job hooks that give a self-hosted GitHub Actions runner's work
    folder back to the runner user after every job, for the runner installed in O(runner_dir). In this order, so a
    job never runs a hook that is not there yet, it writes the following.
  - First the root-owned hook scripts C(<hook_dir>/<name>/job-completed.sh) (and C(job-started.sh) with
    O(job_started)), mode 0755, which run the root helper O(helper) through C(sudo -n) with exactly the runner
    directory, then the hook the operator had set before; and C(chained.json) beside them, remembering the
    operator's hooks. C(<name>) is O(runner_dir) without its leading C(/), every character but letters, digits,
    C(-) and C(_) made C(_).
  - Then the sudoers drop-in C(<sudoers_dir>/sandboxguard-runner-<name>) (0440, checked with C(visudo -cf) before
    it goes in place) that lets the runner user run exactly O(helper) with exactly O(runner_dir).
  - Last C(ACTIONS_RUNNER_HOOK_JOB_COMPLETED) (and C(ACTIONS_RUNNER_HOOK_JOB_STARTED)) in C(<runner_dir>/.env),
    naming the scripts.
  - C(.env) is edited as the runner user, never by root. The runner directory belongs to that user (and every job
    can write it), so root opens it once, component by component, refusing a symbolic link another user could have
    planted and a directory owned by root, and a child process that has dropped to the directory owner's uid and
    gid reads and replaces C(.env) through that descriptor. The child checks that the hook lines are still the ones
    the scripts were written for; if the runner or a job changed them meanwhile it writes nothing and the task
    fails asking to run again. Nothing needs C(sudo) or C(become_user) for this, in check mode either.
  - Every other line of C(.env), comments and earlier lines of the same name included, stays byte for byte. The
    runner reads C(.env) as C(NAME=value) lines, the last line of a name winning; the module edits the line that
    wins (or appends one).
  - A hook the operator had set is chained, not replaced. The hook script runs the cleanup, then the operator's
    script the way the runner would (C(bash -e) for C(.sh), C(pwsh)/C(powershell) for C(.ps1)), and exits with the
    operator's status when that fails. O(state=absent) gives the operator's hooks back to C(.env) (a phase that had
    none loses its line), then removes the scripts, C(chained.json), their directory and the drop-in. A hook line
    the operator changed since is theirs and stays.
  - O(job_started=false) after a run with V(true) gives the operator's job-started hook back and removes the
    started script.
  - The runner reads C(.env) when it starts; restart it between jobs when RV(env_changed) is true.
  - Refused, with one line naming the fix - a runner directory that is missing (O(state=present)), a symbolic link
    or on a path through one, owned by root, or holding a character outside C(A-Z a-z 0-9 . _ + @ / -) (it goes
    into a sudoers rule as it is); a runner user without a sudoers-safe name; a C(.env) that is not a regular file
    with one link; a hook or sudoers directory another user can change.
author:
  - sandboxguard contributors (@sandboxguard)
extends_documentation_fragment:
  - sandboxguard.boundary.names
options:
  runner_dir:
    description:
      - The directory the GitHub runner is installed in (C(config.sh), C(.runner), C(.env)), for example
        C(/home/gh/actions-runner). Its owner is the runner user.
      - A normal absolute path (no C(.) or C(..) component, no C(//) or trailing C(/)).
    type: path
    required: true
  state:
    description:
      - V(present) installs the hooks; V(absent) gives the operator's hooks back and removes the module's files.
      - With V(absent), a runner directory that no longer exists is not an error (a warning); the scripts and the
        drop-in are still removed.
    type: str
    choices: [present, absent]
    default: present
  job_started:
    description:
      - Also clean before each job (C(ACTIONS_RUNNER_HOOK_JOB_STARTED)), for a work folder a job left when its
        completed hook never ran (the runner was killed, the host rebooted).
    type: bool
    default: false
  fail_job:
    description:
      - The hook fails the job when the cleanup leaves findings (a per-file error, the budget ran out, the helper
        refused). V(false) prints a C(::warning::) line in the job's log and exits 0. A chained operator hook that
        fails fails the job either way.
    type: bool
    default: true
  hook_dir:
    description:
      - Root-owned directory of the hook scripts, one subdirectory per runner; made when missing. It and every
        directory above it must be changeable by root only.
    type: path
    default: /usr/local/lib/sandboxguard-runner
  helper:
    description: The root-owned helper the hooks run through sudo (the C(runner_cleanup) role installs it).
    type: path
    default: /usr/local/sbin/sandboxguard-runner-cleanup
  sudo:
    description: The C(sudo) the hooks call, by absolute path (the job's C(PATH) is the job's).
    type: path
    default: /usr/bin/sudo
  sudoers_dir:
    description: The directory sudo includes drop-ins from; it must exist and be changeable by root only.
    type: path
    default: /etc/sudoers.d
  visudo:
    description:
      - Checks a drop-in before it goes in place (C(visudo -cf)). Missing, a real run fails; check mode warns and
        still reports what it would write.
    type: path
    default: /usr/sbin/visudo
attributes:
  check_mode:
    support: full
    description: Reads C(.env) as the runner user and root's files, and reports what would change; writes nothing.
  diff_mode:
    support: full
    description:
      - The hook lines of C(.env) (its other lines may hold the operator's secrets and are not shown), the hook
        scripts, C(chained.json) and the drop-in, before and after.
  platform:
    platforms: posix
    support: full
    description: Linux.
notes:
  - Needs root (C(become=true)), and no C(become_user) - the module drops to the runner user for C(.env) itself.
  - Idempotent - a second run with the same options changes nothing.
seealso:
  - name: docs/runners.md
    description: The per-job cleanup of self-hosted runners and the C(runner_cleanup) role.
    link: https://github.com/sandboxguard/boundary/blob/main/docs/runners.md
"""

EXAMPLES = r"""
- name: Clean the work folder after every job, chaining the operator's own hooks
  become: true
  sandboxguard.boundary.runner_hooks:
    runner_dir: /home/gh/actions-runner

- name: Before every job too, and only warn when the cleanup leaves something
  become: true
  sandboxguard.boundary.runner_hooks:
    runner_dir: /home/gh/actions-runner
    job_started: true
    fail_job: false

- name: Give the runner its own hooks back
  become: true
  sandboxguard.boundary.runner_hooks:
    runner_dir: /home/gh/actions-runner
    state: absent
"""

RETURN = r"""
changed:
  description: Whether C(.env) or a root-owned file changed (in check mode, would change).
  returned: always
  type: bool
runner:
  description: The runner directory.
  returned: always
  type: str
  sample: /home/gh/actions-runner
user:
  description: The runner user (the owner of the runner directory); null when it no longer exists.
  returned: always
  type: str
  sample: gh
env:
  description: The runner's C(.env).
  returned: always
  type: str
  sample: /home/gh/actions-runner/.env
env_changed:
  description: Whether C(.env) changed (or would). The runner reads it when it starts - restart it between jobs.
  returned: always
  type: bool
hooks:
  description: What C(.env) names for each hook now (in check mode, would name); empty for none.
  returned: always
  type: dict
  sample: {"started": "", "completed": "/usr/local/lib/sandboxguard-runner/home_gh_actions-runner/job-completed.sh"}
chained:
  description: The operator's own hook per phase (what the scripts chain, or what O(state=absent) gives back); empty for none.
  returned: always
  type: dict
  sample: {"started": "", "completed": "/opt/hooks/after-job.sh"}
written:
  description: Root's files written (or that would be) - hook scripts, C(chained.json), the drop-in.
  returned: always
  type: list
  elements: str
removed:
  description: Root's files and directories removed (or that would be).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report, fail, input_errors_fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._privileged import runner_hooks


def main():
    module = AnsibleModule(
        argument_spec=dict(
            runner_dir=dict(type="path", required=True),
            state=dict(type="str", choices=list(runner_hooks.STATES), default="present"),
            job_started=dict(type="bool", default=False),
            fail_job=dict(type="bool", default=True),
            hook_dir=dict(type="path", default=runner_hooks.DEFAULT_HOOK_DIR),
            helper=dict(type="path", default=runner_hooks.defaults.RUNNER_CLEANUP_HELPER),
            sudo=dict(type="path", default=runner_hooks.DEFAULT_SUDO),
            sudoers_dir=dict(type="path", default=runner_hooks.DEFAULT_SUDOERS_DIR),
            visudo=dict(type="path", default=runner_hooks.DEFAULT_VISUDO),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        with input_errors_fail(module, runner=p["runner_dir"]):
            report = runner_hooks.ensure_hooks(
                p["runner_dir"], state=p["state"], job_started=p["job_started"], fail_job=p["fail_job"],
                hook_dir=p["hook_dir"], helper=p["helper"], sudo=p["sudo"], sudoers_dir=p["sudoers_dir"],
                visudo=p["visudo"], run=module.run_command, dry_run=module.check_mode)
    except OSError as exc:
        fail(module, "%s: %s" % (exc.filename or p["runner_dir"], exc.strerror or exc), runner=p["runner_dir"])
    diff = report.pop("diff")
    extra = {"diff": diff} if module._diff and diff else {}
    exit_report(module, report, **extra)


if __name__ == "__main__":
    main()
