#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
module: audit_info
short_description: Audit every sandbox boundary of a host in one read-only call
version_added: 1.0.0
description:
  - Runs the checks of the fleet audit on the host in one module call (one AnsiballZ transfer and one
    Python start per host, which is what keeps an audit of many hosts fast) and returns one record with
    one entry per check. Changes nothing, in any mode.
  - C(privileged_files) lists setuid/setgid regular files and files with capabilities under the Docker
    sandboxes the engine reports in scope (the scope of M(sandboxguard.boundary.sandbox_mounts_info), when an
    engine answers), under C(<HERMES_HOME>/sandboxes/docker) of each O(hermes_home) and its profiles, and
    under O(paths). One race-safe walk that never follows a symlink, as M(sandboxguard.boundary.setid_strip)
    in check mode.
  - "C(privileged_files) covers the CI runners' roots too (O(github_runners), O(gitlab_config)); in each GitHub
    runner's work folder it also lists every file and directory not owned by the runner user (its uid or gid
    is another's, which makes the next C(actions/checkout) fail with C(Permission denied)), as findings with
    C(reasons=[owner]) and C(owner) (the runner's C([uid, gid])), counted in C(counts.not_runner_owned).
    M(sandboxguard.boundary.sandbox_sweep) with the same O(github_runners) gives them back."
  - C(home_mode) compares the C(TERMINAL_HOME_MODE) of each Hermes home and profile with O(home_mode);
    a finding is what M(sandboxguard.boundary.terminal_home) would change. Without O(home_mode) the check
    is C(not_checked) (there is nothing to compare against) and lists the modes it read.
  - C(leaks) lists what agents left outside their sandbox (cron jobs, Hermes scripts, user units, run
    directories), as M(sandboxguard.boundary.leaks_info), for the accounts that run agents (see O(leak_users)).
  - C(bwrap) probes bubblewrap as O(agent_user), as M(sandboxguard.boundary.bwrap_probe); C(not_checked)
    without an agent user (the probe never runs as root).
  - "C(runtime) reads the sandbox's own settings: each Hermes config (of O(hermes_home) and its profiles) -
    C(terminal.docker_extra_args) adding C(--privileged), C(--cap-add) of ALL, SYS_ADMIN, SETFCAP, MKNOD or
    DAC_READ_SEARCH, C(seccomp=unconfined), C(apparmor=unconfined), C(--pid/--userns/--network host) or the engine's
    socket, C(terminal.docker_volumes) writable outside the sandbox roots, C(security.terminal_secret_isolation) off
    (or auto on a kernel without Landlock), and the engine the C(docker) backend really drives
    (C(HERMES_DOCKER_BINARY), a C(podman) named docker); and each agent container's inspect, stopped ones too
    (Hermes starts them again) - Privileged, CapAdd, SecurityOpt, no-new-privileges, host namespaces, writable
    binds outside the roots, the engine's socket. With O(github_runners) or O(gitlab_config) also the Docker
    daemon's default seccomp profile and userns-remap. Each finding has C(rule), C(severity), C(where), C(detail),
    C(fix) and C(cis) (the CIS Docker Benchmark id, when one applies). With nothing to read (no Hermes config, no
    agent container) the check is C(not_checked), never clean."
  - Each check has a C(status) of C(findings), C(clean), C(error) (it could not run or not completely and
    found nothing; C(reason) says why), C(not_checked) (it was selected and covered nothing - no root in
    scope, none of the Hermes homes or paths found on the host, no agent account or user, no mode to compare
    against - C(reason) names the playbook input and role variable to set) or C(skipped) (not selected in
    O(checks)). Nothing checked is never clean.
  - A path that does not exist on the host is listed in the check's C(absent) and is not an error while
    something else was looked at; when nothing given exists the check is C(not_checked).
  - The host's record is C(not_audited) when a selected check was C(not_checked) (and none found something or
    failed), and lists those checks in C(not_checked). Container engine discovery that was off or failed is a
    warning of the host (the record's C(warnings), and a warning on the console).
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  checks:
    description:
      - Which checks to run; the others are C(skipped). A comma-separated string is accepted. An empty list
        selects none (the host is then C(not_audited)).
    type: list
    elements: str
    default: [privileged_files, home_mode, leaks, bwrap, runtime]
  paths:
    description:
      - Directories (or files) to look for privileged files under, besides the Hermes and Docker sandboxes.
        System paths such as C(/) or C(/usr) are refused (an C(error) naming the path).
    type: list
    elements: path
    default: []
  hermes_home:
    description:
      - HERMES_HOME directories, for C(privileged_files) (their C(sandboxes/docker) and their profiles') and
        for C(home_mode).
    type: list
    elements: path
    aliases: [hermes_homes]
    default: []
  sandbox_dir:
    description: The agent's C(TERMINAL_SANDBOX_DIR), when set; its C(docker) directory is in scope.
    type: path
  github_runners:
    description:
      - GitHub Actions self-hosted runner directories (holding C(.runner)); each one's work folder is a root of
        C(privileged_files), with the runner-ownership findings. A refused runner directory is an C(error)
        of the check naming it and the fix. A comma-separated string is accepted.
    type: list
    elements: path
    default: []
  gitlab_config:
    description:
      - GitLab Runner's C(config.toml); the host directories its docker executors bind are roots of
        C(privileged_files). Needs Python 3.11 or later on the host.
    type: path
  docker:
    description:
      - C(auto) asks the Docker engine for in-scope bind mounts when one answers, and notes it in a warning
        of the check when none does; C(always) makes an engine that does not answer an C(error); C(never)
        does not ask.
    type: str
    choices: [auto, always, never]
    default: auto
  docker_host:
    description:
      - The engine's address (C(unix:///run/docker.sock), C(unix:///run/podman/podman.sock), C(tcp://...)).
      - Default asks every engine socket present (C(DOCKER_HOST) when set, Docker's and Podman's sockets).
    type: str
  budget:
    description:
      - Seconds the privileged-files walk may take (0 = no limit); a walk cut short is reported.
      - A finite number of seconds, V(0) or more; NaN, infinity, negatives and words fail the task with the library's one budget message.
    type: raw
    default: 10
  max_listed:
    description: Findings listed per check at most (the counts cover everything).
    type: int
    default: 200
  home_mode:
    description:
      - The TERMINAL_HOME_MODE asked for (C(auto), C(real), C(profile) or an alias); without it the C(home_mode)
        check is C(not_checked).
    type: str
  home_where:
    description: Where the mode is read (C(config.yaml), C(.env) or both), as the C(where) option of M(sandboxguard.boundary.terminal_home).
    type: str
    choices: [config, env, both]
    default: config
  profiles:
    description: Compare every profile under C(<HERMES_HOME>/profiles/) too.
    type: bool
    default: true
  create_profile_home:
    description: Count a missing (or group/other-writable) profile home as a finding, as the remediation creates it.
    type: bool
    default: true
  leak_users:
    description:
      - Accounts to audit for leaks. Every job line of an audited user's cron table counts as a leak, so the
        default is only the accounts that run agents - the owners of the O(hermes_home) directories and their
        profiles, of O(sandbox_dir) and of the C(<sandbox>/docker) directories (not of the task directories
        below them, which a root container can chown), and O(agent_user) - never root. Name root (or an
        operator account) here to audit it too. With no such account known (or none of them on the host) the
        check is C(not_checked), with the reason. The check's C(scope) says why each account was audited.
    type: list
    elements: str
    default: []
  leak_tmp_patterns:
    description: Shell patterns of leftover run directories in C(/tmp).
    type: list
    elements: str
    default: ["ab-*"]
  leak_min_age:
    description: Leave out leaks younger than this many seconds.
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
    description: The unprivileged user the agent runs as, for the bubblewrap probe; without it the C(bwrap) check is C(not_checked).
    type: str
  bwrap_min_version:
    description: The lowest bubblewrap version that passes.
    type: str
    default: "0.9.0"
  bwrap_checks:
    description: Which isolation checks the probe runs (default all).
    type: list
    elements: str
    default: []
  bwrap_timeout:
    description: Seconds the probe's sandbox may run.
    type: int
    default: 20
notes:
  - Reading every file needs root (C(become)). The engines are asked with the library's own client (no Docker SDK),
    each socket on its own, with a deadline; one that cannot be asked is an error of the host (never clean), and
    the other engines' sandboxes are still walked.
  - The role R(sandboxguard.boundary.boundary_audit,ansible_collections.sandboxguard.boundary.boundary_audit_role)
    runs this module on every host and writes the reports.
seealso:
  - module: sandboxguard.boundary.setid_strip
  - module: sandboxguard.boundary.sandbox_mounts_info
  - module: sandboxguard.boundary.leaks_info
  - module: sandboxguard.boundary.bwrap_probe
  - module: sandboxguard.boundary.terminal_home
attributes:
  check_mode:
    support: full
    description: Changes nothing in any mode.
  diff_mode:
    support: none
    description: Nothing changes.
  platform:
    platforms: posix
    support: full
    description: Linux hosts.
"""

EXAMPLES = r"""
- name: Audit a host
  sandboxguard.boundary.audit_info:
    hermes_home: /home/hermes/.hermes
    paths: /srv/agents/workspaces
    home_mode: profile
    agent_user: hermes
  become: true
  register: audit

- name: Show what was found
  ansible.builtin.debug:
    msg: "{{ audit.record.checks | dict2items | selectattr('value.status', 'eq', 'findings') | map(attribute='key') }}"
"""

RETURN = r"""
record:
  description: The host's record, as it appears under C(hosts) in C(boundary-audit.json).
  returned: always
  type: dict
  contains:
    status:
      description:
        - C(findings) when any check found something, else C(error) when any could not run, else C(not_audited) when
          a selected check was not checked (or none was selected), else C(clean).
      type: str
      returned: always
    not_checked:
      description: The checks that were selected and covered nothing (all of them when none was selected).
      type: list
      elements: str
      returned: always
    warnings:
      description: The host's warnings, e.g. container engine discovery off or failed (Docker sandboxes not asked for).
      type: list
      elements: str
      returned: always
    reason:
      description: Why the host is C(not_audited) (each check not checked, with its reason).
      type: str
      returned: when the host is not audited
    checks:
      description:
        - One entry per check (C(privileged_files), C(home_mode), C(leaks), C(bwrap), C(runtime)) with C(status) (C(findings),
          C(clean), C(error), C(not_checked) or C(skipped)), C(findings),
          C(reason), C(errors) (C(path), C(op), C(error)), C(elapsed), and what the check adds (C(roots), C(absent),
          C(engine), C(counts), C(warnings), C(homes)).
        - C(privileged_files) adds C(runner_roots), the GitHub runners' work folders it walked (C(path), C(owner)
          the runner user's C([uid, gid]), C(source)), and C(counts.not_runner_owned).
      type: dict
      returned: always
    elapsed:
      description: Seconds the audit took.
      type: float
      returned: always
  sample:
    status: findings
    checks:
      privileged_files:
        status: findings
        findings:
          - {"path": "/home/hermes/.hermes/sandboxes/docker/t1/workspace/sh", "mode": "04755", "caps": null,
             "uid": 0, "gid": 0, "reasons": ["setuid"]}
        reason: null
        errors: []
        roots: ["/home/hermes/.hermes/sandboxes/docker"]
        absent: []
status:
  description: The same as RV(record.status).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.audit_module import (
    SCOPE_ARGUMENT_SPEC,
    host_inputs,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import (
    exit_result,
    fail,
    input_errors_fail,
    warn,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._fleet import audit, audit_record
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core import defaults
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_list, as_value


def main():
    argument_spec = dict(SCOPE_ARGUMENT_SPEC)
    argument_spec.update(
        checks=dict(type="list", elements="str", default=list(audit_record.CHECKS)),
        max_listed=dict(type="int", default=audit.MAX_LISTED_FINDINGS),
        bwrap_min_version=dict(type="str", default=defaults.BWRAP_MIN_VERSION),
        bwrap_checks=dict(type="list", elements="str", default=[]),
        bwrap_timeout=dict(type="int", default=defaults.BWRAP_PROBE_TIMEOUT_S),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    p = module.params
    checks = as_list(p["checks"])
    unknown = [c for c in checks if c not in audit_record.CHECKS]
    if unknown:
        fail(module, "checks: unknown %s; choose from %s" % (", ".join(unknown), ", ".join(audit_record.CHECKS)))
    with input_errors_fail(module):
        request, settings = host_inputs(p, max_listed=p["max_listed"],
                                        bwrap_min_version=as_value(p["bwrap_min_version"]),
                                        bwrap_checks=as_list(p["bwrap_checks"]), bwrap_timeout=p["bwrap_timeout"])
        record = audit.audit_host(checks, request, settings, skip_reason="not selected (checks or tags)")
    for line in record["warnings"]:
        warn(module, line)
    exit_result(module, changed=False, record=record, status=record["status"])


if __name__ == "__main__":
    main()
