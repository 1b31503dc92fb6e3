# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

HTTP to a container engine with the standard library, every engine treated as untrusted.

The transport under engine_api: where an engine is (``unix://``, ``tcp://``, ``http://``,
``https://``, TLS from DOCKER_TLS_VERIFY / DOCKER_TLS / DOCKER_CERT_PATH as the Docker CLI
reads them), how its socket is reached, and one HTTP exchange with ``http.client`` under:

- an **overall deadline** (monotonic): every receive and send is given what is left of the
  call, so an engine that sends one byte every few seconds cannot hold a call past it (a
  per-read timeout, as the Docker SDK's, can be reset for ever);
- a **size cap** on an answer and on each line of a stream;
- one exception type, :class:`EngineError`: a refused connection, a timeout, an HTTP error,
  garbage where HTTP or chunking should be.

A unix socket is reached only as :func:`open_socket` proves it: opened component by
component from ``/`` with O_PATH|O_NOFOLLOW (a symlink followed only when root owns it),
every directory owned by root (or the caller) or by the uid whose runtime directory
(``/run/user/<uid>``) holds it and writable by nobody else (unless sticky), the socket
itself a socket of one of those owners; the connection then goes through the held
descriptor (``/proc/self/fd/N``), never the path again. Standard library only.
"""
import http.client
import os
import posixpath
import socket
import ssl
import stat
import time

from .text import escape, one_line

MAX_RESPONSE_BYTES = 64 << 20  # an answer (inspect documents of a busy host: a few MiB)
MAX_ERROR_BYTES = 64 << 10  # the body of an HTTP error, for its message
MAX_LINE_BYTES = 1 << 20  # one event of the events stream
MAX_LINKS = 40  # symlinks followed while proving a socket's path (the kernel's own limit)
RUNTIME_DIRS = "/run/user"  # logind's /run/user/<uid>: that user's to serve sockets in
_O_PATH = getattr(os, "O_PATH", 0o10000000)
_GROUP_OTHER_WRITE = stat.S_IWGRP | stat.S_IWOTH


class EngineError(RuntimeError):
    """The engine cannot be reached, did not answer in time, or answered with an error or
    garbage; str() is one line saying which engine and what."""


class APIError(EngineError):
    """The engine answered with an HTTP error: ``status`` (int)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class NotFound(APIError):
    """HTTP 404: no such container (or endpoint)."""


class SocketRefused(EngineError):
    """A unix socket that fails the rule of :func:`open_socket`: not asked at all."""


SOCKET_RULE = ("an engine socket is asked only when it and every directory above it belong to root or to the user "
               "whose runtime directory (/run/user/<uid>) holds it, and no directory is writable by others")


def _clip(text, limit=300):
    text = one_line(text)
    return text if len(text) <= limit else text[:limit] + "..."


# --- where the engine is -----------------------------------------------------------------

class TLSConfig:
    """TLS to a tcp engine: ``verify`` the server (its certificate against ``ca``, or the
    system's CAs when ``ca`` is None, and its host name), client ``cert`` and ``key``."""

    __slots__ = ("ca", "cert", "key", "verify")

    def __init__(self, verify=True, ca=None, cert=None, key=None):
        self.verify, self.ca, self.cert, self.key = verify, ca, cert, key

    def __repr__(self):
        return "TLSConfig(verify=%r, ca=%r, cert=%r, key=%r)" % (self.verify, self.ca, self.cert, self.key)

    def context(self):
        context = ssl.create_default_context(cafile=self.ca if self.verify else None)
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert:
            context.load_cert_chain(self.cert, self.key)
        context.sslsocket_class = _TimedSSLSocket
        return context


def tls_from_env(environ=None, expanduser=os.path.expanduser, exists=os.path.exists):
    """The TLS the Docker CLI would use from the environment (pure but for the files' presence):
    DOCKER_TLS_VERIFY non-empty: TLS, the server verified; else DOCKER_TLS non-empty: TLS, not
    verified; else None (plain). Certificates from DOCKER_CERT_PATH (default ~/.docker):
    ``ca.pem`` when present (else the system's CAs), ``cert.pem`` with ``key.pem`` when both are."""
    environ = os.environ if environ is None else environ
    verify = bool(environ.get("DOCKER_TLS_VERIFY"))
    if not verify and not environ.get("DOCKER_TLS"):
        return None
    where = environ.get("DOCKER_CERT_PATH") or expanduser("~/.docker")
    ca, cert, key = (os.path.join(where, name) for name in ("ca.pem", "cert.pem", "key.pem"))
    client = exists(cert) and exists(key)
    return TLSConfig(verify, ca if exists(ca) else None, cert if client else None, key if client else None)


class Address:
    """Where an engine listens: ``kind`` ``unix`` (``path``) or ``tcp`` (``host``, ``port``,
    ``tls`` a TLSConfig or None); ``url`` as given."""

    __slots__ = ("host", "kind", "path", "port", "tls", "url")

    def __init__(self, url, kind, path=None, host=None, port=None, tls=None):
        self.url, self.kind, self.path, self.host, self.port, self.tls = url, kind, path, host, port, tls


DEFAULT_UNIX_SOCKET = "/var/run/docker.sock"


def parse_url(url, tls=None):
    """The Address of an engine URL (pure), as the Docker CLI reads DOCKER_HOST:
    ``unix:///path`` (``unix://`` alone: Docker's socket), ``tcp://host[:port]`` (port 2376
    with TLS, 2375 without; ``tls`` from tls_from_env), ``http://`` (plain) and ``https://``
    (TLS, verified unless ``tls`` says otherwise). Raises EngineError for anything else."""
    text = str(url)
    scheme, sep, rest = text.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("unix", "tcp", "http", "https"):
        raise EngineError("engine URL %s: not supported (use unix:///path/to/socket or tcp://host:port)"
                          % escape(text))
    if scheme == "unix":
        path = rest or DEFAULT_UNIX_SOCKET
        if not path.startswith("/"):
            raise EngineError("engine URL %s: the socket path must be absolute" % escape(text))
        return Address(text, "unix", path=path)
    if scheme == "https" and tls is None:
        tls = TLSConfig(verify=True)
    if scheme == "http":
        tls = None
    hostport = rest.split("/", 1)[0]
    host, port = _host_port(hostport, text)
    if port is None:
        port = 2376 if tls is not None else 2375
    return Address(text, "tcp", host=host, port=port, tls=tls)


def _host_port(hostport, url):
    if hostport.startswith("["):
        host, _bracket, tail = hostport[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    elif hostport.count(":") == 1:
        host, port = hostport.split(":")
    else:
        host, port = hostport, ""
    if not host:
        raise EngineError("engine URL %s: no host" % escape(url))
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise EngineError("engine URL %s: bad port %s" % (escape(url), escape(port)))
    return host, int(port) if port else None


# --- a unix socket, proven ----------------------------------------------------------------

def runtime_uid(path):
    """The uid whose runtime directory holds ``path`` (``/run/user/<uid>/...``, pure), or None."""
    parts = posixpath.normpath(path).split("/")
    if len(parts) > 3 and "/".join(parts[:3]) == RUNTIME_DIRS and parts[3].isdigit():
        return int(parts[3])
    return None


def _refuse(path, why):
    return SocketRefused("engine socket %s: not asked: %s (%s)" % (escape(path), why, SOCKET_RULE))


def _owner_ok(st, owners, what, path):
    if st.st_uid not in owners:
        raise _refuse(path, "%s belongs to uid %d, not to %s" % (
            what, st.st_uid, " or ".join("uid %d" % uid for uid in sorted(owners))))


def open_socket(path):
    """An O_PATH descriptor of the unix socket at ``path``, proven (see the module's doc):
    (fd, owners) where ``owners`` are the uids allowed (root, the caller's own, and the
    runtime directory's). Raises EngineError saying which component failed and why; the
    caller closes ``fd``."""
    owners = {0, os.geteuid()}
    uid = runtime_uid(path)
    if uid is not None:
        owners.add(uid)
    held = [os.open("/", _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)]
    try:
        return _descend(held, path, owners), owners
    except OSError as exc:  # a component gone or swapped meanwhile (ENOENT, ELOOP, ENOTDIR)
        os.close(held[0])
        raise EngineError("engine socket %s: %s" % (escape(path), exc.strerror or exc)) from None
    except BaseException:
        os.close(held[0])
        raise


def _swap(held, fd):
    os.close(held[0])
    held[0] = fd
    return fd


def _descend(held, path, owners):
    """The walk of open_socket from ``held[0]`` (``/``), each descriptor replacing the one
    before it there; returns the socket's O_PATH fd (held[0] then)."""
    fd = held[0]
    pending = [p for p in path.split("/") if p not in ("", ".")][::-1]
    shown, links = "/", 0
    while True:
        st = os.fstat(fd)
        _owner_ok(st, owners, "directory %s" % escape(shown), path)
        if st.st_mode & _GROUP_OTHER_WRITE and not st.st_mode & stat.S_ISVTX:
            mode = stat.S_IMODE(st.st_mode)
            raise _refuse(path, "directory %s is writable by others (mode %04o)" % (escape(shown), mode))
        name = pending.pop()
        if name == "..":
            raise _refuse(path, "'..' in the socket's path")
        try:
            entry = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            raise EngineError("engine socket %s: %s" % (escape(path), exc.strerror or exc)) from None
        here = posixpath.join(shown, name)
        if stat.S_ISLNK(entry.st_mode):
            links += 1
            if entry.st_uid != 0 or links > MAX_LINKS:
                why = "not owned by root" if entry.st_uid else "in a loop"
                raise _refuse(path, "%s is a symlink %s" % (escape(here), why))
            target = os.readlink(name, dir_fd=fd)
            pending.extend([p for p in target.split("/") if p not in ("", ".")][::-1])
            if target.startswith("/"):
                fd, shown = _swap(held, os.open("/", _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)), "/"
            continue
        if not pending:
            if not stat.S_ISSOCK(entry.st_mode):
                raise _refuse(path, "%s is not a socket" % escape(here))
            fd = _swap(held, os.open(name, _O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd))
            st = os.fstat(fd)
            if not stat.S_ISSOCK(st.st_mode) or (st.st_dev, st.st_ino) != (entry.st_dev, entry.st_ino):
                raise _refuse(path, "%s changed while it was checked" % escape(here))
            _owner_ok(st, owners, "the socket", path)
            return fd
        if not stat.S_ISDIR(entry.st_mode):
            raise _refuse(path, "%s is not a directory" % escape(here))
        fd = _swap(held, os.open(name, _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd))
        shown = here


# --- sockets with a deadline --------------------------------------------------------------

def _armed(name):
    """The socket method *name* of the class after _Timed, called once _Timed._arm gave the
    socket what is left of its deadline."""

    def method(self, *args):
        self._arm()
        return getattr(super(_Timed, self), name)(*args)

    method.__name__ = name
    return method


class _Timed:
    """What a socket does before each receive or send: give it what is left of ``deadline``
    (absolute time.monotonic(); None: no limit), or raise socket.timeout when nothing is."""

    deadline = None

    def _arm(self):
        if self.deadline is None:
            self.settimeout(None)
            return
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("deadline passed")
        self.settimeout(left)

    # each receive and send arms the deadline first: one wrapper, not one copy per method
    recv_into, recv, sendall, send = (_armed(name) for name in ("recv_into", "recv", "sendall", "send"))


class _TimedSocket(_Timed, socket.socket):
    pass


class _TimedSSLSocket(_Timed, ssl.SSLSocket):
    pass


def _connect_unix(address, deadline):
    fd, _owners = open_socket(address.path)
    sock = _TimedSocket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.deadline = deadline
        sock._arm()
        # through the proven descriptor: the path is never resolved again
        sock.connect("/proc/self/fd/%d" % fd)
    except BaseException:
        sock.close()
        raise
    finally:
        os.close(fd)
    return sock


def _connect_tcp(address, deadline):
    left = deadline - time.monotonic() if deadline is not None else None
    if left is not None and left <= 0:
        raise socket.timeout("deadline passed")
    plain = socket.create_connection((address.host, address.port), timeout=left)
    sock = _TimedSocket(plain.family, plain.type, plain.proto, fileno=plain.detach())
    sock.deadline = deadline
    if address.tls is None:
        return sock
    try:
        sock._arm()
        wrapped = address.tls.context().wrap_socket(sock, server_hostname=address.host)
    except BaseException:
        sock.close()
        raise
    wrapped.deadline = deadline
    return wrapped


class _Connection(http.client.HTTPConnection):
    """http.client over our socket: unix (proven) or tcp, with or without TLS."""

    def __init__(self, address, deadline):
        super().__init__("localhost" if address.kind == "unix" else address.host,
                         address.port if address.kind == "tcp" else None)
        self.address, self.deadline, self.timed = address, deadline, None

    def connect(self):
        if self.address.kind == "unix":
            self.sock = _connect_unix(self.address, self.deadline)
        else:
            self.sock = _connect_tcp(self.address, self.deadline)
        # kept: http.client drops ``sock`` once a "Connection: close" answer's headers are in
        # (the response's file holds the socket from then on)
        self.timed = self.sock

    def set_deadline(self, deadline):
        self.deadline = deadline
        if self.timed is not None:
            self.timed.deadline = deadline

    def abort(self):
        """Unblock a reader in another thread (a stream being stopped)."""
        if self.timed is not None:
            try:
                self.timed.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# --- one exchange ---------------------------------------------------------------------------

class Response:
    """An answer whose status is below 400: ``status``, ``headers`` (lower-case names) and
    the body, read with :meth:`read` (whole, capped) or :meth:`lines` (a stream, each line
    capped). Close it (or use ``with``) when done."""

    def __init__(self, conn, raw, what):
        self.conn, self.raw, self.what = conn, raw, what
        self.status = raw.status
        self.headers = {k.lower(): v for k, v in raw.getheaders()}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.raw.close()
        self.conn.close()

    def abort(self):
        """Stop a stream another thread reads: its read ends (EOF or an EngineError)."""
        self.conn.abort()

    def read(self, limit=None):
        limit = MAX_RESPONSE_BYTES if limit is None else limit
        with guarded(self.what):
            length = self.raw.length
            if length is not None and length > limit:
                raise EngineError("%s: the answer is %d bytes, more than the %d allowed" % (self.what, length, limit))
            data = self.raw.read(limit + 1)
            if len(data) > limit:
                raise EngineError("%s: the answer is more than the %d bytes allowed" % (self.what, limit))
            return data

    def lines(self, limit=None, deadline=None):
        """Each non-empty line of the body (bytes, without its newline) as it arrives; from
        here on the stream has ``deadline`` (None: none, an events stream waits for events)."""
        limit = MAX_LINE_BYTES if limit is None else limit
        self.conn.set_deadline(deadline)
        while True:
            with guarded(self.what):
                line = self.raw.readline(limit + 1)
            if not line:
                return
            if not line.endswith(b"\n"):
                if len(line) > limit:
                    raise EngineError("%s: a line of the stream is longer than %d bytes" % (self.what, limit))
            line = line.strip()
            if line:
                yield line


class guarded:
    """``with guarded(what):`` turns whatever a bad engine can make the standard library
    raise (OSError, socket.timeout, http.client errors, ValueError of a bad chunk) into one
    EngineError naming ``what``."""

    def __init__(self, what):
        self.what = what

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, _tb):
        if exc is None or isinstance(exc, (EngineError, KeyboardInterrupt, SystemExit, GeneratorExit)):
            return False
        if isinstance(exc, socket.timeout):
            raise EngineError("%s: no answer within its deadline (the engine is too slow or stuck)" % self.what) \
                from None
        if isinstance(exc, http.client.IncompleteRead):
            raise EngineError("%s: the answer ended early" % self.what) from None
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise EngineError("%s: %s" % (self.what, _clip("%s (%s)" % (why, type(exc).__name__)))) from None


def exchange(address, method, path, body=None, headers=None, deadline=None, what=None):
    """Send one request and read the answer's status and headers before ``deadline``.

    Returns a Response (status < 400; the caller reads and closes it). Raises APIError
    (NotFound for 404) with the engine's own message, clipped to one line, for an HTTP error.
    """
    what = what or "engine %s: %s %s" % (escape(address.url), method, escape(path.split("?", 1)[0]))
    conn = _Connection(address, deadline)
    try:
        with guarded(what):
            sent = {"Host": "docker" if address.kind == "unix" else address.host, "User-Agent": "sandboxguard",
                    "Connection": "close"}
            if body is not None:
                sent["Content-Type"] = "application/json"
            sent.update(headers or {})
            conn.request(method, path, body=body, headers=sent)
            raw = conn.getresponse()
        response = Response(conn, raw, what)
        if raw.status >= 400:
            message = _error_message(response)
            kind = NotFound if raw.status == 404 else APIError
            raise kind("%s: HTTP %d: %s" % (what, raw.status, message), raw.status)
    except BaseException:
        conn.close()
        raise
    return response


def _error_message(response):
    try:
        data = response.read(MAX_ERROR_BYTES)
    except EngineError as exc:
        return "(unreadable: %s)" % exc
    import json  # noqa: PLC0415 - only for an error's body

    try:
        message = json.loads(data.decode("utf-8", "replace")).get("message")
    except (ValueError, AttributeError):
        message = None
    return _clip(message if isinstance(message, str) else data.decode("utf-8", "replace") or response.raw.reason)
