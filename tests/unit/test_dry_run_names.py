# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""One name for "change nothing, say what would change": dry_run (check: deprecated alias)."""
import inspect
import os
import warnings

import pytest
from sandboxguard import crontab, fetch, hermes_config, home_mode, report, strip, sweep


def test_strip_options_name_it_dry_run_too():
    assert strip.StripOptions(dry_run=True).dry_run is True


@pytest.mark.parametrize("func", [
    strip.strip, sweep.sweep, sweep.sweep_native, sweep.sweep_container, fetch.fetch,
    home_mode.configure_terminal_home, home_mode.install_eval_tools, crontab.install_shim, crontab.install_text,
    hermes_config.set_config,
])
def test_every_library_operation_that_changes_things_takes_dry_run(func):
    assert "dry_run" in inspect.signature(func).parameters


def test_check_is_a_deprecated_alias_that_warns_and_wins():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert report.dry_run_arg(False, True, "configure_terminal_home") is True
        assert report.dry_run_arg(True, False, "x") is False
    assert [w.category for w in caught] == [DeprecationWarning] * 2
    assert "configure_terminal_home: check= is deprecated, use dry_run=" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report.dry_run_arg(True, None, "x") is True


def test_terminal_home_dry_run_and_its_check_alias_write_nothing(tmp_path):
    home = tmp_path / "hermes"
    home.mkdir()
    result = home_mode.configure_terminal_home(str(home), "profile", dry_run=True)
    assert result["changed"] is True and os.listdir(str(home)) == []
    with pytest.warns(DeprecationWarning):
        result = home_mode.configure_terminal_home(str(home), "profile", check=True)
    assert result["changed"] is True and os.listdir(str(home)) == []


def test_crontab_shim_dry_run_writes_nothing(tmp_path):
    path, changed = crontab.install_shim(str(tmp_path / "bin"), python="/usr/bin/python3", dry_run=True)
    assert changed is True and not os.path.exists(path)
    path, changed = crontab.install_text(str(tmp_path / "bin"), "x", b"y", check=True)
    assert changed is True and not os.path.exists(path)
