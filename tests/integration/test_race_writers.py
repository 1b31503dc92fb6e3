# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The root-side writers of the Hermes home and the eval tools, raced by an unprivileged
attacker swapping components of its own tree (tests/integration/racing.py; issue 19).

One test per row of the issue's attack table that these writers owned: the profile home
made or tightened (_terminal.configure._ensure_profile_home), config.yaml and .env rewritten
(configure_terminal_home, hermes_config.set_config), a FIFO config, and the CLI run as
root on an agent's directory (home-env, the eval tools and the eval-run wrapper, fetch
--local --dest). Each attacker won against the code before the fix (the numbers are in
changelogs/fragments/19-writers-through-descriptors.yml);
here it must win nothing: no victim outside the agent's tree changes, and no root-owned
setuid file or copy of a root-only file appears inside it.
"""
import contextlib
import itertools
import os
import signal
import stat
import subprocess
import sys

import pytest
from racing import RaceWorld, exchange, fifo, python, relink
from sandboxguard import crontab, fetch, hermes_config, home_mode
from sandboxguard._fleet import audit
from sandboxguard._terminal.eval_tools import EVAL_WRAPPER_NAME, eval_wrapper_text
from sandboxguard.transport_local import LocalExec

pytestmark = pytest.mark.root

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_race_writers.py must run as root", pytrace=False)

SECRET_MARK = b"victim-hash"
CONFIG = b"# the agent's own\nterminal:\n  home_mode: real\n"

# Wait for root to make a directory (home_mode's profile home), then swap it at once for a
# symlink to the victim: root's chmod/chown by path that follows lands on the victim.
SWAP_WHAT_ROOT_MADE = r'''
for home in move["homes"]:
    alt = home + ".sgx"
    try:
        if not os.path.lexists(alt):
            os.symlink(move["target"], alt)
        if stat.S_ISDIR(os.lstat(home).st_mode):
            exchange(home, alt)
    except OSError:
        pass
'''

# The harness's exchange, but the symlink is made again whenever root's write replaced it
# (a rename over the name while the link was there leaves the real file at the alt name).
KEEP_SWAPPING = r'''
path, alt = move["path"], move["path"] + ".sgk"
try:
    if not stat.S_ISLNK(os.lstat(alt).st_mode):
        os.unlink(alt)
except FileNotFoundError:
    pass
except OSError:
    pass
try:
    if not os.path.lexists(alt):
        os.symlink(move["target"], alt)
    if not os.path.lexists(path):
        os.rename(alt, path)
    else:
        exchange(path, alt)
        exchange(path, alt)
except OSError:
    pass
'''


def keep_swapping(path, target):
    """Move: ``path`` swaps with a symlink to ``target``, remade whenever root replaced it."""
    return python(KEEP_SWAPPING, path=path, target=target)


# The agent's own directory made group/other-writable and setid again, through a descriptor.
CHMOD_BACK = r'''
try:
    fd = os.open(move["path"], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    os.fchmod(fd, move["mode"])
    os.close(fd)
except OSError:
    pass
'''


@pytest.fixture
def world():
    with RaceWorld("sgwr") as made:
        yield made


# --- helpers -------------------------------------------------------------------------------

def _regular_files(top):
    """(path, fstat, fd) of each regular file directly in ``top``, opened without following."""
    try:
        names = os.listdir(top)
    except OSError:
        return
    for name in names:
        path = os.path.join(top, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                yield path, st, fd
        finally:
            os.close(fd)


def root_setid_files(*tops):
    """A check: lines naming root-owned setuid/setgid files in ``tops`` (the agent's directories)."""
    def check():
        return ["%s: root-owned %04o inside the agent's tree" % (path, stat.S_IMODE(st.st_mode))
                for top in tops for path, st, _fd in _regular_files(top)
                if st.st_uid == 0 and st.st_mode & (stat.S_ISUID | stat.S_ISGID)]
    return check


def copies_of_the_secret(*tops):
    """A check: lines naming files in ``tops`` holding the root-only victim's content."""
    def check():
        found = []
        for top in tops:
            for path, st, fd in _regular_files(top):
                if SECRET_MARK in os.pread(fd, 1 << 16, 0):
                    found.append("%s: a copy of the root-only secret, uid %d mode %04o"
                                 % (path, st.st_uid, stat.S_IMODE(st.st_mode)))
        return found
    return check


def remove_made(paths):
    """Remove what root made (or the attacker swapped in) at ``paths`` and ``path.sgx``; never follows."""
    for path in paths:
        for name in (path, path + ".sgx"):
            try:
                st = os.lstat(name)
            except OSError:
                continue
            with contextlib.suppress(OSError):
                os.rmdir(name) if stat.S_ISDIR(st.st_mode) else os.unlink(name)


class Deadline(Exception):
    """An operation blocked (on a FIFO) longer than allowed."""


@contextlib.contextmanager
def deadline(seconds):
    """Raise Deadline in the block after ``seconds`` (SIGALRM interrupts a blocking open)."""
    def fire(*_):
        raise Deadline("blocked for %s s" % seconds)
    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def race(world, operation, **kwargs):
    """world.race, and its numbers on stdout (pytest -s shows them: calls survived)."""
    result = world.race(operation, **kwargs)
    print("\n%s: %s" % (os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0], result.describe()))
    return result


