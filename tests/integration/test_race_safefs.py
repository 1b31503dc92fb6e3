# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The descriptor primitives every root-side writer uses (safefs, atomicfile), raced by an
unprivileged attacker swapping components of its own tree (tests/integration/racing.py)."""
import os
import stat

import pytest
import racing
from racing import VICTIM_SECRET, RaceWorld, exchange, fifo, hardlink, relink
from sandboxguard._core import atomicfile, safefs
from sandboxguard._privileged import sandboxes

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_race_safefs.py must run as root", pytrace=False)


@pytest.fixture
def world():
    with RaceWorld("sgrfs") as made:
        yield made


def test_atomicfile_write_never_lands_in_a_directory_swapped_for_a_symlink(world):
    conf = world.agent_dir("hermes/conf")
    world.attack(exchange(conf, world.victim + "/etc/cron.d"), relink(world.agent + "/hermes", world.victim))

    def write():
        atomicfile.write(conf + "/job", b"* * * * * root touch /tmp/pwned\n", mode=0o644)

    result = world.race(write, min_calls=51, until=lambda r: "PathRefused" in r.errors)
    assert result.clean, result.describe()
    assert result.calls > 50, result.describe()
    assert "PathRefused" in result.errors, result.describe()  # the attack was met, not missed


def test_open_dir_create_never_makes_a_directory_through_a_swapped_link(world):
    hermes = world.agent_dir("hermes")
    world.attack(exchange(hermes, world.victim + "/bin"))

    def create():
        with safefs.open_dir(hermes + "/home/.config", create=True, mode=0o700) as made:
            assert made.path.startswith(world.agent + "/")
        for name in (".config", ""):
            try:
                os.rmdir(os.path.join(world.agent, "hermes/home", name))
            except OSError:
                pass

    result = world.race(create, until=lambda r: "PathRefused" in r.errors)
    assert result.clean, result.describe()
    assert "PathRefused" in result.errors, result.describe()


def test_read_at_reads_only_a_regular_file_never_a_fifo_or_a_hard_link_to_a_root_file(world):
    conf = world.agent_file("hermes/config.yaml", b"terminal:\n  home_mode: real\n")
    os.chown(world.agent + "/hermes", world.uid, world.gid)
    world.attack(fifo(conf), hardlink(conf, world.victim + "/secret"))
    seen = []

    def read():
        with safefs.open_dir(world.agent + "/hermes") as home:
            data, _st = safefs.read_at(home.fd, "config.yaml", single_link=True)
        seen.append(data)

    result = world.race(read, until=lambda r: "PathRefused" in r.errors and any(seen))
    assert result.clean, result.describe()
    assert VICTIM_SECRET not in seen
    assert any(seen), result.describe()  # it did read the real file between swaps
    assert "PathRefused" in result.errors, result.describe()


def test_make_dir_at_gives_the_new_directory_to_the_owner_and_never_a_victim(world):
    hermes = world.agent_dir("hermes")
    world.attack(relink(hermes, world.victim))

    def make():
        with safefs.open_dir(hermes) as home:
            fd, created = safefs.make_dir_at(home.fd, "home", 0o700, owner=(world.uid, world.gid))
            st = os.fstat(fd)
            os.close(fd)
        assert st.st_uid == world.uid and stat.S_IMODE(st.st_mode) == 0o700
        if created:
            os.rmdir(hermes + "/home")

    result = world.race(make)
    assert result.clean, result.describe()


def test_a_symlinked_profiles_directory_lists_no_profiles(world, tmp_path):
    hermes = world.agent_dir("hermes")
    other = world.agent_dir("elsewhere/alice")
    os.symlink(os.path.dirname(other), hermes + "/profiles")
    assert sandboxes.list_profile_names(hermes) == []
    os.unlink(hermes + "/profiles")
    world.agent_dir("hermes/profiles/work")
    world.agent_dir("hermes/profiles/.hidden")
    os.symlink(other, hermes + "/profiles/linked")
    assert sandboxes.list_profile_names(hermes) == ["work"]


def test_race_waits_past_its_seconds_for_what_the_test_counts_on_and_says_when_it_gave_up(monkeypatch):
    with RaceWorld("sgtf") as world:
        world.attack(exchange(world.agent_dir("x"), world.victim + "/bin"))
        result = world.race(lambda: None, seconds=0.05, min_calls=300, until=lambda r: r.calls >= 400)
        assert result.calls == 400 and not result.gave_up and result.clean, result.describe()
        monkeypatch.setattr(racing, "RACE_FAILSAFE_S", 0.5)
        world.attack(exchange(world.agent_dir("y"), world.victim + "/bin"))
        result = world.race(lambda: None, seconds=0.05, until=lambda _r: False)
        assert result.gave_up and "gave_up=True" in result.describe()
