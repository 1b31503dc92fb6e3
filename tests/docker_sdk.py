# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The Docker SDK for Python, for the tests' own setup only (the containers an attack runs in,
images, their events): the library speaks the Engine API with its own client
(``docker_engine.connect``) and needs no SDK; the tests keep it (requirements/dev.txt)."""
import pytest


def sdk_client(url=None):
    """A docker.DockerClient for ``url`` (default: the environment, DOCKER_HOST or Docker's socket)."""
    import docker

    try:
        client = docker.DockerClient(base_url=url, timeout=120) if url else docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:  # docker.errors.DockerException, requests' errors
        pytest.fail("cannot reach the engine%s: %s (make test starts one: tools/docker-engine.sh)" % (
            " at " + url if url else "", exc), pytrace=False)
    return client
