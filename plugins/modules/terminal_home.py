#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
---
module: terminal_home
short_description: Set TERMINAL_HOME_MODE for a Hermes home and its profiles
description:
  - Decides which C(HOME) the agent's terminal children get. C(auto) keeps the real home on a host and uses
    C({HERMES_HOME}/home) inside a container; C(real) always keeps the real home; C(profile) always uses
    C({HERMES_HOME}/home), so files, dotfiles and tool configs a child writes under C(~) stay in the Hermes home.
  - Writes C(terminal.home_mode) into C(config.yaml) (the agent reads non-secret settings from config before
    C(.env)) and, with O(where=env) or O(where=both), the C(TERMINAL_HOME_MODE=) line of C(.env).
  - The edit is line based and keeps comments, key order, quoting and unrelated keys. Shapes it cannot edit
    safely (a flow mapping with content, anchors or aliases on C(terminal:), several documents, tabs) make the
    module fail with the line number instead of rewriting the file; edit those by hand.
  - Applies to the default home and, with O(profiles=true), to every directory under C(profiles/) (symbolic
    links are not followed; a symlinked C(profiles/) gives no profiles, with a warning).
  - The Hermes home is the agent's to change, so it is reached only through descriptors. The home is opened
    component by component (a symbolic link is followed only where only root could have made it), the files
    are read only when they are regular files with one link (never a symbolic link, FIFO or device) and
    replaced atomically in the directory held open. A home or profile that cannot be configured that way fails
    the module with one line naming it and the fix, after every other home was configured (see RV(homes)).
  - Creates C({HERMES_HOME}/home) with mode 0700, owned like the Hermes home, and removes group and other
    write permission from an existing one.
  - New files are created with mode 0600 and the owner of the Hermes home; existing files keep their owner and
    permission bits (never a setuid, setgid or sticky bit).
  - With O(eval_isolation=true) also installs the crontab shim and an eval-run wrapper (see O(bin_dir)).
