# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""sweep.watch and sweep.sweep without the CLI and without an engine: a fake engine object.

The fake has the small interface the library uses (docker_engine's engine_info,
inspect_containers, inspect_container, container_events, run_disposable); the real engine
runs in tests/integration/test_sweep*.py.
"""
import os
import stat
import threading

import pytest
from sandboxguard import docker_engine, report, sweep
from sandboxguard._core.engine_api import NotFound
from sandboxguard._privileged import sandboxes, staging
from sandboxguard._privileged.sweep_steps import CONTAINER_TARGET, found_paths

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
            raise NotFound("container %s: 404 no such container" % name, 404)
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
        printed = b"".join(os.fsencode(CONTAINER_TARGET + p[len(target):]) + b"\0" for p in found)
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
    """watch() until its engine's stream has ended (every event handed on before it): the
    events it emitted but that ``engine-lost`` (the watcher itself goes on until stopped)."""
    events, stop = [], threading.Event()

    def emit(event):
        if event["event"] == "engine-lost":
            stop.set()
            return
        events.append(event)

    sweep.watch(None, [sandbox["home"]], engine=engine, emit=emit, since=0, stop=stop, **kwargs)
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


def test_watch_reports_a_lost_event_stream_as_that_engines_error_and_goes_on(sandbox):
    engine = FakeEngine({}, [ConnectionError("connection reset by peer")])
    events, stop = [], threading.Event()

    def emit(event):
        events.append(event)
        if event["event"] == "engine-lost":
            stop.set()

    sweep.watch(None, [sandbox["home"]], engine=engine, emit=emit, since=0, stop=stop)
    [lost] = [e for e in events if e["event"] == "engine-lost"]
    assert lost["engine"] == "docker" and "connection reset by peer" in lost["error"] and lost["retry_in"] > 0


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
    assert found_paths(dump, "/srv/t") == ["/srv/t/a\n b", os.fsdecode(b"/srv/t/bad\xff"), "/srv/t"]


# The same death in the shapes engines send (issue 21): Docker before Engine 29 (status, id and
# from at the top, plus Type/Action/Actor), Docker Engine 29 / API 1.52 (only Type, Action and
# Actor), Podman's compat stream (die) and its native events (died).
EVENT_SHAPES = {
    "old": [{"status": "start", "id": "c1", "from": "img", "Type": "container", "Action": "start",
             "Actor": {"ID": "c1", "Attributes": {"image": "img"}}},
            {"status": "die", "id": "c1", "from": "img", "Type": "container", "Action": "die",
             "Actor": {"ID": "c1", "Attributes": {"image": "img", "exitCode": "0"}}}],
    "engine29": [{"Type": "container", "Action": "start", "Actor": {"ID": "c1", "Attributes": {"image": "img"}},
                  "scope": "local", "time": 1, "timeNano": 1},
                 {"Type": "container", "Action": "die", "Actor": {"ID": "c1", "Attributes": {"exitCode": "0"}},
                  "scope": "local", "time": 2, "timeNano": 2}],
    "podman-native": [{"Type": "container", "Action": "start", "Actor": {"ID": "c1", "Attributes": {}}},
                      {"Type": "container", "Action": "died", "Actor": {"ID": "c1", "Attributes": {}}}],
}


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership return needs root")
@pytest.mark.parametrize("shape", sorted(EVENT_SHAPES))
def test_watch_sweeps_on_every_event_shape_docker_29_included(sandbox, shape):
    engine = FakeEngine({"c1": _doc("c1", sandbox["ws"])}, EVENT_SHAPES[shape])
    events = _run_watch(engine, sandbox)
    [swept] = [e for e in events if e["event"] == "die"]
    assert swept["id"] == "c1" and swept["swept"] == [sandbox["ws"]] and swept["changed"] is True
    assert stat.S_IMODE(os.lstat(sandbox["tool"]).st_mode) == 0o755


def test_event_fields_read_actor_id_and_action_first():
    assert docker_engine.event_fields(EVENT_SHAPES["engine29"][1]) == ("die", "c1", {"exitCode": "0"})
    assert docker_engine.event_fields(EVENT_SHAPES["old"][1])[:2] == ("die", "c1")
    assert docker_engine.event_fields({"status": "stop", "id": "c2"}) == ("stop", "c2", {})  # before API 1.22
    assert docker_engine.event_fields(EVENT_SHAPES["podman-native"][1])[0] == "die"


class TwoEngines(FakeEngine):
    """Two engines behind one fake: the client is the engine's name, docs and events per engine."""

    def __init__(self, per_engine):
        super().__init__({}, [])
        self.per_engine = per_engine  # name -> (docs, events)

    def engine_info(self, client):
        return {"OSType": "linux", "SecurityOptions": ["name=seccomp"] + (
            ["name=rootless"] if client == "rootless" else [])}

    def inspect_containers(self, client, names=None, include_stopped=True):
        docs = self.per_engine[client][0]
        return [docs[cid] for cid in (names or docs)]

    def inspect_container(self, client, name):
        docs = self.per_engine[client][0]
        if name not in docs:
            raise NotFound("container %s: 404 no such container" % name, 404)
        return docs[name]

    def container_events(self, client, since=None):
        events = self.per_engine[client][1]
        if client == "docker":  # this stream ends only once the other engine's death was swept
            yield from events
            self.swept.wait(30)
            return
        yield from events



