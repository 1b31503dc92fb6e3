# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard crontab` and `sandboxguard home-env` as the command line sees them."""
import json
import os

from sandboxguard_cli.main import main


def test_crontab_subcommand_hands_every_option_to_the_shim(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("EVAL_CRONTAB_FILE", raising=False)
    table = str(tmp_path / "t")
    assert main(["crontab", "--table", table, "-l"]) == 1
    assert capsys.readouterr().err.startswith("no crontab for ")


def test_crontab_table_option_with_equals(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.write_text("@daily x\n")
    table = tmp_path / "t"
    assert main(["crontab", "--table=%s" % table, str(jobs)]) == 0
    assert table.read_text().endswith("@daily x\n")


def test_crontab_usage_error_is_the_real_ones(tmp_path, capsys):
    assert main(["crontab", "--table", str(tmp_path / "t"), "-x"]) == 1
    assert capsys.readouterr().err.splitlines()[:2] == [
        "crontab: invalid option -- 'x'", "crontab: usage error: unrecognized option"]


def test_install_shim_writes_an_executable(tmp_path, capsys):
    assert main(["crontab", "--install-shim", str(tmp_path), "--python", "/usr/bin/python3"]) == 0
    assert capsys.readouterr().out == "installed %s\n" % (tmp_path / "crontab")
    assert os.access(str(tmp_path / "crontab"), os.X_OK)
    assert main(["crontab", "--install-shim", str(tmp_path), "--python", "/usr/bin/python3"]) == 0
    assert capsys.readouterr().out.startswith("unchanged ")


def test_install_shim_without_a_directory_is_a_usage_error(capsys):
    assert main(["crontab", "--install-shim"]) == 2
    assert "--install-shim needs a directory" in capsys.readouterr().err


def test_home_env_json_shows_the_isolated_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert main(["home-env", "--hermes-home", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["isolation"] is True
    assert report["env"]["HOME"] == str(tmp_path / "home")
    assert report["env"]["XDG_RUNTIME_DIR"] is None
    assert report["env"]["TMPDIR"] == str(tmp_path / "cache" / "scratch")
    assert os.access(report["shim"], os.X_OK)


def test_home_env_with_a_mode_applies_the_agents_contract(tmp_path, capsys, monkeypatch):
    (tmp_path / "home").mkdir()
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert main(["home-env", "--mode", "isolated", "--hermes-home", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["isolation"], report["mode"]) == (False, "profile")
    assert report["env"]["HOME"] == str(tmp_path / "home")
    assert report["env"]["XDG_RUNTIME_DIR"] == "/run/user/1000"


def test_home_env_passes_the_exit_status_through(tmp_path):
    assert main(["home-env", "--hermes-home", str(tmp_path), "--", "sh", "-c", "exit 7"]) == 7


def test_home_env_missing_command(tmp_path, capsys):
    assert main(["home-env", "--hermes-home", str(tmp_path), "--", "no-such-command-sg"]) == 127
    assert "no-such-command-sg: command not found" in capsys.readouterr().err


def test_home_env_errors_are_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HERMES_HOME", raising=False)
    assert main(["home-env", "--", "true"]) == 2
    assert main(["home-env", "--mode", "jail", "--", "true"]) == 2
    assert main(["home-env", "--hermes-home", "/", "--", "true"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3
    assert "--hermes-home" in err[0] and "auto, real, profile" in err[1] and "refusing" in err[2]


def test_home_env_json_is_the_report_envelope_for_the_run_directory(tmp_path, capsys):
    from sandboxguard import report as envelope

    assert main(["home-env", "--hermes-home", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(envelope.ENVELOPE_KEYS) <= set(report)
    assert report["roots"] == [str(tmp_path)] and report["errors"] == [] and report["complete"] is True


def test_install_shim_says_installed_then_unchanged(tmp_path, capsys):
    assert main(["crontab", "--install-shim", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "installed %s\n" % (tmp_path / "crontab")
    assert main(["crontab", "--install-shim", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "unchanged %s\n" % (tmp_path / "crontab")
