# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The standard-library engine client (issue 26, item 1): every engine is untrusted input.

Each test serves a fake engine (tests/fake_engine.py) on a unix socket in a temporary
directory, or on loopback TCP, and checks one promise: chunked decoding, the caps, the
overall deadline against a server that dribbles, malformed answers as one error type,
the logs' demultiplexing, version negotiation, the URL and TLS settings of DOCKER_HOST.
"""
import json
import os
import ssl
import subprocess
import time

import pytest
from fake_engine import VERSION_DOC, FakeEngine, chunk, frame, http
from sandboxguard._core import engine_api, engine_http
from sandboxguard._core.engine_api import Client, EngineError


@pytest.fixture
def sock(tmp_path):
    return str(tmp_path / "engine.sock")


def serve(sock, responder=None, **kwargs):
    return FakeEngine(sock, responder=responder, **kwargs).start()


def answer_of(routes):
    """A responder from {endpoint: [items]} (endpoint without /vX.Y); /version and /_ping default."""
    def responder(request):
        endpoint = request.endpoint()
        if endpoint in routes:
            return routes[endpoint]
        if endpoint == "/version":
            return [http(200, VERSION_DOC)]
        if endpoint == "/_ping":
            return [http(200, b"OK", "text/plain")]
        return [http(404, {"message": "no route %s" % endpoint})]
    return responder


# --- chunked decoding and the events stream -------------------------------------------------

def test_a_chunked_answer_is_decoded_whatever_the_chunk_boundaries(sock):
    doc = json.dumps({"ID": "x", "OSType": "linux", "Name": "\u00e9"}).encode()
    pieces = [doc[:3], doc[3:4], doc[4:]]
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    with serve(sock, answer_of({"/info": [head, *[chunk(p) for p in pieces], b"0\r\n\r\n"]})):
        assert Client("unix://" + sock).info() == {"ID": "x", "OSType": "linux", "Name": "\u00e9"}


def test_the_events_stream_gives_each_json_line_even_split_across_chunks(sock):
    one, two = json.dumps({"Action": "die", "Actor": {"ID": "c1"}}), json.dumps({"Action": "start"})
    text = (one + "\n" + two + "\n").encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    with serve(sock, answer_of({"/events": [head, chunk(text[:10]), 0.05, chunk(text[10:]), b"0\r\n\r\n"]})) as fake:
        events = list(Client("unix://" + sock).events(since=100, filters={"type": ["container"]}))
    assert events == [json.loads(one), json.loads(two)]
    path = next(p for _m, p in fake.requests if "/events" in p)
    assert "since=100" in path and "filters=" in path


def test_bad_chunking_is_the_engines_error(sock):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    with serve(sock, answer_of({"/info": [head, b"zz\r\n{}\r\n0\r\n\r\n"]})):
        with pytest.raises(EngineError, match="GET /info"):
            Client("unix://" + sock).info()


def test_a_chunked_answer_cut_short_is_the_engines_error(sock):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    with serve(sock, answer_of({"/info": [head, b"10\r\n{\"a\":"]})):
        with pytest.raises(EngineError, match="GET /info"):
            Client("unix://" + sock).info()


def test_a_stream_that_is_not_json_lines_ends_with_the_engines_error(sock):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    with serve(sock, answer_of({"/events": [head, chunk(b'{"Action": "die"}\n'), chunk(b"<html>\n"), 3.0]})):
        stream = iter(Client("unix://" + sock).events())
        assert next(stream) == {"Action": "die"}
        with pytest.raises(EngineError, match="not JSON"):
            next(stream)


# --- caps -------------------------------------------------------------------------------------

def test_an_answer_over_the_cap_is_refused_by_its_length(sock, monkeypatch):
    monkeypatch.setattr(engine_http, "MAX_RESPONSE_BYTES", 1000)
    with serve(sock, answer_of({"/info": [http(200, {"pad": "x" * 5000})]})):
        with pytest.raises(EngineError, match="more than the 1000 allowed"):
            Client("unix://" + sock).call("GET", "/info", limit=1000)


def test_a_chunked_answer_over_the_cap_is_refused_without_reading_it_all(sock):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    endless = [head] + [chunk(b"x" * 4096)] * 100
    with serve(sock, answer_of({"/info": endless})):
        with pytest.raises(EngineError, match="more than the 10000 bytes allowed"):
            Client("unix://" + sock).call("GET", "/info", limit=10000)


def test_an_event_line_over_the_cap_ends_the_stream_with_the_engines_error(sock, monkeypatch):
    monkeypatch.setattr(engine_http, "MAX_LINE_BYTES", 1024)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    with serve(sock, answer_of({"/events": [head, chunk(b'{"a": "' + b"y" * 5000 + b'"}\n'), 3.0]})):
        with pytest.raises(EngineError, match="longer than 1024 bytes"):
            list(Client("unix://" + sock).events())


def test_too_many_headers_are_the_engines_error(sock):
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(200)) + b"Content-Length: 2\r\n\r\n{}"
    with serve(sock, answer_of({"/info": [head]})):
        with pytest.raises(EngineError, match="GET /info"):
            Client("unix://" + sock).info()


# --- the overall deadline -------------------------------------------------------------------

def test_a_dribbling_engine_cannot_hold_a_call_past_its_deadline(sock):
    # one byte every 0.2 s: every single read is quick, so a per-read timeout never fires
    with serve(sock, behaviour="dribble", dribble_s=0.2):
        client = Client("unix://" + sock, timeout=1.0)
        started = time.monotonic()
        with pytest.raises(EngineError, match="no answer within its deadline"):
            client.ping()
        assert time.monotonic() - started < 2.0


def test_a_budget_bounds_several_calls_together(sock):
    slow = [0.4, http(200, {"OSType": "linux"})]
    with serve(sock, answer_of({"/info": slow})):
        client = Client("unix://" + sock, timeout=10)
        client.version()
        started = time.monotonic()
        with pytest.raises(EngineError, match="deadline"):
            with client.budget(1.0):
                for _ in range(5):
                    client.info()
        assert time.monotonic() - started < 1.8
        assert client.until is None  # the budget ends with its block


def test_an_engine_that_never_answers_wait_is_a_deadline_error(sock):
    with serve(sock, answer_of({"/containers/c1/wait": [30.0]})):
        started = time.monotonic()
        with pytest.raises(EngineError, match="deadline"):
            Client("unix://" + sock).wait("c1", timeout=0.5)
        assert time.monotonic() - started < 1.5


# --- malformed answers ------------------------------------------------------------------------

@pytest.mark.parametrize("body,match", [
    (b"{not json", "not JSON"),
    (b"\xff\xfe{}", "not JSON"),
    (b"[1, 2]", "is a list, not a dict"),
    (b'"text"', "is a str, not a dict"),
])
def test_a_malformed_info_is_the_engines_error(sock, body, match):
    with serve(sock, answer_of({"/info": [http(200, body)]})):
        with pytest.raises(EngineError, match=match):
            Client("unix://" + sock).info()


@pytest.mark.parametrize("listing", [{"Id": "x"}, [{"Id": 5}], [["x"]], [{"Names": ["a"]}]])
def test_a_container_list_of_the_wrong_shape_is_the_engines_error(sock, listing):
    with serve(sock, answer_of({"/containers/json": [http(200, listing)]})):
        with pytest.raises(EngineError):
            Client("unix://" + sock).containers()


def test_garbage_instead_of_http_is_the_engines_error(sock):
    with serve(sock, answer_of({"/info": [b"SSH-2.0-OpenSSH_9.2\r\n\r\n"]})):
        with pytest.raises(EngineError, match="GET /info"):
            Client("unix://" + sock).info()


def test_an_http_error_carries_the_engines_message_on_one_line(sock):
    with serve(sock, answer_of({"/info": [http(500, {"message": "boom\nforged line\x1b[31m"})]})):
        with pytest.raises(engine_api.APIError) as caught:
            Client("unix://" + sock).info()
    assert caught.value.status == 500
    text = str(caught.value)
    assert "HTTP 500: boom\\nforged line\\x1b[31m" in text and "\n" not in text and "\x1b" not in text


def test_not_found_is_its_own_type(sock):
    with serve(sock, answer_of({})):
        with pytest.raises(engine_api.NotFound):
            Client("unix://" + sock).inspect_container("nope")


def test_an_inspect_without_an_id_is_the_engines_error(sock):
    with serve(sock, answer_of({"/containers/c1/json": [http(200, {"Mounts": []})]})):
        with pytest.raises(EngineError, match="has no Id"):
            Client("unix://" + sock).inspect_container("c1")


def test_a_closed_connection_and_a_missing_socket_are_engine_errors(sock, tmp_path):
    with serve(sock, answer_of({"/info": []})):
        with pytest.raises(EngineError):
            Client("unix://" + sock).info()
    with pytest.raises(EngineError, match="No such file"):
        Client("unix://" + str(tmp_path / "absent.sock")).ping()


# --- logs ---------------------------------------------------------------------------------------

def test_logs_are_demultiplexed_and_stdout_keeps_its_exact_bytes(sock):
    raw = b"name\xff\x00with\nnewline\n"
    body = frame(1, raw[:5]) + frame(2, b"warn\n") + frame(1, raw[5:]) + frame(1, b"")
    stream = "application/vnd.docker.multiplexed-stream"
    with serve(sock, answer_of({"/containers/c1/logs": [http(200, body, stream)]})) as fake:
        out, err, both = Client("unix://" + sock).logs("c1")
    assert out == raw and err == b"warn\n" and both == raw[:5] + b"warn\n" + raw[5:]
    assert any("stdout=1" in p and "stderr=1" in p for _m, p in fake.requests)


@pytest.mark.parametrize("data,match", [
    (frame(1, b"abc")[:6], "header is cut short"),
    (frame(1, b"abcdef")[:11], "frame is cut short"),
    (b"plain text, not frames", "not a multiplexed stream"),
])
def test_a_broken_log_stream_is_the_engines_error(data, match):
    with pytest.raises(EngineError, match=match):
        engine_api.demux(data)


def test_exec_output_arrives_in_pieces_with_flat_memory(sock):
    body = frame(1, b"a" * 100000) + frame(2, b"err") + frame(1, b"end")
    raw_stream = b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n" + body
    with serve(sock, answer_of({"/exec/e1/start": [raw_stream]})):
        with Client("unix://" + sock).exec_start("e1") as response:
            pieces = list(engine_api.read_frames(response, chunk=4096))
    assert max(len(p) for _k, p in pieces) <= 4096
    assert b"".join(p for k, p in pieces if k == 1) == b"a" * 100000 + b"end"
    assert b"".join(p for k, p in pieces if k == 2) == b"err"


# --- version negotiation --------------------------------------------------------------------------

@pytest.mark.parametrize("server,used", [
    ("1.41", "1.41"),  # Docker 20.10
    ("1.52", "1.52"),  # Docker 29
    ("1.99", engine_api.API_VERSION),  # newer than us: ours
    ("1.9", "1.9"),
    (None, engine_api.FALLBACK_API_VERSION),
    ("garbage", engine_api.FALLBACK_API_VERSION),
    (41, engine_api.FALLBACK_API_VERSION),
])
def test_the_api_version_is_the_older_of_the_engines_and_ours(server, used):
    assert engine_api.negotiate(server) == used


@pytest.mark.parametrize("server", ["1.41", "1.52"])
def test_calls_use_the_negotiated_version_prefix(sock, server):
    doc = dict(VERSION_DOC, ApiVersion=server)
    with serve(sock, answer_of({"/version": [http(200, doc)], "/info": [http(200, {"OSType": "linux"})]})) as fake:
        client = Client("unix://" + sock)
        client.info()
    assert ("GET", "/version") in fake.requests and ("GET", "/v%s/info" % server) in fake.requests


# --- where the engine is: URLs and TLS --------------------------------------------------------------

@pytest.mark.parametrize("url,tls,expect", [
    ("unix:///run/docker.sock", None, ("unix", "/run/docker.sock", None, None)),
    ("unix://", None, ("unix", "/var/run/docker.sock", None, None)),
    ("tcp://10.0.0.1:2375", None, ("tcp", None, "10.0.0.1", 2375)),
    ("tcp://10.0.0.1", None, ("tcp", None, "10.0.0.1", 2375)),
    ("tcp://10.0.0.1", engine_http.TLSConfig(), ("tcp", None, "10.0.0.1", 2376)),
    ("tcp://[::1]:2377/", None, ("tcp", None, "::1", 2377)),
    ("TCP://engine.example:2376", engine_http.TLSConfig(), ("tcp", None, "engine.example", 2376)),
    ("http://127.0.0.1:2375", engine_http.TLSConfig(), ("tcp", None, "127.0.0.1", 2375)),
    ("https://engine.example", None, ("tcp", None, "engine.example", 2376)),
])
def test_engine_urls_are_read_as_the_docker_cli_reads_them(url, tls, expect):
    address = engine_http.parse_url(url, tls)
    assert (address.kind, address.path, address.host, address.port) == expect
    if url.startswith("http://"):
        assert address.tls is None
    if url.startswith("https://"):
        assert address.tls is not None and address.tls.verify


@pytest.mark.parametrize("url", ["ssh://user@host", "npipe:////./pipe/docker_engine", "fd://", "/run/docker.sock",
                                 "unix://relative.sock", "tcp://:2375", "tcp://host:99999", "tcp://host:x"])
def test_unsupported_or_broken_urls_are_one_line_engine_errors(url):
    with pytest.raises(EngineError) as caught:
        engine_http.parse_url(url)
    assert "\n" not in str(caught.value)


def test_tls_settings_come_from_the_environment_as_the_docker_cli_reads_them(tmp_path):
    certs = tmp_path / "certs"
    certs.mkdir()
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (certs / name).write_text("x")
    assert engine_http.tls_from_env({}) is None
    assert engine_http.tls_from_env({"DOCKER_TLS_VERIFY": "", "DOCKER_CERT_PATH": str(certs)}) is None
    tls = engine_http.tls_from_env({"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(certs)})
    assert (tls.verify, tls.ca, tls.cert, tls.key) == (True, str(certs / "ca.pem"), str(certs / "cert.pem"),
                                                      str(certs / "key.pem"))
    tls = engine_http.tls_from_env({"DOCKER_TLS": "1", "DOCKER_CERT_PATH": str(certs)})
    assert tls.verify is False
    (certs / "key.pem").unlink()
    (certs / "ca.pem").unlink()
    tls = engine_http.tls_from_env({"DOCKER_TLS_VERIFY": "0", "DOCKER_CERT_PATH": str(certs)})  # non-empty: on
    assert (tls.verify, tls.ca, tls.cert, tls.key) == (True, None, None, None)
    home = engine_http.tls_from_env({"DOCKER_TLS_VERIFY": "1"}, expanduser=lambda p: str(certs),
                                    exists=lambda p: True)
    assert home.ca == str(certs / "ca.pem")


def test_plain_tcp_works(tmp_path):
    with FakeEngine(None, "healthy").start() as fake:
        assert Client(fake.url, environ={}).info()["OSType"] == "linux"


def test_tls_to_a_tcp_engine_verifies_it_and_keeps_the_deadline(tmp_path):
    key, cert = str(tmp_path / "key.pem"), str(tmp_path / "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    with FakeEngine(None, "healthy", tls_context=server).start() as fake:
        os.rename(cert, str(tmp_path / "ca.pem"))
        env = {"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(tmp_path)}
        assert Client(fake.url, environ=env).info()["OSType"] == "linux"
        with pytest.raises(EngineError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            Client(fake.url, environ={"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(tmp_path / "none")}).info()
        assert Client(fake.url, environ={"DOCKER_TLS": "1"}).info()["OSType"] == "linux"
    with FakeEngine(None, "dribble", dribble_s=0.2, tls_context=server).start() as slow:
        started = time.monotonic()
        with pytest.raises(EngineError, match="deadline"):
            Client(slow.url, timeout=1.0, environ={"DOCKER_TLS": "1"}).ping()
        assert time.monotonic() - started < 2.0