def _group(*names):
    return docker_engine.Engines([docker_engine.Engine(n, "unix:///run/sg-%s.sock" % n, n, "podman", None)
                                  for n in names])


@pytest.fixture
def two(sandbox, tmp_path):
    """A second task's workspace with its own setuid file, mounted by a podman container."""
    ws2 = os.path.join(sandbox["home"], "sandboxes", "docker", "task2", "workspace")
    os.makedirs(ws2)
    tool2 = os.path.join(ws2, "tool")
    with open(tool2, "wb") as handle:
        handle.write(b"x")
    os.chmod(tool2, 0o4755)
    return dict(sandbox, ws2=ws2, tool2=tool2)


def test_mounts_info_asks_every_engine_and_names_each_records_engine(two):
    engine = TwoEngines({"docker": ({"d1": _doc("d1", two["ws"])}, []),
                         "podman": ({"p1": _doc("p1", two["ws2"]), "p2": _doc("p2", two["ws"])}, [])})
    info = sweep.mounts_info(_group("docker", "podman"), [two["home"]], engine=engine)
    assert {(c["id"], c["engine"]) for c in info["containers"]} == {("d1", "docker"), ("p1", "podman"),
                                                                    ("p2", "podman")}
    by_path = {t["realpath"]: t for t in info["targets"]}
    assert by_path[two["ws"]]["engines"] == ["docker", "podman"] and by_path[two["ws2"]]["engines"] == ["podman"]
    assert [f["name"] for f in info["engine"]["engines"]] == ["docker", "podman"]
    assert info["engine"]["sweepable"] is True
    named = sweep.mounts_info(_group("docker", "podman"), [two["home"]], names=["p1"], engine=engine)
    assert [(c["id"], c["engine"]) for c in named["containers"]] == [("p1", "podman")]
    with pytest.raises(docker_engine.EngineError, match=r"docker: container nope: 404.*podman: container nope"):
        sweep.mounts_info(_group("docker", "podman"), [two["home"]], names=["nope"], engine=engine)


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership return needs root")
def test_the_container_method_strips_on_the_engine_whose_container_mounted_the_target(two):
    engine = TwoEngines({"docker": ({"d1": _doc("d1", two["ws"])}, []),
                         "podman": ({"p1": _doc("p1", two["ws2"])}, [])})
    result = sweep.sweep(_group("docker", "podman"), [two["home"]], method="container", image="busybox",
                         engine=engine, chown=False, dry_run=True)
    assert {s["path"]: s["engine"] for s in result["sandboxes"]} == {two["ws"]: "docker", two["ws2"]: "podman"}


