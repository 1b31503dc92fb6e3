# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard fetch`: option parsing and exit codes (the --local channel; ssh and docker are integration)."""
import json
import os
import subprocess
import sys

import pytest
from sandboxguard.fetch import FetchError
from sandboxguard.transport_ssh import parse_target
from sandboxguard_cli.commands.fetch import parse_size
from sandboxguard_cli.main import UsageError

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python", "src")


@pytest.mark.parametrize(("text", "size"), [
    ("0", 0), ("1048576", 1048576), ("512K", 512 * 1024), ("50M", 50 * 1024 ** 2), ("50MiB", 50 * 1024 ** 2),
    ("1G", 1024 ** 3), ("7B", 7),
])
def test_max_bytes_accepts_counts_and_binary_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "-1", "5Q", "1.5M", "M"])
def test_max_bytes_rejects_anything_else(text):
    with pytest.raises(UsageError, match="--max-bytes"):
        parse_size(text)


@pytest.mark.parametrize(("target", "parsed"), [
    ("sandbox", (None, "sandbox", 22)),
    ("agent@sandbox", ("agent", "sandbox", 22)),
    ("agent@127.0.0.1:2222", ("agent", "127.0.0.1", 2222)),
    ("[::1]:2200", (None, "::1", 2200)),
    ("agent@[::1]", ("agent", "::1", 22)),
])
def test_ssh_target(target, parsed):
    assert parse_target(target) == parsed


@pytest.mark.parametrize("target", ["agent@", "host:port"])
def test_bad_ssh_target_is_bad_input(target):
    with pytest.raises(FetchError):
        parse_target(target)


def cli(*args):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "sandboxguard_cli", "fetch", *args], capture_output=True, text=True,
                          env=env, check=False)


@pytest.fixture
def tree(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key\n")
    (home / "r.txt").write_text("report\n")
    (home / "link").symlink_to(home / ".ssh" / "id_rsa")
    dest = tmp_path / "dest"
    dest.mkdir()
    return home, dest


def test_fetched_file_exits_0_and_json_is_the_report(tree):
    home, dest = tree
    proc = cli("--local", str(home / "r.txt"), "--dest", str(dest), "--remote-home", str(home), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["dest"] == str(dest / "r.txt")
    assert proc.stderr == ""


def test_refused_file_exits_1_and_says_which_rule(tree):
    home, dest = tree
    proc = cli("--local", str(home / "link"), "--dest", str(dest))
    assert proc.returncode == 1
    assert proc.stdout.startswith("refused ")
    assert "credential store .ssh" in proc.stdout


def test_strict_exits_1_without_needing_a_destination(tree):
    home, _dest = tree
    proc = cli("--local", str(home / "r.txt"), "--dest", "/nonexistent", "--strict")
    assert proc.returncode == 1
    assert "strict" in proc.stdout


@pytest.mark.parametrize(("args", "fragment"), [
    (["--dest", "/nonexistent"], "--dest /nonexistent: no such directory"),
    (["--remote-home", "/etc"], "--remote-home"),
    (["--max-bytes", "lots"], "--max-bytes"),
    (["--identity", "/k"], "--identity only applies to --ssh"),
    (["--remote-hermes-home", "opt/data"], "--remote-hermes-home"),
    (["--remote-hermes-home", "/"], "--remote-hermes-home"),
])
def test_bad_input_exits_2_with_one_line_naming_the_option(tree, args, fragment):
    home, dest = tree
    base = ["--local", str(home / "r.txt"), "--dest", str(dest)]
    proc = cli(*(base + args))
    assert proc.returncode == 2
    assert fragment in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_tilde_source_is_fetched_against_the_remote_home(tree):
    home, dest = tree
    proc = cli("--local", "~/r.txt", "--dest", str(dest), "--remote-home", str(home), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (dest / "r.txt").read_text() == "report\n"


def test_a_tilde_source_without_the_remote_home_exits_1_refused(tree):
    _home, dest = tree
    proc = cli("--local", "~/r.txt", "--dest", str(dest))
    assert proc.returncode == 1
    assert "not_absolute" in proc.stdout and "not known" in proc.stdout
    assert list(dest.iterdir()) == []


def test_a_store_of_the_remote_hermes_home_exits_1_refused(tree, tmp_path):
    home, dest = tree
    hermes = tmp_path / "opt" / "hermes"
    (hermes / "auth").mkdir(parents=True)
    (hermes / "auth" / "google_oauth.json").write_text("{}\n")
    proc = cli("--local", str(hermes / "auth" / "google_oauth.json"), "--dest", str(dest), "--remote-home", str(home),
               "--remote-hermes-home", str(hermes))
    assert proc.returncode == 1
    assert "auth/google_oauth.json" in proc.stdout
