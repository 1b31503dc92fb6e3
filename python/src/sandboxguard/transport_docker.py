# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""An exec channel into a container through the Engine API's exec calls, for ``fetch.fetch``.

The library's own client (docker_engine.connect, standard library only): exec create, exec
start (its multiplexed output read as it arrives, engine_api.read_frames), exec inspect for
the exit code. Output is streamed and reading stops after ``max_output`` bytes of stdout;
the whole exec has a deadline (``timeout``, default DEFAULT_EXEC_TIMEOUT_S).
"""
from . import docker_engine
from ._core import engine_api
from ._fetch.policy import DEFAULT_MAX_BYTES, output_limit
from .fetch import FetchError

__all__ = ["DockerExec"]

DEFAULT_EXEC_TIMEOUT_S = 600.0
MAX_STDERR_BYTES = 64 * 1024


def docker_client():
    """An engine client from the environment (DOCKER_HOST or the local socket).

    docker_engine.connect is the one client helper; its errors become this transport's.
    """
    try:
        return docker_engine.connect()
    except docker_engine.EngineError as exc:
        raise FetchError(str(exc)) from None


class DockerExec:
    """``exec_fn`` running argv in ``container`` (name or id) as ``user`` (default: the image's)."""

    def __init__(self, container, user=None, client=None, max_output=None, timeout=DEFAULT_EXEC_TIMEOUT_S):
        self.container = container
        self.user = user or ""
        self.client = client
        self.max_output = output_limit(DEFAULT_MAX_BYTES) if max_output is None else max_output
        self.timeout = timeout

    def __call__(self, argv):
        if self.client is None:
            self.client = docker_client()
        client = self.client
        try:
            exec_id = client.exec_create(self.container, list(argv), user=self.user)
        except docker_engine.EngineError as exc:
            raise FetchError("docker exec in %s: %s" % (self.container, exc)) from None
        out, err = bytearray(), bytearray()
        try:
            with client.exec_start(exec_id, timeout=self.timeout) as response:
                for stream, piece in engine_api.read_frames(response):
                    if stream == 2:
                        err += piece[:max(0, MAX_STDERR_BYTES - len(err))]
                        continue
                    out += piece
                    if len(out) > self.max_output:
                        return -1, bytes(out[: self.max_output + 1]), bytes(err)
            rc = client.exec_inspect(exec_id).get("ExitCode")
        except docker_engine.EngineError as exc:
            raise FetchError("docker exec in %s: %s" % (self.container, exc)) from None
        return (rc if isinstance(rc, int) and not isinstance(rc, bool) else -1), bytes(out), bytes(err)
