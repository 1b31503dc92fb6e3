# GENERATED from python/src/sandboxguard/_prevent/hermes.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The sandbox settings of a Hermes config.yaml, read and changed through the held Hermes home.

PRIVATE to the library and the collection. Hermes Agent's keys (hermes_cli/config.py,
tools/environments/docker.py, tools/environments/secret_isolation.py): ``terminal.backend``,
``terminal.docker_image``, ``terminal.docker_extra_args`` (docker run options, last: they
override Hermes' own), ``terminal.docker_volumes`` (``-v`` specs), and
``security.terminal_secret_isolation`` (``require``, ``auto`` (the default: Landlock when the
kernel has it), ``off``; true/false and a few words are aliases; an unknown value is
``require``). The config lives in the agent's own tree: it is read and written only through
its directory held open (hermes_config.read_at/write_at on safefs), never by path.
"""
import os

from .. import hermes_config, yamlconf
from .._core import safefs
from .._core.text import escape

CONFIG_NAME = "config.yaml"
EXTRA_ARGS = ("terminal", "docker_extra_args")
VOLUMES = ("terminal", "docker_volumes")
BACKEND = ("terminal", "backend")
IMAGE = ("terminal", "docker_image")
SECRET_ISOLATION = ("security", "terminal_secret_isolation")
ISOLATION_MODES = ("require", "auto", "off")
ISOLATION_ALIASES = {"true": "require", "on": "require", "enforce": "require", "yes": "require",
                     "false": "off", "disabled": "off", "none": "off", "no": "off"}


def isolation_mode(raw):
    """Hermes' reading of ``security.terminal_secret_isolation`` (pure): absent is ``auto``, an
    alias its mode, anything unknown ``require`` (Hermes fails closed)."""
    if raw is None:
        return "auto"
    mode = str(raw).strip().lower()
    mode = ISOLATION_ALIASES.get(mode, mode)
    return mode if mode in ISOLATION_MODES else "require"


def settings_of(text):
    """The sandbox settings in config.yaml's ``text`` (pure): backend, image, extra_args,
    volumes (lists, [] when unset), secret_isolation (Hermes' mode) and secret_isolation_raw."""
    raw = yamlconf.read_path(text, SECRET_ISOLATION)
    return {"backend": yamlconf.read_path(text, BACKEND), "image": yamlconf.read_path(text, IMAGE),
            "extra_args": yamlconf.read_list(text, EXTRA_ARGS) or [],
            "volumes": yamlconf.read_list(text, VOLUMES) or [],
            "secret_isolation": isolation_mode(raw), "secret_isolation_raw": raw}


def read_settings(hermes_home):
    """(settings, path) of ``<hermes_home>/config.yaml``; settings is None when there is no
    config. Refusals (a symlink on the way, a FIFO config) raise hermes_config.ConfigError, a
    shape the reader cannot take yamlconf.YamlEditError, both naming the path."""
    path = os.path.join(hermes_home, CONFIG_NAME)
    try:
        with safefs.open_dir(hermes_home) as home:
            text, _st = hermes_config.read_at(home.fd, CONFIG_NAME, path)
    except safefs.PathRefused as exc:
        raise hermes_config.ConfigError(exc.with_fix("give the real Hermes home")) from None
    except FileNotFoundError:
        return None, path
    if text is None:
        return None, path
    try:
        return settings_of(text), path
    except yamlconf.YamlEditError as exc:
        raise yamlconf.YamlEditError("%s: %s" % (escape(path), exc)) from None
