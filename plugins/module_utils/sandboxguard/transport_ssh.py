# GENERATED from python/src/sandboxguard/transport_ssh.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""An exec channel over SSH with paramiko, for ``fetch.fetch``.

paramiko is imported when a connection is made, never at import time: the library core
stays standard-library only, and a missing paramiko is a TransportUnavailable naming the
package to install. Host keys are verified: unknown hosts are rejected (RejectPolicy)
unless their key is in ``known_hosts`` (default ~/.ssh/known_hosts).
"""
import os
import select
import time

from ._fetch.policy import DEFAULT_MAX_BYTES, output_limit
from ._fetch.program import shell_join
from .fetch import FetchError, TransportUnavailable

__all__ = ["SSHExec"]

CONNECT_TIMEOUT_S = 30.0


def _paramiko():
    try:
        import paramiko  # noqa: PLC0415 - optional edge dependency, imported on use
    except ImportError:
        raise TransportUnavailable(
            "the ssh transport needs paramiko: pip install 'sandboxguard[ssh]' (or apt-get install python3-paramiko)"
        ) from None
    return paramiko


def parse_target(target, default_port=22):
    """Split ``[USER@]HOST[:PORT]`` (``[::1]:2222`` for IPv6) into (user, host, port)."""
    user, _sep, hostport = target.rpartition("@")
    port = default_port
    if hostport.startswith("["):
        host, _sep, rest = hostport[1:].partition("]")
        if rest.startswith(":"):
            port = rest[1:]
    elif hostport.count(":") == 1:
        host, port = hostport.split(":")
    else:
        host = hostport
    try:
        port = int(port)
    except ValueError:
        raise FetchError("ssh target %s: port %r is not a number" % (target, port)) from None
    if not host:
        raise FetchError("ssh target %r has no host; use [USER@]HOST[:PORT]" % target)
    return (user or None), host, port


class SSHExec:
    """``exec_fn`` over one SSH connection; use as a context manager or call close()."""

    def __init__(self, host, port=22, user=None, key_filename=None, known_hosts=None, password=None,
                 timeout=CONNECT_TIMEOUT_S, max_output=None):
        self.host, self.port, self.user = host, port, user
        self.key_filename = key_filename
        self.known_hosts = known_hosts
        self.password = password
        self.timeout = timeout
        self.max_output = output_limit(DEFAULT_MAX_BYTES) if max_output is None else max_output
        self._client = None

    def connect(self):
        paramiko = _paramiko()
        client = paramiko.SSHClient()
        known = self.known_hosts or os.path.expanduser("~/.ssh/known_hosts")
        if os.path.exists(known):
            client.load_host_keys(known)
        elif self.known_hosts:
            raise FetchError("known_hosts file %s does not exist; give the file with the sandbox's host key"
                             % self.known_hosts)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(self.host, port=self.port, username=self.user, key_filename=self.key_filename,
                           password=self.password, timeout=self.timeout, banner_timeout=self.timeout,
                           auth_timeout=self.timeout, look_for_keys=self.key_filename is None,
                           allow_agent=self.key_filename is None)
        except paramiko.SSHException as exc:
            client.close()
            raise FetchError("ssh %s:%d: %s (check the host key in %s and the user's key)"
                             % (self.host, self.port, exc, known)) from None
        except OSError as exc:
            client.close()
            raise FetchError("ssh %s:%d: %s" % (self.host, self.port, exc.strerror or exc)) from None
        self._client = client
        return self

    def close(self):
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self):
        return self.connect() if self._client is None else self

    def __exit__(self, *exc):
        self.close()

    def __call__(self, argv):
        if self._client is None:
            self.connect()
        paramiko = _paramiko()
        try:
            chan = self._client.get_transport().open_session(timeout=self.timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise FetchError("ssh %s:%d: cannot open a session: %s" % (self.host, self.port, exc)) from None
        try:
            chan.exec_command(shell_join(argv))
            chan.shutdown_write()
            return self._collect(chan)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise FetchError("ssh %s:%d: the command failed: %s" % (self.host, self.port, exc)) from None
        finally:
            chan.close()

    def _collect(self, chan):
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + max(self.timeout, 1) * 10
        while True:
            if chan.recv_ready():
                out += chan.recv(65536)
                if len(out) > self.max_output:
                    # Stop reading: what is already here is all the controller will accept.
                    return -1, bytes(out[: self.max_output + 1]), bytes(err)
                continue
            if chan.recv_stderr_ready():
                if len(err) < 64 * 1024:
                    err += chan.recv_stderr(65536)
                else:
                    chan.recv_stderr(65536)
                continue
            if chan.exit_status_ready() and chan.eof_received:
                return chan.recv_exit_status(), bytes(out), bytes(err)
            if time.monotonic() > deadline:
                return -1, bytes(out), bytes(err) + b"\nsandboxguard: ssh command timed out"
            select.select([chan], [], [], 0.2)
