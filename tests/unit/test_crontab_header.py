# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The crontab header rule is one rule: _terminal/crontab_shim.py (the standalone shim, which imports nothing
from the package) and _core/crontab_header.py (what the leak audit and leaks_remove import,
so their payloads do not carry the shim) hold the same expression and answer alike, and every
reader of a stored table hides the same lines."""
import inspect

import pytest
from sandboxguard import leaks
from sandboxguard._core import crontab_header
from sandboxguard._fleet import leaks_remove
from sandboxguard._terminal import crontab_shim


def _rule(func):
    return [line.strip() for line in inspect.getsource(func).splitlines() if line.strip().startswith("return ")]


def test_the_shim_and_the_library_hold_the_same_rule():
    assert _rule(crontab_shim.is_header_line) == _rule(crontab_header.is_header_line) != []
    assert crontab_shim.NHEADER_LINES == crontab_header.NHEADER_LINES
    for skipped in range(5):
        for line in (b"# x", b"#", b"", b" # x", b"x", "# x", "", "x"):
            assert crontab_shim.is_header_line(skipped, line) == crontab_header.is_header_line(skipped, line)


@pytest.mark.parametrize("table", [
    b"# DO NOT EDIT\n# (x installed)\n# (Cron version)\n* * * * * job\n",
    b"# one\n# two\n# three\n# four: a comment of the table\n* * * * * job\n",
    b"# only one\n* * * * * job\n",
    b"* * * * * job\n# a comment\n",
    b"\n# after a blank line\n* * * * * job\n",
])
def test_crontab_l_the_leak_audit_and_leaks_remove_hide_the_same_header(table):
    shown = crontab_shim.editable_text(table)
    hidden_lines = table.count(b"\n") - shown.count(b"\n")
    header, _kept, _removed = leaks_remove.without_jobs(table, {})
    assert len(header) == hidden_lines
    jobs = leaks.cron_jobs(table)
    assert jobs == [(shown.split(b"\n").index(b"* * * * * job") + 1, "* * * * * job")]
