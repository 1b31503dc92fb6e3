# GENERATED from python/src/sandboxguard/_prevent/hermes.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The sandbox settings of a Hermes config.yaml, read and changed through the held Hermes home.

Hermes Agent's keys (hermes_cli/config.py, tools/environments/docker.py,
tools/environments/secret_isolation.py): ``terminal.backend``, ``terminal.docker_image``,
``terminal.docker_extra_args`` (docker run options, last: they override Hermes' own),
``terminal.docker_volumes`` (``-v`` specs), and ``security.terminal_secret_isolation``
(``require``, ``auto`` (the default: Landlock when the kernel has it), ``off``; true/false and a
few words are aliases; an unknown value is ``require``). The config lives in the agent's own
tree: it is read and written only through its directory held open
(hermes_config.read_at/write_at on safefs), never by path.
"""
import os
import posixpath
import shutil

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
SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BINARY_ENV = "HERMES_DOCKER_BINARY"
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


def engine_of_binary(path, target=None, script=None):
    """``podman`` or ``docker`` for the CLI the ``docker`` backend runs (pure): by the name it
    resolves to (``target``, its realpath), or a wrapper script that execs podman (Debian's
    podman-docker); None without a path."""
    if not path:
        return None
    name = posixpath.basename(target or path)
    if name.startswith("podman") or (script is not None and "podman" in script):
        return "podman"
    return "docker"


def _read_small(path):
    """The first 4 KiB of a regular file, through descriptors (never a FIFO or device), or None."""
    try:
        parent, name = safefs.open_parent(path)
        with parent:
            data, _st = safefs.read_at(parent.fd, name, limit=1 << 30, path_for_errors=path)
    except (OSError, ValueError):
        return None
    return None if data is None else data[:4096].decode("utf-8", "replace")


def backend_engine(home, search_path=SEARCH_PATH):
    """The CLI Hermes' ``docker`` backend runs from ``home``, as its find_docker does:
    ``HERMES_DOCKER_BINARY`` (from the home's .env), else ``docker`` on PATH, else ``podman``.
    Returns {path, kind (docker, podman or None), why}."""
    binary = None
    try:
        with safefs.open_dir(home) as held:
            text, _st = hermes_config.read_at(held.fd, ".env", os.path.join(home, ".env"))
        binary = yamlconf.read_env_line(text or "", BINARY_ENV)
    except (OSError, ValueError):
        binary = None
    if binary:
        path, why = binary, "%s in %s/.env" % (BINARY_ENV, escape(home))
    else:
        path = shutil.which("docker", path=search_path)
        why = "docker on PATH"
        if path is None:
            path, why = shutil.which("podman", path=search_path), "podman on PATH (no docker)"
    if not path:
        return {"path": None, "kind": None, "why": "no docker or podman on PATH"}
    target = os.path.realpath(path)
    script = _read_small(target)
    script = script if script and script.startswith("#!") else None
    return {"path": path, "kind": engine_of_binary(path, target, script), "why": why}
