# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The prevention's one root-side writer in the agent's tree (issue 28): the Hermes
config.yaml's docker_extra_args, edited by sandbox_prevent (_prevent.prevent.edit_hermes),
raced by the agent swapping config.yaml for a symlink to a root file (tests/integration/racing.py).

It reads and writes only through the held Hermes home (hermes_config.read_at/write_at), so the
attacker must win nothing: no root file changes, no root-owned setuid file or copy of a
root-only file appears in the agent's tree, and the swapped-in link is met and refused.
"""
import itertools
import os

import pytest
from racing import RaceWorld
from sandboxguard._prevent import prevent
from test_race_writers import copies_of_the_secret, keep_swapping, race, root_setid_files

pytestmark = pytest.mark.root

CONFIG = b"# the agent's own\nterminal:\n  backend: docker\n  docker_extra_args:\n    - --shm-size=2g\n"
PROFILE = "/etc/sandboxguard/seccomp/docker.json"


@pytest.fixture
def world():
    with RaceWorld("sgpv") as made:
        yield made


def _edit(hermes):
    states = itertools.cycle(["present", "absent"])

    def edit():
        prevent.edit_hermes(hermes, PROFILE, next(states), dry_run=False)
    return edit


def test_the_hermes_edit_never_writes_the_agents_text_into_a_root_setuid_file(world):
    hermes = world.agent_dir("hermes")
    world.agent_file("hermes/config.yaml", CONFIG)
    suid = world.victim_path("bin/suid", b"\x7fELF plain ascii payload\n", 0o4755)
    world.attack(keep_swapping(hermes + "/config.yaml", suid))
    world.add_check(root_setid_files(hermes))
    result = race(world, _edit(hermes), until=lambda r: "ConfigError" in r.errors)
    assert result.clean, result.describe()
    assert "ConfigError" in result.errors, result.describe()


def test_the_hermes_edit_never_copies_a_root_only_file_out(world):
    hermes = world.agent_dir("hermes")
    world.agent_file("hermes/config.yaml", CONFIG)
    world.attack(keep_swapping(hermes + "/config.yaml", world.victim + "/secret"))
    world.add_check(copies_of_the_secret(hermes))
    result = race(world, _edit(hermes), until=lambda r: "ConfigError" in r.errors)
    assert result.clean, result.describe()
    assert "ConfigError" in result.errors, result.describe()
    assert os.path.isdir(hermes)
