#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
---
module: bwrap_probe
short_description: Facts about bubblewrap on a host, probed as the unprivileged agent user
description:
  - Finds C(bwrap), reads its version and compares it with O(min_version); says whether it is setuid.
  - Finds C(prlimit) (util-linux), which applies the resource limits before bwrap starts.
  - Reads C(user.max_user_namespaces), C(kernel.unprivileged_userns_clone) (Debian's older knob) and
    C(kernel.apparmor_restrict_unprivileged_userns) (Ubuntu 23.10 and later), and whether a loaded
    AppArmor profile granting C(userns) attaches to the bwrap path.
  - Starts the real sandbox (C(--unshare-all --unshare-user --die-with-parent --new-session --ro-bind / /
    --proc /proc --dev /dev --tmpfs /tmp), with the credential stores, C(/run/user/<uid>) and the docker
    socket masked, under prlimit) B(as the agent user, never as root), with a timeout, and runs the
    isolation checks inside it.
  - A failure is classified from bwrap's stderr and the host facts into RV(reason) and RV(remediation).
  - Changes nothing on the host, so check mode runs the probe as well.
version_added: 1.0.0
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  user:
    description:
      - The agent user to probe as (name or uid). Required when the module runs as root (C(become)).
      - C(root) (or uid 0) is refused, because root bypasses user namespace restrictions and passes where
        the agent user fails.
      - Without become, the probe runs as the connecting user and O(user) must name that user or be unset.
    type: str
  min_version:
    description: Minimum bubblewrap version; the default is the oldest the Hermes bubblewrap backend runs on.
    type: str
    default: 0.9.0
  bwrap:
    description:
      - Path of the bwrap to probe.
      - By default the first C(bwrap) on C(PATH) and the usual sbin/bin directories.
    type: path
  profile:
    description: Sandbox profile to probe; C(network) shares the host network, the others keep loopback only.
    type: str
    choices: [restricted, workspace, network]
    default: network
  checks:
    description:
      - Isolation checks to run inside the sandbox; by default all of them.
      - A check that cannot run on this host (no credential store in the agent's home, no docker socket,
        limits disabled) is reported C(skipped) with the reason.
    type: list
    elements: str
    choices: [user_namespace, root_readonly, tmp_fresh, pid_private, network_loopback_only,
              credentials_hidden, run_user_empty, docker_socket_masked, rlimit_as, rlimit_cpu, rlimit_nproc]
  limits:
    description:
      - Resource limits applied with prlimit, as the backend does; 0 disables one, and with all three 0
        there is no prlimit at all.
      - Memory and CPU time are set in front of bwrap; the process limit is set inside the sandbox, after
        bwrap made its user namespace, where the kernel counts the sandbox's processes alone (Linux 5.14 and
        later; on an older kernel it is not applied, with a warning). Set in front of bwrap it would count
        every process of the agent's uid on the host and fail a busy account's sandbox.
    type: dict
    suboptions:
      memory_mb:
        description: Address space per process in MiB (RLIMIT_AS).
        type: int
        default: 256
      cpu_seconds:
        description: CPU seconds per process (RLIMIT_CPU).
        type: int
        default: 30
      max_procs:
        description: Processes and threads the command may add inside the sandbox (RLIMIT_NPROC, set to
          this plus 2 for bwrap's init and the shell).
        type: int
        default: 256
  timeout:
    description: Seconds to wait for the sandbox before it is killed and RV(reason) is C(timeout).
    type: float
    default: 20
  require_pass:
    description:
      - Fail the task when the probe does not pass, with the reason and the fix in the message.
      - When false, the result is returned for the caller to judge (RV(ok)).
    type: bool
    default: false
  remediation_hints:
    description:
      - Text to add to the failure message of O(require_pass) for a RV(remediation), keyed by its name, in the
        caller's own terms; the bwrap role passes its variable names (its C(bwrap_remediation_hints)).
        RV(remediation_text) itself names the fix in the library's terms only.
    type: dict
    version_added: 1.0.0
  plugin_settings:
    description:
      - Hermes bubblewrap plugin settings (C(plugins.entries.bubblewrap.settings)) to validate the way the
        backend will; returned normalised in RV(plugin_settings). Nothing is written.
      - C(~) in a bind is the agent user's home; a bind source that is, lies under or resolves into a
        hidden path, or contains one while bound elsewhere, is dropped with a warning.
    type: dict
  hermes_home:
    description:
      - The agent's C(HERMES_HOME) when it is not C(~/.hermes). The backend hides it as it hides
        C(~/.hermes); the probe checks it is hidden, and binds into it are dropped.
    type: path
    version_added: 1.0.0
notes:
  - The module runs C(bwrap --version) and the sandbox; it needs Python 3.9 or later on the target.
  - Inside a Docker container the sandbox needs C(--security-opt seccomp=unconfined) (the default seccomp
    profile blocks namespace creation) and C(--security-opt systempaths=unconfined) (Docker masks /proc paths
    bwrap mounts over).
seealso:
  - name: bubblewrap
    description: Upstream project.
    link: https://github.com/containers/bubblewrap
"""

EXAMPLES = r"""
- name: Probe bubblewrap as the agent user
  sandboxguard.boundary.bwrap_probe:
    user: hermes
  become: true
  register: bwrap

- name: Show why the sandbox cannot start
  ansible.builtin.debug:
    msg: "{{ bwrap.reason }}: {{ bwrap.message }} -- fix: {{ bwrap.remediation_text }}"
  when: not bwrap.ok

- name: Require a passing probe under the restricted profile
  sandboxguard.boundary.bwrap_probe:
    user: hermes
    profile: restricted
    require_pass: true
  become: true
"""

RETURN = r"""
ok:
  description: >-
    True when bwrap meets the minimum, prlimit exists, the sandbox started as the agent user
    and no isolation check failed.
  type: bool
  returned: always
reason:
  description:
    - C(ok), or the first problem, for example C(version-too-old), C(bwrap-missing), C(userns-restricted)
      (AppArmor restriction), C(userns-disabled) (a sysctl), C(namespace-blocked) (container seccomp),
      C(uid-map-denied), C(mount-propagation-denied), C(proc-mount-denied), C(loopback-failed),
      C(setuid-unsupported), C(timeout), C(isolation-failed), C(prlimit-missing).
  type: str
  returned: always
message:
  description: One sentence naming the problem.
  type: str
  returned: always
remediation:
  description: >-
    What would fix it, C(none), C(install), C(install_prlimit), C(apparmor_profile), C(sysctl),
    C(container_options), C(remove_setuid), C(setuid), C(agent_user) or C(investigate).
  type: str
  returned: always
remediation_text:
  description: The fix in words, naming the role variable or command.
  type: str
  returned: always
findings:
  description:
    - What stops the agent user's sandbox or weakens it, in priority order (RV(reason) is the first unless
      RV(errors) holds one), such as C(bwrap-missing), C(version-too-old), C(userns-restricted), C(prlimit-missing),
      C(isolation-failed), C(timeout) and the other reasons of RV(reason).
    - Each C({path, reason, remediation, message}); C(path) is the bwrap binary (or C(prlimit)).
  type: list
  elements: dict
  returned: always
