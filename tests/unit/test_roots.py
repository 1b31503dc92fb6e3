# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Which roots are refused, decided on resolved paths (pure)."""
import pytest
from sandboxguard.roots import refusal_reason


@pytest.mark.parametrize("path", ["/", "/usr", "/usr/bin", "/etc", "/etc/ssh", "/boot", "/proc/1", "/sys/fs",
                                  "/dev", "/lib64", "/var/lib/dpkg/info", "/home", "/root", "/var/lib", "/tmp"])
def test_system_paths_are_refused(path):
    assert refusal_reason(path)


@pytest.mark.parametrize("path", ["/srv/hermes/sandboxes/docker/t1/workspace", "/home/agent/.hermes/sandboxes",
                                  "/var/lib/hermes/sandboxes", "/tmp/ab-1234", "/usr-data", "/etcetera",
                                  "/var/lib/docker/volumes/x/_data"])
def test_sandbox_paths_are_allowed(path):
    assert refusal_reason(path) is None


def test_reason_names_the_fix():
    assert "name the sandbox directory" in refusal_reason("/usr/local/bin")
