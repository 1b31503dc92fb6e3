#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
module: remediate
short_description: Every fix of the remediate playbook on a host in one call, each with its own result
version_added: 1.1.0
description:
  - Finds the scope exactly as M(sandboxguard.boundary.audit_info) does and runs every selected fix in one module
    call (one AnsiballZ transfer and one Python start per host, which is what keeps remediating many hosts fast).
    Each fix goes through the same library call as its single-step module, which stays for a user who wants one step.
  - C(ownership), C(setid), C(caps) - one race-safe walk of the roots the audit's C(privileged_files) check walks
    returns ownership to O(owner) (only with an owner), clears setuid/setgid bits and removes file capabilities,
    as M(sandboxguard.boundary.setid_strip) with O(sandboxguard.boundary.setid_strip#module:caps) and O(owner). The walk's result is split into one
    section per fix; an error of the walk itself (a directory it could not open) is in each of the three.
  - C(sandboxes) - sweeps the Docker sandboxes the engine reports in scope, as M(sandboxguard.boundary.sandbox_sweep)
    (ownership back to O(owner), or to each sandbox directory's owner), when an engine answers.
  - C(home_mode) - sets C(TERMINAL_HOME_MODE) to O(home_mode) in each Hermes home present on the host and its
    profiles, as M(sandboxguard.boundary.terminal_home); skipped without O(home_mode).
  - C(leaks) - moves what the audit's leak check finds (the same options and the same accounts) into
    O(quarantine_dir), as M(sandboxguard.boundary.leaks_remove); skipped when no agent account is known.
  - A fix that is refused (a Hermes home whose C(home) is a symlink), fails or does not complete is C(failed) in its
    section and the other fixes still run; the task then fails with every section in its result and a message
    naming each failed fix, its reason and its single-step module.
  - A second run changes nothing.
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  fixes:
    description:
      - Which fixes to run; the others are C(skipped). A comma-separated string is accepted.
    type: list
    elements: str
    default: [ownership, setid, caps, sandboxes, home_mode, leaks]
  paths:
    description:
      - Directories (or files) to fix privileged files under, besides the Hermes and Docker sandboxes, as
        O(sandboxguard.boundary.audit_info#module:paths). System paths such as C(/) or C(/usr) are refused.
    type: list
    elements: path
    default: []
  hermes_home:
    description:
      - HERMES_HOME directories, for the walk (their C(sandboxes/docker) and their profiles'), the sandboxes,
        C(home_mode) and the default leak scope.
    type: list
    elements: path
    aliases: [hermes_homes]
    default: []
  sandbox_dir:
    description: The agent's C(TERMINAL_SANDBOX_DIR), when set; its C(docker) directory is in scope.
    type: path
  github_runners:
    description:
      - GitHub Actions self-hosted runner directories (holding C(.runner)), as
        O(sandboxguard.boundary.audit_info#module:github_runners). Each runner's work folder is walked on its own;
        every file and directory whose uid or gid is not the runner user's goes back to the runner user (what the
        next C(actions/checkout) needs; the C(ownership) fix runs for them without O(owner)), setid bits and caps
        are stripped. A comma-separated string is accepted.
    type: list
    elements: path
    default: []
  gitlab_config:
    description:
      - GitLab Runner's C(config.toml); the host directories its docker executors bind are fixed like O(paths).
        Needs Python 3.11 or later on the host.
    type: path
  docker:
    description:
      - C(auto) asks the Docker engine for in-scope bind mounts when one answers; C(always) makes an engine that
        does not answer a failed C(sandboxes) fix; C(never) does not ask.
    type: str
    choices: [auto, always, never]
    default: auto
  docker_host:
    description: The engine's address (C(unix:///run/docker.sock), C(tcp://...)); default from C(DOCKER_HOST).
    type: str
  owner:
    description:
      - User (name or uid) that ownership return gives files to; without it the C(ownership) fix is skipped and
        the C(sandboxes) fix gives each sandbox's files to the owner of its sandbox directory.
      - C(USER:GROUP) text is accepted too (then leave O(group) unset).
    type: str
  group:
    description: Group (name or gid) for O(owner). Default is O(owner)'s primary group.
    type: str
  budget:
    description:
      - Seconds the walk may take, and each step of each sandbox sweep (0 = no limit); a walk cut short fails its fixes.
      - A finite number of seconds, V(0) or more; NaN, infinity, negatives and words fail the task with the library's one budget message.
    type: raw
    default: 10
  max_listed:
    description: Files listed per walk fix at most (the counts cover everything).
    type: int
    default: 1000
  home_mode:
    description: The TERMINAL_HOME_MODE to set (C(auto), C(real), C(profile) or an alias); empty skips C(home_mode).
    type: str
  home_where:
    description: Where the mode is written (C(config.yaml), C(.env) or both), as the C(where) option of M(sandboxguard.boundary.terminal_home).
    type: str
    choices: [config, env, both]
    default: config
  profiles:
    description: Configure every profile under C(<HERMES_HOME>/profiles/) too.
    type: bool
    default: true
  create_profile_home:
    description: Create C(<HERMES_HOME>/home) 0700 (and each profile's), or tighten an existing one.
    type: bool
    default: true
  leak_users:
    description:
      - Accounts whose leaks are quarantined. Every job line of such a user's cron table is a leak, so the default
        is only the accounts that run agents (as O(sandboxguard.boundary.audit_info#module:leak_users)), never root.
    type: list
    elements: str
    default: []
  leak_tmp_patterns:
    description: Shell patterns of leftover run directories in C(/tmp).
    type: list
    elements: str
    default: ["ab-*"]
  leak_min_age:
    description: Leave leaks younger than this many seconds.
    type: int
    default: 0
  leak_tmp_dir:
    description: The temp directory to look for leftover run directories in.
    type: path
    default: /tmp
  leak_spool_dir:
    description: The cron spool holding one table per user (Debian's location by default).
    type: path
    default: /var/spool/cron/crontabs
  agent_user:
    description: The unprivileged user the agent runs as (in the default leak scope).
    type: str
  quarantine_dir:
    description:
      - Where removed leaks are kept, one directory per run (created 0700, root-owned); a directory another
        user can change is refused (a failed C(leaks) fix).
    type: path
    default: /var/lib/sandboxguard/quarantine
notes:
  - Needs root (C(become)). The C(sandboxes) fix needs nothing but Python on the host (the library speaks the Engine API itself).
  - The playbook C(sandboxguard.boundary.remediate) runs this module once per host, then the bubblewrap role.
seealso:
  - module: sandboxguard.boundary.audit_info
  - module: sandboxguard.boundary.setid_strip
  - module: sandboxguard.boundary.sandbox_sweep
  - module: sandboxguard.boundary.terminal_home
  - module: sandboxguard.boundary.leaks_remove
attributes:
  check_mode:
    support: full
    description: Every fix reports what it would change (its section's C(changed)) and nothing changes.
  diff_mode:
    support: full
    description: Each changed section carries its C(diff) (files before and after, config files, leaks), and RV(diff) holds them all.
  platform:
    platforms: posix
    support: full
    description: Linux hosts.
"""

EXAMPLES = r"""
- name: Remediate a host in one call
  sandboxguard.boundary.remediate:
    hermes_home: /home/hermes/.hermes
    paths: /srv/agents/workspaces
    owner: hermes
    home_mode: profile
  become: true
  register: fixed

- name: Show what each fix did
  ansible.builtin.debug:
    msg: "{{ fixed.fixes | dict2items | map(attribute='key') | zip(fixed.fixes | dict2items | map(attribute='value.status')) }}"

- name: Only strip setuid/setgid bits and file capabilities, in check mode
  sandboxguard.boundary.remediate:
    paths: /srv/agents/workspaces
    fixes: [setid, caps]
  become: true
  check_mode: true
"""

RETURN = r"""
status:
  description: C(failed) when a fix failed, else C(changed) when one changed something (in check mode, would), else C(ok).
  returned: always
  type: str
  sample: changed
failed_fixes:
  description: The fixes that failed, in the order they ran.
  returned: always
  type: list
  elements: str
  sample: [home_mode]
fixes:
  description:
    - One section per fix (C(ownership), C(setid), C(caps), C(sandboxes), C(home_mode), C(leaks)), each the report
      envelope (C(roots), C(changed), C(complete), C(errors) as C({path, op, error}), C(warnings), C(counts),
      C(elapsed)) with C(status) (C(changed), C(ok), C(failed), C(skipped)), C(reason), C(dry_run), C(module) (the
      single-step module that does the same) and, with C(--diff), C(diff).
    - The walk fixes add C(files) (the per-file entries of M(sandboxguard.boundary.setid_strip) that needed this
      fix) and C(absent); C(sandboxes) the keys of M(sandboxguard.boundary.sandbox_sweep); C(home_mode) C(mode),
      C(homes) (as M(sandboxguard.boundary.terminal_home)) and C(absent); C(leaks) C(users), C(scope), C(removed)
      and C(quarantine) (as M(sandboxguard.boundary.leaks_remove)).
  returned: always
  type: dict
  sample:
    setid: {"status": "changed", "changed": true, "reason": null, "module": "setid_strip", "counts": {"setid": 1},
            "files": [{"path": "/home/hermes/.hermes/sandboxes/docker/t1/workspace/sh", "mode_before": "04755",
                       "mode_after": "0755", "actions": ["setuid"]}]}
    home_mode: {"status": "skipped", "changed": false, "reason": "no mode asked for (home_mode, sandboxguard_home_mode)"}
roots:
  description: The roots the walk fixes walked (realpaths).
  returned: always
  type: list
  elements: str
changed:
  description: Whether a fix changed something (in check mode, would).
  returned: always
  type: bool
complete:
  description: False when a fix failed.
  returned: always
  type: bool
errors:
  description: Every fix's errors (C(path), C(op), C(error)), each once.
  returned: always
  type: list
  elements: dict
counts:
  description: How many fixes ended in each status, and C(errors).
  returned: always
  type: dict
dry_run:
  description: True in check mode.
  returned: always
  type: bool
elapsed:
  description: Seconds the fixes took.
  returned: always
  type: float
diff:
  description: The diffs of every section, each header naming its fix.
  returned: with C(--diff), when something changed
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.audit_module import (
    SCOPE_ARGUMENT_SPEC,
    host_inputs,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.owner import resolve_owner
from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import (
    exit_report,
    input_errors_fail,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._fleet import (
    leaks_remove,
    remediate,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import strip as stripmod
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_list, as_value
from ansible_collections.sandboxguard.boundary.plugins.module_utils.walk_module import report_diff


def _diffs(host, wanted):
    """Each changed section's diff (the walk fixes' from their files, as setid_strip's; the others' from
    the library) when *wanted* (--diff), none otherwise; returns them all, each header naming its fix."""
    everything = []
    for fix, section in host["fixes"].items():
        diff = section.pop("diff", None)
        if fix in remediate.WALK_FIXES and section.get("files"):
            diff = [report_diff(section)]
        if not (wanted and diff and section["changed"]):
            continue
        section["diff"] = diff
        everything.extend(dict(part, before_header="%s: %s" % (fix, part.get("before_header", "")),
                               after_header="%s: %s" % (fix, part.get("after_header", ""))) for part in diff)
    return everything


def main():
    argument_spec = dict(SCOPE_ARGUMENT_SPEC)
    argument_spec.update(
        fixes=dict(type="list", elements="str", default=list(remediate.FIXES)),
        owner=dict(type="str"),
        group=dict(type="str"),
        max_listed=dict(type="int", default=stripmod.DEFAULT_MAX_LISTED),
        quarantine_dir=dict(type="path", default=leaks_remove.DEFAULT_QUARANTINE),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True, required_by={"group": "owner"})
    p = module.params
    owner = resolve_owner(module, as_value(p["owner"]), as_value(p["group"]))
    with input_errors_fail(module):
        request, settings = host_inputs(p, remediate.SETTING_DEFAULTS, {"task_dirs": True}, owner=owner,
                                        max_listed=p["max_listed"], quarantine_dir=p["quarantine_dir"],
                                        dry_run=module.check_mode)
        host = remediate.remediate_host(as_list(p["fixes"]), request, settings)
    diff = _diffs(host, module._diff)
    fail_msg = remediate.failure_text(host) if host["failed"] else None
    host["failed_fixes"] = host.pop("failed")  # "failed" is Ansible's own key in a result
    extra = {"diff": diff} if diff else {}
    exit_report(module, host, fail_msg=fail_msg, **extra)


if __name__ == "__main__":
    main()
