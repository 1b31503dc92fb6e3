# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""sweep.watch and sweep.sweep without the CLI and without an engine: a fake engine object.

The fake has the small interface the library uses (docker_engine's engine_info,
inspect_containers, inspect_container, container_events, run_disposable); the real engine
runs in tests/integration/test_sweep*.py.
"""
import os
import stat

import pytest
from sandboxguard import docker_engine, report, staging, sweep

AGENT = (1000, 1000)


class FakeEngine:
    """docker_engine's interface over a list of events and a dict of inspect documents."""

    def __init__(self, docs, events, live=()):
        self.docs, self.events, self.live = docs, events, live
        self.disposable = []

    def engine_info(self, client):
        return {"OSType": "linux", "SecurityOptions": ["name=seccomp"]}

    def inspect_containers(self, client, names=None, include_stopped=True):
        return [self.docs[cid] for cid in (names or self.live)]

    def inspect_container(self, client, name):
        if name not in self.docs:
            raise docker_engine.EngineError("container %s: 404 no such container" % name)
        return self.docs[name]

    def container_events(self, client, since=None):
        for event in self.events:
            if isinstance(event, Exception):
                raise event
            yield event

    def run_disposable(self, client, image, script, args, binds, timeout, user="0:0"):
        self.disposable.append((image, args, binds))
        [target] = binds
        found = sorted(os.path.join(d, f) for d, _, fs in os.walk(target) for f in fs
                       if os.lstat(os.path.join(d, f)).st_mode & 0o6000)
        printed = b"".join(os.fsencode(sweep.CONTAINER_TARGET + p[len(target):]) + b"\0" for p in found)
        stdout = " ".join("%02x" % byte for byte in printed).encode()  # what od -An -tx1 prints
        return {"exit_code": 0, "timed_out": False, "output": stdout.decode(), "stdout": stdout, "stderr": ""}


def _doc(cid, source):
    return {"Id": cid, "Name": "/" + cid, "Config": {"Image": "img", "Labels": {}}, "State": {"Status": "exited"},
            "Mounts": [{"Type": "bind", "Source": source, "Destination": "/workspace", "RW": True}]}


@pytest.fixture
def sandbox(tmp_path):
    """A HERMES_HOME with one task's workspace holding a setuid root file the agent left."""
    home = tmp_path / "hermes"
    sandbox_dir = home / "sandboxes"
    ws = sandbox_dir / "docker" / "task1" / "workspace"
    ws.mkdir(parents=True)
    os.chown(str(sandbox_dir), *AGENT)
    tool = ws / "tool"
    tool.write_bytes(b"x")
    os.chown(str(tool), 0, 0)
    os.chmod(str(tool), 0o4755)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_bytes(b"x")
    os.chmod(str(outside / "keep"), 0o4755)
    return {"home": str(home), "ws": str(ws), "tool": str(tool), "outside": str(outside)}


def _run_watch(engine, sandbox, **kwargs):
    events = []
    sweep.watch(None, [sandbox["home"]], engine=engine, emit=events.append, since=0, **kwargs)
    return events


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership return needs root")
def test_watch_sweeps_a_container_when_it_dies_without_the_cli_or_an_engine(sandbox):
    engine = FakeEngine({"c1": _doc("c1", sandbox["ws"])},
                        [{"Action": "start", "id": "c1"}, {"Action": "die", "id": "c1"}])
    events = _run_watch(engine, sandbox)
    assert events[0]["event"] == "watching" and events[0]["roots"] == [
        os.path.realpath(os.path.join(sandbox["home"], "sandboxes", "docker"))]
    [swept] = [e for e in events if e["event"] == "die"]
    assert swept["swept"] == [sandbox["ws"]] and swept["changed"] is True and swept["warnings"] == []
    st = os.lstat(sandbox["tool"])
    assert stat.S_IMODE(st.st_mode) == 0o755 and (st.st_uid, st.st_gid) == AGENT
    for key in report.ENVELOPE_KEYS:
        assert key in swept["report"]


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership return needs root")
def test_watch_ignores_its_own_strip_containers_and_events_that_are_not_stop_or_die(sandbox):
    engine = FakeEngine({"c1": _doc("c1", sandbox["ws"])}, [
        {"Action": "die", "id": "c1", "Actor": {"Attributes": {"sandboxguard": "sweep"}}},
        {"Action": "pause", "id": "c1"}, {"Action": "create", "id": "c1"}])
    events = _run_watch(engine, sandbox)
    assert [e["event"] for e in events] == ["watching"]
    assert stat.S_IMODE(os.lstat(sandbox["tool"]).st_mode) == 0o4755


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership return needs root")
def test_watch_sweeps_every_task_dir_when_a_dead_container_cannot_be_inspected(sandbox):
    engine = FakeEngine({}, [{"Action": "die", "id": "gone-rm-container"}])
    events = _run_watch(engine, sandbox)
    assert [e["event"] for e in events] == ["watching", "unknown-container", "die"]
    assert "404" in events[1]["error"]
    assert events[2]["swept"] == [sandbox["ws"]]
    assert stat.S_IMODE(os.lstat(sandbox["tool"]).st_mode) == 0o755


