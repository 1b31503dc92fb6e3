# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The root-side operations that walk or read an agent's tree (the walker, the guard's
single-file fix, the fleet audit's walk and the leak audit's reads), raced by an
unprivileged attacker swapping components of its own tree (tests/integration/racing.py).

The walker held before issue 19 (these are regression tests written to the same rule as
the others: an attacker as a throwaway user, a bounded loop, root-owned victims)."""
import os
import stat

import pytest
from racing import RaceWorld, exchange, relink
from sandboxguard import leaks, strip
from sandboxguard._core import safefs
from sandboxguard._fleet import audit

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_race_walk.py must run as root", pytrace=False)


@pytest.fixture
def world():
    with RaceWorld("sgrwk") as made:
        os.chmod(made.victim + "/bin/tool", 0o4755)  # a setuid-root victim a followed link would strip
        made.victims = []
        made.add_victim(made.victim)
        yield made


def _plant(world, sandbox):
    """What a root container left in the sandbox: a setuid-root file and a root-owned tree."""
    dist = world.agent_dir(sandbox + "/dist")
    path = os.path.join(dist, "suid")
    with open(path, "wb") as handle:
        handle.write(b"x")
    os.chmod(path, 0o4755)
    return dist


def test_the_walk_with_ownership_return_never_changes_a_victim_through_a_swapped_directory(world):
    dist = _plant(world, "sandboxes/docker/t1/workspace")
    world.attack(exchange(dist, world.victim + "/bin"), relink(os.path.dirname(dist), world.victim))

    def sweep_once():
        report = strip.run([world.agent + "/sandboxes"], actions=("chown", "setid", "caps"),
                           chown_to=(world.uid, world.gid), budget=5)
        path = os.path.join(dist, "suid")
        if os.path.lexists(path) and not os.path.islink(path):  # put the container's file back for the next round
            os.chown(path, 0, 0)
            os.chmod(path, 0o4755)
        return report

    result = world.race(sweep_once)
    assert result.clean, result.describe()


def test_the_single_file_fix_of_the_guard_never_follows_a_name_swapped_for_a_link(world):
    dist = _plant(world, "sandboxes/docker/t1/workspace")
    world.attack(exchange(os.path.join(dist, "suid"), world.victim + "/bin/tool"))

    options = {"actions": ("chown", "setid", "caps"), "chown_to": (world.uid, world.gid)}

    def fix_once():
        with safefs.open_dir(dist) as held:
            strip.fix_file_at(held.fd, "suid", options)
            try:  # give the container's file back to root for the next round, through the same handle
                fd, st = safefs.open_handle_at(held.fd, "suid")
            except OSError:
                return
            try:
                if stat.S_ISREG(st.st_mode):
                    safefs.set_owner(fd, 0, 0)
            finally:
                os.close(fd)

    result = world.race(fix_once)
    assert result.clean, result.describe()


def test_the_fleet_audits_walk_never_reports_a_victim_as_the_agents(world):
    dist = _plant(world, "hermes/sandboxes/docker/t1/workspace")
    world.attack(exchange(dist, world.victim + "/bin"))
    seen = []

    def audit_once():
        check = audit.check_privileged_files(hermes_homes=[world.agent + "/hermes"], docker="never", budget=5)
        seen.extend(f["path"] for f in check["findings"])
        return check

    result = world.race(audit_once, until=lambda _r: bool(seen))
    assert result.clean, result.describe()
    assert seen, "the audit found the container's setuid file between swaps"
    assert not [p for p in seen if p.startswith(world.victim) or p.endswith("/tool")], seen


def test_the_leak_audit_never_reads_another_directory_through_a_swapped_unit_directory(world):
    units = world.agent_dir("home/.config/systemd/user")
    world.agent_file("home/.config/systemd/user/agent-beacon.service", b"[Service]\nExecStart=/bin/true\n")
    root_units = world.victim + "/etc"
    with open(os.path.join(root_units, "root-only.service"), "wb") as handle:
        handle.write(b"[Service]\nExecStart=/bin/true\n")
    world.victims = []
    world.add_victim(world.victim)
    world.attack(exchange(units, root_units))
    seen = []

    def audit_once():
        report = leaks.audit(accounts=[(world.user, world.uid, world.agent + "/home")], tmp_dir=world.base,
                             spool_dir=world.base + "/no-spool", at_spool_dirs=(), runtime_root=world.base)
        seen.extend(f["path"] for f in report["findings"])
        return report

    result = world.race(audit_once, until=lambda _r: any(p.endswith("agent-beacon.service") for p in seen))
    assert result.clean, result.describe()
    assert any(p.endswith("agent-beacon.service") for p in seen), "the agent's unit was found between swaps"
    assert not [p for p in seen if "root-only" in p], "a root unit was reported as the agent's leak"
