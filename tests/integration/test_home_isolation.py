# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Eval isolation end to end: a child does what the seed's eval run did, as a real user.

The child schedules a job with `crontab -`, asks `systemctl --user` for units, writes
~/x and a script under ~/.hermes/scripts/, and makes temp files with mktemp and
Python's tempfile. Under isolation everything lands in the run directory; the user's
real HOME, the real crontab spool, the user bus and /tmp are untouched. The control
test runs the same child without isolation and sees every leak, so the checks can fail.

The user bus is a pair of listening sockets standing in for the user manager
($XDG_RUNTIME_DIR/systemd/private and the D-Bus session socket): a connection to
either means the child reached it.
"""
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid

import pytest

pytestmark = pytest.mark.root

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(TOP, "python", "src")
SYSTEM_PYTHON = "/usr/bin/python3"
SPOOL_TABLE = "/var/spool/cron/crontabs/%s"

XDG_WRITES = (".config/autostart/leak.desktop", ".config/systemd/user/leak.service", ".local/share/leak",
              ".local/state/leak", ".cache/leak")

CHILD = r"""
set -u
echo "0 2 * * * $HOME/.hermes/scripts/backup.sh" | crontab -
crontab -l > "$OUT/crontab-l.txt" 2>&1
systemctl --user list-units > "$OUT/systemctl.txt" 2>&1; echo $? > "$OUT/systemctl.rc"
echo hi > ~/x
mkdir -p ~/.hermes/scripts && echo 'tar czf /backups/b.tgz /data' > ~/.hermes/scripts/backup.sh
mktemp > "$OUT/mktemp.txt"
python3 -c 'import tempfile; print(tempfile.mkdtemp(prefix="ab-"))' > "$OUT/mkdtemp.txt"
echo "$HOME" > "$OUT/home.txt"
mkdir -p "${XDG_CONFIG_HOME:-$HOME/.config}/autostart" "${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
echo '[Desktop Entry]' > "${XDG_CONFIG_HOME:-$HOME/.config}/autostart/leak.desktop"
echo '[Service]' > "${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/leak.service"
mkdir -p "${XDG_DATA_HOME:-$HOME/.local/share}/leak" "${XDG_STATE_HOME:-$HOME/.local/state}/leak" \
    "${XDG_CACHE_HOME:-$HOME/.cache}/leak"
"""

ISOLATE_WITH_LIBRARY = r"""
import subprocess, sys
from sandboxguard.home_mode import eval_isolation
with eval_isolation(sys.argv[1]):
    status = subprocess.call(["/bin/sh", "-c", sys.argv[2]])