def test_watch_never_widens_scope_from_a_mount_the_container_names(sandbox):
    engine = FakeEngine({"c1": _doc("c1", sandbox["outside"])},
                        [{"Action": "start", "id": "c1"}, {"Action": "stop", "id": "c1"}])
    events = _run_watch(engine, sandbox)
    assert [e["event"] for e in events] == ["watching"]
    assert stat.S_IMODE(os.lstat(os.path.join(sandbox["outside"], "keep")).st_mode) == 0o4755


def test_watch_reports_a_lost_event_stream_as_an_engine_error(sandbox):
    engine = FakeEngine({}, [ConnectionError("connection reset by peer")])
    with pytest.raises(docker_engine.EngineError, match="lost the engine's event stream: connection reset"):
        _run_watch(engine, sandbox)


def test_watch_refuses_the_container_method_without_an_image(sandbox):
    with pytest.raises(ValueError, match="needs an image"):
        _run_watch(FakeEngine({}, []), sandbox, method="container")


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership return needs root")
def test_both_methods_report_the_same_envelope_and_file_dicts_and_dry_run_changed_means_would_change(sandbox):
    engine = FakeEngine({"c1": _doc("c1", sandbox["ws"])}, [])
    native = sweep.sweep(None, [sandbox["home"]], names=["c1"], dry_run=True, engine=engine)
    container = sweep.sweep(None, [sandbox["home"]], names=["c1"], dry_run=True, method="container",
                            image="busybox", engine=engine)
    for result in (native, container):
        assert result["roots"] == [os.path.realpath(os.path.join(sandbox["home"], "sandboxes", "docker"))]
        assert all(isinstance(r, str) for r in result["roots"])
        assert result["root_sources"][0]["realpath"] == result["roots"][0]
        assert result["changed"] is True and result["dry_run"] is True and result["complete"] is True
        assert result["errors"] == [] and result["counts"]["sandboxes"] == 1
        [entry] = result["sandboxes"]
        setid = next(s for s in entry["steps"] if s["step"] == "setid")
        assert setid["changed"] is True and setid["errors"] == []
        [listed] = setid["report"]["files"]
        assert set(listed) >= {"path", "type", "mode_before", "mode_after", "caps_before", "uid", "gid", "nlink",
                               "actions"}
        assert listed["path"] == sandbox["tool"]
        for key in report.ENVELOPE_KEYS:
            assert key in setid["report"] and key in result
    assert stat.S_IMODE(os.lstat(sandbox["tool"]).st_mode) == 0o4755  # dry run changed nothing


def test_a_container_step_that_fails_reports_path_op_error(sandbox):
    class Failing(FakeEngine):
        def run_disposable(self, client, image, script, args, binds, timeout, user="0:0"):
            return {"exit_code": 3, "timed_out": False, "output": "find: permission denied\n", "stdout": b"",
                    "stderr": "find: permission denied\n"}

    engine = Failing({"c1": _doc("c1", sandbox["ws"])}, [])
    result = sweep.sweep(None, [sandbox["home"]], names=["c1"], method="container", image="busybox",
                         engine=engine, chown=False)
    assert result["complete"] is False
    assert {"path": sandbox["ws"], "op": "setid", "error": "step setid exited 3: find: permission denied"} in \
        result["errors"]
    [warning] = result["warnings"]
    assert sandbox["ws"] in warning and "not swept completely" in warning


def test_a_container_that_cannot_start_is_an_error_counted_in_the_sweep(sandbox):
    class Broken(FakeEngine):
        def run_disposable(self, client, image, script, args, binds, timeout, user="0:0"):
            raise RuntimeError("no such image: busybox")

    engine = Broken({"c1": _doc("c1", sandbox["ws"])}, [])
    result = sweep.sweep(None, [sandbox["home"]], names=["c1"], method="container", image="busybox",
                         engine=engine, chown=False)
    assert result["complete"] is False and result["counts"]["errors"] == 2  # setid and caps
    assert [e["op"] for e in result["errors"]] == ["setid", "caps"]
    assert all(e["error"] == "could not run the strip container: no such image: busybox" for e in result["errors"])
    assert report.has_problems(result)


@pytest.mark.skipif(os.geteuid() != 0, reason="the staging bind needs root")
def test_the_container_method_never_hands_the_engine_the_agents_path(sandbox):
    engine = FakeEngine({"c1": _doc("c1", sandbox["ws"])}, [])
    result = sweep.sweep(None, [sandbox["home"]], names=["c1"], dry_run=True, method="container", image="busybox",
                         engine=engine)
    assert result["changed"] is True  # it found the setuid file through the staging bind
    sources = [next(iter(binds)) for _image, _args, binds in engine.disposable]
    assert sources and all(s.startswith(staging.STAGING_DIR + "/") for s in sources), sources
    assert all(args[0] == str(os.stat(sandbox["ws"]).st_ino) for _image, args, _binds in engine.disposable)
    assert not any(os.path.exists(s) for s in sources)  # unmounted and removed after the steps


def test_found_paths_are_the_nul_terminated_names_under_the_target_exactly():
    printed = b"/sweep/target/a\n b\0/sweep/target/bad\xff\0/sweep/target\0/sweep/targetx/no\0junk\0"
    rows = [printed[i:i + 16] for i in range(0, len(printed), 16)]
    dump = b"\n".join(b" " + b" ".join(b"%02x" % byte for byte in row) for row in rows)
    assert sweep.found_paths(dump, "/srv/t") == ["/srv/t/a\n b", os.fsdecode(b"/srv/t/bad\xff"), "/srv/t"]
