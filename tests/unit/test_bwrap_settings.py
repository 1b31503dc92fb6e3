# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Hermes bubblewrap plugin settings: the rules seed 004 states, checked before writing config.yaml."""
import pytest
from sandboxguard import credentials
from sandboxguard.bwrap_settings import validate_plugin_settings


def test_empty_settings_get_the_seed_defaults():
    result = validate_plugin_settings({})
    assert result["errors"] == []
    assert result["settings"] == {"profile": "network", "memory_mb": 256, "cpu_seconds": 30, "max_procs": 256,
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


# ---------------------------------------------------------------- the one credential list (issue 10 items 8, 9)

@pytest.mark.parametrize("store", credentials.home_stores("bwrap"))
def test_every_credential_store_is_refused_as_a_home_allow_entry(store):
    result = validate_plugin_settings({"home_allow": [store, ".zz-tool"]}, home="/home/agent")
    assert result["settings"]["home_allow"] == [".zz-tool"]
    assert result["errors"] == []
    assert len(result["warnings"]) == 1 and store in result["warnings"][0]


@pytest.mark.parametrize("store", credentials.home_stores("bwrap"))
def test_every_credential_store_is_refused_as_a_bind_source(tmp_path, store):
    home = tmp_path / "home"
    (home / store).mkdir(parents=True)
    result = validate_plugin_settings({"binds": [{"src": str(home / store)}]}, home=str(home))
    assert result["settings"]["binds"] == []
    assert result["errors"] == []
    assert "hidden path" in result["warnings"][0]


# ---------------------------------------------------------------- binds (issue 10 item 10)

@pytest.fixture
def agent_home(tmp_path):
    home = tmp_path / "home" / "agent"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("key\n")
    (home / "data").mkdir()
    return home


def test_a_source_containing_a_hidden_path_bound_elsewhere_is_ignored_with_a_warning(agent_home, tmp_path):
    for src in (agent_home, agent_home.parent):
        result = validate_plugin_settings({"binds": [{"src": str(src), "dest": str(tmp_path / "mnt")}]},
                                          home=str(agent_home))
        assert result["settings"]["binds"] == [], src
        (warning,) = result["warnings"]
        assert "contains the hidden path" in warning and "dest equal to src" in warning


def test_a_source_containing_a_hidden_path_at_its_own_path_is_kept(agent_home):
    result = validate_plugin_settings({"binds": [{"src": str(agent_home), "dest": str(agent_home)}]},
                                      home=str(agent_home))
    assert result["settings"]["binds"] == [{"src": str(agent_home), "dest": str(agent_home), "readonly": True}]
    assert result["warnings"] == []


def test_a_source_containing_the_hermes_home_elsewhere_bound_elsewhere_is_ignored(agent_home, tmp_path):
    hermes = tmp_path / "srv" / "hermes"
    hermes.mkdir(parents=True)
    result = validate_plugin_settings({"binds": [{"src": str(tmp_path / "srv"), "dest": "/mnt"}]},
                                      home=str(agent_home), hermes_home=str(hermes))
    assert result["settings"]["binds"] == []
    assert str(hermes) in result["warnings"][0]


def test_a_source_that_is_a_symlink_into_the_ssh_directory_is_dropped(agent_home, tmp_path):
    link = tmp_path / "models"
    link.symlink_to(agent_home / ".ssh")
    result = validate_plugin_settings({"binds": [{"src": str(link)}]}, home=str(agent_home))
    assert result["settings"]["binds"] == []
    (warning,) = result["warnings"]
    assert "resolves to %s" % (agent_home / ".ssh") in warning


def test_a_source_below_a_symlinked_directory_into_a_hidden_path_is_dropped(agent_home, tmp_path):
    (tmp_path / "keys").symlink_to(agent_home / ".ssh")
    result = validate_plugin_settings({"binds": [{"src": str(tmp_path / "keys" / "id_ed25519")}]},
                                      home=str(agent_home))
    assert result["settings"]["binds"] == []


def test_a_symlinked_credential_store_is_hidden_at_its_target_too(agent_home, tmp_path):
    target = tmp_path / "dotfiles" / "aws"
    target.mkdir(parents=True)
    (agent_home / ".aws").symlink_to(target)
    result = validate_plugin_settings({"binds": [{"src": str(target)}]}, home=str(agent_home))
    assert result["settings"]["binds"] == []


def test_a_tilde_source_is_expanded_against_the_agents_home(agent_home):
    result = validate_plugin_settings({"binds": [{"src": "~/data"}]}, home=str(agent_home))
    assert result["errors"] == []
    assert result["settings"]["binds"] == [{"src": str(agent_home / "data"), "dest": str(agent_home / "data"),
                                            "readonly": True}]


def test_a_tilde_dest_is_expanded_too(agent_home):
    result = validate_plugin_settings({"binds": [{"src": "~/data", "dest": "~/mnt/data"}]}, home=str(agent_home))
    assert result["settings"]["binds"][0]["dest"] == str(agent_home / "mnt" / "data")


def test_a_tilde_source_naming_a_hidden_path_is_dropped(agent_home):
    result = validate_plugin_settings({"binds": [{"src": "~/.ssh"}]}, home=str(agent_home))
    assert result["settings"]["binds"] == [] and "hidden path" in result["warnings"][0]


def test_a_tilde_source_without_a_known_home_is_an_error_naming_the_bind():
    (error,) = validate_plugin_settings({"binds": [{"src": "~/data"}]})["errors"]
    assert "binds[0]" in error and "~" in error and "home is not known" in error


# ---------------------------------------------------------------- the default profile (issue 10 item 11)

def test_the_default_profile_is_network_as_in_seed_004():
    assert validate_plugin_settings({})["settings"]["profile"] == "network"
    assert validate_plugin_settings({"memory_mb": 1024})["settings"]["profile"] == "network"


# ---------------------------------------------------------------- home_allow units (issue 10 item 13)

@pytest.mark.parametrize("entry", [".", "./", ".config", ".config/", ".local", ".local/share", "~/.local/share",
                                   "/home/agent/.config"])
def test_a_home_allow_entry_that_is_not_a_unit_is_refused_with_a_warning(entry):
    result = validate_plugin_settings({"home_allow": [entry, ".config/nvim"]}, home="/home/agent")
    assert result["settings"]["home_allow"] == [".config/nvim"]
    assert result["errors"] == []
    (warning,) = result["warnings"]
    assert repr(entry) in warning and "not a unit" in warning


def test_an_absolute_home_allow_entry_inside_the_home_names_its_unit():
    result = validate_plugin_settings({"home_allow": ["/home/agent/.zz-tool", "~/.config/nvim"]}, home="/home/agent")
    assert result["settings"]["home_allow"] == [".zz-tool", ".config/nvim"]


def test_a_too_deep_home_allow_entry_names_the_unit_to_allow():
    (error,) = validate_plugin_settings({"home_allow": [".local/share/fonts/x"]})["errors"]
    assert "'.local/share/fonts'" in error


def test_a_home_allow_entry_that_links_into_a_credential_store_is_ignored(agent_home):
    (agent_home / ".zz-keys").symlink_to(agent_home / ".ssh")
    result = validate_plugin_settings({"home_allow": [".zz-keys"]}, home=str(agent_home))
    assert result["settings"]["home_allow"] == []
    assert "hidden path" in result["warnings"][0]


def test_a_store_that_links_to_the_home_itself_does_not_hide_the_home(agent_home):
    (agent_home / ".vaults").symlink_to(agent_home)
    result = validate_plugin_settings({"binds": [{"src": str(agent_home / "data")}], "home_allow": [".zz-tool"]},
                                      home=str(agent_home))
    assert result["settings"]["binds"] == [{"src": str(agent_home / "data"), "dest": str(agent_home / "data"),
                                            "readonly": True}]
    assert result["settings"]["home_allow"] == [".zz-tool"]
    assert result["warnings"] == []
