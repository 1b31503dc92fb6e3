# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Watchers outlive a stream (issue 26, item 3): one engine's stream ending or failing never
ends another's; the failed one is asked again with a capped backoff, since the last event it
sent, and the events it replays are handed on once; nothing but ``stop`` ends the watch."""
import os
import threading
import time

import pytest
from sandboxguard import docker_engine, sweep
from sandboxguard._core.engine_api import NotFound
from sandboxguard._privileged import engine_events
from test_sweep_watch import AGENT, _doc, _group


class Streams:
    """A fake engine module whose streams are scripted per engine and per connection:
    ``script[name]`` a list, one item per call of container_events: a list of events (then the
    stream ends), an Exception (raised at once), or "hold" (a stream that stays open)."""

    def __init__(self, script, docs=None, info_errors=()):
        self.script, self.docs, self.info_errors = script, docs or {}, set(info_errors)
        self.calls = []  # (engine name, since)
        self.stop = threading.Event()

    def engine_info(self, client):
        if client in self.info_errors:
            raise docker_engine.EngineError("engine %s: GET /info: HTTP 500: boom" % client)
        return {"OSType": "linux", "SecurityOptions": ["name=seccomp"]}

    def inspect_containers(self, client, names=None, include_stopped=True):
        return [doc for cid, doc in self.docs.items() if cid.startswith(client)]

    def inspect_container(self, client, name):
        if name not in self.docs:
            raise NotFound("container %s: 404" % name, 404)
        return self.docs[name]

    def container_events(self, client, since=None):
        self.calls.append((client, since))
        queue = self.script[client]
        item = queue.pop(0) if queue else "hold"
        if isinstance(item, Exception):
            raise item
        if item == "hold":
            self.stop.wait(30)
            return
        yield from item


@pytest.fixture
def sandbox(tmp_path):
    """A HERMES_HOME with one task's workspace (owned by the agent, as Hermes makes it)."""
    home = tmp_path / "hermes"
    ws = home / "sandboxes" / "docker" / "task1" / "workspace"
    ws.mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(str(home / "sandboxes"), *AGENT)
    return {"home": str(home), "ws": str(ws)}


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(engine_events, "RECONNECT_FIRST_S", 0.05)
    monkeypatch.setattr(engine_events, "RECONNECT_MAX_S", 0.2)
    monkeypatch.setattr(engine_events, "POLL_S", 0.05)


def watch_until(engine, group, home, done, timeout=10):
    """sweep.watch until ``done(events)`` (or the timeout); returns the events emitted."""
    events, stop = [], threading.Event()

    def emit(event):
        events.append(event)
        if done(events):
            stop.set()

    timer = threading.Timer(timeout, stop.set)
    timer.start()
    try:
        sweep.watch(group, [home], engine=engine, emit=emit, since=1000, stop=stop)
    finally:
        timer.cancel()
        engine.stop.set()
    return events


def die(cid, when):
    return {"Type": "container", "Action": "die", "Actor": {"ID": cid, "Attributes": {}}, "time": when,
            "timeNano": when * 1_000_000_000}


def test_an_engine_whose_stream_ends_at_once_never_stops_the_others(sandbox):
    docs = {"docker1": _doc("docker1", sandbox["ws"])}
    engine = Streams({"docker": [[], "hold"], "podman": [[], [], [], [], [], []]}, docs)
    # docker's first stream ends too: asked again, its container dies on the second
    engine.script["docker"] = [[], [die("docker1", 1001)], "hold"]
    events = watch_until(engine, _group("docker", "podman"), sandbox["home"],
                         lambda ev: any(e["event"] == "die" for e in ev)
                         and sum(e["event"] == "engine-lost" and e["engine"] == "podman" for e in ev) >= 1)
    [swept] = [e for e in events if e["event"] == "die"]
    assert swept["engine"] == "docker" and swept["swept"] == [sandbox["ws"]]
    lost = [e for e in events if e["event"] == "engine-lost"]
    assert {e["engine"] for e in lost} >= {"podman"} and all(e["error"] for e in lost)