def hermes_home(world, profiles=(), text=CONFIG):
    home = world.agent_dir("hermes")
    world.agent_file("hermes/config.yaml", text)
    for name in profiles:
        world.agent_dir("hermes/profiles/%s" % name)
        world.agent_file("hermes/profiles/%s/config.yaml" % name, text)
    return home


def refusals(report):
    return [error for error in report.get("errors", [])]


# --- _terminal.configure._ensure_profile_home ----------------------------------------------------------

def test_a_missing_profile_home_is_made_without_giving_a_root_file_to_the_agent(world):
    hermes = hermes_home(world, text=b"terminal:\n  home_mode: profile\n")
    home = hermes + "/home"
    world.attack(python(SWAP_WHAT_ROOT_MADE, homes=[home], target=world.victim + "/secret"))
    refused = []

    def configure():
        report = home_mode.configure_terminal_home(hermes, "profile", include_profiles=False)
        refused.extend(refusals(report))

    result = race(world, configure, after_call=lambda _outcome: remove_made([home]),
                  until=lambda r: bool(refused or r.errors))
    assert result.clean, result.describe()
    assert refused or result.errors, result.describe()  # the attack was met, not missed


def test_four_hundred_agent_made_profiles_never_give_a_root_file_to_the_agent(world):
    names = ["p%03d" % index for index in range(400)]
    hermes = hermes_home(world, names, text=b"terminal:\n  home_mode: profile\n")
    homes = [hermes + "/home"] + [hermes + "/profiles/%s/home" % name for name in names]
    world.attack(python(SWAP_WHAT_ROOT_MADE, homes=homes, target=world.victim + "/secret"))
    reports = []

    def configure():
        reports.append(home_mode.configure_terminal_home(hermes, "profile"))

    result = race(world, configure, after_call=lambda _outcome: remove_made(homes),
                  until=lambda _r: any(report["errors"] for report in reports))
    assert result.clean, result.describe()
    assert reports, result.describe()
    for report in reports:
        # a refused profile is an error of its own; every other one still got its profile home
        assert len(report["homes"]) == 401
        failed = {error["path"] for error in report["errors"]}
        for entry in report["homes"]:
            if entry["profile_home"] not in failed and not entry.get("error"):
                assert entry["profile_home_changed"] is True
    assert any(report["errors"] for report in reports), result.describe()


def test_a_group_writable_profile_home_never_lends_its_mode_to_a_root_file(world):
    hermes = hermes_home(world, text=b"terminal:\n  home_mode: profile\n")
    home = world.agent_dir("hermes/home", mode=0o777)
    os.chmod(home, 0o6777)
    world.attack(exchange(home, world.victim + "/program"), python(CHMOD_BACK, path=home, mode=0o6777))

    def configure():
        home_mode.configure_terminal_home(hermes, "profile", include_profiles=False)

    result = race(world, configure)
    assert result.clean, result.describe()


# --- configure_terminal_home: config.yaml and .env -----------------------------------------

def _alternating_modes():
    return itertools.cycle(["profile", "real"])


@pytest.mark.parametrize("where", ["config", "env"])
def test_terminal_home_never_writes_the_agents_text_back_root_setuid(world, where):
    hermes = hermes_home(world)
    name = "config.yaml" if where == "config" else ".env"
    target = world.agent_file("hermes/" + name, CONFIG if where == "config" else b"TERMINAL_HOME_MODE=real\n")
    suid = world.victim_path("bin/suid", b"\x7fELF plain ascii payload\n", 0o4755)
    world.attack(keep_swapping(target, suid))
    world.add_check(root_setid_files(hermes))
    modes = _alternating_modes()
    refused = []

    def configure():
        report = home_mode.configure_terminal_home(hermes, next(modes), where=where, include_profiles=False,
                                                   create_profile_home=False)
        refused.extend(refusals(report))

    result = race(world, configure, until=lambda _r: bool(refused))
    assert result.clean, result.describe()
    assert refused, result.describe()  # the swapped-in link was met (refused), not missed


