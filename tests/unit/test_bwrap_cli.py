# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard bwrap-probe`: bad input is one line on stderr and exit 2, never a traceback."""
import os

from sandboxguard_cli.main import main


def test_a_malformed_minimum_version_is_a_usage_error(capsys):
    assert main(["bwrap-probe", "--min-version", "latest"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["sandboxguard bwrap-probe: --min-version 'latest': give a version like 0.9.0"]


def test_a_missing_bwrap_path_is_a_usage_error(capsys, tmp_path):
    assert main(["bwrap-probe", "--bwrap", str(tmp_path / "bwrap")]) == 2
    assert "no such executable" in capsys.readouterr().err


def test_a_non_positive_timeout_is_a_usage_error(capsys):
    assert main(["bwrap-probe", "--timeout", "0"]) == 2
    assert "--timeout" in capsys.readouterr().err


def test_the_apparmor_profile_is_printed_for_the_resolved_bwrap(capsys, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\n")
    link = tmp_path / "bwrap-link"
    link.symlink_to(fake)
    assert main(["bwrap-probe", "--print-apparmor-profile", "--bwrap", str(link)]) == 0
    out = capsys.readouterr().out
    assert "profile sandboxguard-bwrap %s flags=(unconfined) {" % os.path.realpath(str(fake)) in out
