# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

A small client of the Docker Engine API (Docker, and Podman's Docker-compatible API) on the
standard library: what the library asks an engine on a target, and nothing else.

Every call has an overall deadline (the client's ``timeout``, or what is left of a
:meth:`Client.budget`), a cap on the answer's size, and checks the answer's shape: an
answer that is not what the API says (bad JSON, a list where an object belongs, an id
that is not a string) is that engine's :class:`EngineError`, like an HTTP error or a
timeout. The API version is negotiated as the Docker CLI does it: the engine's own
(``/version``'s ApiVersion) when it is older than ours, ours otherwise, so Docker 20.10
(API 1.41), Docker 29 (1.52, whose minimum is 1.44) and Podman's compat API all answer.

Transport (sockets, TLS, deadlines, the unix socket rule): engine_http.
"""
import json
import re
import time
from urllib.parse import quote, urlencode

from . import engine_http
from .engine_http import APIError, EngineError, NotFound, SocketRefused  # noqa: F401  # pylint: disable=unused-import  # the one error type, named here too
from .text import escape

API_VERSION = "1.52"  # the newest this client speaks: Docker Engine 29
FALLBACK_API_VERSION = "1.24"  # an engine that names none (the Docker CLI's fallback)
DEFAULT_TIMEOUT_S = 30.0
MAX_LOG_BYTES = 64 << 20  # what a disposable container may print
_VERSION = re.compile(r"^(\d{1,3})\.(\d{1,3})$")


def _version_key(text):
    match = _VERSION.match(text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def negotiate(server_version, ours=API_VERSION):
    """The API version to speak with an engine that says ``server_version`` (pure): the older
    of the two; FALLBACK_API_VERSION when the engine says nothing usable."""
    theirs = _version_key(server_version if isinstance(server_version, str) else None)
    if theirs is None:
        return FALLBACK_API_VERSION
    return server_version if theirs < _version_key(ours) else ours


def demux(data, what="logs"):
    """(stdout, stderr, both) of a multiplexed stream (a non-TTY container's logs or exec
    output): frames of an 8-byte header (stream 0 stdin, 1 stdout, 2 stderr; three zero
    bytes; the size, big-endian) and that many bytes. Bytes stay exact. A truncated or
    malformed frame is an EngineError."""
    out, err, both = bytearray(), bytearray(), bytearray()
    view, at, end = memoryview(data), 0, len(data)
    while at < end:
        header = bytes(view[at:at + 8])
        if len(header) < 8:
            raise EngineError("%s: a stream frame's header is cut short (%d bytes)" % (what, len(header)))
        if header[0] not in (0, 1, 2) or header[1:4] != b"\0\0\0":
            raise EngineError("%s: not a multiplexed stream (frame header %s)" % (what, header.hex()))
        size = int.from_bytes(header[4:8], "big")
        chunk = view[at + 8:at + 8 + size]
        if len(chunk) < size:
            raise EngineError("%s: a stream frame is cut short (%d of %d bytes)" % (what, len(chunk), size))
        (err if header[0] == 2 else out).extend(chunk)
        both.extend(chunk)
        at += 8 + size
    return bytes(out), bytes(err), bytes(both)


def _expect(value, kind, what, key=None):
    """``value`` when it is a ``kind`` (and, for a dict with ``key``, holds a non-empty str there)."""
    if not isinstance(value, kind):
        raise EngineError("%s: the answer is a %s, not a %s" % (what, type(value).__name__, kind.__name__))
    if key is not None and not (isinstance(value.get(key), str) and value.get(key)):
        raise EngineError("%s: the answer has no %s" % (what, key))
    return value


def _decode(data, what):
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise EngineError("%s: the answer is not JSON (%s)" % (what, str(exc).splitlines()[0][:120])) from None


class EventStream:
    """The engine's events as dicts, as they come; ``close()`` ends it (from this thread) and
    ``abort()`` from another. A line that is not a JSON object ends it with EngineError."""

    def __init__(self, response):
        self.response = response

    def __iter__(self):
        try:
            for line in self.response.lines():
                event = _decode(line, self.response.what)
                yield _expect(event, dict, self.response.what)
        finally:
            self.response.close()

    def close(self):
        self.response.close()

    def abort(self):
        self.response.abort()


class Client:
    """One engine at ``url`` (unix://, tcp://, http://, https://; TLS for tcp from the
    environment as the Docker CLI reads it, or ``tls``). ``timeout``: each call's overall
    deadline in seconds (0: none). No connection is held between calls."""

    def __init__(self, url, timeout=DEFAULT_TIMEOUT_S, tls=None, environ=None):
        tls = tls if tls is not None else engine_http.tls_from_env(environ)
        self.address = engine_http.parse_url(url, tls)
        self.url, self.timeout = url, timeout
        self.until = None  # an overall deadline over several calls (budget)
        self.api_version = None
        self._version = None

    def __repr__(self):
        return "Client(%r)" % self.url

    def close(self):
        """Nothing is held between calls; here for the callers that close a client."""

    # -- the exchange ----------------------------------------------------------------------
    def budget(self, seconds):
        """``with client.budget(s):`` every call inside ends by ``s`` seconds from now, all
        together (an engine's survey: its answers, however many calls, within one deadline)."""
        return _Budget(self, seconds)

    def deadline(self, timeout=None):
        """The absolute deadline of a call starting now: ``timeout`` seconds (None: the
        client's; 0: none) and never after the budget's end (None: no limit at all)."""
        timeout = self.timeout if timeout is None else timeout
        ends = time.monotonic() + timeout if timeout and timeout > 0 else None
        if self.until is not None:
            ends = self.until if ends is None else min(ends, self.until)
        return ends

    def _path(self, path, query=None, versioned=True):
        if versioned:
            path = "/v%s%s" % (self.negotiated(), path)
        if query:
            path += "?" + urlencode([(k, v) for k, v in query.items() if v is not None])
        return path

    def request(self, method, path, query=None, body=None, timeout=None, versioned=True):
        """A Response (engine_http) to read and close; EngineError on anything wrong."""
        payload = json.dumps(body).encode() if body is not None else None
        what = "engine %s: %s %s" % (escape(self.url), method, escape(path))
        return engine_http.exchange(self.address, method, self._path(path, query, versioned), payload,
                                    deadline=self.deadline(timeout), what=what)

    def call(self, method, path, query=None, body=None, expect=dict, key=None, timeout=None, versioned=True,
             limit=None):
        """The decoded JSON answer, checked to be an ``expect`` (with ``key`` a non-empty str);
        ``expect`` None: the raw bytes of the answer. ``limit``: its size cap (None:
        engine_http.MAX_RESPONSE_BYTES)."""
        with self.request(method, path, query, body, timeout, versioned) as response:
            data = response.read(limit)
        if expect is None:
            return data
        return _expect(_decode(data, response.what), expect, response.what, key)

    # -- the calls -------------------------------------------------------------------------
    def ping(self):
        """True when ``/_ping`` answers OK; EngineError otherwise."""
        body = self.call("GET", "/_ping", expect=None, versioned=False, limit=1024)
        if body.strip() != b"OK":
            raise EngineError("engine %s: /_ping answered %r, not OK" % (escape(self.url), body[:40]))
        return True

    def version(self):
        """``/version`` (asked once): the engine's version document; sets the API version."""
        if self._version is None:
            self._version = self.call("GET", "/version", versioned=False)
            self.api_version = negotiate(self._version.get("ApiVersion"))
        return self._version

    def negotiated(self):
        if self.api_version is None:
            self.version()
        return self.api_version

    def info(self):
        return self.call("GET", "/info")

    def containers(self, all=True, filters=None):
        """Container summaries (dicts with ``Id``), stopped ones too unless ``all`` is false."""
        query = {"all": "1" if all else "0", "filters": json.dumps(filters) if filters else None}
        found = self.call("GET", "/containers/json", query, expect=list)
        for item in found:
            _expect(item, dict, "engine %s: a container of the list" % escape(self.url), "Id")
        return found

    def inspect_container(self, name):
        """One container's inspect document; NotFound when the engine knows no such container."""
        return self.call("GET", "/containers/%s/json" % quote(name, safe=""), key="Id")

    def events(self, since=None, filters=None):
        """An EventStream from ``since`` (epoch seconds) on; the stream itself has no deadline
        (events come when they come), each line is capped, the answer's headers are not."""
        query = {"since": None if since is None else str(int(since)),
                 "filters": json.dumps(filters) if filters else None}
        response = self.request("GET", "/events", query)
        return EventStream(response)

    # -- a disposable container ------------------------------------------------------------
    def create_container(self, config, name=None, timeout=None):
        """The id of a container created from ``config`` (the API's create body)."""
        return self.call("POST", "/containers/create", {"name": name}, config, key="Id", timeout=timeout)["Id"]

    def start(self, cid, timeout=None):
        self.call("POST", "/containers/%s/start" % quote(cid, safe=""), expect=None, timeout=timeout)

    def wait(self, cid, timeout):
        """The container's exit code once it stops; EngineError (from the deadline) when it
        has not stopped within ``timeout`` seconds (0: no limit)."""
        answer = self.call("POST", "/containers/%s/wait" % quote(cid, safe=""), {"condition": "not-running"},
                           timeout=timeout)
        code = answer.get("StatusCode")
        if not isinstance(code, int) or isinstance(code, bool):
            raise EngineError("engine %s: wait: the answer has no exit code" % escape(self.url))
        return code

    def logs(self, cid, limit=MAX_LOG_BYTES, timeout=None):
        """(stdout, stderr, both) of a non-TTY container, exact bytes (demux)."""
        data = self.call("GET", "/containers/%s/logs" % quote(cid, safe=""),
                         {"stdout": "1", "stderr": "1", "follow": "0", "timestamps": "0"}, expect=None, limit=limit,
                         timeout=timeout)
        return demux(data, "engine %s: logs of %s" % (escape(self.url), escape(cid[:12])))

    def kill(self, cid, timeout=None):
        self.call("POST", "/containers/%s/kill" % quote(cid, safe=""), expect=None, timeout=timeout)

    def remove_container(self, cid, force=True, timeout=None):
        self.call("DELETE", "/containers/%s" % quote(cid, safe=""), {"force": "1" if force else "0"}, expect=None,
                  timeout=timeout)

    # -- exec (the docker fetch transport) -------------------------------------------------
    def exec_create(self, container, argv, user=""):
        body = {"AttachStdin": False, "AttachStdout": True, "AttachStderr": True, "Tty": False, "Cmd": list(argv),
                "User": user or ""}
        return self.call("POST", "/containers/%s/exec" % quote(container, safe=""), body=body, key="Id")["Id"]

    def exec_start(self, exec_id, timeout=None):
        """The Response of a started exec: its multiplexed output until the process ends (the
        engine closes the connection); read it with read_frames."""
        return self.request("POST", "/exec/%s/start" % quote(exec_id, safe=""), body={"Detach": False, "Tty": False},
                            timeout=timeout)

    def exec_inspect(self, exec_id):
        return self.call("GET", "/exec/%s/json" % quote(exec_id, safe=""))


class _Budget:
    def __init__(self, client, seconds):
        self.client, self.seconds, self.before = client, seconds, None

    def __enter__(self):
        self.before = self.client.until
        ends = time.monotonic() + self.seconds
        self.client.until = ends if self.before is None else min(ends, self.before)
        return self.client

    def __exit__(self, *exc):
        self.client.until = self.before


def read_frames(response, chunk=1 << 16):
    """(stream, bytes) pieces of a multiplexed Response as they arrive (stream 1 stdout, 2
    stderr; a frame may come in several pieces, so memory stays flat whatever a frame's
    size says); EngineError on a malformed header or output that ends inside a frame."""
    pending, kind, left = b"", None, 0
    while True:
        with engine_http.guarded(response.what):
            data = response.raw.read1(chunk)
        if not data:
            if pending or left:
                raise EngineError("%s: the output ends inside a frame" % response.what)
            return
        data = pending + data
        pending = b""
        while data:
            if left:
                piece, data = data[:left], data[left:]
                left -= len(piece)
                yield kind, piece
                continue
            if len(data) < 8:
                pending = data
                break
            header, data = data[:8], data[8:]
            if header[0] not in (0, 1, 2) or header[1:4] != b"\0\0\0":
                raise EngineError("%s: not a multiplexed stream (frame header %s)" % (response.what, header.hex()))
            kind, left = header[0], int.from_bytes(header[4:8], "big")
