# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The budget rule, written once (sandboxguard._core.inputs.budget): a walk's seconds budget is
a finite number, 0 or more, 0 meaning no limit; NaN, infinity, negatives, words and blanks are
refused with one message, whichever entry point took the value: the library's walk options,
sweep and fleet settings, the CLI's --budget / --budget-per-step, the roles' filter. The
modules' entry points (their argument specs defer to the same rule) are run through Ansible
in tests/integration/test_strip_modules.py."""
import math
import sys
import threading

import pytest
from sandboxguard import strip as stripmod
from sandboxguard import sweep as sweepmod
from sandboxguard._core import inputs
from sandboxguard._fleet import audit
from sandboxguard.errors import InputError
from sandboxguard_cli import main

BAD = ["nan", float("nan"), "inf", float("inf"), "-inf", "1e400", -1, "-1", -0.5, "abc", "", "  ", True, [10]]
GOOD = [(0, 0.0), ("0", 0.0), (10, 10.0), ("10", 10.0), (" 2.5 ", 2.5), (0.25, 0.25)]
CLI_BAD = ["nan", "inf", "-1", "abc", ""]


def refused(name, value):
    """The one message, as every entry point words it."""
    return "%s must be a finite number of seconds, 0 (no limit) or more; not %r" % (name, value)


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_the_rule_refuses_what_is_not_a_finite_number_of_seconds_with_one_message(value):
    with pytest.raises(InputError) as caught:
        inputs.budget(value)
    assert str(caught.value) == refused("budget", value)


@pytest.mark.parametrize("value, seconds", GOOD, ids=repr)
def test_the_rule_takes_zero_and_more_as_numbers_or_numeric_strings(value, seconds):
    assert inputs.budget(value) == seconds and isinstance(inputs.budget(value), float)


def test_none_is_the_callers_default_or_no_limit():
    assert inputs.budget(None) == 0.0
    assert inputs.budget(None, default=10) == 10.0
    with pytest.raises(InputError, match="budget must be a finite"):
        inputs.budget(None, default="nan")


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_the_walk_applies_the_rule(tmp_path, value):
    with pytest.raises(InputError) as caught:
        stripmod.StripOptions(budget=value)
    assert str(caught.value) == refused("budget", value)
    with pytest.raises(InputError) as caught:
        stripmod.run([str(tmp_path)], dry_run=True, budget=value)
    assert str(caught.value) == refused("budget", value)


@pytest.mark.parametrize("value", ["nan", "inf", -1, "abc", ""], ids=repr)
def test_sweep_watch_and_the_fleet_settings_apply_the_rule_before_anything_runs(value):
    stopped = threading.Event()
    stopped.set()
    for call in (lambda: sweepmod.sweep(None, budget_per_step=value),
                 lambda: sweepmod.watch(None, budget_per_step=value, stop=stopped)):
        with pytest.raises(InputError) as caught:
            call()  # no client: anything past the rule would fail otherwise
        assert str(caught.value) == refused("budget_per_step", value)
    with pytest.raises(InputError) as caught:
        audit.Settings(budget=value)
    assert str(caught.value) == refused("budget", value)
    assert audit.Settings(budget=0).budget == 0.0 and audit.Settings().budget == stripmod.DEFAULT_BUDGET_S


def run_cli(capsys, *argv):
    code = main.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("value", CLI_BAD)
@pytest.mark.parametrize("argv, option", [
    (["scan", "--budget"], "--budget"),
    (["strip", "--dry-run", "--budget"], "--budget"),
    (["runner-cleanup", "/nonexistent-runner", "--budget"], "--budget"),
    (["sweep", "--dry-run", "--budget-per-step"], "--budget-per-step"),
    (["watch", "--budget-per-step"], "--budget-per-step"),
])
def test_the_cli_refuses_a_bad_budget_with_the_rules_message_and_exit_2(capsys, tmp_path, argv, option, value):
    extra = [str(tmp_path)] if argv[0] in ("scan", "strip") else []
    code, out, err = run_cli(capsys, *argv, value, *extra)
    assert code == 2 and out == ""
    assert err == "sandboxguard %s: %s\n" % (argv[0], refused(option, value))


@pytest.mark.parametrize("value", ["0", "10"])
def test_the_cli_takes_zero_and_ten(capsys, tmp_path, value):
    (tmp_path / "file").write_bytes(b"x")
    code, out, err = run_cli(capsys, "scan", "--json", "--budget", value, str(tmp_path))
    assert code == 0, err
    assert '"complete": true' in out


def filters():
    pytest.importorskip("ansible")
    top = __file__.rsplit("/tests/", 1)[0]
    sys.path.insert(0, top + "/.cache/collections")
    try:
        from ansible_collections.sandboxguard.boundary.plugins.filter import inputs as module
    finally:
        sys.path.pop(0)
    return module


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "abc"])
def test_the_roles_filter_is_the_same_rule(value):
    AnsibleFilterError = pytest.importorskip("ansible.errors").AnsibleFilterError  # the controller's venv only

    budget = filters().budget
    with pytest.raises(AnsibleFilterError) as caught:
        budget(value, "sandbox_sweep_budget_per_step")
    assert refused("sandbox_sweep_budget_per_step", value) in str(caught.value)


def test_the_roles_filter_leaves_a_blank_to_its_default_and_refuses_it_without_one():
    AnsibleFilterError = pytest.importorskip("ansible.errors").AnsibleFilterError  # the controller's venv only

    budget = filters().budget
    assert budget("", "x", "") == "" and budget("  ", "x", 10) == 10
    assert budget("0", "x", "") == 0.0 and budget(10, "x") == 10.0
    with pytest.raises(AnsibleFilterError, match=r"x must be a finite number of seconds"):
        budget("", "x")
    assert math.isfinite(budget("1e3", "x"))
