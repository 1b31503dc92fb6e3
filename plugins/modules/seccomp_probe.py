#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
---
module: seccomp_probe
short_description: Prove in a throwaway container that the sandbox cannot make setuid files, file capabilities or device nodes
description:
  - Starts a container from a local O(image) (with C(python3)) the way the sandbox starts, through the engine at
    O(engine_url) - O(mode=hermes) with Hermes Agent's own docker arguments and then C(terminal.docker_extra_args)
    (from O(hermes_home)'s C(config.yaml) and O(extra_args)); O(mode=daemon) with no options, as a CI job runs under
    the Docker daemon's default profile; O(mode=podman) with Podman's defaults - and tries in it C(chmod 4755),
    C(chmod 2755), C(install -m 4755), C(open(O_CREAT, 04755)), C(fchmodat2) through C(syscall(452)), C(mknod c) and
    C(setcap), which must fail with EPERM (C(fchmodat2) may fail with ENOSYS where the engine's libseccomp does not
    know it; libc then uses C(fchmodat)), C(chmod 755), C(mkdir -p) and a venv, which must work, and
    C(unshare -U), C(keyctl) and C(io_uring_setup), which must stay denied where the engine's own default denies
    them. What each attempt made is read back (mode, device type, xattr), not taken from an exit code.
  - A reference container with the engine's own default profile (the same options otherwise) runs the same
    attempts, so RV(results) shows what the prevention changed (C(default)).
  - The probe mounts nothing of the host and has no network. It changes nothing on the host; its containers are
    removed. A probe that cannot run (no engine, no image, no C(python3) in it) returns RV(ran)=false and
    RV(ok)=false with the error, never a pass.
version_added: 1.2.0
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  image:
    description: A local image with C(python3) (the sandbox's own image will do; no registry is asked).
    type: str
    required: true
  mode:
    description: How the container starts.
    type: str
    choices: [hermes, daemon, podman]
    default: hermes
  engine_url:
    description:
      - The engine (C(unix:///var/run/docker.sock), C(unix:///run/podman/podman.sock)). Default C(DOCKER_HOST) or
        Docker's socket; with O(mode=podman) Podman's rootful socket.
    type: str
  hermes_home:
    description: Read C(terminal.docker_extra_args) from this Hermes home's C(config.yaml) (O(mode=hermes)).
    type: path
  extra_args:
    description: More docker run options, after the config's, as C(docker_extra_args) holds them.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds a probe container may run.
    type: float
    default: 120
  reference:
    description: Run the reference container with the engine's own default.
    type: bool
    default: true
  require_pass:
    description: Fail the task when the probe did not pass (or could not run).
    type: bool
    default: false
seealso:
  - module: sandboxguard.boundary.sandbox_prevent
attributes:
  check_mode:
    support: full
    description: Runs the probe in check mode too; it changes nothing on the host.
  diff_mode:
    support: none
    description: Nothing changes.
  platform:
    platforms: posix
    support: full
    description: Linux hosts with a Docker or Podman engine.
"""

EXAMPLES = r"""
- name: Prove the Hermes sandbox of a host
  sandboxguard.boundary.seccomp_probe:
    image: nikolaik/python-nodejs:python3.11-nodejs20
    hermes_home: /home/hermes/.hermes
    require_pass: true
  become: true
"""

RETURN = r"""
ok:
  description: Every attempt went as expected.
  returned: always
  type: bool
ran:
  description: The probe program ran to its end in the container.
  returned: always
  type: bool
reason:
  description: Why the probe did not pass (the first attempt not as expected, or why it could not run).
  returned: always
  type: str
engine:
  description: C(url), C(kind) (docker or podman) and C(version) of the engine.
  returned: always
  type: dict
seccomp:
  description: The seccomp option probed (a profile path, C(unconfined)), or null for the engine's default.
  returned: always
  type: str
results:
  description:
    - One entry per attempt - C(name), C(attempt) (what was tried), C(expect) (C(denied), C(allowed) or C(as_default)),
      C(outcome) (C(denied), C(allowed), C(not_run)), C(errno), C(default) (the outcome under the engine's own default,
      or null), C(detail), C(ok) and C(fix).
  returned: always
  type: list
  elements: dict
findings:
  description: The entries of RV(results) that were not as expected.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report, fail, input_errors_fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core import defaults
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._prevent import hermes, probe


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            mode=dict(type="str", choices=list(probe.MODES), default=probe.DEFAULT_MODE),
            engine_url=dict(type="str"),
            hermes_home=dict(type="path"),
            extra_args=dict(type="list", elements="str", default=[]),
            timeout=dict(type="float", default=float(probe.DEFAULT_TIMEOUT_S)),
            reference=dict(type="bool", default=True),
            require_pass=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] <= 0:
        fail(module, "timeout %s: the probe's seconds must be more than 0" % p["timeout"])
    with input_errors_fail(module):
        extra = []
        if p["hermes_home"]:
            settings, path = hermes.read_settings(p["hermes_home"])
            if settings is None:
                fail(module, "hermes_home: %s does not exist; give the Hermes home that holds config.yaml" % path)
            extra = list(settings["extra_args"])
        url = p["engine_url"] or ("unix://" + defaults.PODMAN_SOCKET if p["mode"] == "podman" else None)
        report = probe.probe(p["mode"], p["image"], url, [*extra, *p["extra_args"]], p["timeout"],
                             reference=p["reference"])
    fail_msg = None
    if p["require_pass"] and not report["ok"]:
        fail_msg = "seccomp probe failed: %s" % report["reason"]
    exit_report(module, report, fail_msg=fail_msg, changed=False)


if __name__ == "__main__":
    main()
