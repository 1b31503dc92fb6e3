# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard scan|strip`: exit codes, --json, one-line errors, people's output."""
import base64
import json
import os
import subprocess
import sys

import pytest
from sandboxguard._core.text import from_result

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python", "src"))


def cli(*args):
    return subprocess.run([sys.executable, "-m", "sandboxguard_cli", *args], capture_output=True, text=True,
                          env=ENV, timeout=60, check=False)


@pytest.fixture
def sandbox(tmp_path):
    root = tmp_path / "sandbox"
    (root / "dist").mkdir(parents=True)
    tool = root / "dist" / "tool"
    tool.write_bytes(b"\x7fELF fake")
    os.chmod(tool, 0o4755)
    return root, tool


def test_scan_finds_and_exits_1_without_changing(sandbox):
    root, tool = sandbox
    result = cli("scan", str(root))
    assert result.returncode == 1
    assert "%s  mode 04755 -> 0755" % tool in result.stdout
    assert "found 1 setid" in result.stdout and "read-only scan, nothing changed" in result.stdout
    assert os.stat(tool).st_mode & 0o7777 == 0o4755


def test_strip_fixes_then_scan_is_clean(sandbox):
    root, tool = sandbox
    assert cli("strip", str(root)).returncode == 0
    assert os.stat(tool).st_mode & 0o7777 == 0o755
    clean = cli("scan", str(root))
    assert clean.returncode == 0 and "found 0 setid, 0 with capabilities" in clean.stdout


def test_json_prints_only_the_report(sandbox):
    root, tool = sandbox
    result = cli("scan", "--json", str(root))
    report = json.loads(result.stdout)
    assert result.returncode == 1 and result.stderr == ""
    assert report["files"][0]["path"] == str(tool)
    assert set(report) >= {"roots", "changed", "complete", "files", "counts", "pruned_mounts", "errors", "elapsed"}


@pytest.mark.parametrize("options", [[], ["--no-caps"], ["--no-setid"]])
def test_scan_json_is_read_only_with_a_schema_version(sandbox, options):
    root, tool = sandbox
    if "--no-setid" in options:
        set_caps(tool)
    result = cli("scan", "--json", *options, str(root))
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["counts"]["setid"] + report["counts"]["caps"] == 1
    assert report["changed"] is False and report["schema_version"] == 1


def set_caps(path):
    # vfs_cap_data revision 2, effective, permitted cap_net_raw: what `setcap cap_net_raw=ep` writes
    os.setxattr(path, "security.capability", b"\x01\x00\x00\x02" + (1 << 13).to_bytes(4, "little") + bytes(12))


def test_strip_dry_run_changes_nothing_says_would_change_and_exits_1(sandbox):
    root, tool = sandbox
    result = cli("strip", "--dry-run", "--json", str(root))
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert report["dry_run"] is True and report["changed"] is True  # changed: would change (check mode's rule)
    assert os.stat(tool).st_mode & 0o7777 == 0o4755
    human = cli("strip", "--dry-run", str(root))
    assert human.returncode == 1 and "changes needed, nothing changed (dry run)" in human.stdout


def test_strip_dry_run_of_a_clean_tree_exits_0(sandbox):
    root, tool = sandbox
    os.chmod(tool, 0o755)
    result = cli("strip", "--dry-run", str(root))
    assert result.returncode == 0 and "nothing to fix (dry run)" in result.stdout