def test_a_rootless_engine_returns_no_ownership_and_is_never_asked_to_strip(two):
    engine = TwoEngines({"docker": ({}, []), "rootless": ({"r1": _doc("r1", two["ws2"])}, [])})
    group = _group("docker", "rootless")
    info = sweep.mounts_info(group, [two["home"]], engine=engine)
    assert [f["rootless"] for f in info["engine"]["engines"]] == [False, True]
    assert sweep._chown_from(info["engine"]) == (0,)
    assert sweep._chown_from(sweep.mounts_info(_group("rootless"), [two["home"]], engine=engine)["engine"]) == ()
    result = sweep.sweep(group, [two["home"]], method="container", image="busybox", engine=engine, chown=False,
                         dry_run=True)
    assert {s["engine"] for s in result["sandboxes"]} == {"docker"}


def test_a_rootless_podman_socket_is_named_reported_and_rootless_whatever_its_info_says():
    assert docker_engine.rootless_uid("unix:///run/user/1000/podman/podman.sock") == 1000
    assert docker_engine.rootless_uid("unix:///run/podman/podman.sock") is None
    assert docker_engine.rootless_uid("tcp://127.0.0.1:2375") is None
    group = docker_engine.Engines([docker_engine.Engine("podman-rootless-1000", "unix:///run/user/1000/podman/"
                                                        "podman.sock", "c", "podman", "4.3.1", 1000)])
    [warning] = group.warnings
    assert "rootless Podman of uid 1000" in warning and "not root's" in warning
    facts = docker_engine.facts_of(group, "podman-rootless-1000", {"rootless": False, "reason": ""})
    assert facts["rootless"] is True and facts["url"].endswith("/run/user/1000/podman/podman.sock")


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership return needs root")
def test_watch_follows_every_engines_events_and_says_which_engine(two):
    engine = TwoEngines({"docker": ({"d1": _doc("d1", two["ws"])}, EVENT_SHAPES["engine29"][:1]),
                         "podman": ({"p1": _doc("p1", two["ws2"])},
                                    [{"status": "die", "id": "p1", "Type": "container", "Action": "die",
                                      "Actor": {"ID": "p1", "Attributes": {}}}])})
    engine.swept = threading.Event()
    events = []

    def emit(event):
        events.append(event)
        if event["event"] == "die":
            engine.swept.set()

    sweep.watch(_group("docker", "podman"), [two["home"]], engine=engine, emit=emit, since=0, stop=engine.swept)
    assert events[0]["engines"] == ["docker", "podman"] and events[0]["containers"] == 2
    [swept] = [e for e in events if e["event"] == "die"]
    assert (swept["id"], swept["engine"], swept["swept"]) == ("p1", "podman", [two["ws2"]])
    assert stat.S_IMODE(os.lstat(two["tool2"]).st_mode) == 0o755


def test_engine_urls_auto_lists_every_socket_present_once():
    present = {"/var/run/docker.sock", "/run/podman/podman.sock"}
    urls = docker_engine.engine_urls(environ={}, exists=present.__contains__, rootless=[])
    assert urls == ["unix:///var/run/docker.sock", "unix:///run/podman/podman.sock"]
    present.add("/run/user/1000/podman/podman.sock")
    urls = docker_engine.engine_urls(environ={"DOCKER_HOST": "tcp://10.0.0.1:2375"}, exists=present.__contains__,
                                     rootless=["/run/user/1000/podman/podman.sock"])
    assert urls == ["tcp://10.0.0.1:2375", "unix:///var/run/docker.sock", "unix:///run/podman/podman.sock",
                    "unix:///run/user/1000/podman/podman.sock"]
    same = docker_engine.engine_urls(environ={"DOCKER_HOST": "unix:///var/run/docker.sock"},
                                     exists=present.__contains__, rootless=[])
    assert same == ["unix:///var/run/docker.sock", "unix:///run/podman/podman.sock"]
    assert docker_engine.engine_urls("unix:///x.sock", environ={}, exists=present.__contains__) == ["unix:///x.sock"]
    assert docker_engine.engine_urls(environ={}, exists=lambda p: False, rootless=[]) == []


