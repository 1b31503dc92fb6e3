# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PRIVATE to the library and the collection.

The module side of the report envelope, and the one way out of every module.

The library already reports ``changed`` as Ansible's check mode means it (in a dry run:
would change), so the module passes it on. Warnings go through module.warn (Ansible's
``warnings`` list, shown by every callback); errors are the envelope's {path, op, error}.

A library call that refuses its input raises ``errors.InputError`` (every refusal class of
the library derives from it): a module runs its calls inside :func:`input_errors_fail`,
which fails the task with that one line instead of a traceback.

Every module leaves through :func:`exit_report`, :func:`exit_result` or :func:`fail`,
and warns through :func:`warn` (``tests/unit/test_module_exits.py`` fails on a direct
``exit_json``/``fail_json``/``warn``): the result passes through ``text.for_result``
(ansible-core 2.19+ refuses a whole result holding one name that is not UTF-8; such a
name is carried escaped, with its bytes in a ``<key>_b64`` sibling), and the message and
each warning through ``text.one_line`` (a newline in a name never starts a line). A
``diff`` is for people only (Ansible prints it as it is): each of its lines goes through
``text.one_line``, so a config value with an escape sequence cannot drive the terminal.
"""

import contextlib

from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard.errors import InputError
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.text import (
    escape,
    for_result,
    one_line,
)


def errors_text(report, what="error(s)", limit=5):
    """One line for the report's errors: how many ``what``, the first ``limit`` as path: error."""
    errors = report.get("errors") or []
    total = max(report.get("counts", {}).get("errors", 0), len(errors))
    summary = "; ".join("%s: %s" % (escape(e["path"] or ""), one_line(e["error"])) for e in errors[:limit])
    more = total - min(limit, len(errors))
    return "%d %s: %s%s" % (total, what, summary, " (and %d more)" % more if more > 0 else "")


def warn(module, text):
    """module.warn with ``text`` as one printable line."""
    module.warn(one_line(text))


def fail(module, msg, **result):
    """fail_json: ``msg`` as one printable line, ``result`` as text.for_result carries it."""
    if "diff" in result:
        result["diff"] = diff_for_people(result["diff"])
    module.fail_json(msg=one_line(msg), **for_result(result))


@contextlib.contextmanager
def input_errors_fail(module, **result):
    """Run library calls; bad input (``errors.InputError``: a refused path, a value out of its
    choices, a file that is not what was asked) fails the task with its line and ``result``."""
    try:
        yield
    except InputError as exc:
        fail(module, str(exc), **result)


def _diff_lines(text):
    return "\n".join(one_line(line) for line in text.split("\n")) if isinstance(text, str) else text


def diff_for_people(diff):
    """A module's ``diff`` (a dict or a list of dicts): every line of every text one printable line."""
    if isinstance(diff, list):
        return [diff_for_people(d) for d in diff]
    if isinstance(diff, dict):
        return {key: _diff_lines(value) for key, value in diff.items()}
    return diff


def exit_result(module, **result):
    """exit_json with ``result`` as text.for_result carries it (its ``diff`` through diff_for_people)."""
    if "diff" in result:
        result["diff"] = diff_for_people(result["diff"])
    module.exit_json(**for_result(result))


def exit_report(module, report, fail_msg=None, changed=None, **extra):
    """exit_json (or fail_json with ``fail_msg``) with the report's keys as the result.

    ``changed`` overrides the report's (a read-only query reports False); ``extra`` adds keys.
    """
    result = dict(report)
    for warning in result.pop("warnings", None) or ():
        warn(module, warning)
    if changed is not None:
        result["changed"] = changed
    result.update(extra)
    if fail_msg:
        fail(module, fail_msg, **result)
    exit_result(module, **result)
