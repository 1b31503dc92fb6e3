# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PRIVATE to the library and the collection.

Module-side glue shared by the modules that walk a tree: options, diff, warnings.

Names in the diff and the warnings are text.escape-d; the result itself is carried by
report_module (text.for_result: a name that is not UTF-8 escaped, its bytes in ``*_b64``).
"""

import base64
import binascii
import os

from ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module import (
    errors_text,
    exit_report,
    fail,
    warn,
)
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import strip as stripmod
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._walk import fileops
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.errors import InputError
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.roots import RootRefused
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core import inputs
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.text import escape

WALK_ARGUMENT_SPEC = dict(
    paths=dict(type="list", elements="path", default=[]),
    paths_b64=dict(type="list", elements="str", default=[]),
    one_file_system=dict(type="bool", default=True),
    prune_mounts=dict(type="bool", default=True),
    budget=dict(type="raw", default=stripmod.DEFAULT_BUDGET_S),  # the library decides (inputs.budget)
    max_listed=dict(type="int", default=stripmod.DEFAULT_MAX_LISTED),
    fail_on_errors=dict(type="bool", default=True),
)


def _line(entry, before):
    mode = entry["mode_before"] if before else entry["mode_after"]
    text = "%s mode=%s" % (escape(entry["path"]), mode)
    if "chown" in entry["actions"]:
        text += " owner=%s:%s" % ((entry["uid"], entry["gid"]) if before else
                                  (entry.get("uid_after", "?"), entry.get("gid_after", "?")))
    if entry["caps_before"]:
        text += " caps=%s" % (entry["caps_before"] if before else "(none)")
    return text + "\n"


def report_diff(report):
    """A before/after diff of the listed findings, for --diff."""
    return {
        "before": "".join(_line(e, True) for e in report["files"]),
        "after": "".join(_line(e, False) for e in report["files"] if not e.get("error")),
        "before_header": "privileged files",
        "after_header": "after strip" if not report["dry_run"] else "after strip (check mode)",
    }


def walk_paths(module):
    """The roots to walk: ``paths`` as given, then ``paths_b64`` decoded to the names
    (os.fsdecode of the bytes) a result's ``roots_b64`` carries for roots that are not UTF-8."""
    paths = list(module.params["paths"] or ())
    for coded in module.params["paths_b64"] or ():
        try:
            raw = base64.b64decode(coded.encode("ascii"), validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            fail(module, "paths_b64: %r is not base64 (give the roots_b64 of a result, or base64 of a path's bytes)"
                 % coded)
        paths.append(os.fsdecode(raw))
    if not paths:
        fail(module, "paths and paths_b64 are both empty: give the directories to walk")
    return paths


def check_owner(module, chown_to, owner, group):
    """chown_to as the walk takes it, or fail the task naming owner/group."""
    try:
        return fileops.check_owner(chown_to)
    except InputError as exc:
        who = owner if group is None else "%s group %s" % (owner, group)
        fail(module, "owner %s: %s" % (who, str(exc).replace("chown_to ", "")))


def run_walk_module(module, **kwargs):
    """Run the walk for a module's params; exit_json or fail_json with the report."""
    params = module.params
    query = kwargs.pop("query", False)
    dry_run = kwargs.pop("dry_run", False) or module.check_mode
    paths = walk_paths(module)
    try:
        budget = inputs.budget(params["budget"])
        report = stripmod.run(
            paths, dry_run=dry_run,
            budget=budget, max_listed=params["max_listed"],
            one_file_system=params["one_file_system"], prune_mounts=params["prune_mounts"], **kwargs)
    except RootRefused as exc:
        fail(module, "refused root %s" % exc, path=exc.path)
    except InputError as exc:
        fail(module, str(exc))
    diff = report_diff(report) if module._diff and report["files"] else None
    if not report["complete"]:
        warn(module, "the walk of %s stopped after %.1fs (budget %.1fs) before it finished; run again or raise "
             "budget" % (", ".join(escape(r) for r in report["roots"]), report["elapsed"], budget))
    fail_msg = None
    if report["errors"]:
        fail_msg = errors_text(report, "file(s) could not be processed")
        if not params["fail_on_errors"]:
            for e in report["errors"]:
                warn(module, "%s: %s: %s" % (escape(e["path"]), e["op"], e["error"]))
            fail_msg = None
    extra = {"diff": diff} if diff else {}
    exit_report(module, report, fail_msg=fail_msg, changed=False if query else None, **extra)