def test_auto_uses_the_engines_that_answer_and_reports_the_others(monkeypatch):

    class Client:
        def __init__(self, url):
            self.url = url

        def version(self):
            return {"Components": [{"Name": "Podman Engine", "Version": "4.3.1"}]} if "podman" in self.url else {
                "Version": "20.10.24"}

    def connect(url, timeout=60):
        if "dead" in url:
            raise docker_engine.EngineError("cannot reach the Docker engine at %s: refused" % url)
        return Client(url)

    monkeypatch.setattr(docker_engine, "connect", connect)
    group = docker_engine.connect_engines(urls=["unix:///dead.sock", "unix:///d.sock", "unix:///podman.sock"])
    assert [(m.name, m.kind, m.version) for m in group.members] == [("docker", "docker", "20.10.24"),
                                                                     ("podman", "podman", "4.3.1")]
    assert [name for name, _ in group] == ["docker", "podman"]
    assert group.skipped[0]["url"] == "unix:///dead.sock" and "did not answer" in group.warnings[0]
    with pytest.raises(docker_engine.EngineError, match="refused"):
        docker_engine.connect_engines("unix:///dead.sock")
    with pytest.raises(docker_engine.EngineError, match="refused"):
        docker_engine.connect_engines(urls=["unix:///dead.sock"])
    twice = docker_engine.connect_engines(urls=["unix:///a.sock", "unix:///b.sock"])
    assert [name for name, _ in twice] == ["docker@unix:///a.sock", "docker@unix:///b.sock"]


def test_a_socket_under_run_user_is_that_users_even_when_it_claims_to_be_a_rootful_docker(monkeypatch):
    """A local user can serve anything on /run/user/<uid>/podman/podman.sock: claiming to be Docker
    with a userns-remap root must not make the ownership return take files from that uid."""

    class Liar:
        def version(self):
            return {"Version": "29.0.0"}  # no Podman component: "I am Docker"

    monkeypatch.setattr(docker_engine, "connect", lambda url, timeout=60: Liar())
    group = docker_engine.connect_engines(urls=["unix:///run/user/1000/podman/podman.sock"])
    [member] = group.members
    assert member.name == "podman-rootless-1000" and member.rootless_uid == 1000
    claimed = sandboxes.engine_facts({"OSType": "linux", "SecurityOptions": ["name=userns"],
                                            "DockerRootDir": "/var/lib/docker/0.0"})
    facts = sweep._group_facts([docker_engine.facts_of(group, member.name, claimed)])
    assert facts["rootless"] is True and sweep._chown_from(facts) == ()


class OneBad(TwoEngines):
    """TwoEngines whose podman answers its info with an HTTP 500 (issue 26's first fake engine)."""

    def engine_info(self, client):
        if client == "podman":
            raise docker_engine.EngineError("engine unix:///run/sg-podman.sock: GET /info: HTTP 500: boom")
        return super().engine_info(client)


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership return needs root")
def test_one_engines_error_is_its_own_and_the_healthy_engines_sandboxes_are_swept(two):
    engine = OneBad({"docker": ({"d1": _doc("d1", two["ws"])}, []), "podman": ({"p1": _doc("p1", two["ws2"])}, [])})
    group = _group("docker", "podman")
    result = sweep.sweep(group, [two["home"]], names=None, engine=engine)
    assert [(r["name"], bool(r["error"])) for r in result["engines"]] == [("docker", False), ("podman", True)]
    [error] = [e for e in result["errors"] if e["op"] == "engine"]
    assert error["path"] == "unix:///run/sg-podman.sock" and "HTTP 500" in error["error"]
    assert result["complete"] is False
    assert {c["id"] for c in result["containers"]} == {"d1"}
    assert stat.S_IMODE(os.lstat(two["tool"]).st_mode) == 0o755  # docker's sandbox swept in the same call
    # a lone client: its error is the result's, said as that engine's (never a traceback)
    info = sweep.mounts_info("podman", [two["home"]], engine=engine)
    assert info["complete"] is False and info["containers"] == []
    assert [e for e in info["errors"] if e["op"] == "engine" and "HTTP 500" in e["error"]]
