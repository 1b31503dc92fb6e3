# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""docker_engine on the library's own client (issue 26): no Docker SDK, each engine on its own.

The fake engines of the issue's table (tests/fake_engine.py) beside a healthy one, each on
its own unix socket: survey and connect_engines report the bad engine by name and keep the
healthy engine's answer, within one deadline, whatever the bad one does.
"""
import ast
import builtins
import json
import os
import sys
import time

import pytest
from fake_engine import VERSION_DOC, FakeEngine, frame, http
from sandboxguard import docker_engine, fetch, transport_docker
from sandboxguard._core.engine_docs import checked_info, checked_inspect

LIB = os.path.join(os.path.dirname(__file__), "..", "..", "python", "src")
DOC = {"Id": "c1" * 32, "Name": "/box", "Config": {"Labels": {}}, "State": {"Running": False},
       "Mounts": [{"Type": "bind", "Source": "/srv/x", "Destination": "/workspace"}]}


@pytest.fixture
def no_sdk(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "docker" or name.startswith("docker."):
            raise ImportError("No module named 'docker'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "docker", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)


@pytest.fixture
def engines(tmp_path, monkeypatch):
    """A healthy engine and the issue's three bad ones, each on its own socket, as ``auto`` finds them."""
    made = {"healthy": FakeEngine(str(tmp_path / "healthy.sock"), "healthy", containers=[DOC]),
            "info-500": FakeEngine(str(tmp_path / "info500.sock"), "info-500"),
            "dribble": FakeEngine(str(tmp_path / "dribble.sock"), "dribble", dribble_s=0.3),
            "events-end": FakeEngine(str(tmp_path / "eventsend.sock"), "events-end")}
    for fake in made.values():
        fake.start()
    urls = [f.url for f in made.values()]
    monkeypatch.setattr(docker_engine, "engine_urls", lambda base_url=None, **kw: [base_url] if base_url else urls)
    yield made
    for fake in made.values():
        fake.stop()


