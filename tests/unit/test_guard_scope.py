# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""guard_scope: the guard's roots come from scope.derive, with the CLI's default Hermes home."""
import os

from sandboxguard._guard import guard_scope


def test_the_default_hermes_home_is_taken_only_when_no_other_root_is_named():
    assert guard_scope.default_homes(["/h"], True, {}) == ["/h"]
    assert guard_scope.default_homes([], True, {"HERMES_HOME": "/env"}) == []
    assert guard_scope.default_homes([], False, {"HERMES_HOME": "/env"}) == ["/env"]
    assert guard_scope.default_homes([], False, {}) == [os.path.join(os.path.expanduser("~"), ".hermes")]


def test_explicit_paths_and_operator_roots_are_scope_roots_derived_again_at_each_call(tmp_path):
    (tmp_path / "a").mkdir()
    roots, engine = guard_scope.sources([str(tmp_path / "a")], [], None, [str(tmp_path / "b"), str(tmp_path / "a")],
                                        engine=False)
    assert engine is None
    assert roots() == ([(str(tmp_path / "a"), "operator"), (str(tmp_path / "b"), "operator")], [])
    (tmp_path / "b").mkdir()
    os.symlink(str(tmp_path / "a"), str(tmp_path / "b" / "c"))
    roots = guard_scope.sources([], [], str(tmp_path / "b" / "c"), engine=False)[0]
    usable, refused = roots()
    assert usable == [] and "goes through a symlink" in refused[0]["reason"]
    assert callable(guard_scope.sources([], ["/nowhere"], None, docker_host="unix:///nowhere.sock")[1])


def test_the_engine_query_keeps_the_healthy_engines_mounts_and_names_the_failed_one(tmp_path, monkeypatch):
    """Issue 26: one engine's error is its own; the guard's engine query still lists the bind
    mounts the healthy engines report, and says which engine failed."""
    import os

    from sandboxguard import docker_engine
    from sandboxguard._guard import guard_scope

    root = tmp_path / "hermes" / "sandboxes" / "docker"
    (root / "task" / "workspace").mkdir(parents=True)
    doc = {"Id": "c" * 64, "Name": "/box", "Config": {"Labels": {}}, "State": {"Running": True},
           "Mounts": [{"Type": "bind", "Source": str(root / "task" / "workspace"), "Destination": "/w", "RW": True}]}
    entries = [
        {"name": "docker", "url": "unix:///var/run/docker.sock", "kind": "docker", "version": "20.10", "error": None,
         "rootless_uid": None, "info": {}, "containers": [doc], "missing": []},
        {"name": "podman-rootless-1001", "url": "unix:///run/user/1001/podman/podman.sock", "kind": None,
         "version": None, "rootless_uid": 1001, "error": "GET /info: HTTP 500: boom", "info": None, "containers": [],
         "missing": []},
    ]
    monkeypatch.setattr(docker_engine, "survey", lambda *args, **kwargs: entries)
    other_fs = {str(root / "task" / "workspace")}
    monkeypatch.setattr(guard_scope, "_dev", lambda path: 2 if path in other_fs else 1)
    answer = guard_scope.engine_source(None, [str(tmp_path / "hermes")])()
    assert "error" not in answer
    assert [r[0] for r in answer["roots"]] == [os.path.realpath(str(root / "task" / "workspace"))]
    assert [(e["name"], bool(e["error"])) for e in answer["engines"]] == [("docker", False),
                                                                        ("podman-rootless-1001", True)]
    entries[0]["error"] = "no answer within its deadline"
    assert "HTTP 500" in guard_scope.engine_source(None, [str(tmp_path / "hermes")])()["error"]