def test_a_reconnected_engine_is_asked_since_its_last_event_and_replays_are_handed_on_once(sandbox):
    docs = {"docker1": _doc("docker1", sandbox["ws"])}
    first = [{"Action": "start", "Actor": {"ID": "docker1"}, "time": 1005, "timeNano": 1005_000000001}]
    # the engine went away; back, it replays the start of the same second and the death it saw meanwhile
    second = [first[0], die("docker1", 1007)]
    third = [die("docker1", 1007)]  # and once more: the same second again
    engine = Streams({"docker": [first, ConnectionError("reset"), second, third, "hold"]}, docs)
    events = watch_until(engine, _group("docker"), sandbox["home"], lambda ev: False, timeout=2.0)
    assert [since for _name, since in engine.calls[:4]] == [1000, 1005, 1005, 1007]
    swept = [e for e in events if e["event"] == "die"]
    assert len(swept) == 1 and swept[0]["swept"] == [sandbox["ws"]]


def test_the_backoff_doubles_and_is_capped(sandbox):
    engine = Streams({"docker": [ConnectionError("refused %d" % i) for i in range(40)]})
    started = time.monotonic()
    watch_until(engine, _group("docker"), sandbox["home"], lambda ev: False, timeout=1.5)
    times = len(engine.calls)
    # 0.05 + 0.1 + 0.2 + 0.2 ... within 1.5 s: about 8 tries, never a busy loop
    assert 4 <= times <= 12, times
    assert time.monotonic() - started < 5


def test_an_engine_that_fails_its_info_is_reported_and_asked_again_the_others_swept(sandbox):
    docs = {"docker1": _doc("docker1", sandbox["ws"])}
    engine = Streams({"docker": [[die("docker1", 1001)], "hold"], "podman": ["hold"]}, docs, info_errors={"podman"})
    events = watch_until(engine, _group("docker", "podman"), sandbox["home"],
                         lambda ev: any(e["event"] == "die" for e in ev)
                         and any(e["event"] == "engine-lost" and e["engine"] == "podman" for e in ev))
    watching = events[0]
    assert watching["engines"] == ["docker"] and [f["name"] for f in watching["failed"]] == ["podman"]
    assert "HTTP 500" in watching["failed"][0]["error"]
    lost = [e for e in events if e["event"] == "engine-lost" and e["engine"] == "podman"]
    assert "HTTP 500" in lost[0]["error"] and lost[0]["url"].endswith("sg-podman.sock")
    assert all(name != "podman" for name, _since in engine.calls)  # never streamed while its info fails


def test_an_engine_back_after_its_info_failed_is_said_and_followed(sandbox):
    docs = {"podman1": _doc("podman1", sandbox["ws"])}
    engine = Streams({"podman": [[die("podman1", 1002)], "hold"]}, docs, info_errors={"podman"})
    timer = threading.Timer(0.3, lambda: engine.info_errors.discard("podman"))
    timer.start()
    events = watch_until(engine, _group("podman"), sandbox["home"], lambda ev: any(e["event"] == "die" for e in ev))
    kinds = [e["event"] for e in events]
    assert "engine-lost" in kinds and "engine-back" in kinds and kinds.index("engine-back") < kinds.index("die")


def test_watch_runs_until_stopped_even_when_every_stream_ends(sandbox):
    engine = Streams({"docker": [[] for _ in range(100)]})
    events = watch_until(engine, _group("docker"), sandbox["home"], lambda ev: False, timeout=0.8)
    assert len(engine.calls) >= 2  # asked again and again, never returned on its own
    assert events[0]["event"] == "watching"


def test_event_time_reads_nanoseconds_then_seconds():
    assert engine_events.event_time({"timeNano": 5, "time": 9}) == 5
    assert engine_events.event_time({"time": 2}) == 2_000_000_000
    assert engine_events.event_time({"time": "x", "timeNano": True}) is None
