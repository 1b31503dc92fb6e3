# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Hermes bubblewrap plugin settings: the rules seed 004 states, checked before writing config.yaml."""
import pytest
from sandboxguard.bwrap_settings import validate_plugin_settings


def test_empty_settings_get_the_seed_defaults():
    result = validate_plugin_settings({})
    assert result["errors"] == []
    assert result["settings"] == {"profile": "workspace", "memory_mb": 256, "cpu_seconds": 30, "max_procs": 256,
                                  "binds": [], "home_allow": []}


@pytest.mark.parametrize("profile", ["restricted", "workspace", "network"])
def test_every_seed_profile_is_accepted(profile):
    assert validate_plugin_settings({"profile": profile})["errors"] == []


def test_an_unknown_profile_is_an_error_naming_the_choices():
    (error,) = validate_plugin_settings({"profile": "open"})["errors"]
    assert "restricted, workspace, network" in error


@pytest.mark.parametrize("key", ["memory_mb", "cpu_seconds", "max_procs"])
def test_a_negative_limit_is_an_error(key):
    (error,) = validate_plugin_settings({key: -1})["errors"]
    assert key in error and "non-negative" in error


def test_zero_disables_a_limit_and_is_valid():
    assert validate_plugin_settings({"memory_mb": 0})["settings"]["memory_mb"] == 0


def test_limits_from_an_awx_survey_arrive_as_strings_and_are_converted():
    assert validate_plugin_settings({"memory_mb": "2048"})["settings"]["memory_mb"] == 2048


def test_a_boolean_is_not_a_limit():
    assert validate_plugin_settings({"max_procs": True})["errors"]


def test_an_unknown_setting_is_an_error():
    (error,) = validate_plugin_settings({"memroy_mb": 10})["errors"]
    assert "memroy_mb" in error


@pytest.mark.parametrize("entry", [".ssh", ".aws", ".config/gh", ".gnupg", ".cargo/credentials.toml"])
def test_a_home_allow_entry_naming_a_credential_store_is_ignored_with_a_warning(entry):
    result = validate_plugin_settings({"home_allow": [".config/nvim", entry]})
    assert result["settings"]["home_allow"] == [".config/nvim"]
    assert result["errors"] == []
    assert len(result["warnings"]) == 1 and entry in result["warnings"][0]


def test_home_allow_accepts_a_top_dot_entry_and_one_child_of_config():
    result = validate_plugin_settings({"home_allow": [".zz-tool", ".config/nvim", ".local/share/fonts"]})
    assert result["settings"]["home_allow"] == [".zz-tool", ".config/nvim", ".local/share/fonts"]


@pytest.mark.parametrize("entry", ["projects", "../etc", ".config/nvim/lua", "/etc/passwd"])
def test_home_allow_refuses_what_is_not_a_dot_entry(entry):
    assert validate_plugin_settings({"home_allow": [entry]})["errors"]


def test_a_read_only_bind_with_a_missing_source_is_an_error(tmp_path):
    result = validate_plugin_settings({"binds": [{"src": str(tmp_path / "missing")}]})
    (error,) = result["errors"]
    assert "does not exist" in error and str(tmp_path / "missing") in error


def test_a_read_write_bind_with_a_missing_source_is_skipped_with_a_warning(tmp_path):
    result = validate_plugin_settings({"binds": [{"src": str(tmp_path / "missing"), "readonly": False}]})
    assert result["errors"] == []
    assert result["settings"]["binds"] == []
    assert "skips" in result["warnings"][0]


def test_a_bind_defaults_to_read_only_at_its_own_path(tmp_path):
    result = validate_plugin_settings({"binds": [{"src": str(tmp_path)}]})
    assert result["settings"]["binds"] == [{"src": str(tmp_path), "dest": str(tmp_path), "readonly": True}]


def test_readonly_false_from_a_survey_string_is_read_write(tmp_path):
    result = validate_plugin_settings({"binds": [{"src": str(tmp_path), "readonly": "false"}]})
    assert result["settings"]["binds"][0]["readonly"] is False


def test_a_bind_source_under_a_credential_store_is_ignored_with_a_warning(tmp_path):
    (tmp_path / ".ssh").mkdir()
    result = validate_plugin_settings({"binds": [{"src": str(tmp_path / ".ssh")}]}, home=str(tmp_path))
    assert result["settings"]["binds"] == []
    assert "hidden path" in result["warnings"][0]


def test_a_relative_bind_source_is_an_error():
    assert validate_plugin_settings({"binds": [{"src": "data/models"}]})["errors"]