sys.exit(status)
"""


class FakeUserBus:
    """Listening unix sockets where the user manager and session bus would be."""

    def __init__(self, paths, uid, gid):
        self.connections = 0
        self.sockets = []
        for path in paths:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(path)
            os.chown(path, uid, gid)
            sock.listen(8)
            sock.settimeout(0.2)
            self.sockets.append(sock)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.accept, daemon=True)
        self.thread.start()

    def accept(self):
        while not self.stop.is_set():
            for sock in self.sockets:
                try:
                    conn = sock.accept()[0]
                except (socket.timeout, OSError):
                    continue
                self.connections += 1
                conn.close()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        for sock in self.sockets:
            sock.close()


@pytest.fixture()
def agent(tmp_path_factory):
    """A throwaway user with a real home, a world-traversable run area and a copy of the library."""
    if os.geteuid() != 0:
        pytest.fail("these tests create a user: run them as root")
    name = "sgiso" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
    entry = pwd.getpwnam(name)
    top = tempfile.mkdtemp(prefix="sg-iso-", dir="/tmp")
    os.chmod(top, 0o755)
    lib = os.path.join(top, "lib")
    shutil.copytree(os.path.join(SRC, "sandboxguard"), os.path.join(lib, "sandboxguard"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(SRC, "sandboxguard_cli"), os.path.join(lib, "sandboxguard_cli"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for dirpath, dirnames, filenames in os.walk(lib):
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o644)
    runtime = os.path.join(top, "xdg")
    out = os.path.join(top, "out")
    run_dir = os.path.join(top, "run")
    for path in (runtime, out, run_dir):
        os.mkdir(path, 0o700)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    bus_path = os.path.join(runtime, "bus")
    bus = FakeUserBus([bus_path, os.path.join(runtime, "systemd", "private")], entry.pw_uid, entry.pw_gid)
    os.chown(os.path.join(runtime, "systemd"), entry.pw_uid, entry.pw_gid)
    env = {"HOME": entry.pw_dir, "USER": name, "LOGNAME": name, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "XDG_RUNTIME_DIR": runtime, "DBUS_SESSION_BUS_ADDRESS": "unix:path=" + bus_path,
           # a login session exports these pointing into the real home
           "XDG_CONFIG_HOME": os.path.join(entry.pw_dir, ".config"),
           "XDG_DATA_HOME": os.path.join(entry.pw_dir, ".local", "share"),
           "XDG_STATE_HOME": os.path.join(entry.pw_dir, ".local", "state"),
           "XDG_CACHE_HOME": os.path.join(entry.pw_dir, ".cache"),
           "PYTHONPATH": lib, "OUT": out}
    try:
        yield {"name": name, "uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir, "env": env,
               "out": out, "run": os.path.join(run_dir, "hermes"), "bus": bus, "lib": lib}
    finally:
        bus.close()
        subprocess.run(["crontab", "-u", name, "-r"], check=False, capture_output=True)
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)
        shutil.rmtree(top, ignore_errors=True)


def tmp_entries_of(uid):
    return {name for name in os.listdir("/tmp") if os.lstat(os.path.join("/tmp", name)).st_uid == uid}


def run_as_agent(agent, argv):
    return subprocess.run(argv, env=agent["env"], cwd=agent["out"], user=agent["uid"], group=agent["gid"],
                          extra_groups=[], capture_output=True, text=True, timeout=120, check=False)


def read(agent, name):
    with open(os.path.join(agent["out"], name)) as handle:
        return handle.read().strip()


def assert_everything_landed_in_the_run_dir(agent, tmp_before):
    run = agent["run"]
    assert read(agent, "home.txt") == os.path.join(run, "home")
    # crontab: the job is in the run's table, the real spool has nothing
    assert read(agent, "crontab-l.txt").startswith("0 2 * * * %s/home/.hermes/scripts/backup.sh" % run)
    with open(os.path.join(run, "crontab")) as handle:
        assert "/.hermes/scripts/backup.sh" in handle.read()
    assert not os.path.exists(SPOOL_TABLE % agent["name"])
    # systemctl --user: failed without reaching the user manager or the session bus
    assert read(agent, "systemctl.rc") != "0"
    assert agent["bus"].connections == 0
    # files under ~ are in the profile home
    assert os.path.isfile(os.path.join(run, "home", "x"))
    assert os.path.isfile(os.path.join(run, "home", ".hermes", "scripts", "backup.sh"))
    assert not os.path.exists(os.path.join(agent["home"], "x"))
    assert not os.path.exists(os.path.join(agent["home"], ".hermes"))
    # XDG base directories: autostart entries and user units land in the profile home
    for sub in XDG_WRITES:
        assert os.path.exists(os.path.join(run, "home", sub)), sub
        assert not os.path.exists(os.path.join(agent["home"], sub)), sub
    # temp files are in the scratch dir, and /tmp got nothing new from this user
    scratch = os.path.join(run, "cache", "scratch") + os.sep
    assert read(agent, "mktemp.txt").startswith(scratch)
    assert read(agent, "mkdtemp.txt").startswith(scratch + "ab-")
    assert tmp_entries_of(agent["uid"]) == tmp_before


def test_child_under_the_library_context_manager_stays_in_the_run_dir(agent):
    tmp_before = tmp_entries_of(agent["uid"])
    proc = run_as_agent(agent, [SYSTEM_PYTHON, "-c", ISOLATE_WITH_LIBRARY, agent["run"], CHILD])
    assert proc.returncode == 0, proc.stderr
    assert_everything_landed_in_the_run_dir(agent, tmp_before)


def test_child_under_home_env_stays_in_the_run_dir(agent):
    tmp_before = tmp_entries_of(agent["uid"])
    proc = run_as_agent(agent, [SYSTEM_PYTHON, "-m", "sandboxguard_cli", "home-env", "--hermes-home", agent["run"],
                                "--", "/bin/sh", "-c", CHILD])
    assert proc.returncode == 0, proc.stderr
    assert_everything_landed_in_the_run_dir(agent, tmp_before)


def test_without_isolation_the_same_child_leaks_everywhere(agent):
    # the control: proves each check above can see a leak
    proc = run_as_agent(agent, ["/bin/sh", "-c", CHILD])
    assert proc.returncode == 0, proc.stderr
    assert read(agent, "home.txt") == agent["home"]
    assert os.path.exists(SPOOL_TABLE % agent["name"])
    assert agent["bus"].connections > 0
    assert os.path.isfile(os.path.join(agent["home"], "x"))
    assert os.path.isfile(os.path.join(agent["home"], ".hermes", "scripts", "backup.sh"))
    for sub in XDG_WRITES:
        assert os.path.exists(os.path.join(agent["home"], sub)), sub
    assert read(agent, "mktemp.txt").startswith("/tmp/")
    for key in ("mktemp.txt", "mkdtemp.txt"):
        path = read(agent, key)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)


def test_isolation_restores_the_callers_environment(agent):
    script = (
        "import os, sys\n"
        "from sandboxguard.home_mode import eval_isolation\n"
        "before = dict(os.environ)\n"
        "with eval_isolation(sys.argv[1]):\n"
        "    assert os.environ['HOME'] != before['HOME']\n"
        "    assert 'XDG_RUNTIME_DIR' not in os.environ\n"
        "assert dict(os.environ) == before, 'environment not restored'\n"
    )
    proc = run_as_agent(agent, [SYSTEM_PYTHON, "-c", script, agent["run"]])
    assert proc.returncode == 0, proc.stderr


def test_home_env_json_reports_the_isolated_environment(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "home-env", "--hermes-home", str(tmp_path),
                           "--json"], env=dict(os.environ, PYTHONPATH=SRC, XDG_RUNTIME_DIR="/run/user/0"),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["env"]["HOME"] == str(tmp_path / "home")
    assert report["env"]["XDG_RUNTIME_DIR"] is None
    assert report["path_first"] == str(tmp_path / "cache" / "eval-bin")


def test_home_env_refuses_an_unknown_mode(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "home-env", "--mode", "jail", "--", "true"],
                          env=dict(os.environ, PYTHONPATH=SRC), capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "--mode" in proc.stderr and "profile" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_eval_run_wrapper_child_stays_in_the_run_dir(agent):
    from sandboxguard import home_mode
    from sandboxguard._terminal.eval_tools import EVAL_WRAPPER_NAME

    bin_dir = os.path.join(os.path.dirname(agent["lib"]), "eval-bin")
    home_mode.install_eval_tools(bin_dir, python=SYSTEM_PYTHON)
    os.chmod(bin_dir, 0o755)
    tmp_before = tmp_entries_of(agent["uid"])
    proc = run_as_agent(agent, [os.path.join(bin_dir, EVAL_WRAPPER_NAME), agent["run"], "/bin/sh", "-c",
                                CHILD])
    assert proc.returncode == 0, proc.stderr
    assert_everything_landed_in_the_run_dir(agent, tmp_before)


def test_home_env_json_points_the_xdg_base_dirs_into_the_profile_home(tmp_path):
    env = dict(os.environ, PYTHONPATH=SRC, XDG_CONFIG_HOME="/root/.config", XDG_DATA_HOME="/root/.local/share",
               XDG_STATE_HOME="/root/.local/state", XDG_CACHE_HOME="/root/.cache")
    proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "home-env", "--hermes-home", str(tmp_path),
                           "--json"], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["env"]
    home = str(tmp_path / "home")
    assert report["XDG_CONFIG_HOME"] == home + "/.config"
    assert report["XDG_DATA_HOME"] == home + "/.local/share"
    assert report["XDG_STATE_HOME"] == home + "/.local/state"
    assert report["XDG_CACHE_HOME"] == home + "/.cache"


def test_home_env_tightens_an_existing_scratch_dir_to_0700(tmp_path):
    scratch = tmp_path / "cache" / "scratch"
    scratch.mkdir(parents=True)
    os.chmod(scratch, 0o750)
    proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "home-env", "--hermes-home", str(tmp_path),
                           "--", "true"], env=dict(os.environ, PYTHONPATH=SRC), capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert os.stat(scratch).st_mode & 0o7777 == 0o700


def test_home_env_refuses_a_symlinked_scratch_dir_in_one_line(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.chmod(target, 0o755)
    (tmp_path / "run" / "cache").mkdir(parents=True)
    (tmp_path / "run" / "cache" / "scratch").symlink_to(target)
    proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "home-env", "--hermes-home",
                           str(tmp_path / "run"), "--", "true"], env=dict(os.environ, PYTHONPATH=SRC),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "symlink" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert os.stat(target).st_mode & 0o7777 == 0o755