errors:
  description:
    - Why the probe could not give a verdict, each C({path, op, error}) with C(op=probe), the report envelope's
      error shape; C(path) is the user asked for (C(root-probe-refused), C(user-unknown),
      C(user-switch-denied)) or the bwrap binary (C(exec-failed), the probe process did not start).
  type: list
  elements: dict
  returned: always
complete:
  description: False when RV(errors) holds one or the sandbox ran out of O(timeout); the verdict is partial.
  type: bool
  returned: always
roots:
  description: The bwrap binary probed (or asked for); empty when none was found on C(PATH).
  type: list
  elements: str
  returned: always
counts:
  description: >-
    C(checks) (isolation checks planned), C(pass), C(fail), C(skipped), C(not_run), C(findings) and C(errors).
  type: dict
  returned: always
elapsed:
  description: Seconds the probe took.
  type: float
  returned: always
problems:
  description:
    - B(Deprecated) after 1.0.0, removed in 2.0.0; read RV(findings) and RV(errors) instead.
    - Every problem found, findings and errors together as C({reason, remediation, message}), in priority
      order (RV(reason) is the first), as 1.0.0 returned them.
  type: list
  elements: dict
  returned: always
bwrap:
  description: The bwrap binary.
  type: dict
  returned: always
  contains:
    path:
      description: 'Absolute path, or null when not found.'
      type: str
    version:
      description: 'Parsed version X.Y.Z or null.'
      type: str
    version_text:
      description: 'Output of C(bwrap --version).'
      type: str
    setuid:
      description: 'Whether the binary has the setuid bit.'
      type: bool
    meets_min:
      description: 'Whether the version is at least O(min_version).'
      type: bool
prlimit:
  description: C(path) and C(found) of prlimit.
  type: dict
  returned: always
userns:
  description: >-
    C(max_user_namespaces), C(unprivileged_userns_clone), C(apparmor_restrict);
    null when the knob does not exist.
  type: dict
  returned: always
apparmor:
  description: >-
    C(enabled), C(profiles) (profiles in /etc/apparmor.d attaching to the bwrap path, with C(loaded)
    and C(grants_userns)), C(attached).
  type: dict
  returned: always
sysctl_fix:
  description: The sysctl settings (C(name=value)) that would enable unprivileged user namespaces on this host; empty when none is off.
  type: list
  elements: str
  returned: always
in_container:
  description:
    - Whether the host looks like a container (C(/.dockerenv), C(/run/.containerenv), C(/run/systemd/container),
      PID 1's C(container=) variable such as C(container=lxc), or a container runtime in PID 1's cgroup); the
      same answer the home mode uses.
  type: bool
  returned: always
process_limit_scoped:
  description:
    - Whether a process limit set inside a sandbox counts that sandbox alone on this kernel (Linux 5.14 and
      later). When false the process limit is not applied and a warning says so; null when C(max_procs) is 0
      or the probe did not get that far.
  type: bool
  returned: when the probe ran as the agent user
