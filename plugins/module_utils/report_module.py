# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The module side of the report envelope: one library report -> exit_json or fail_json.

The library already reports ``changed`` as Ansible's check mode means it (in a dry run:
would change), so the module passes it on. Warnings go through module.warn (Ansible's
``warnings`` list, shown by every callback); errors are the envelope's {path, op, error}.
"""


def errors_text(report, what="error(s)", limit=5):
    """One line for the report's errors: how many ``what``, the first ``limit`` as path: error."""
    errors = report.get("errors") or []
    total = max(report.get("counts", {}).get("errors", 0), len(errors))
    summary = "; ".join("%s: %s" % (e["path"], e["error"]) for e in errors[:limit])
    more = total - min(limit, len(errors))
    return "%d %s: %s%s" % (total, what, summary, " (and %d more)" % more if more > 0 else "")


def exit_report(module, report, fail_msg=None, changed=None, **extra):
    """exit_json (or fail_json with ``fail_msg``) with the report's keys as the result.

    ``changed`` overrides the report's (a read-only query reports False); ``extra`` adds keys.
    """
    result = dict(report)
    for warning in result.pop("warnings", None) or ():
        module.warn(warning)
    if changed is not None:
        result["changed"] = changed
    result.update(extra)
    if fail_msg:
        module.fail_json(msg=fail_msg, **result)
    module.exit_json(**result)
