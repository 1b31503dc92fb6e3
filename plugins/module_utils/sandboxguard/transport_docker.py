# GENERATED from python/src/sandboxguard/transport_docker.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""An exec channel into a container with the Docker SDK's exec API, for ``fetch.fetch``.

The ``docker`` package is imported only when no client is given, so the library core stays
standard-library only; a missing package is a TransportUnavailable naming it. Output is
streamed and reading stops after ``max_output`` bytes of stdout.
"""
from . import docker_engine
from .fetch import DEFAULT_MAX_BYTES, FetchError, TransportUnavailable, output_limit


def docker_client():
    """A Docker SDK client from the environment (DOCKER_HOST or the local socket).

    docker_engine.connect is the one client helper; its errors become this transport's.
    """
    try:
        return docker_engine.connect()
    except docker_engine.SDKMissing as exc:
        raise TransportUnavailable("the docker transport: %s" % exc) from None
    except docker_engine.EngineError as exc:
        raise FetchError(str(exc)) from None


class DockerExec:
    """``exec_fn`` running argv in ``container`` (name or id) as ``user`` (default: the image's)."""

    def __init__(self, container, user=None, client=None, max_output=None):
        self.container = container
        self.user = user or ""
        self.client = client
        self.max_output = output_limit(DEFAULT_MAX_BYTES) if max_output is None else max_output

    def __call__(self, argv):
        if self.client is None:
            self.client = docker_client()
        api = self.client.api
        try:
            created = api.exec_create(self.container, list(argv), stdout=True, stderr=True, stdin=False, tty=False,
                                      user=self.user)
        except Exception as exc:  # docker.errors.* without importing docker here
            raise FetchError("docker exec in %s: %s" % (self.container, exc)) from None
        out, err = bytearray(), bytearray()
        try:
            stream = api.exec_start(created["Id"], stream=True, demux=True)
            try:
                for chunk_out, chunk_err in stream:
                    if chunk_out:
                        out += chunk_out
                        if len(out) > self.max_output:
                            return -1, bytes(out[: self.max_output + 1]), bytes(err)
                    if chunk_err and len(err) < 64 * 1024:
                        err += chunk_err
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            rc = api.exec_inspect(created["Id"]).get("ExitCode")
        except Exception as exc:  # docker.errors.*, requests and socket errors
            raise FetchError("docker exec in %s: %s" % (self.container, exc)) from None
        return (rc if rc is not None else -1), bytes(out), bytes(err)
