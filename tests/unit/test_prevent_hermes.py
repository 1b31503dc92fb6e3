# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The sandbox settings of a Hermes config (issue 28), read as Hermes Agent reads them."""
import os

import pytest
from sandboxguard import hermes_config
from sandboxguard._prevent import hermes


@pytest.mark.parametrize(("raw", "mode"), [
    (None, "auto"), ("auto", "auto"), ("require", "require"), ("off", "off"), ("OFF", "off"), ("false", "off"),
    ("none", "off"), ("true", "require"), ("enforce", "require"), ("bogus", "require"),
])
def test_secret_isolation_is_read_as_hermes_reads_it(raw, mode):
    assert hermes.isolation_mode(raw) == mode


def test_settings_of_a_config():
    text = ("terminal:\n  backend: docker\n  docker_image: img:1\n  docker_extra_args: [--privileged]\n"
            "  docker_volumes:\n    - /srv:/srv\nsecurity:\n  terminal_secret_isolation: off\n")
    assert hermes.settings_of(text) == {"backend": "docker", "image": "img:1", "extra_args": ["--privileged"],
                                        "volumes": ["/srv:/srv"], "secret_isolation": "off",
                                        "secret_isolation_raw": "off"}
    empty = hermes.settings_of("")
    assert empty["extra_args"] == [] and empty["secret_isolation"] == "auto"  # noqa: S105 - a mode, not a password


def test_read_settings_reads_through_the_home_and_refuses_a_symlinked_config(tmp_path):
    home = tmp_path / "hh"
    home.mkdir()
    assert hermes.read_settings(str(home)) == (None, str(home / "config.yaml"))
    (home / "config.yaml").write_text("terminal:\n  docker_extra_args: [--cap-add, SYS_ADMIN]\n")
    settings, path = hermes.read_settings(str(home))
    assert settings["extra_args"] == ["--cap-add", "SYS_ADMIN"] and path == str(home / "config.yaml")
    os.rename(home / "config.yaml", tmp_path / "elsewhere.yaml")
    os.symlink(tmp_path / "elsewhere.yaml", home / "config.yaml")
    with pytest.raises(hermes_config.ConfigError, match=r"config\.yaml"):
        hermes.read_settings(str(home))


def test_a_missing_home_reads_as_no_config(tmp_path):
    assert hermes.read_settings(str(tmp_path / "nope"))[0] is None