def test_no_module_of_the_library_imports_the_docker_sdk():
    found = []
    for top, _dirs, names in os.walk(LIB):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(top, name)
                for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                    mods = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                        [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                    found += ["%s: %s" % (path, m) for m in mods if m == "docker" or m.startswith("docker.")]
    assert found == []


def test_connect_works_without_the_sdk_and_sdk_missing_stays_importable(no_sdk, tmp_path):
    assert issubclass(docker_engine.SDKMissing, docker_engine.EngineError)
    with FakeEngine(str(tmp_path / "e.sock"), "healthy") as fake:
        client = docker_engine.connect(fake.url, timeout=5)
        assert docker_engine.engine_info(client)["OSType"] == "linux"
        assert docker_engine.engine_kind(client) == ("docker", "20.10.24")


def test_an_unreachable_engine_is_one_engine_error_for_both(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", "unix://%s" % (tmp_path / "nonexistent.sock"))
    with pytest.raises(docker_engine.EngineError, match="cannot reach the engine at unix://") as engine:
        docker_engine.connect(timeout=2)
    with pytest.raises(fetch.FetchError) as transport:
        transport_docker.docker_client()
    assert str(transport.value) == str(engine.value)


def test_survey_reports_each_bad_engine_by_name_and_keeps_the_healthy_ones_answer(engines):
    started = time.monotonic()
    found = {e["url"]: e for e in docker_engine.survey(deadline=2.0)}
    assert time.monotonic() - started < 4.0  # in parallel: one deadline, not one per engine
    healthy = found[engines["healthy"].url]
    assert healthy["error"] is None and healthy["kind"] == "docker" and healthy["info"]["OSType"] == "linux"
    assert [c["Id"] for c in healthy["containers"]] == [DOC["Id"]]
    assert "HTTP 500" in found[engines["info-500"].url]["error"]
    assert found[engines["info-500"].url]["containers"] == [] and found[engines["info-500"].url]["info"] is None
    assert "deadline" in found[engines["dribble"].url]["error"]
    assert found[engines["events-end"].url]["error"] is None  # its /events is the watcher's business
    for entry in found.values():
        assert set(entry) >= {"name", "url", "kind", "version", "rootless_uid", "error", "info", "containers"}
        assert entry["error"] is None or "\n" not in entry["error"]
    report = docker_engine.report_of(list(found.values()))
    assert all(set(row) == {"name", "url", "kind", "error"} for row in report)


def test_survey_by_name_says_which_names_an_engine_does_not_know(engines):
    [entry] = docker_engine.survey(engines["healthy"].url, names=["box", "nope"])
    assert [c["Id"] for c in entry["containers"]] == [DOC["Id"]] and entry["missing"] == ["nope"]


def test_connect_engines_uses_the_engines_that_answer_within_one_timeout(engines):
    started = time.monotonic()
    group = docker_engine.connect_engines(timeout=2.0)
    assert time.monotonic() - started < 4.0
    assert {m.url for m in group.members} == {engines[k].url for k in ("healthy", "info-500", "events-end")}
    [skipped] = group.skipped
    assert skipped["url"] == engines["dribble"].url and "deadline" in skipped["reason"]
    rows = {row["url"]: row for row in group.report()}
    assert rows[engines["dribble"].url]["error"] and rows[engines["healthy"].url]["error"] is None


def test_a_failed_member_leaves_the_group_and_is_reported():
    group = docker_engine.Engines([docker_engine.Engine("docker", "unix:///d.sock", "d", "docker", None),
                                   docker_engine.Engine("podman", "unix:///p.sock", "p", "podman", None)])
    group.fail("podman", "HTTP 500\nforged")
    assert [name for name, _ in group] == ["docker"] and len(group) == 1
    assert [row["error"] for row in group.report()] == [None, "HTTP 500\\nforged"]
    assert any("podman" in w and "failed" in w for w in group.warnings)


def test_engine_names_come_from_where_the_socket_is_never_from_the_engine():
    assert docker_engine.url_name("unix:///var/run/docker.sock", "podman") == "podman"
    assert docker_engine.url_name("unix:///var/run/docker.sock") == "docker"
    assert docker_engine.url_name("unix:///run/podman/podman.sock") == "podman"
    assert docker_engine.url_name("unix:///run/user/1001/podman/podman.sock", "docker") == "podman-rootless-1001"
    assert docker_engine.url_name("tcp://10.0.0.1:2375") == "engine"


@pytest.mark.parametrize("event,expect", [
    ({"Action": ["die"], "Actor": "x"}, ("", None, {})),
    ({"Action": "die", "Actor": {"ID": 5, "Attributes": []}}, ("die", None, {})),
    ({"status": "stop", "id": "c2"}, ("stop", "c2", {})),
])
def test_event_fields_read_garbage_as_missing(event, expect):
    assert docker_engine.event_fields(event) == expect


# --- the container method's disposable container ------------------------------------------------

class Disposable:
    """A fake engine's answers for create, start, wait, logs, kill and remove."""

    def __init__(self, wait_s=0.0, out=b"", err=b""):
        self.wait_s, self.out, self.err = wait_s, out, err
        self.created, self.calls = None, []

    def __call__(self, request):
        endpoint = request.endpoint()
        self.calls.append((request.method, endpoint))
        if endpoint == "/version":
            return [http(200, VERSION_DOC)]
        if endpoint == "/_ping":
            return [http(200, b"OK", "text/plain")]
        if endpoint == "/containers/create":
            self.created = json.loads(request.body)
            return [http(201, {"Id": "d" * 64, "Warnings": []})]
        if endpoint.endswith("/wait"):
            return [self.wait_s, http(200, {"StatusCode": 3})]
        if endpoint.endswith("/logs"):
            body = frame(1, self.out[:4]) + frame(2, self.err) + frame(1, self.out[4:])
            return [http(200, body, "application/vnd.docker.multiplexed-stream")]
        return [http(204, b"")]


def test_run_disposable_creates_a_hardened_container_and_keeps_stdout_exact(tmp_path):
    fake = Disposable(out=b"\x00name\xff\nmore", err=b"oops\n")
    with FakeEngine(str(tmp_path / "e.sock"), responder=fake):
        client = docker_engine.connect("unix://%s" % (tmp_path / "e.sock"), timeout=5)
        result = docker_engine.run_disposable(client, "img", "echo", ["a", "b"], {"/srv/t": "/target"}, 10)
    config = fake.created
    host = config["HostConfig"]
    assert config["Cmd"] == ["-c", "echo", "sh", "a", "b"] and config["Entrypoint"] == ["/bin/sh"]
    assert host["CapDrop"] == ["ALL"] and host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Mounts"] == [{"Type": "bind", "Source": "/srv/t", "Target": "/target", "ReadOnly": False,
                               "BindOptions": {"NonRecursive": True}}]
    assert config["Labels"] == {"sandboxguard": "sweep"} and "LD_PRELOAD=" in config["Env"]
    assert result["stdout"] == b"\x00name\xff\nmore" and result["stderr"] == "oops\n"
    assert result["exit_code"] == 3 and result["timed_out"] is False
    assert ("DELETE", "/containers/" + "d" * 64) in fake.calls


