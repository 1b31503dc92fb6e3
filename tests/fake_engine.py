# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""A fake Docker Engine API on a unix socket, for the tests of the engine client (issue 26).

Standard library only, Python 3.9+, one file: the unit tests run it in a thread, the
integration tests as a throwaway unprivileged user on its own
``/run/user/<uid>/podman/podman.sock`` (what logind gives any logged-in user)::

    python3 fake_engine.py --socket PATH --behaviour info-500|dribble|events-end|healthy [--dribble-s 5]

Behaviours (the issue's table, and a healthy one):

- ``healthy``: ping, version, info, an empty container list, an events stream that stays open;
- ``info-500``: answers ``/_ping`` and ``/version``, then HTTP 500 on everything else;
- ``dribble``: every answer, ping included, one byte every ``dribble_s`` seconds;
- ``events-end``: healthy, but its ``/events`` stream ends at once.

``responder``: instead of a behaviour, a function of the Request returning what to send: a
list of bytes (sent as they are) and numbers (seconds to sleep), for the unit tests' garbage.
"""
import argparse
import json
import os
import socket
import threading
import time

API_VERSION = "1.41"


class Request:
    __slots__ = ("body", "headers", "method", "path", "query")

    def __init__(self, method, target, headers, body):
        self.method, self.headers, self.body = method, headers, body
        self.path, _mark, self.query = target.partition("?")

    def endpoint(self):
        """The path without its /vX.Y prefix."""
        parts = self.path.split("/", 2)
        if len(parts) > 2 and parts[1].startswith("v") and parts[1][1:2].isdigit():
            return "/" + parts[2]
        return self.path


def http(status, body=b"", content_type="application/json", chunked=False, reason=None):
    """The bytes of one whole answer."""
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    head = "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nApi-Version: %s\r\n" % (
        status, reason or ("OK" if status < 400 else "Error"), content_type, API_VERSION)
    if chunked:
        return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + (
            b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
    return (head + "Content-Length: %d\r\n\r\n" % len(body)).encode() + body


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def frame(stream, data):
    """One frame of a multiplexed stream (logs, exec)."""
    return bytes([stream, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


VERSION_DOC = {"ApiVersion": API_VERSION, "MinAPIVersion": "1.12", "Version": "20.10.24",
               "Components": [{"Name": "Engine", "Version": "20.10.24"}]}
INFO_DOC = {"ID": "fake", "OSType": "linux", "DockerRootDir": "/var/lib/docker", "SecurityOptions": [],
            "Name": "fake-engine"}


class FakeEngine:
    """Serve ``behaviour`` (or ``responder``) on the unix socket ``path``; ``requests`` lists
    (method, path with query) of what was asked. ``start()``, then ``stop()``."""

    def __init__(self, path, behaviour="healthy", dribble_s=5.0, responder=None, containers=(), events=(),
                 tls_context=None):
        self.path, self.behaviour, self.dribble_s = path, behaviour, dribble_s
        self.tls_context = tls_context  # path None: TCP on 127.0.0.1, TLS with this server context
        self.responder = responder
        self.containers = list(containers)  # inspect documents
        self.events = list(events)
        self.requests = []
        self.stopping = threading.Event()
        self.server = None

    @property
    def url(self):
        if self.path is None:
            return "tcp://127.0.0.1:%d" % self.server.getsockname()[1]
        return "unix://" + self.path

    def start(self):
        if self.path is None:
            self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.server.bind(("127.0.0.1", 0))
        else:
            if os.path.lexists(self.path):
                os.unlink(self.path)
            self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.server.bind(self.path)
        self.server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self):
        self.stopping.set()
        if self.server is not None:
            self.server.close()
        if self.path is not None and os.path.lexists(self.path):
            os.unlink(self.path)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _accept(self):
        while not self.stopping.is_set():
            try:
                conn, _address = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            if self.tls_context is not None:
                conn = self.tls_context.wrap_socket(conn, server_side=True)
            request = _read_request(conn)
            if request is None:
                return
            self.requests.append((request.method, request.path + ("?" + request.query if request.query else "")))
            answer = self.responder(request) if self.responder else self.answer(request)
            for item in answer:
                if self.stopping.is_set():
                    return
                if isinstance(item, (int, float)):
                    self.stopping.wait(item)
                else:
                    conn.sendall(item)
        except OSError:
            pass
        finally:
            conn.close()

    def answer(self, request):
        """What a behaviour sends for ``request``."""
        endpoint = request.endpoint()
        if self.behaviour == "dribble":
            whole = http(200, b"OK" if endpoint == "/_ping" else VERSION_DOC)
            return [item for byte in whole for item in (bytes([byte]), self.dribble_s)]
        if endpoint == "/_ping":
            return [http(200, b"OK", "text/plain")]
        if endpoint == "/version":
            return [http(200, VERSION_DOC)]
        if self.behaviour == "info-500":
            return [http(500, {"message": "fake engine: internal error"})]
        if endpoint == "/info":
            return [http(200, INFO_DOC)]
        if endpoint == "/containers/json":
            return [http(200, [{"Id": doc["Id"]} for doc in self.containers])]
        if endpoint.startswith("/containers/") and endpoint.endswith("/json"):
            wanted = endpoint.split("/")[2]
            for doc in self.containers:
                if wanted in (doc["Id"], doc.get("Name", "").lstrip("/")):
                    return [http(200, doc)]
            return [http(404, {"message": "No such container: %s" % wanted})]
        if endpoint == "/events":
            head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            if self.behaviour == "events-end":
                return [head, b"0\r\n\r\n"]
            events = [chunk(json.dumps(e).encode() + b"\n") for e in self.events]
            return [head, *events, 3600.0]
        return [http(404, {"message": "page not found"})]


def _read_request(conn, limit=1 << 20):
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return None
        data += more
        if len(data) > limit:
            return None
    head, _blank, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _colon, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length") or 0)
    while len(rest) < length:
        more = conn.recv(65536)
        if not more:
            break
        rest += more
    return Request(method, target, headers, rest[:length])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True)
    parser.add_argument("--behaviour", default="healthy", choices=("healthy", "info-500", "dribble", "events-end"))
    parser.add_argument("--dribble-s", type=float, default=5.0)
    args = parser.parse_args()
    engine = FakeEngine(args.socket, args.behaviour, args.dribble_s).start()
    print("serving %s on %s" % (args.behaviour, args.socket), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        engine.stop()


if __name__ == "__main__":
    main()
