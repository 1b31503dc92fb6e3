# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The crontab shim against the real thing: Debian's crontab from the `cron` package.

A throwaway user runs the same sequence of operations against /usr/bin/crontab and
against the installed shim (a standalone script run by /usr/bin/python3, as an eval run
would). Every step's stdout, stderr (user name normalised) and exit status must match.
The shim must leave /var/spool/cron exactly as it was.
"""
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import uuid

import pytest
from sandboxguard import crontab as ct

pytestmark = pytest.mark.root

REAL_CRONTAB = "/usr/bin/crontab"
SPOOL = "/var/spool/cron"
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# `crontab -e` names its temporary file in messages. The real one is setgid, so glibc
# drops TMPDIR and it always uses /tmp; the shim uses TMPDIR (a documented difference).
EDIT_DIR = re.compile(rb"(/[^\s\"]*)?/crontab\.[A-Za-z0-9]{6}/")


@pytest.fixture(scope="module")
def world():
    """A test user, a world-readable directory with the shim, and the user's table dir."""
    if os.geteuid() != 0:
        pytest.fail("the conformance tests create a user: run them as root")
    if not os.access(REAL_CRONTAB, os.X_OK):
        pytest.fail("%s is missing: apt-get install cron (listed in tools/apt-packages.txt)" % REAL_CRONTAB)
    name = "sgct" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True)
    top = tempfile.mkdtemp(prefix="sg-crontab-conf-", dir="/tmp")
    try:
        os.chmod(top, 0o755)
        entry = pwd.getpwnam(name)
        bin_dir = os.path.join(top, "bin")
        ct.install_shim(bin_dir, python="/usr/bin/python3")
        os.chmod(bin_dir, 0o755)
        work = os.path.join(top, "work")  # the user's cwd, files and edit temp dirs
        run_dir = os.path.join(top, "run")  # the shim's table lives here
        for path in (work, run_dir):
            os.mkdir(path)
            os.chown(path, entry.pw_uid, entry.pw_gid)
        yield {"user": name, "uid": entry.pw_uid, "gid": entry.pw_gid, "bin": bin_dir, "work": work,
               "table": os.path.join(run_dir, "crontab")}
    finally:
        subprocess.run([REAL_CRONTAB, "-u", name, "-r"], check=False, capture_output=True)
        subprocess.run(["userdel", name], check=False, capture_output=True)
        shutil.rmtree(top, ignore_errors=True)


def run_as(world, shim, argv, stdin=b"", env=None):
    """Run `crontab ARGV` as the test user; return (status, stdout, stderr) normalised."""
    environ = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "TMPDIR": world["work"]}
    if shim:
        environ["PATH"] = world["bin"] + ":" + SYSTEM_PATH
        environ["EVAL_CRONTAB_FILE"] = world["table"]
    environ.update(env or {})
    proc = subprocess.run(["crontab", *argv], input=stdin, capture_output=True, env=environ, cwd=world["work"],
                          user=world["uid"], group=world["gid"], extra_groups=[], timeout=60, check=False)

    def norm(data):
        data = data.replace(world["user"].encode(), b"USER")
        return EDIT_DIR.sub(b"TMPDIR/crontab.XXXXXX/", data)

    return proc.returncode, norm(proc.stdout), norm(proc.stderr)


def reset(world):
    subprocess.run([REAL_CRONTAB, "-u", world["user"], "-r"], capture_output=True, check=False)
    for base in ("/tmp", world["work"]):  # edits left behind ("crontab: edits left in ...")
        for name in os.listdir(base):
            path = os.path.join(base, name)
            if name.startswith("crontab.") and os.lstat(path).st_uid == world["uid"]:
                shutil.rmtree(path, ignore_errors=True)
    for name in os.listdir(os.path.dirname(world["table"])):
        os.unlink(os.path.join(os.path.dirname(world["table"]), name))


def write_user_file(world, name, data):
    path = os.path.join(world["work"], name)
    with open(path, "wb") as handle:
        handle.write(data)
    os.chown(path, world["uid"], world["gid"])
    return path


def compare(world, steps):
    """Run *steps* against both; return the list of (step, real, shim) that differ."""
    reset(world)
    differences = []
    for step in steps:
        argv, stdin = step[0], step[1] if len(step) > 1 else b""
        env = step[2] if len(step) > 2 else None
        real = run_as(world, False, argv, stdin, env)
        shim = run_as(world, True, argv, stdin, env)
        if real != shim:
            differences.append((argv, stdin, real, shim))
    reset(world)
    return differences