def test_chown_to_returns_ownership(sandbox):
    root, tool = sandbox
    assert cli("strip", "--chown-to", "1000:1000", str(root)).returncode == 0
    assert (os.stat(tool).st_uid, os.stat(root).st_uid) == (1000, 1000)


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("owner,after", [("1000:1000", "1000:1000"), ("1000:0", "1000:0"), ("nobody", "nobody")])
def test_chown_to_lines_show_the_owner_after_the_change(sandbox, dry_run, owner, after):
    import pwd

    root, tool = sandbox
    if after == "nobody":  # a name alone: its uid and primary group (Debian's base-passwd has nobody)
        after = "%d:%d" % pwd.getpwnam("nobody")[2:4]
    os.chown(root / "dist", 0, 0)
    os.chown(tool, 0, 0)
    os.chmod(tool, 0o4755)
    result = cli("strip", "--chown-to", owner, *(["--dry-run"] if dry_run else []), str(root))
    assert result.returncode == (1 if dry_run else 0), result.stderr
    lines = dict(line.split("  ", 1) for line in result.stdout.splitlines() if "  " in line)
    assert lines[str(tool)].startswith("owner 0:0 -> %s, mode 04755 -> 0755" % after)
    assert lines[str(root / "dist")] == "owner 0:0 -> %s" % after
    report = json.loads(cli("strip", "--chown-to", owner, "--dry-run", "--json", str(root)).stdout)
    if not dry_run:  # already given back: nothing left to list
        assert report["files"] == []
        return
    for entry in report["files"]:
        assert "%d:%d" % (entry["uid_after"], entry["gid_after"]) == after



@pytest.mark.parametrize("args,words", [
    (["scan", "/"], "/: refusing a system directory"),
    (["scan", "/etc"], "/etc: refusing a system path"),
    (["strip", "relative"], "relative: relative path"),
    (["scan", "/nonexistent-sandbox"], "/nonexistent-sandbox: does not exist"),
    (["scan", "--budget", "soon", "/tmp"], "--budget must be a finite number of seconds, 0 (no limit) or more; not 'soon'"),  # noqa: E501
    (["strip", "--chown-to", "no-such-user-sgtest", "/tmp"], "--chown-to owner 'no-such-user-sgtest': no such user"),
    (["strip", "--chown-to", ":0", "/tmp"], "--chown-to ':0': name the user too"),
])
def test_bad_input_is_one_line_on_stderr_and_exit_2(args, words):
    result = cli(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and words in result.stderr
    assert "Traceback" not in result.stderr


def test_incomplete_walk_exits_1_and_says_so(tmp_path):
    root = tmp_path / "big"
    for d in range(100):
        sub = root / ("d%02d" % d)
        sub.mkdir(parents=True)
        for f in range(100):
            (sub / str(f)).touch()
    result = cli("scan", "--budget", "0.01", str(root))
    assert result.returncode == 1 and "INCOMPLETE" in result.stdout


def test_progress_goes_to_stderr_only_on_a_terminal(tmp_path):
    import pty

    root = tmp_path / "wide"
    for d in range(100):
        sub = root / ("d%03d" % d)
        sub.mkdir(parents=True)
        for f in range(100):
            (sub / str(f)).touch()
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "scan", "--budget", "0",
                               "--progress-interval", "0.001", str(root)],
                              stdout=subprocess.PIPE, stderr=follower, env=ENV, timeout=120, check=False)
        os.close(follower)
        follower = None
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO once the follower side is closed and drained
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
        if follower is not None:
            os.close(follower)
    err = b"".join(chunks).decode()
    assert proc.returncode == 0
    assert "dirs," in err and "files," in err  # at least one progress line
    assert "dirs," not in proc.stdout.decode().split("walked")[0]  # progress never on stdout
    piped = cli("scan", "--budget", "0", str(root))
    assert piped.stderr == ""  # not a terminal: no progress


# -- hostile names (issue 10 item 5) --------------------------------------------------------

HOSTILE = [b"bad-\xff\xfe", b"evil\nforged  mode 04755 -> 0755", b"esc\x1b[2Jclear", b"caf\xc3\xa9"]


@pytest.fixture
def hostile(tmp_path):
    root = tmp_path / "sandbox"
    root.mkdir()
    broot = os.fsencode(root)
    for name in HOSTILE:
        path = os.path.join(broot, name)
        with open(path, "wb") as handle:
            handle.write(b"x")
        os.chmod(path, 0o4755)
    os.mkdir(os.path.join(broot, b"dir-\xff"))
    return root


def cli_env(args, **env):
    return subprocess.run([sys.executable, "-m", "sandboxguard_cli", *args], capture_output=True,
                          env=dict(ENV, **env), timeout=60, check=False)


