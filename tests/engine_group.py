# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Two engines in one docker_engine.Engines group, without sockets: Docker answering with the
inspect documents a test puts in a list, and a user's rootless Podman socket whose every
answer is an HTTP 500 (issue 26's first fake engine). For unit tests of what the scope's
consumers (audit, guard, remediate) do with one engine's error."""
from sandboxguard import docker_engine
from sandboxguard._core.engine_api import APIError

GOOD_URL = "unix:///var/run/docker.sock"
BAD_URL = "unix:///run/user/1001/podman/podman.sock"
BAD_NAME = "podman-rootless-1001"


class FakeClient:
    """The engine client's calls the scope makes (info, containers, inspect), from a list of
    inspect documents; ``fail``: what every call raises instead."""

    def __init__(self, docs=(), fail=None):
        self.docs, self.fail = docs, fail

    def _check(self):
        if self.fail is not None:
            raise self.fail

    def info(self):
        self._check()
        return {"OSType": "linux", "SecurityOptions": ["name=seccomp"]}

    def containers(self, all=True, filters=None):
        self._check()
        return [{"Id": doc["Id"]} for doc in self.docs]

    def inspect_container(self, name):
        self._check()
        return next(doc for doc in self.docs if doc["Id"] == name)


def bind_doc(cid, source, destination="/workspace"):
    """An inspect document of a stopped container with one rw bind of ``source``."""
    return {"Id": cid, "Name": "/" + cid[:12], "Config": {"Image": "img", "Labels": {}}, "State": {"Status": "exited"},
            "Mounts": [{"Type": "bind", "Source": str(source), "Destination": destination, "RW": True}]}


def install(monkeypatch, docs, bad=True, good_error=None):
    """Make ``auto`` find the two engines (the bad one only when ``bad``; ``good_error``: what
    Docker's every answer raises instead); returns the list of groups handed out (one per
    engines_present call)."""
    handed = []

    def present(base_url=None, timeout=60, urls=None):
        members = [docker_engine.Engine("docker", GOOD_URL, FakeClient(docs, good_error), "docker", "20.10")]
        if bad:
            members.append(docker_engine.Engine(
                BAD_NAME, BAD_URL, FakeClient(fail=APIError("GET /info: HTTP 500: fake engine", 500)),
                "podman", None, 1001))
        handed.append(docker_engine.Engines(members))
        return handed[-1]

    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(docker_engine, "engine_urls", lambda *args, **kwargs: [GOOD_URL] + ([BAD_URL] if bad else []))
    monkeypatch.setattr(docker_engine, "engines_present", present)
    return handed