user:
  description: C(name), C(uid) and C(home) of the user the probe ran as; null when refused.
  type: dict
  returned: always
probe:
  description: The sandbox run itself.
  type: dict
  returned: always
  contains:
    ran:
      description: 'Whether the sandbox was started.'
      type: bool
    ok:
      description: 'Whether it started and ran the checks to the end.'
      type: bool
    returncode:
      description: 'Exit status (null on timeout).'
      type: int
    stderr:
      description: 'bwrap''s stderr.'
      type: str
    reason:
      description: 'Classified failure of this run.'
      type: str
    remediation:
      description: 'Fix for this run''s failure.'
      type: str
    timed_out:
      description: 'Whether O(timeout) ran out.'
      type: bool
    argv:
      description: 'The command line, with the check script elided.'
      type: list
      elements: str
isolation:
  description: >-
    One entry per isolation check, with C(name), C(status) (C(pass), C(fail), C(skipped), C(not_run)),
    C(ok) and C(detail) (why, for skipped and not_run).
  type: list
  elements: dict
  returned: always
apparmor_profile:
  description: >-
    Text of an AppArmor profile granting C(userns) to the resolved bwrap path (for /etc/apparmor.d),
    or null without bwrap.
  type: str
  returned: always
plugin_settings:
  description: C(settings) (normalised), C(errors) and C(warnings) for O(plugin_settings).
  type: dict
  returned: when O(plugin_settings) is given
warnings:
  description: Warnings (a refused home_allow entry, a skipped bind), shown by Ansible.
  type: list
  elements: str
  returned: when there are warnings
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report, fail, input_errors_fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import bwrap as bwrapmod
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._bwrap.run import (
    DEFAULT_TIMEOUT_S,
    ProbeUserRefused,
    resolve_probe_user,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._bwrap.diagnosis import (
    DEFAULT_MIN_VERSION,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._bwrap.argv import (
    DEFAULT_LIMITS,
    DEFAULT_PROFILE,
    PROFILES,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._bwrap.checks import ISOLATION_CHECKS
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import report as envelope
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.bwrap_settings import (
    validate_plugin_settings,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "user": {"type": "str"},
            "min_version": {"type": "str", "default": DEFAULT_MIN_VERSION},
            "bwrap": {"type": "path"},
            "profile": {"type": "str", "choices": list(PROFILES), "default": DEFAULT_PROFILE},
            "checks": {"type": "list", "elements": "str", "choices": list(ISOLATION_CHECKS)},
            "limits": {"type": "dict", "options": {
                "memory_mb": {"type": "int", "default": DEFAULT_LIMITS["memory_mb"]},
                "cpu_seconds": {"type": "int", "default": DEFAULT_LIMITS["cpu_seconds"]},
                "max_procs": {"type": "int", "default": DEFAULT_LIMITS["max_procs"]},
            }},
            "timeout": {"type": "float", "default": float(DEFAULT_TIMEOUT_S)},
            "require_pass": {"type": "bool", "default": False, "no_log": False},
            "plugin_settings": {"type": "dict"},
            "hermes_home": {"type": "path"},
            "remediation_hints": {"type": "dict"},
        },
        supports_check_mode=True,
    )
    params = module.params
    limits = params["limits"] or {}
    with input_errors_fail(module):
        bwrapmod.check_request(params["min_version"], params["bwrap"], limits, params["timeout"], params["checks"],
                               params["profile"])
    try:
        resolve_probe_user(params["user"])
    except ProbeUserRefused as exc:
        fix = "set the user option to the agent user" if os.geteuid() == 0 else "connect as that user or use become"
        fail(module, "user %s: %s (%s)" % (params["user"] or "(unset)", exc, fix),
             reason=exc.reason, remediation="agent_user")

    with input_errors_fail(module):
        report = bwrapmod.probe(user=params["user"], min_version=params["min_version"], checks=params["checks"],
                                profile=params["profile"], limits=limits, bwrap=params["bwrap"],
                                timeout=params["timeout"], hermes_home=params["hermes_home"])
    path = report["bwrap"]["path"]
    try:
        report["apparmor_profile"] = bwrapmod.apparmor_profile(os.path.realpath(path)) if path else None
    except ValueError as exc:
        report["apparmor_profile"] = None
        envelope.add_warning(report, "no AppArmor profile can name %s: %s" % (path, exc))
    if params["plugin_settings"] is not None:
        home = report["user"]["home"] if report["user"] else None
        report["plugin_settings"] = validate_plugin_settings(params["plugin_settings"], home=home,
                                                             hermes_home=params["hermes_home"])
        for warning in report["plugin_settings"]["warnings"]:
            envelope.add_warning(report, warning)
    fail_msg = None
    if params["require_pass"] and not report["ok"]:
        hint = (params["remediation_hints"] or {}).get(report["remediation"])
        fail_msg = "bwrap probe failed (%s): %s. Fix (%s): %s%s" % (
            report["reason"], report["message"], report["remediation"], report["remediation_text"],
            " (%s)" % hint if hint else "")
    exit_report(module, report, fail_msg=fail_msg, changed=False)


if __name__ == "__main__":
    main()