version_added: 1.0.0
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  hermes_home:
    description:
      - The Hermes home directory (usually C(~agent/.hermes)), or a list of them; each must exist.
      - A single path and a list are both accepted, as in M(sandboxguard.boundary.sandbox_sweep)
        (where the option is a list); with a list, every home is configured and C(homes) holds them all.
      - Required with O(state=present); ignored with O(state=absent).
    type: list
    elements: path
    aliases: [hermes_homes]
  state:
    description:
      - V(present) configures the homes (and with O(eval_isolation) installs the eval tools).
      - V(absent) removes what O(eval_isolation) installed in O(bin_dir) - the crontab shim and the eval-run
        wrapper, only files whose text carries the tool's own header (an operator's C(crontab) there stays, with a
        warning), and O(bin_dir) itself when it is left empty and is the default directory.
      - V(absent) leaves C(terminal.home_mode) and C(TERMINAL_HOME_MODE) as they are. Taking the setting out would
        not restore what the home held before (RV(previous) was the operator's or Hermes' own) and would silently
        give the agent's terminal children the real home again (Hermes' default C(auto)), widening what they can
        change; set the mode you want with O(state=present) and O(mode) instead.
    type: str
    choices: [present, absent]
    default: present
  mode:
    description:
      - The home mode. Aliases are accepted and normalised
        (C(isolated), C(profile_home), C(profile-home) mean C(profile); C(host), C(user), C(real_home),
        C(real-home) mean C(real)); anything else fails naming the accepted values.
    type: str
    default: profile
  where:
    description: Which file carries the setting.
    type: str
    choices: [config, env, both]
    default: config
  profiles:
    description: Also configure every profile under C(profiles/).
    type: bool
    default: true
  create_profile_home:
    description: Create C({HERMES_HOME}/home) (and each profile's) with safe permissions.
    type: bool
    default: true
  eval_isolation:
    description:
      - Install the crontab shim as O(bin_dir)C(/crontab) and the wrapper O(bin_dir)C(/sandboxguard-eval-run).
      - The wrapper runs a command with C(HOME={run}/home), C(TERMINAL_HOME_MODE=profile), the shim first on
        C(PATH), no C(DBUS_SESSION_BUS_ADDRESS) or C(XDG_RUNTIME_DIR), C(TMPDIR) in C({run}/cache/scratch) and
        the crontab table in C({run}/crontab), where C({run}) is its first argument.
    type: bool
    default: false
  bin_dir:
    description: Where O(eval_isolation) installs the shim and the wrapper.
    type: path
    default: /usr/local/lib/sandboxguard/eval-bin
  python:
    description: The interpreter in the shim's C(#!) line; it must be runnable by the agent user.
    type: path
    default: /usr/bin/python3
notes:
  - Supports check mode and diff mode; the diff shows each changed C(config.yaml) and C(.env).
  - The agent reads the mode when a terminal starts; running agents pick it up on their next terminal.
seealso:
  - module: sandboxguard.boundary.leaks_info
"""

EXAMPLES = r"""
- name: Keep eval runs out of the operator's home
  sandboxguard.boundary.terminal_home:
    hermes_home: /home/agent/.hermes
    mode: profile

- name: Also write .env and install the crontab shim for eval runs
  sandboxguard.boundary.terminal_home:
    hermes_home: /srv/evals/.hermes
    mode: isolated
    where: both
    eval_isolation: true

- name: Remove the crontab shim and the eval-run wrapper (the homes' mode setting stays)
  sandboxguard.boundary.terminal_home:
    state: absent

- name: Real home for a single-user laptop install, default profile only
  sandboxguard.boundary.terminal_home:
    hermes_home: /home/me/.hermes
    mode: real
    profiles: false
"""

RETURN = r"""
mode:
  description: The normalised mode that was set.
  returned: always
  type: str
  sample: profile
previous:
  description: C(terminal.home_mode) of the (first) default home before the change, or null when it was unset.
  returned: always
  type: str
  sample: auto
config_path:
  description: The (first) default home's C(config.yaml) (null when O(where=env)).
  returned: always
  type: str
  sample: /home/agent/.hermes/config.yaml
homes:
  description: One entry per home configured (the default home first, then the profiles by name).
  returned: always
  type: list
  elements: dict
  contains:
    hermes_home:
      description: The home directory.
      type: str
    config_path:
      description: Its C(config.yaml), or null when not written.
      type: str
    previous:
      description: C(terminal.home_mode) before.
      type: str
    config_changed:
      description: Whether C(config.yaml) changed (or would).
      type: bool
    env_path:
      description: Its C(.env), or null when not written.
      type: str
    env_previous:
      description: C(TERMINAL_HOME_MODE) in C(.env) before.
      type: str
    env_changed:
      description: Whether C(.env) changed (or would).
      type: bool
    profile_home:
      description: C({home}/home).
      type: str
    profile_home_changed:
      description: Whether it was created or its permissions tightened (or would be).
      type: bool
    error:
      description: Why this home could not be configured (one line naming the path and the fix), or null.
      type: str
removed:
  description: With O(state=absent), the eval tools (and O(bin_dir)) removed, or that would be in check mode.
  returned: when O(state=absent)
  type: list
  elements: str
  sample: [/usr/local/lib/sandboxguard/eval-bin/crontab]
shim:
  description: Paths installed for eval isolation and whether each changed.
  returned: when O(eval_isolation=true)
  type: dict
  sample: {"crontab": "/usr/local/lib/sandboxguard/eval-bin/crontab", "wrapper":
           "/usr/local/lib/sandboxguard/eval-bin/sandboxguard-eval-run", "changed": false}
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_result, fail, warn
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core import defaults
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._terminal.modes import CONFIGURED_MODE
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._terminal.configure import (
    DEFAULT_WHERE,
    WHERE_CHOICES,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._terminal.eval_tools import (
    DEFAULT_EVAL_BIN,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.errors import InputError
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.text import escape
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._terminal.configure import (
    configure_terminal_homes,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._terminal.eval_tools import (
    remove_eval_tools,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.home_mode import install_eval_tools


def remove_tools(module, bin_dir):
    """state=absent: the eval tools out of bin_dir; the homes' settings stay (see the docs)."""
    try:
        report = remove_eval_tools(bin_dir, dry_run=module.check_mode)
    except InputError as exc:
        fail(module, str(exc))
    except OSError as exc:
        fail(module, "%s: %s" % (exc.filename or bin_dir, exc.strerror or exc))
    for warning in report["warnings"]:
        warn(module, warning)
    result = {"changed": report["changed"], "removed": report["removed"]}
    if module._diff and report["removed"]:
        result["diff"] = {"before": "".join("%s\n" % escape(p) for p in report["removed"]), "after": "",
                          "before_header": bin_dir, "after_header": bin_dir}
    exit_result(module, **result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            hermes_home=dict(type="list", elements="path", aliases=["hermes_homes"]),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            mode=dict(type="str", default=CONFIGURED_MODE),
            where=dict(type="str", choices=list(WHERE_CHOICES), default=DEFAULT_WHERE),
            profiles=dict(type="bool", default=True),
            create_profile_home=dict(type="bool", default=True),
            eval_isolation=dict(type="bool", default=False),
            bin_dir=dict(type="path", default=DEFAULT_EVAL_BIN),
            python=dict(type="path", default=defaults.SYSTEM_PYTHON),
        ),
        required_if=[("state", "present", ("hermes_home",))],
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] == "absent":
        remove_tools(module, p["bin_dir"])
    if not p["hermes_home"]:
        fail(module, "hermes_home is empty: give the Hermes home directory (or a list of them)")
    # a refused home is reported after the others were configured, never instead of them
    done = configure_terminal_homes(p["hermes_home"], p["mode"], where=p["where"], include_profiles=p["profiles"],
                                    create_profile_home=p["create_profile_home"], dry_run=module.check_mode)
    reports, failures = done["reports"], list(dict.fromkeys(done["failures"]))
    if not reports:
        fail(module, "; ".join(failures))
    result = {
        "changed": any(r["changed"] for r in reports),
        "mode": reports[0]["mode"],
        "previous": reports[0]["previous"],
        "config_path": reports[0]["config_path"],
        "homes": [home for r in reports for home in r["homes"]],
    }
    if module._diff:
        result["diff"] = [d for r in reports for d in r["diff"]]
    if p["eval_isolation"]:
        if not os.access(p["python"], os.X_OK):
            fail(module, "python %s is not executable: install python3 or set python to an interpreter "
                 "the agent user can run" % p["python"])
        try:
            shim = install_eval_tools(p["bin_dir"], python=p["python"], dry_run=module.check_mode)
        except InputError as exc:
            fail(module, str(exc), **result)
        except OSError as exc:
            fail(module, "%s: %s" % (exc.filename or p["bin_dir"], exc.strerror or exc), **result)
        result["shim"] = {key: shim[key] for key in ("crontab", "wrapper", "changed")}
        result["changed"] = result["changed"] or shim["changed"]
    for warning in [w for r in reports for w in r.get("warnings", [])]:
        warn(module, warning)
    errors = failures + [e["error"] for r in reports for e in r.get("errors", [])]
    if errors:
        fail(module, "; ".join(errors), **result)
    exit_result(module, **result)


if __name__ == "__main__":
    main()
