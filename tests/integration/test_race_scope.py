# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Proof held, not re-derived (issue 25): the scope of an operation is proven once and walked
from its held descriptors, so a runner user racing the walk cannot make root give it what is
not its own.

The attacker is the runner user of a GitHub self-hosted runner. Its runner directory holds a
root-owned file (``svc.sh install`` writes ``.service`` as root); it exchanges ``_work`` with
that file (``renameat2(RENAME_EXCHANGE)``, same directory) again and again while root runs
remediate, the sweep or the helper. Before the fix, the scope proved the work folder and each
step opened the path again: root chowned ``.service`` to the runner user in 15 to 900 calls.
The victim is checked after every call through a descriptor held on its inode (its name is
the attacker's to move)."""
import json
import os
import stat

import pytest
from racing import RaceWorld
from racing import python as python_move
from sandboxguard import sweep
from sandboxguard._fleet import remediate
from sandboxguard._privileged import runners

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_race_scope.py must run as root", pytrace=False)

# One round: _work and .service change places, then change back.
EXCHANGE = "exchange(move['a'], move['b']); exchange(move['a'], move['b'])"


class NoEngine:
    """The engine calls the sweep makes, answering "no containers" (the work folder is swept
    whole: its owner is known)."""

    @staticmethod
    def engine_info(_client):
        return {"OSType": "linux", "SecurityOptions": []}

    @staticmethod
    def inspect_containers(_client, _names, _include_stopped):
        return []


@pytest.fixture
def world():
    with RaceWorld("sgscope") as made:
        yield made


def _runner(world, work_folder="_work"):
    """A configured runner directory owned by the runner user, a root-owned ``.service`` beside
    ``.runner``, and a work folder holding what a root job step left (given back each call)."""
    runner = world.agent_dir("actions-runner")
    world.agent_file("actions-runner/.runner", json.dumps({"agentName": "r1", "workFolder": work_folder}).encode())
    service = os.path.join(runner, ".service")
    with open(service, "wb") as handle:
        handle.write(b"actions.runner.org-repo.r1.service\n")
    os.chmod(service, 0o644)  # root's, as svc.sh install writes it
    return runner, service


def _job_output(world, runner):
    work = world.agent_dir("actions-runner/_work/app")
    out = os.path.join(work, "out.bin")
    with open(out, "wb") as handle:
        handle.write(b"root build output\n")
    os.chmod(out, 0o4755)
    return out


def _held_victim(path):
    """A check for RaceWorld.race: the inode at ``path`` now, through a descriptor held on it,
    still root's with its mode (the attacker moves its name, never its owner)."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW)
    before = os.fstat(fd)

    def check(_outcome):
        now = os.fstat(fd)
        if (now.st_uid, now.st_gid, now.st_mode) != (before.st_uid, before.st_gid, before.st_mode):
            return ["%s (the root-owned file) is now %d:%d %o" % (path, now.st_uid, now.st_gid, now.st_mode)]
        return []
    return fd, check


def _race_exchange(world, runner, service, operation, min_calls=50):
    fd, check = _held_victim(service)
    try:
        world.attack(python_move(EXCHANGE, path=runner, a=os.path.join(runner, "_work"), b=service))
        result = world.race(operation, check=check, min_calls=min_calls)
        world.stop()
        return result
    finally:
        os.close(fd)


def test_remediate_never_gives_a_file_swapped_for_the_work_folder_to_the_runner_user(world):
    runner, service = _runner(world)
    _job_output(world, runner)

    def operation():
        return remediate.remediate_host(("ownership", "setid", "caps"), github_runners=[runner], docker="never")

    result = _race_exchange(world, runner, service, operation)
    assert result.clean, result.describe()
    assert os.stat(service).st_uid == 0 and stat.S_IMODE(os.stat(service).st_mode) == 0o644


def test_the_sweep_never_gives_a_file_swapped_for_the_work_folder_to_the_runner_user(world):
    runner, service = _runner(world)
    _job_output(world, runner)

    def operation_with_runner():
        return sweep.sweep(None, [], None, (), engine=NoEngine, providers=runners.runner_providers([runner]))

    # before the fix the sweep lost in 135 to 890 calls (each sweep is three walks)
    result = _race_exchange(world, runner, service, operation_with_runner, min_calls=400)
    assert result.clean, result.describe()


def test_the_runner_cleanup_helper_never_gives_a_file_swapped_for_the_work_folder_away(world):
    runner, service = _runner(world)
    _job_output(world, runner)
    result = _race_exchange(world, runner, service, lambda: runners.cleanup_github_runner(runner))
    assert result.clean, result.describe()


@pytest.mark.parametrize("folder", ["svc", "svc/", "./svc", "ABSOLUTE"])
def test_a_work_folder_the_runner_user_does_not_own_is_refused_by_every_consumer(world, folder):
    """A relative (or absolute) workFolder naming a root-owned 0700 directory below the runner
    directory: before, one helper run gave it and its 0600 files to the runner user."""
    runner, _service = _runner(world)
    private = os.path.join(runner, "svc")
    os.mkdir(private, 0o700)
    secret = os.path.join(private, "token")
    with open(secret, "wb") as handle:
        handle.write(b"root's\n")
    os.chmod(secret, 0o600)
    if folder == "ABSOLUTE":
        folder = private
    world.agent_file("actions-runner/.runner", json.dumps({"workFolder": folder}).encode())
    with pytest.raises(runners.RunnerRefused, match="not by the runner user") as caught:
        runners.cleanup_github_runner(runner)
    assert "svc" in str(caught.value) and "chown" in str(caught.value)
    host = remediate.remediate_host(("ownership", "setid", "caps"), github_runners=[runner], docker="never")
    swept = sweep.sweep(None, [], None, (), engine=NoEngine, providers=runners.runner_providers([runner]))
    for path in (private, secret):
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == (0, 0), "%s was given to the runner user" % path
    assert any("not by the runner user" in e["error"] for e in host["errors"]), host["errors"]
    assert swept["sandboxes"] == [] and any("not by the runner user" in r["reason"] for r in swept["refused_roots"])


def test_a_directory_between_the_runner_and_its_work_folder_must_be_the_runner_users_too(world):
    runner, _service = _runner(world)
    middle = os.path.join(runner, "jobs")
    os.mkdir(middle, 0o755)  # root's
    work = os.path.join(middle, "work")
    os.mkdir(work, 0o755)
    os.chown(work, world.uid, world.gid)
    world.agent_file("actions-runner/.runner", json.dumps({"workFolder": "jobs/work"}).encode())
    with pytest.raises(runners.RunnerRefused, match="jobs: is owned by uid 0"):
        runners.cleanup_github_runner(runner)


def test_remediate_derives_the_scope_once_and_walks_a_work_folder_that_is_a_directory_only(world, monkeypatch):
    """A work folder swapped for a file when the scope proves it is refused, never walked as a
    file root; and one remediate call derives its scope once."""
    from sandboxguard._privileged import scope

    runner, service = _runner(world)
    os.rename(service, os.path.join(runner, "_work"))  # the runner user's own swap, done already
    calls = []
    real = scope.derive

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(scope, "derive", counting)
    host = remediate.remediate_host(("ownership", "setid", "caps", "sandboxes", "leaks"), github_runners=[runner],
                                    hermes_homes=[world.agent], docker="never")
    assert len(calls) == 1
    work = os.path.join(runner, "_work")
    assert os.lstat(work).st_uid == 0, "the file put in the work folder's place was given away"
    assert any("not a directory" in e["error"] for e in host["errors"]), host["errors"]
