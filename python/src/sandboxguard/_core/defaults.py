# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Defaults and choices that callers of more than one capability offer, each written once.

A capability takes its own from here (``bwrap.DEFAULT_MIN_VERSION`` is
:data:`BWRAP_MIN_VERSION`), and so does a module that offers another capability's option
without compiling its code: ``audit_info`` offers the options of all four checks, and a
check's module is compiled on the host only when the check runs (AnsiballZ ships source,
never bytecode; bwrap.py alone costs about 10 ms of CPU per host). The module argument
specs, the CLI's options and the doc fragments take the values from the library
(``tests/unit/test_defaults_once.py`` ties what the docs and roles state to them).

Pure: imports nothing.
"""

# The oldest bubblewrap the Hermes bubblewrap backend runs on (Debian 12 ships 0.8.0).
BWRAP_MIN_VERSION = "0.9.0"
# Seconds the probe's sandbox may run.
BWRAP_PROBE_TIMEOUT_S = 20
# Debian's cron spool: one table per user (cron(8)).
CRON_SPOOL_DIR = "/var/spool/cron/crontabs"
# Where leftover run directories are looked for, and their names.
TMP_DIR = "/tmp"
TMP_PATTERNS = ("ab-*",)
# Where TERMINAL_HOME_MODE is read and set: config.yaml, .env or both.
HOME_WHERE_CHOICES = ("config", "env", "both")
HOME_WHERE = "config"
# An interpreter every user can run (root's pyenv Pythons live under its 0700 home):
# the crontab shim, the eval wrapper and the nosuid boot program run with it.
SYSTEM_PYTHON = "/usr/bin/python3"
# sandboxguard runner-cleanup DIR: the root-owned helper a runner's job-completed hook runs
# through sudo (exactly one argument, the runner directory: the sudoers rule fixes it), and
# the seconds its walk may take (the hook runs synchronously after every job).
RUNNER_CLEANUP_HELPER = "/usr/local/sbin/sandboxguard-runner-cleanup"
RUNNER_CLEANUP_BUDGET_S = 60.0
# Where the roles copy the library and the CLI (sandbox_sweep_install_dir's default).
INSTALL_DIR = "/usr/local/lib/sandboxguard"

# The engine sockets `auto` asks (docker_engine.engine_urls), and the audit looks for before
# it compiles the engine client: Docker's, rootful Podman's (podman.socket, podman system
# service) and rootless Podman's, one per user who runs it.
DOCKER_SOCKET = "/var/run/docker.sock"
PODMAN_SOCKET = "/run/podman/podman.sock"
ROOTLESS_PODMAN_SOCKETS = "/run/user/*/podman/podman.sock"
