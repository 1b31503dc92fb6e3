# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Every engine's container events, for as long as the watcher runs (issue 26, item 3).

One thread per engine reads its stream into one queue; the watcher (sweep.watch) reads the
queue. A stream that ends or fails is that engine's alone: the others keep going, and the
failed one is asked again with a backoff (1 s, doubling, at most RECONNECT_MAX_S), its info
first (an engine that came back may have changed), then its events **since the last one
seen**, so the containers of that engine that stopped while it was away are swept when
their replayed ``die``/``stop`` arrives. Events the engine replays twice (the same second)
are handed on once. Nothing here ends the watch: only its ``stop`` event does.
"""
import queue as _queue
import threading
import time

from .. import docker_engine

RECONNECT_FIRST_S = 1.0
RECONNECT_MAX_S = 60.0
POLL_S = 0.5  # how often the reading side looks at ``stop``
UNCONNECTED = object()  # the client of an engine that never answered: connected by its URL when asked again


class Status:
    """What a pump tells the reading side besides events: ``ready`` (``facts``: the engine
    answered its info again) or ``lost`` (``error``, ``retry_in`` seconds)."""

    __slots__ = ("error", "facts", "kind", "retry_in", "url")

    def __init__(self, kind, url, facts=None, error=None, retry_in=None):
        self.kind, self.url, self.facts, self.error, self.retry_in = kind, url, facts, error, retry_in


def event_time(event):
    """An event's time in nanoseconds (``timeNano``, else ``time`` in seconds), or None (pure)."""
    nano, seconds = event.get("timeNano"), event.get("time")
    if isinstance(nano, int) and not isinstance(nano, bool):
        return nano
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
        return int(seconds * 1e9)
    return None


class Pump:
    """One engine's stream, for ever: ``name``, ``url``, ``client`` (UNCONNECTED until it answers),
    ``ready`` (it answered its info since it was last lost)."""

    def __init__(self, name, url, client, ready, ask_info, engine, since, out, stop):
        self.name, self.url, self.client, self.ready = name, url, client, ready
        self.ask_info, self.engine, self.out, self.stop = ask_info, engine, out, stop
        self.last = int(since) * 1_000_000_000 if since is not None else None  # nanoseconds
        self.seen = set()  # (time, id, action) of the events at self.last, handed on already
        self.delay = RECONNECT_FIRST_S

    def run(self):
        while not self.stop.is_set():
            if not self.ready:
                try:
                    if self.client is UNCONNECTED:
                        self.client = docker_engine.connect(self.url, docker_engine.DEFAULT_TIMEOUT_S)
                    facts = self.ask_info(self.name, self.client)
                except Exception as exc:  # its error: told, then asked again later
                    self._lost(exc)
                    continue
                self.ready = True
                self.out.put((self.name, self.client, Status("ready", self.url, facts=facts)))
            started = time.monotonic()
            try:
                self._stream()
                error = docker_engine.EngineError("its event stream ended")
            except Exception as exc:  # a lost stream, garbage in it: this engine's alone
                error = exc
            if time.monotonic() - started >= RECONNECT_MAX_S:
                self.delay = RECONNECT_FIRST_S  # it ran well for a while: start the backoff again
            self.ready = False
            self._lost(error)

    def _stream(self):
        since = None if self.last is None else self.last // 1_000_000_000
        stream = self.engine.container_events(self.client, since)
        try:
            for event in stream:
                if self.stop.is_set():
                    return
                if self._replayed(event):
                    continue
                self.out.put((self.name, self.client, event))
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    def _replayed(self, event):
        """Whether ``event`` was handed on already (an engine asked ``since`` a second replays
        that whole second); remembers it otherwise."""
        when = event_time(event)
        if when is None:
            return False
        action, cid, _attributes = docker_engine.event_fields(event)
        key = (when, cid, action)
        if self.last is not None and (when < self.last or key in self.seen):
            return True
        if self.last is None or when > self.last:
            self.last, self.seen = when, set()
        self.seen.add(key)
        return False

    def _lost(self, error):
        text = str(error) if isinstance(error, docker_engine.EngineError) else "%s (%s)" % (error, type(error).__name__)
        client = None if self.client is UNCONNECTED else self.client
        self.out.put((self.name, client, Status("lost", self.url, error=text, retry_in=self.delay)))
        self.stop.wait(self.delay)
        self.delay = min(self.delay * 2, RECONNECT_MAX_S)


def follow(entries, engine, since, ask_info, stop):
    """(engine name, client, item) for ever (until ``stop`` is set): ``item`` an event dict or
    a Status. ``entries``: (name, url, client or UNCONNECTED, ready) of every engine to follow,
    ``ask_info(name, client)``: its facts (raises when it fails), ``engine``: what reads
    the streams (docker_engine's container_events, or a test's)."""
    out = _queue.Queue()
    for name, url, client, ready in entries:
        pump = Pump(name, url, client, ready, ask_info, engine, since, out, stop)
        threading.Thread(target=pump.run, name="sandboxguard-events-%s" % name, daemon=True).start()
    while not stop.is_set():
        try:
            yield out.get(timeout=POLL_S)
        except _queue.Empty:
            continue