JOB = b"0 2 * * * /home/agent/.hermes/scripts/backup.sh\n"

SEQUENCES = {
    "list_on_empty": [(["-l"],)],
    "install_from_stdin_then_list": [(["-"], JOB), (["-l"],)],
    "no_argument_reads_stdin": [([], JOB), (["-l"],)],
    "install_from_file_then_list": [("FILE",), (["-l"],)],
    "install_from_missing_file_keeps_the_table": [(["-"], JOB), (["MISSING"],), (["-l"],)],
    "bad_syntax_is_refused_and_the_old_table_kept": [(["-"], JOB), (["-"], b"61 * * * * x\n"), (["-l"],)],
    "missing_newline_is_refused": [(["-"], b"* * * * * x"), (["-l"],)],
    "remove_twice": [(["-"], JOB), (["-r"],), (["-r"],), (["-l"],)],
    "dry_run_installs_nothing": [(["-n", "-"], JOB), (["-l"],), (["-n", "-"], b"bad\n"), (["-n"],)],
    "u_for_another_user_is_refused": [(["-u", "root", "-l"],), (["-u", "root", "-"], JOB), (["-l"],)],
    "u_for_self_is_allowed": [(["-"], JOB), (["-u", "USER", "-l"],), (["-u", "USER", "-r"],), (["-l"],)],
    "u_for_unknown_user": [(["-u", "no-such-user-sg", "-l"],)],
    "interactive_remove_answered_no": [(["-"], JOB), (["-i", "-r"], b"n\n"), (["-l"],)],
    "interactive_remove_answered_yes": [(["-"], JOB), (["-i", "-r"], b"y\n"), (["-l"],)],
    "interactive_remove_answered_badly_then_yes": [(["-"], JOB), (["-ir"], b"maybe\nY\n"), (["-l"],)],
    "interactive_remove_on_empty": [(["-i", "-r"], b"y\n")],
    "environment_and_comments_survive": [(["-"], b"# nightly\nMAILTO=\"\"\n@daily x\n# end"), (["-l"],)],
    "usage_errors": [(["-x"],), (["--help"],), (["-u"],), (["-l", "-r"],), (["-l", "extra"],), (["-h"],),
                     (["--", "-l"],)],
    "directory_argument": [(["/tmp"],)],
    "nul_in_a_command_is_refused_and_the_old_table_kept": [(["-"], JOB), (["-"], b"0 3 * * * a\0b\n"), (["-l"],)],
    "nul_in_a_variable_value_is_refused": [(["-"], b"MAILTO=x\0y\n" + JOB), (["-l"],)],
}


def expand(world, steps):
    out = []
    for step in steps:
        if step[0] == "FILE":
            out.append(([write_user_file(world, "jobs.txt", JOB)],))
        elif step[0] == ["MISSING"]:
            out.append(([os.path.join(world["work"], "no-such-file")],))
        else:
            argv = [world["user"] if a == "USER" else a for a in step[0]]
            out.append((argv, *step[1:]))
    return out


@pytest.mark.parametrize("sequence", sorted(SEQUENCES))
def test_shim_matches_the_real_crontab(world, sequence):
    assert compare(world, expand(world, SEQUENCES[sequence])) == []


SYNTAX_CASES = [
    b"* * * * * x\n", b"bad line\n", b"bad\n", b"@daily x\n@reboot y\n@bogus z\n", b"@DAILY x\n",
    b"5-64/30 * * * * x\n", b"1/20 * * * * x\n", b"*/0 * * * * x\n", b"* * * jan,Feb * x\n",
    b"* * * * mon-fri x\n", b"* * * * sun-7 x\n", b"* * * * 8 x\n", b"* * 0 * * x\n", b"* 24 * * * x\n",
    b"* * * 13 * x\n", b"* * * * * * x\n", b"@daily\n", b"* * * * *\n", b"   \n\t\n# x\n  # y\n",
    b'A = "b c" \n', b'"A B"=c\n', b'A="b\n', b"'A=b'\n", b"A\n", b"*/5,1-3 1,2 */2 * * x\n",
    b"* * * * * x\r\n", b"1 2 3\n", b"1 2 3 4 5\n", b"\n\n\nbad\n", b"@ daily x\n", b"* * * * *x\n",
    b"1-5/2-3 * * * * x\n", b"5-1 * * * * x\n", b",1 * * * * x\n", b"1, * * * * x\n",
    b"  * * * * * indented\n", b"* * * * * a\nb", b"\x01 * * * * x\n", b"# only a comment",
    b"* * * * * " + b"x" * 998 + b"\n", b"* * * * * " + b"x" * 999 + b"\n", b"0x10 * * * * x\n",
    b"00 00 01 01 00 x\n", b"* * * * Sun,sat x\n", b"* * * JAN-dec * x\n", b"* * * 1-jun * x\n",
    b"@hourly\tx\n", b"FOO=bar baz\n", b"=x\n", b"A=\n", b"* * * * * x\n" * 10001,
    # a NUL ends the reader's string; the rest of the line is read as the next entry
    b"0 1 * * * echo a\0b\n", b"0 1 * * * echo ok\n0 2 * * * echo a\0b\n", b"X=a\0b\n0 1 * * * true\n",
    b"0 1 * * * true\nX=a\0b\n", b"@daily\0 x\n", b"0 1 * * * a\0\0\0b\n", b"X='a\0b'\n", b"X=\0\n",
    b"\0\n", b"0 1 * * * a\0\n", b"0 1 * * * a\0", b"# c\0x\n0 1 * * * true\n", b"0\0 1 * * * true\n",
    b'A="b\0c"\n* * * * * x\n', b"0 1 * * * a\0* * * * * y\n", b"@dai\0ly x\n",
]


