# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""scope.derive, the one scope decision: providers, the one symlink check, accounts."""
import os

import pytest
from sandboxguard._privileged import scope
from sandboxguard.roots import RootRefused

# -- prove: no symlink anywhere ----------------------------------------------------------

def test_prove_keeps_a_path_without_symlinks_and_one_that_does_not_exist_yet(tmp_path):
    home = tmp_path / "home" / ".hermes"
    home.mkdir(parents=True)
    assert scope.prove(str(home)) == str(home)
    assert scope.prove(str(home) + "//sandboxes/./docker/") == str(home / "sandboxes" / "docker")
    assert scope.prove(str(home / "profiles" / ".." / "sandboxes")) == str(home / "sandboxes")
    assert scope.prove(str(home / "gone" / ".." / "..")) == str(home.parent)
    (home / "file").write_text("")
    assert scope.prove(str(home / "file" / "x")) == str(home / "file" / "x")


@pytest.mark.parametrize("spelling", ["link", "link/docker", "real/../link/docker", "missing/../../home/link",
                                      "real/../link/", "file/../link"])
def test_prove_refuses_a_symlink_anywhere_however_the_path_is_spelled(tmp_path, spelling):
    home = tmp_path / "home"
    (home / "real").mkdir(parents=True)
    (home / "file").write_text("")
    (tmp_path / "other-user" / "docker").mkdir(parents=True)
    os.symlink(str(tmp_path / "other-user"), str(home / "link"))
    with pytest.raises(RootRefused, match="goes through a symlink") as caught:
        scope.prove(str(home / spelling))
    assert str(home / "link") in caught.value.reason and str(tmp_path / "other-user") in caught.value.reason


def test_prove_records_the_owners_of_what_it_walked(tmp_path):
    (tmp_path / "a").mkdir()
    owners = {}
    scope.prove(str(tmp_path / "a" / "missing"), owners)
    assert owners[str(tmp_path / "a")] == (os.getuid(), os.getgid()) and owners["/"] == (0, 0)
    assert str(tmp_path / "a" / "missing") not in owners


# -- derive ------------------------------------------------------------------------------

def _home(tmp_path, profiles=("work", "lab")):
    home = tmp_path / ".hermes"
    (home / "sandboxes" / "docker").mkdir(parents=True)
    for name in profiles:
        (home / "profiles" / name / "sandboxes").mkdir(parents=True)
    return home


def test_derive_gives_the_sandbox_dir_each_home_and_each_profile_in_order(tmp_path):
    home = _home(tmp_path, ("b", "a", ".deleted", "Caps"))
    found = scope.derive(scope.Request([str(home)], str(tmp_path / "sb"),
                                       [str(tmp_path / "ci"), str(home / "sandboxes" / "docker")]))
    assert [(r["path"], r["source"], r["owner"]) for r in found["roots"]] == [
        (str(tmp_path / "sb" / "docker"), "TERMINAL_SANDBOX_DIR", None),
        (str(home / "sandboxes" / "docker"), "HERMES_HOME %s" % home, None),
        (str(home / "profiles" / "a" / "sandboxes" / "docker"), "profile a of %s" % home, None),
        (str(home / "profiles" / "b" / "sandboxes" / "docker"), "profile b of %s" % home, None),
        (str(tmp_path / "ci"), "operator", None),  # the operator's repeat of a Hermes root is dropped
    ]
    assert found["refused"] == []
    me = __import__("pwd").getpwuid(os.getuid()).pw_name
    assert found["accounts"][me] == [
        "owner of the Hermes home %s" % home, "owner of the sandbox directory %s/sandboxes/docker" % home,
        "owner of the profile %s/profiles/a" % home, "owner of the profile %s/profiles/b" % home]


def test_derive_refuses_relative_system_and_symlinked_roots_with_their_reasons(tmp_path):
    home = _home(tmp_path, ())
    (tmp_path / "victim").mkdir()
    os.symlink(str(tmp_path / "victim"), str(home / "profiles"))
    found = scope.derive(scope.Request([str(home)], paths=["rel", "/", "/etc", "/usr/lib/x"]))
    reasons = {item["path"]: item["reason"] for item in found["refused"]}
    assert reasons["rel"] == scope.REASON_RELATIVE
    assert "system" in reasons["/"] and "system path (/etc" in reasons["/etc"] and "/usr" in reasons["/usr/lib/x"]
    assert "goes through a symlink, %s (to %s)" % (home / "profiles", tmp_path / "victim") in reasons[
        str(home / "profiles")]
    assert [r["path"] for r in found["roots"]] == [str(home / "sandboxes" / "docker")]


def test_a_provider_adds_roots_with_their_source_and_owner_between_hermes_and_the_operator(tmp_path):
    work = tmp_path / "runner" / "_work"
    work.mkdir(parents=True)

    def runner():
        return [{"path": str(work), "source": "GitHub runner %s" % work.parent, "owner": (1234, 1234)},
                {"path": str(tmp_path / "bad"), "reason": "named by a provider that refused it"}]

    found = scope.derive(scope.Request([], None, [str(work), str(tmp_path / "op")], providers=[runner]))
    assert [(r["realpath"], r["source"], r["owner"]) for r in found["roots"]] == [
        (str(work), "GitHub runner %s" % work.parent, (1234, 1234)), (str(tmp_path / "op"), "operator", None)]
    assert found["refused"] == [{"path": str(tmp_path / "bad"), "reason": "named by a provider that refused it"}]


def test_a_provider_result_passes_its_labels_out_of_scope_and_errors_on(tmp_path):
    work = tmp_path / "_work"
    work.mkdir()

    def gitlab_like():
        return {"roots": [{"path": str(work), "source": "GitLab runner a", "owner": None}],
                "labels": {"abc123": "GitHub runner /r"},
                "out_of_scope": [{"what": "volume cache", "source": "GitLab runner a", "reason": "named volume"}],
                "errors": [{"path": "/etc/gitlab-runner/config.toml", "op": "read", "error": "x"}]}

    found = scope.derive(scope.Request(providers=[gitlab_like]))
    assert [r["realpath"] for r in found["roots"]] == [str(work)]
    assert found["labels"] == {"abc123": "GitHub runner /r"} and len(found["out_of_scope"]) == 1
    assert found["errors"] == [{"path": "/etc/gitlab-runner/config.toml", "op": "read", "error": "x"}]
    assert scope.derive(scope.Request())["labels"] == {} and scope.derive(scope.Request())["roots"] == []
