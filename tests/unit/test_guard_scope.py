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
    held, refused, absent = roots()
    assert [(opened.path, source) for opened, source in held] == [(str(tmp_path / "a"), "operator")]
    assert refused == [] and absent == [str(tmp_path / "b")]
    assert held[0][0].is_dir and os.fstat(held[0][0].fd).st_ino == os.stat(str(tmp_path / "a")).st_ino
    held[0][0].close()
    (tmp_path / "b").mkdir()
    os.symlink(str(tmp_path / "a"), str(tmp_path / "b" / "c"))
    roots = guard_scope.sources([], [], str(tmp_path / "b" / "c"), engine=False)[0]
    usable, refused, _absent = roots()
    assert usable == [] and "goes through a symlink" in refused[0]["reason"]
    assert callable(guard_scope.sources([], ["/nowhere"], None, docker_host="unix:///nowhere.sock")[1])


def test_the_engine_query_keeps_the_healthy_engines_mounts_and_names_the_failed_one(tmp_path, monkeypatch):
    """Issue 26: one engine's error is its own; the guard's engine query still lists the bind
    mounts the healthy engines report, and says which engine failed."""
    import os

    import engine_group
    from sandboxguard import docker_engine
    from sandboxguard._guard import guard_scope

    root = tmp_path / "hermes" / "sandboxes" / "docker"
    (root / "task" / "workspace").mkdir(parents=True)
    docs = [engine_group.bind_doc("c" * 64, root / "task" / "workspace", "/w")]
    engine_group.install(monkeypatch, docs)
    other_fs = {os.path.realpath(str(root / "task" / "workspace"))}
    monkeypatch.setattr(guard_scope, "_other_filesystem", lambda target: target.realpath in other_fs)
    answer = guard_scope.engine_source(None, [str(tmp_path / "hermes")])()
    assert "error" not in answer
    assert [r[0] for r in answer["roots"]] == sorted(other_fs)
    assert [(e["name"], bool(e["error"])) for e in answer["engines"]] == [("docker", False),
                                                                        (engine_group.BAD_NAME, True)]
    engine_group.install(monkeypatch, docs, good_error=docker_engine.EngineError("no answer within 40 s"))
    assert "HTTP 500" in guard_scope.engine_source(None, [str(tmp_path / "hermes")])()["error"]