@pytest.mark.parametrize("table", SYNTAX_CASES, ids=lambda t: repr(t[:40]))
def test_syntax_check_matches_the_real_crontab(world, table):
    assert compare(world, [(["-n", "-"], table)]) == []


@pytest.mark.slow
def test_edit_sequences_match_the_real_crontab(world):
    editor = write_user_file(world, "ed.sh", b'#!/bin/sh\nsleep 1.1\nprintf "%b" "$EDLINE" >> "$1"\n')
    os.chmod(editor, 0o755)
    same = write_user_file(world, "same.sh", b"#!/bin/sh\nexit ${EDRC:-0}\n")
    os.chmod(same, 0o755)
    steps = [
        (["-e"], b"", {"EDITOR": same}),
        (["-e"], b"", {"EDITOR": same, "EDRC": "3"}),
        (["-e"], b"", {"EDITOR": editor, "EDLINE": "* * * * * e\\n"}),
        (["-l"],),
        (["-e"], b"n\n", {"EDITOR": editor, "EDLINE": "bad\\n"}),
        (["-e"], b"x\nn\n", {"EDITOR": editor, "EDLINE": "bad\\n"}),
        (["-e"], b"", {"VISUAL": editor, "EDITOR": "/bin/false", "EDLINE": "1 * * * * f\\n"}),
        (["-n", "-e"], b"", {"EDITOR": editor, "EDLINE": "2 * * * * g\\n"}),
        (["-l"],),
    ]
    assert compare(world, steps) == []


@pytest.mark.slow
def test_edit_keeps_its_temporary_file_under_tmpdir_unlike_the_real_one(world):
    editor = write_user_file(world, "bad.sh", b'#!/bin/sh\nsleep 1.1\necho bad >> "$1"\n')
    os.chmod(editor, 0o755)
    reset(world)
    shim = run_as(world, True, ["-e"], b"n\n", {"EDITOR": editor})
    real = run_as(world, False, ["-e"], b"n\n", {"EDITOR": editor})
    assert shim == real
    left = [n for n in os.listdir(world["work"]) if n.startswith("crontab.")]
    assert len(left) == 1
    assert [n for n in os.listdir("/tmp") if n.startswith("crontab.")
            and os.lstat(os.path.join("/tmp", n)).st_uid == world["uid"]] != []
    reset(world)


def spool_snapshot():
    snapshot = {}
    for dirpath, dirnames, filenames in os.walk(SPOOL):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            snapshot[path] = (info.st_mode, info.st_size, info.st_mtime_ns)
        snapshot[dirpath] = (os.lstat(dirpath).st_mode, os.lstat(dirpath).st_mtime_ns)
    return snapshot


def test_shim_never_touches_the_spool(world):
    reset(world)
    before = spool_snapshot()
    for argv, stdin in ((["-"], JOB), (["-l"], b""), ([], JOB), (["-i", "-r"], b"y\n"), (["-r"], b""),
                        (["-n", "-"], JOB), (["-"], b"bad\n")):
        run_as(world, True, argv, stdin)
    run_as(world, True, ["-"], JOB)
    assert spool_snapshot() == before
    assert not os.path.exists(os.path.join(SPOOL, "crontabs", world["user"]))
    assert run_as(world, False, ["-l"]) == (1, b"", b"no crontab for USER\n")
    assert os.path.exists(world["table"])
    reset(world)
