# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard bwrap-probe`: bad input is one line on stderr and exit 2, never a traceback."""
import json
import os

from sandboxguard_cli.main import main


def test_a_malformed_minimum_version_is_a_usage_error(capsys):
    assert main(["bwrap-probe", "--min-version", "latest"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["sandboxguard bwrap-probe: min_version 'latest' is not a version like 0.9.0"]


def test_a_missing_bwrap_path_is_a_usage_error(capsys, tmp_path):
    assert main(["bwrap-probe", "--bwrap", str(tmp_path / "bwrap")]) == 2
    assert "no such executable" in capsys.readouterr().err


def test_a_non_positive_timeout_is_a_usage_error(capsys):
    assert main(["bwrap-probe", "--timeout", "0"]) == 2
    assert "timeout 0.0: the probe's seconds must be more than 0" in capsys.readouterr().err


def test_the_apparmor_profile_is_printed_for_the_resolved_bwrap(capsys, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\n")
    link = tmp_path / "bwrap-link"
    link.symlink_to(fake)
    assert main(["bwrap-probe", "--print-apparmor-profile", "--bwrap", str(link)]) == 0
    out = capsys.readouterr().out
    assert "profile sandboxguard-bwrap %s flags=(unconfined) {" % os.path.realpath(str(fake)) in out


def _fake_old_bwrap(tmp_path):
    tmp_path.chmod(0o755)
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\n[ "$1" = --version ] && { echo "bubblewrap 0.8.0"; exit 0; }\nexit 1\n')
    fake.chmod(0o755)
    return str(fake)


def _as_agent():
    return ["--user", "nobody"] if os.geteuid() == 0 else []


def test_json_is_the_report_envelope_and_a_finding_exits_1(capsys, tmp_path):
    from sandboxguard import report as envelope

    fake = _fake_old_bwrap(tmp_path)
    assert main(["bwrap-probe", "--json", "--bwrap", fake, "--timeout", "5", *_as_agent()]) == 1
    out = capsys.readouterr().out
    report = json.loads(out)
    assert set(envelope.ENVELOPE_KEYS) <= set(report)
    assert report["roots"] == [fake] and report["changed"] is False
    assert report["findings"][0]["reason"] == "version-too-old" and report["findings"][0]["path"] == fake


def test_human_output_sends_warnings_to_stderr_and_a_warning_exits_1(capsys, monkeypatch):
    from sandboxguard import bwrap
    from sandboxguard import report as envelope

    def passing_probe(**_kwargs):
        rep = envelope.new_report(["/usr/bin/bwrap"], ok=True, reason="ok", message="fine", remediation="none",
                                  remediation_text="nothing to do", min_version="0.9.0", findings=[],
                                  bwrap={"path": "/usr/bin/bwrap", "version": "0.11.0", "setuid": False},
                                  prlimit={"path": "/usr/bin/prlimit"}, user=None, isolation=[],
                                  userns={"max_user_namespaces": 1, "unprivileged_userns_clone": None,
                                          "apparmor_restrict": None})
        envelope.add_warning(rep, "this kernel does not count the process limit per sandbox")
        return rep

    monkeypatch.setattr(bwrap, "probe", passing_probe)
    assert main(["bwrap-probe", *_as_agent()]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("bwrap probe: PASS (ok)")
    assert "warning" not in captured.out.lower()
    assert captured.err.splitlines() == ["WARNING: this kernel does not count the process limit per sandbox"]
