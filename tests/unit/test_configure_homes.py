# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""configure_terminal_homes: the one loop over Hermes homes (the terminal_home module's and
remediate's home_mode fix): per-home results, check mode, a refused home an error of its own."""
import os

from sandboxguard._fleet import remediate
from sandboxguard._terminal.configure import configure_terminal_homes


def homes(tmp_path):
    good, other = tmp_path / "good", tmp_path / "other"
    good.mkdir()
    other.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    return [str(good), str(tmp_path / "link"), str(other)]


def test_each_home_is_configured_and_a_refused_one_is_its_own_error_after_the_others(tmp_path):
    done = configure_terminal_homes(homes(tmp_path), "profile")
    assert [r["changed"] for r in done["reports"]] == [True, True]
    assert (tmp_path / "good" / "config.yaml").exists() and (tmp_path / "other" / "config.yaml").exists()
    assert [e["path"] for e in done["errors"]] == [str(tmp_path / "link")] and len(done["failures"]) == 1
    assert done["errors"][0]["op"] == "configure" and not os.listdir(tmp_path / "elsewhere")
    again = configure_terminal_homes(homes_again := [str(tmp_path / "good"), str(tmp_path / "other")], "profile")
    assert [r["changed"] for r in again["reports"]] == [False] * len(homes_again)


def test_check_mode_changes_nothing_and_says_what_would(tmp_path):
    done = configure_terminal_homes(homes(tmp_path), "profile", dry_run=True)
    assert [r["changed"] for r in done["reports"]] == [True, True]
    assert not (tmp_path / "good" / "config.yaml").exists()


def test_absent_homes_are_skipped_only_when_asked(tmp_path):
    missing = str(tmp_path / "missing")
    assert configure_terminal_homes([missing], "profile", skip_absent=True) == {
        "reports": [], "errors": [], "failures": [], "absent": [missing]}
    assert configure_terminal_homes([missing], "profile")["errors"][0]["path"] == missing


def test_remediate_home_fix_is_the_same_loop(tmp_path):
    listed = [*homes(tmp_path), str(tmp_path / "missing")]
    section = remediate._home_fix(listed, "profile", "config", True, True, dry_run=False)
    assert section["status"] == remediate.FAILED and section["absent"] == [str(tmp_path / "missing")]
    assert [e["path"] for e in section["errors"]] == [str(tmp_path / "link")]
    assert (tmp_path / "other" / "config.yaml").exists()