@pytest.mark.parametrize("where", ["config", "env"])
def test_terminal_home_never_copies_a_root_only_file_out(world, where):
    hermes = hermes_home(world)
    name = "config.yaml" if where == "config" else ".env"
    target = world.agent_file("hermes/" + name, CONFIG if where == "config" else b"TERMINAL_HOME_MODE=real\n")
    world.attack(keep_swapping(target, world.victim + "/secret"))
    world.add_check(copies_of_the_secret(hermes))
    modes = _alternating_modes()
    refused = []

    def configure():
        report = home_mode.configure_terminal_home(hermes, next(modes), where=where, include_profiles=False,
                                                   create_profile_home=False)
        refused.extend(refusals(report))

    result = race(world, configure, until=lambda _r: bool(refused))
    assert result.clean, result.describe()
    assert refused, result.describe()  # the swapped-in link was met (refused), not missed


def test_terminal_home_never_writes_into_a_root_directory(world):
    hermes = hermes_home(world, ["work"])
    world.attack(exchange(hermes + "/profiles/work", world.victim + "/etc/cron.d"),
                 relink(hermes, world.victim + "/etc/cron.d"))
    modes = _alternating_modes()

    def configure():
        home_mode.configure_terminal_home(hermes, next(modes), where="both")

    result = race(world, configure)
    assert result.clean, result.describe()


# --- hermes_config.set_config --------------------------------------------------------------

def _alternating_backends():
    return itertools.cycle(["bubblewrap", "local"])


def test_set_config_never_writes_the_agents_text_back_root_setuid(world):
    hermes = hermes_home(world)
    suid = world.victim_path("bin/suid", b"\x7fELF plain ascii payload\n", 0o4755)
    world.attack(keep_swapping(hermes + "/config.yaml", suid))
    world.add_check(root_setid_files(hermes))
    backends = _alternating_backends()

    def configure():
        hermes_config.set_config(hermes + "/config.yaml", {"terminal.backend": next(backends)})

    result = race(world, configure, until=lambda r: "ConfigError" in r.errors)
    assert result.clean, result.describe()
    assert "ConfigError" in result.errors, result.describe()  # the swapped-in link was met (refused)


def test_set_config_never_copies_a_root_only_file_out(world):
    hermes = hermes_home(world)
    world.attack(keep_swapping(hermes + "/config.yaml", world.victim + "/secret"))
    world.add_check(copies_of_the_secret(hermes))
    backends = _alternating_backends()

    def configure():
        hermes_config.set_config(hermes + "/config.yaml", {"terminal.backend": next(backends)})

    result = race(world, configure, until=lambda r: "ConfigError" in r.errors)
    assert result.clean, result.describe()
    assert "ConfigError" in result.errors, result.describe()  # the swapped-in link was met (refused)


def test_set_config_never_writes_into_a_root_directory(world):
    hermes = hermes_home(world, ["work"])
    world.attack(exchange(hermes + "/profiles/work", world.victim + "/etc/cron.d"),
                 relink(hermes, world.victim + "/etc/cron.d"))
    backends = _alternating_backends()

    def configure():
        backend = next(backends)
        for path in (hermes + "/config.yaml", hermes + "/profiles/work/config.yaml"):
            with contextlib.suppress(hermes_config.ConfigError, OSError):
                hermes_config.set_config(path, {"terminal.backend": backend})

    result = race(world, configure)
    assert result.clean, result.describe()


# --- a FIFO config.yaml ----------------------------------------------------------------------

def test_a_fifo_swapped_in_for_config_yaml_never_blocks_a_reader(world):
    hermes = hermes_home(world)
    world.agent_file("hermes/.env", b"TERMINAL_HOME_MODE=real\n")
    world.attack(fifo(hermes + "/config.yaml"), fifo(hermes + "/.env"))
    modes = _alternating_modes()

    def configure():
        with deadline(5):
            home_mode.configure_terminal_home(hermes, next(modes), where="both", include_profiles=False)
            audit.check_home_mode([hermes], "profile")
            hermes_config.set_config(hermes + "/config.yaml", {"terminal.home_mode": next(modes)})

    result = race(world, configure)
    assert "Deadline" not in result.errors, result.describe()
    assert result.clean, result.describe()


# --- the CLI as root on an agent's directory ---------------------------------------------------

