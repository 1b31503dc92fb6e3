# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Every subcommand's --json (and every line of watch and guard --json) against the CLI's JSON
schema, docs/schemas/cli-envelope.schema.json: schema_version everywhere, `changed` false for
what only reads, and the exit code the README states."""
import argparse
import base64
import json
import os
import queue
import select
import shutil
import stat
import subprocess
import sys
import threading
import time

import pytest

pytestmark = [pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python", "src"))
SCHEMA = os.path.join(TOP, "docs", "schemas", "cli-envelope.schema.json")
IMAGE = "sandboxguard/debian:12"
SEEN = {}  # command -> documents validated, for the coverage test at the end


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "sandboxguard_cli", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout, check=False)


def valid(validator, command, doc):
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "%s: %s" % (command, "; ".join("%s: %s" % (list(e.path), e.message) for e in errors[:5]))
    assert doc["schema_version"] == 1
    SEEN.setdefault(command, []).append(doc)
    return doc


def run_json(validator, command, *args, code=None):
    proc = cli(*command.split(), *args)
    assert proc.stdout.count("\n") >= 1, proc.stderr
    doc = valid(validator, command, json.loads(proc.stdout))
    if code is not None:
        assert proc.returncode == code, (command, proc.returncode, proc.stderr)
    return doc, proc


def plant(path, mode=0o4755, uid=0):
    path.write_bytes(b"\x7fELF fake")
    os.chown(path, uid, uid)
    os.chmod(path, mode)
    return path


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "sandbox"
    (root / "dist").mkdir(parents=True)
    plant(root / "dist" / "tool")
    plant(root / "dist" / ("odd-\udcff-name".encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")))
    return root


def test_scan_is_read_only_and_exits_1_on_findings(validator, tree):
    os.mknod(str(tree / "dist" / "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    doc, _proc = run_json(validator, "scan", "--json", str(tree), code=1)
    assert doc["changed"] is False and doc["counts"]["setid"] == 2
    assert [f["type"] for f in doc["files"] if "device" in f["actions"]] == ["character device"]
    odd = [f for f in doc["files"] if "path_b64" in f]
    assert len(odd) == 1 and base64.b64decode(odd[0]["path_b64"]).endswith(b"odd-\xff-name")


def test_strip_dry_run_would_change_and_strip_changes(validator, tree):
    dry, _proc = run_json(validator, "strip", "--dry-run", "--json", "--chown-to", "1000:1000", str(tree), code=1)
    assert dry["changed"] is True and dry["dry_run"] is True
    assert {(f["uid_after"], f["gid_after"]) for f in dry["files"]} == {(1000, 1000)}
    done, _proc = run_json(validator, "strip", "--json", str(tree), code=0)
    assert done["changed"] is True and done["dry_run"] is False
    again, _proc = run_json(validator, "scan", "--json", str(tree), code=0)
    assert again["changed"] is False and again["files"] == []


def test_leaks_home_env_and_bwrap_probe_are_read_only(validator, tmp_path):
    doc, _proc = run_json(validator, "leaks", "--user", "nobody", "--json")
    assert doc["changed"] is False
    home = tmp_path / "hermes"
    home.mkdir()
    doc, _proc = run_json(validator, "home-env", "--hermes-home", str(home), "--json")
    assert doc["changed"] is False
    doc, proc = run_json(validator, "bwrap-probe", "--user", "nobody", "--json", "--timeout", "10")
    assert doc["changed"] is False and proc.returncode == (0 if doc["ok"] else 1)


def test_fetch_report_merge_and_runner_cleanup(validator, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "r.txt").write_text("report\n")
    dest = tmp_path / "dest"
    dest.mkdir()
    doc, _proc = run_json(validator, "fetch", "--local", str(home / "r.txt"), "--dest", str(dest), "--remote-home",
                          str(home), "--json", code=0)
    assert doc["changed"] is True

    sys.path.insert(0, os.path.join(TOP, "python", "src"))
    from sandboxguard._fleet import audit_report as ar

    checks = {name: {"status": "clean", "findings": [], "reason": None} for name in ar.CHECKS}
    ar.write_reports(ar.fleet_report({"web-1": ar.host_record(checks)}), str(tmp_path / "slice"))
    doc, _proc = run_json(validator, "report merge", "--out", str(tmp_path / "merged"), "--json",
                          str(tmp_path / "slice"), code=0)

    runner = tmp_path.parent / ("runner-%d" % os.getpid())  # tmp_path's parents are 0700: the runner user
    shutil.rmtree(runner, ignore_errors=True)
    runner = _runner(runner)
    try:
        doc, _proc = run_json(validator, "runner-cleanup", str(runner), "--dry-run", "--json", code=1)
        assert doc["changed"] is True and doc["dry_run"] is True
    finally:
        shutil.rmtree(runner, ignore_errors=True)


def _runner(path):
    """A GitHub runner's directory (nobody's) whose work folder holds a root-owned setuid file."""
    base = "/var/tmp/sandboxguard-envelope-%d" % os.getpid()
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base + "/_work/repo")
    os.chmod(base, 0o755)
    with open(base + "/.runner", "wb") as handle:
        handle.write(b'\xef\xbb\xbf{"workFolder": "_work"}')
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), 65534, 65534)
    os.chown(base, 65534, 65534)
    plant(__import__("pathlib").Path(base) / "_work" / "repo" / "x")
    return base


@pytest.mark.docker
def test_sweep_and_watch(validator, tmp_path):
    hermes = tmp_path / "hermes"
    ws = hermes / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    for path in (hermes, hermes / "sandboxes", hermes / "sandboxes" / "docker", ws.parent, ws):
        os.chown(path, 1000, 1000)
    plant(ws / "suid")
    doc, _proc = run_json(validator, "sweep", "--hermes-home", str(hermes), "--dry-run", "--json", code=1)
    assert doc["changed"] is True and doc["covers"]["task_dirs"] == 1
    doc, _proc = run_json(validator, "sweep", "--hermes-home", str(hermes), "--json", code=0)
    assert doc["changed"] is True
    watcher = subprocess.Popen([sys.executable, "-m", "sandboxguard_cli", "watch", "--hermes-home", str(hermes)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in watcher.stdout], daemon=True).start()
    try:
        first = valid(validator, "watch", json.loads(lines.get(timeout=60)))
        assert first["event"] == "watching"
        import docker  # the SDK, for the container whose death the watcher sweeps after

        container = docker.from_env().containers.run(
            IMAGE, ["sh", "-c", "cp /bin/true /workspace/s && chmod 4755 /workspace/s"], detach=True,
            network_mode="none", auto_remove=True, volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            event = valid(validator, "watch", json.loads(lines.get(timeout=60)))
            if event.get("id") == container.id[:12]:
                break
        assert event.get("id") == container.id[:12] and event["changed"] is True
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)


def test_sweep_json_without_an_engine_is_an_incomplete_envelope(validator, tmp_path):
    doc, proc = run_json(validator, "sweep", "--json", "--docker-host", "unix://%s/none.sock" % tmp_path, code=1)
    assert doc["complete"] is False and doc["changed"] is False
    assert [e["op"] for e in doc["errors"]] == ["engine"] and "none.sock" in doc["errors"][0]["error"]
    assert proc.stderr.startswith("sandboxguard sweep: ")


@pytest.mark.docker
def test_seccomp_profile_check_and_seccomp_probe(validator, tmp_path):
    """seccomp-profile prints the profile itself (a file to hand the engine, not an envelope);
    its --check --json and seccomp-probe --json are envelopes."""
    made = cli("seccomp-profile", "--image", IMAGE)
    assert made.returncode == 0, made.stderr
    profile = tmp_path / "seccomp.json"
    profile.write_text(made.stdout)
    doc, _proc = run_json(validator, "seccomp-profile", "--image", IMAGE, "--check", str(profile), "--json", code=0)
    assert doc["changed"] is False
    doc, proc = run_json(validator, "seccomp-probe", "--image", IMAGE, "--mode", "daemon", "--no-reference", "--json")
    assert doc["changed"] is False and proc.returncode == (0 if doc["ok"] else 1)


def test_guard_lines(validator, tmp_path):
    root = tmp_path / "sandboxes" / "docker"
    root.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-m", "sandboxguard_cli", "guard", str(root), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    try:
        plant(root / "early")  # fixed by the start sweep or by its event, whichever comes first
        data, limit = b"", time.monotonic() + 20
        while b"\n" not in data and time.monotonic() < limit:
            if select.select([proc.stdout], [], [], 0.2)[0]:
                data += os.read(proc.stdout.fileno(), 65536)
        proc.terminate()
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    record = valid(validator, "guard", json.loads(data.decode().splitlines()[0]))
    assert record["path"] == str(root / "early")


def test_the_schema_refuses_what_the_cli_must_not_print(validator):
    good = {"schema_version": 1, "roots": [], "changed": False, "complete": True, "errors": [], "warnings": [],
            "counts": {}, "elapsed": 0.0}
    assert not list(validator.iter_errors(good))
    for broken in ({k: v for k, v in good.items() if k != "schema_version"}, dict(good, schema_version=2),
                   dict(good, changed="false"), dict(good, errors=[{"path": "/x"}]),
                   dict(good, files=[{"path": "/x"}]), {"schema_version": 1}):
        assert list(validator.iter_errors(broken)), broken


def test_every_command_with_json_was_validated(request):
    """Runs last in this file: the commands above cover every --json of the parser."""
    mine = {item.name for item in request.session.items if item.fspath == request.node.fspath}
    ours = {name for name in globals() if name.startswith("test_")}
    if not ours <= {name.split("[")[0] for name in mine}:
        pytest.skip("only part of this file was selected: run it whole to check the coverage")
    sys.path.insert(0, os.path.join(TOP, "python", "src"))
    from sandboxguard_cli import main

    def commands(parser, prefix=()):
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        for name, child in (sub.choices.items() if sub else ()):
            words = (*prefix, name)
            yield words, child
            yield from commands(child, words)

    with_json = {" ".join(words) for words, child in commands(main.build_parser(["--help"]))
                 if any("--json" in a.option_strings for a in child._actions)}
    missing = (with_json | {"watch"}) - set(SEEN)
    assert not missing, "not validated against the schema: %s" % sorted(missing)
