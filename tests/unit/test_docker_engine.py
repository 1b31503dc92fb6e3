# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""One Docker client helper: the same missing-SDK text from the sweep and the fetch transport."""
import builtins
import sys

import pytest
from sandboxguard import docker_engine, fetch, transport_docker


@pytest.fixture
def no_sdk(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "docker" or name.startswith("docker."):
            raise ImportError("No module named 'docker'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "docker", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)


def test_a_missing_sdk_says_how_to_install_it_in_library_terms(no_sdk):
    with pytest.raises(docker_engine.SDKMissing) as caught:
        docker_engine.connect()
    text = str(caught.value)
    assert "Docker SDK for Python is not installed for %s" % sys.executable in text
    assert "apt-get install python3-docker" in text and "pip install docker" in text
    assert "role" not in text and "sandbox_sweep" not in text  # the library names no role or role variable


def test_the_fetch_transport_gives_the_same_text_for_a_missing_sdk(no_sdk):
    with pytest.raises(docker_engine.SDKMissing) as engine:
        docker_engine.connect()
    with pytest.raises(fetch.TransportUnavailable) as transport:
        transport_docker.docker_client()
    assert str(transport.value) == "the docker transport: %s" % engine.value


def test_an_unreachable_engine_is_one_engine_error_for_both(monkeypatch):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/sandboxguard-test.sock")
    with pytest.raises(docker_engine.EngineError, match="cannot reach the Docker engine") as engine:
        docker_engine.connect(timeout=2)
    with pytest.raises(fetch.FetchError) as transport:
        transport_docker.docker_client()
    assert str(transport.value) == str(engine.value)