def test_home_env_dirs_are_made_and_tightened_only_inside_the_agents_tree(world):
    run = world.agent_dir("run")
    world.agent_dir("run/cache/scratch")
    world.agent_dir("run/home")
    lib = os.path.dirname(world.victim_path("lib/scratch"))
    other = os.path.dirname(world.victim_path("runlike/home"))
    world.attack(exchange(run + "/cache", lib), relink(run, other))

    def make():
        home_mode.ensure_isolation_dirs(run)
        env = {"HERMES_HOME": run, "HOME": "/nonexistent", "TERMINAL_HOME_MODE": "real"}
        home_mode.apply_subprocess_home_env(env, in_container=False, account="/nonexistent")

    result = race(world, make)
    assert result.clean, result.describe()


def test_home_env_cli_as_root_never_chmods_a_root_directory(world):
    run = world.agent_dir("run")
    world.agent_dir("run/cache/scratch")
    lib = os.path.dirname(world.victim_path("lib/scratch"))
    world.attack(exchange(run + "/cache", lib))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))

    def cli():
        proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "home-env", "--hermes-home", run, "--",
                               "true"], env=env, capture_output=True, check=False)
        if proc.returncode:
            raise RuntimeError(proc.stderr.decode("utf-8", "replace"))

    result = race(world, cli)
    assert result.clean, result.describe()


def test_eval_tools_are_never_written_into_a_root_tree(world):
    world.agent_dir("run/cache/eval-bin")
    bin_dir = world.agent + "/run/cache/eval-bin"
    world.attack(exchange(bin_dir, world.victim + "/bin"))
    pythons = itertools.cycle(["/usr/bin/python3", sys.executable])

    def install():
        python = next(pythons)
        home_mode.install_eval_tools(bin_dir, python=python)
        crontab.install_shim(bin_dir, python=python, name="crontab2")

    result = race(world, install)
    assert result.clean, result.describe()


def test_the_eval_wrapper_run_by_root_on_an_agents_run_dir_changes_nothing_outside_it(world):
    run = world.agent_dir("run")
    world.agent_dir("run/cache/scratch")
    world.agent_dir("run/home")
    lib = os.path.dirname(world.victim_path("lib/scratch"))
    wrapper = os.path.join(world.base, EVAL_WRAPPER_NAME)
    with open(wrapper, "w") as handle:
        handle.write(eval_wrapper_text(world.base + "/eval-bin"))
    os.chmod(wrapper, 0o755)
    world.attack(exchange(run + "/cache", lib))
    said = []

    def run_wrapper():
        proc = subprocess.run([wrapper, run, "/bin/true"], capture_output=True, check=False)
        if proc.returncode:
            said.append(proc.stderr.decode("utf-8", "replace"))
            raise RuntimeError(said[-1])

    result = race(world, run_wrapper)
    assert result.clean, result.describe()
    assert said and "run it as that user" in said[-1], result.describe()
    # the agent itself runs it on its own directory
    proc = world.as_user([wrapper, run, "/bin/sh", "-c", 'test "$HOME" = "$HERMES_HOME/home"'], cwd="/")
    assert proc.returncode == 0, proc.stderr


def test_fetch_local_never_lands_in_a_root_directory(world):
    src = world.agent_file("sandbox/r.txt", b"* * * * * root touch /tmp/sgwr-pwned\n")
    dest = world.agent_dir("dest")
    world.agent_dir("out")
    world.attack(exchange(dest, world.victim + "/etc/cron.d"), exchange(world.agent + "/out", world.victim + "/etc"))
    channel = LocalExec()
    turns = itertools.cycle([False, True])

    def land():
        if next(turns):
            fetch.fetch(channel, world.agent + "/sandbox/r.txt", world.agent + "/out/dest", create_dest=True)
        else:
            fetch.fetch(channel, src, dest)

    def clean(_outcome):
        for where in (dest, world.agent + "/out/dest"):
            with contextlib.suppress(OSError):
                fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
                try:
                    os.unlink("r.txt", dir_fd=fd)
                finally:
                    os.close(fd)

    result = race(world, land, after_call=clean)
    assert result.clean, result.describe()


def test_fetch_cli_local_dest_never_lands_in_a_root_directory(world):
    src = world.agent_file("sandbox/r.txt", b"* * * * * root touch /tmp/sgwr-pwned\n")
    dest = world.agent_dir("dest")
    world.attack(exchange(dest, world.victim + "/etc/cron.d"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))

    def cli():
        proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "fetch", "--local", src, "--dest", dest,
                               "--json"], env=env, capture_output=True, check=False)
        with contextlib.suppress(OSError):
            fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                os.unlink("r.txt", dir_fd=fd)
            finally:
                os.close(fd)
        if proc.returncode:
            raise RuntimeError(proc.stderr.decode("utf-8", "replace"))

    result = race(world, cli)
    assert result.clean, result.describe()