@pytest.mark.parametrize("command", ["scan", "strip"])
@pytest.mark.parametrize("env", [{"LC_ALL": "C.UTF-8"}, {"PYTHONIOENCODING": "ascii", "LC_ALL": "C"}],
                         ids=["utf8-locale", "ascii-stdout"])
def test_hostile_names_never_crash_or_forge_lines_in_human_output(hostile, command, env):
    result = cli_env([command, str(hostile)], **env)
    assert b"Traceback" not in result.stderr, result.stderr
    assert result.returncode == (1 if command == "scan" else 0), result.stderr
    lines = result.stdout.decode("ascii", "backslashreplace").splitlines()
    assert len(lines) == len(HOSTILE) + 1  # one line per finding and the summary
    assert all(line.startswith(str(hostile) + "/") or line.startswith(str(hostile) + ":") for line in lines), lines
    assert any("/bad-\\xff\\xfe  mode 04755" in line for line in lines)
    assert any("/evil\\nforged  mode 04755 -> 0755  mode 04755" in line for line in lines)
    assert any("/esc\\x1b[2Jclear" in line for line in lines)
    assert b"\x1b" not in result.stdout
    if command == "strip":
        assert all(os.stat(os.path.join(os.fsencode(hostile), n)).st_mode & 0o7777 == 0o755 for n in HOSTILE)


def test_json_is_strict_utf8_and_carries_every_name_losslessly(hostile):
    result = cli_env(["scan", "--json", str(hostile)], LC_ALL="C.UTF-8")
    result.stdout.decode("ascii")  # ensure_ascii
    assert b"\\ud8" not in result.stdout.lower() and b"\\udc" not in result.stdout.lower()  # no lone surrogate
    report = json.loads(result.stdout)
    bad = [e for e in report["files"] if "path_b64" in e]
    assert [e["path"].rsplit("/", 1)[1] for e in bad] == ["bad-\\xff\\xfe"]  # text.for_result
    assert base64.b64decode(bad[0]["path_b64"]) == os.fsencode(str(hostile)) + b"/bad-\xff\xfe"
    names = sorted(os.fsencode(e["path"]).rsplit(b"/", 1)[1] for e in from_result(report)["files"])
    assert names == sorted(HOSTILE)


def test_hostile_root_path_is_one_escaped_line_on_stderr(tmp_path):
    result = cli_env(["scan", os.fsencode(str(tmp_path)) + b"/no\nsuch-\xff"], LC_ALL="C.UTF-8")
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.count(b"\n") == 1 and b"no\\nsuch-\\xff: does not exist" in result.stderr


# -- bad option values (issue 10 item 6) ----------------------------------------------------

@pytest.mark.parametrize("args, option", [
    (["--budget", "inf"], "--budget"), (["--budget", "1e400"], "--budget"), (["--budget", "nan"], "--budget"),
    (["--budget", "-1"], "--budget"), (["--budget=-0.5"], "--budget"), (["--budget", "ten"], "--budget"),
    (["--chown-to", "99999999999:0"], "--chown-to"), (["--chown-to", "0:99999999999"], "--chown-to"),
    (["--chown-to", "4294967295"], "--chown-to"), (["--chown-to", "bob:staff"], "--chown-to"),
    (["--chown-to=-1:0"], "--chown-to"), (["--max-listed", "-1"], "--max-listed"),
    (["--max-listed", "many"], "--max-listed"), (["--progress-interval", "nan"], "--progress-interval"),
    (["--progress-interval", "inf"], "--progress-interval"),
])
def test_bad_option_values_exit_2_with_one_line_naming_the_option(sandbox, args, option):
    root, tool = sandbox
    result = cli("strip", *args, str(root))
    assert result.returncode == 2, result
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and option in result.stderr, result.stderr
    assert os.stat(tool).st_mode & 0o7777 == 0o4755


@pytest.mark.parametrize("args", [["--budget", "inf"], ["--budget", "nan"], ["--max-listed", "-3"]])
def test_bad_option_values_of_scan_exit_2(sandbox, args):
    result = cli("scan", *args, str(sandbox[0]))
    assert result.returncode == 2 and args[0] in result.stderr and len(result.stderr.strip().splitlines()) == 1
