#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

DOCUMENTATION = r"""
---
module: library_install
short_description: Install the sandboxguard library and CLI tree on a host in one call
description:
  - Makes O(dest) hold exactly the files of O(files) (relative path to content), written in one module call
    instead of one C(copy) task per file. The M(sandboxguard.boundary.sandbox_sweep) role's install uses it
    (about 60 files; one task instead of 60 round trips per host).
  - A file whose content, mode or owner differ is written under a temporary name in its directory and renamed
    over the old one, so a sweep that runs meanwhile reads the old or the new file, never half of one.
  - Files ending in one of O(suffixes) that O(files) no longer lists are removed from the directories
    O(files) names; nothing else under O(dest) is touched.
  - Directories below O(dest) are created (root, O(dir_mode)) and opened one component at a time without
    following a symbolic link; a link or a file where a directory belongs fails the task naming it.
  - Files and directories are owned by root when the module runs as root.
  - O(state=absent) removes what O(state=present) installed - the files O(files) lists (their contents are not read),
    the bytecode Python compiled from them (C(__pycache__/<name>.*.pyc)), files with one of O(suffixes) left in the
    listed directories, then each listed directory and O(dest) when they are left empty. Anything else stays, and
    so does the directory holding it.
version_added: 1.0.0
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  dest:
    description: The install directory, for example C(/usr/local/lib/sandboxguard). Its parent must exist.
    type: path
    required: true
  state:
    description: V(present) installs the tree; V(absent) removes it (see above).
    type: str
    choices: [present, absent]
    default: present
  files:
    description:
      - Mapping of paths relative to O(dest) (C(sandboxguard/sweep.py)) to their text content (with
        O(state=absent) the contents are ignored; give empty strings).
      - Paths with C(.), C(..) or empty components are refused.
      - The contents are not logged (C(no_log)); the result lists the paths that changed.
    type: dict
    required: true
  mode:
    description: Mode of each file.
    type: raw
    default: "0644"
  dir_mode:
    description: Mode of each directory the module creates.
    type: raw
    default: "0755"
  suffixes:
    description: Files with these endings that O(files) does not list are removed from the listed directories.
    type: list
    elements: str
    default: [".py"]
seealso:
  - module: sandboxguard.boundary.sandbox_sweep
attributes:
  check_mode:
    support: full
    description: Reports which files would be written or removed and writes nothing.
  diff_mode:
    support: full
    description: Lists the files written and removed (the paths, not their source).
  platform:
    platforms: posix
    support: full
    description: Linux and other POSIX hosts.
"""

EXAMPLES = r"""
- name: Install two files of a tree
  sandboxguard.boundary.library_install:
    dest: /usr/local/lib/sandboxguard
    files:
      sandboxguard/__init__.py: "{{ lookup('ansible.builtin.file', 'src/sandboxguard/__init__.py', rstrip=false) }}"
      sandboxguard_cli/__init__.py: ""

- name: Remove the tree again
  sandboxguard.boundary.library_install:
    dest: /usr/local/lib/sandboxguard
    state: absent
    files:
      sandboxguard/__init__.py: ""
      sandboxguard_cli/__init__.py: ""
"""

RETURN = r"""
written:
  description: Paths (relative to O(dest)) written, or that would be written in check mode.
  returned: always
  type: list
  elements: str
  sample: [sandboxguard/sweep.py]
removed:
  description:
    - Paths removed (or that would be) because O(files) no longer lists them.
    - With O(state=absent) every path removed, directories with a trailing C(/) (C(./) for O(dest) itself).
  returned: always
  type: list
  elements: str
counts:
  description: C(files) given, C(written), C(removed) and C(unchanged).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import exit_report, fail, input_errors_fail
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._privileged import install
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import report as envelope
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_mode
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.text import escape


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            files=dict(type="dict", required=True, no_log=True),
            mode=dict(type="raw", default=envelope.mode_text(install.FILE_MODE)),
            dir_mode=dict(type="raw", default=envelope.mode_text(install.DIR_MODE)),
            suffixes=dict(type="list", elements="str", default=list(install.SUFFIXES)),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        with input_errors_fail(module, dest=p["dest"]):
            if p["state"] == "absent":
                report = install.remove_tree(p["dest"], p["files"], suffixes=tuple(p["suffixes"]),
                                             dry_run=module.check_mode)
            else:
                report = install.install_tree(p["dest"], p["files"], mode=as_mode(p["mode"]),
                                              dir_mode=as_mode(p["dir_mode"], "dir_mode"),
                                              suffixes=tuple(p["suffixes"]), dry_run=module.check_mode)
    except OSError as exc:
        fail(module, "%s: %s" % (exc.filename or p["dest"], exc.strerror or exc), dest=p["dest"])
    extra = {}
    if module._diff and report["changed"]:
        lines = ["write  %s\n" % escape(f) for f in report["written"]]
        lines.extend("remove %s\n" % escape(f) for f in report["removed"])
        extra["diff"] = {"before_header": p["dest"], "after_header": p["dest"], "prepared": "".join(lines)}
    exit_report(module, report, **extra)


if __name__ == "__main__":
    main()