def test_run_disposable_kills_and_removes_a_container_past_its_budget(tmp_path):
    fake = Disposable(wait_s=30.0)
    with FakeEngine(str(tmp_path / "e.sock"), responder=fake):
        client = docker_engine.connect("unix://%s" % (tmp_path / "e.sock"), timeout=5)
        started = time.monotonic()
        result = docker_engine.run_disposable(client, "img", "sleep 99", [], {}, 0.5)
    assert time.monotonic() - started < 3.0
    assert result["timed_out"] is True and result["exit_code"] is None
    assert ("POST", "/containers/%s/kill" % ("d" * 64)) in fake.calls
    assert ("DELETE", "/containers/" + "d" * 64) in fake.calls


# --- an engine's garbage is that engine's error ---------------------------------------------------

@pytest.mark.parametrize("doc", [
    {"Id": "g1", "Mounts": "zz"},
    {"Id": "g1", "Mounts": [5]},
    {"Id": "g1", "Mounts": [{"Type": "bind", "Source": 5, "Destination": "/w"}]},
    {"Id": "g1", "Mounts": [{"Type": "bind", "Source": "/srv/x\0/y", "Destination": "/w"}]},
    {"Id": "g1", "Mounts": [{"Type": "bind", "Source": "/srv/x", "Destination": "/w", "RW": "yes"}]},
    {"Id": "g1", "Config": "a"},
    {"Id": "g1", "Config": {"Labels": {"hermes-agent": 1}}},
    {"Id": "g1", "Name": 5},
    {"Id": "g1", "State": {"Status": ["x"]}},
    {"Id": 5},
    {"Id": ""},
    ["not", "an", "object"],
])
def test_an_inspect_document_the_scope_cannot_read_is_the_engines_error(doc):
    with pytest.raises(docker_engine.EngineError):
        checked_inspect(doc)


@pytest.mark.parametrize("info", [{"DockerRootDir": 5}, {"SecurityOptions": "name=rootless"}, {"OSType": ["linux"]},
                                  {"SecurityOptions": [{"name": "userns"}]}, "text"])
def test_an_info_the_facts_cannot_read_is_the_engines_error(info):
    with pytest.raises(docker_engine.EngineError):
        checked_info(info)


def test_a_well_formed_document_passes_as_it_is():
    assert checked_inspect(DOC) is DOC
    assert checked_info({"OSType": "linux", "SecurityOptions": ["name=seccomp"]})


def test_garbage_from_one_engine_leaves_the_others_sweep_alone(tmp_path):
    from sandboxguard import sweep

    home = tmp_path / "hermes"
    ws = home / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    good_doc = dict(DOC, Mounts=[{"Type": "bind", "Source": str(ws), "Destination": "/w", "RW": True}])
    good = FakeEngine(str(tmp_path / "good.sock"), "healthy", containers=[good_doc]).start()
    bad = FakeEngine(str(tmp_path / "bad.sock"), "healthy", containers=[{"Id": "g" * 64, "Mounts": "zz"}]).start()
    try:
        group = docker_engine.connect_engines(urls=[good.url, bad.url], timeout=5)
        info = sweep.mounts_info(group, [str(home)])
    finally:
        good.stop()
        bad.stop()
    rows = {row["url"]: row for row in info["engines"]}
    assert rows[good.url]["error"] is None and "Mounts is not what the Engine API sends" in rows[bad.url]["error"]
    assert [t["realpath"] for t in info["targets"]] == [str(ws)] and info["complete"] is False


def test_a_survey_entry_on_a_users_socket_is_rootless_whatever_its_info_claims():
    from sandboxguard._privileged import sandboxes

    claimed = sandboxes.engine_facts({"OSType": "linux", "SecurityOptions": ["name=userns"],
                                      "DockerRootDir": "/var/lib/docker/0.0"})
    facts = docker_engine.facts_for("podman-rootless-1001", "unix:///run/user/1001/podman/podman.sock", 1001, claimed)
    assert facts["rootless"] is True and "uid 1001" in facts["reason"]
    assert docker_engine.facts_for("docker", "unix:///var/run/docker.sock", None, claimed)["rootless"] is False
