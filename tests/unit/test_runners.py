# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""CI runner scope providers (runners.py): GitLab's config.toml, the systemd units of GitHub
runners, the GitHub runner's container label; and the ownership return to a tree's owner
(chown_from="others") the runner cleanup walks with."""
import hashlib
import os
import sys

import pytest
from sandboxguard._privileged import runners
from sandboxguard._walk.fileops import AnyBut, StripOptions
from sandboxguard.errors import InputError

needs_tomllib = pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+ (error tested below)")

CONFIG = '''
concurrent = 2

[[runners]]
  name = "docker-builds"
  url = "https://gitlab.example.com/"
  executor = "docker"
  builds_dir = "/builds"
  cache_dir = "/cache"
  [runners.docker]
    image = "debian:12"
    volumes = ["/cache", "/srv/gitlab-cache:/cache:rw", "certs:/certs/client", "/srv/shared//tools/:/tools:ro",
               "/var/run/docker.sock:/var/run/docker.sock"]

[[runners]]
  name = "host-builds"
  executor = "docker"
  builds_dir = "/builds/ci"
  [runners.docker]
    volumes = ["/srv/builds:/builds", "/srv/gitlab-cache:/cache"]
    cache_dir = "/srv/host-cache"

[[runners]]
  name = "shell"
  executor = "shell"
  builds_dir = "/home/gitlab-runner/builds"
'''


def write_config(tmp_path, text=CONFIG):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@needs_tomllib
def test_gitlab_host_bound_volumes_are_exactly_the_roots(tmp_path):
    found = runners.gitlab_roots(write_config(tmp_path))
    assert found["roots"] == [
        {"path": "/srv/gitlab-cache", "source": "GitLab runner docker-builds volume", "owner": None},
        {"path": "/srv/shared/tools", "source": "GitLab runner docker-builds volume", "owner": None},
        {"path": "/srv/builds", "source": "GitLab runner host-builds volume", "owner": None},
        {"path": "/srv/host-cache", "source": "GitLab runner host-builds docker cache_dir", "owner": None},
    ]
    assert found["labels"] == {} and found["errors"] == []


@needs_tomllib
def test_gitlab_named_and_anonymous_volumes_are_out_of_scope_with_a_reason(tmp_path):
    found = runners.gitlab_roots(write_config(tmp_path))
    out = {(entry["source"], entry["what"]): entry["reason"] for entry in found["out_of_scope"]}
    assert out[("GitLab runner docker-builds", "volume certs:/certs/client")] == runners.NAMED_VOLUME_REASON
    assert out[("GitLab runner docker-builds", "volume /cache")] == runners.ANONYMOUS_VOLUME_REASON
    assert out[("GitLab runner docker-builds", "volume /var/run/docker.sock:/var/run/docker.sock")] == \
        runners.SOCKET_REASON
    # builds_dir /builds has no host bind there: a named volume (the default); /cache is bound
    assert "no host directory is bound there" in out[("GitLab runner docker-builds", "builds_dir /builds")]
    assert ("GitLab runner docker-builds", "cache_dir /cache") not in out
    # /builds/ci is below the host bind /srv/builds:/builds: covered by that root
    assert ("GitLab runner host-builds", "builds_dir /builds/ci") not in out
    assert "not a docker executor" in out[("GitLab runner shell", "executor shell")]
    assert all(not entry["what"].startswith("volume /srv") for entry in found["out_of_scope"])


@needs_tomllib
def test_gitlab_config_that_is_not_toml_is_refused_naming_the_file(tmp_path):
    path = write_config(tmp_path, "[[runners]\nname = 1\n")
    with pytest.raises(InputError, match=r"config\.toml: not valid TOML"):
        runners.gitlab_roots(path)


def test_gitlab_missing_config_is_refused_naming_it(tmp_path):
    with pytest.raises(runners.RunnerRefused, match=r"does not exist; give the GitLab runner's config\.toml"):
        runners.gitlab_roots(str(tmp_path / "nope.toml"))


def test_gitlab_config_without_tomllib_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(runners, "tomllib", None)  # as on Python 3.9 and 3.10
    with pytest.raises(InputError) as caught:
        runners.gitlab_roots(write_config(tmp_path))
    text = str(caught.value)
    assert "needs Python 3.11 or later (tomllib)" in text
    assert "as operator roots" in text


def test_gitlab_config_behind_a_symlink_below_a_user_directory_is_refused(tmp_path):
    real = write_config(tmp_path)
    os.chmod(tmp_path, 0o777)  # a directory another user can change: its links are never followed
    os.symlink(real, str(tmp_path / "link.toml"))
    with pytest.raises(InputError, match="not a regular file"):
        runners.gitlab_roots(str(tmp_path / "link.toml"))


def test_github_label_is_the_runners_path_hash():
    # DockerCommandManager: DockerInstanceLabel = IOUtil.GetPathHash(root directory)[:6],
    # GetPathHash = sha256 of the path lowercased
    expected = hashlib.sha256(b"/home/gh/actions-runner").hexdigest()[:6]
    assert runners.github_label("/home/gh/Actions-Runner") == expected


def test_unit_working_directory_is_read_from_the_service_section():
    unit = (b"[Unit]\nDescription=GitHub Actions Runner (org-repo.r1)\nWorkingDirectory=/wrong\n\n"
            b"[Service]\nExecStart=/home/gh/actions-runner/runsvc.sh\nUser=gh\n"
            b"WorkingDirectory=-/home/gh/actions-runner\nKillMode=process\n")
    assert runners._unit_working_directory(unit) == "/home/gh/actions-runner"
    assert runners._unit_working_directory(b"[Service]\nExecStart=/x\n") is None


def test_systemd_units_that_are_not_runners_are_errors_and_other_units_are_ignored(tmp_path):
    units = tmp_path / "system"
    units.mkdir()
    (units / "actions.runner.org-repo.r1.service").write_text("[Service]\nExecStart=/x\n")
    (units / "actions.runner.org-repo.r2.service").write_text("[Service]\nWorkingDirectory=%s\n" % (tmp_path / "no"))
    (units / "ssh.service").write_text("[Service]\nWorkingDirectory=/\n")
    found = runners.github_runners_from_systemd(str(units))
    assert found["roots"] == []
    assert [(e["path"].rsplit("/", 1)[-1], e["op"]) for e in found["errors"]] == [
        ("actions.runner.org-repo.r1.service", "read unit"), ("no", "open runner")]
    assert runners.github_runners_from_systemd(str(tmp_path / "absent")) == runners.new_found()


def test_chown_from_others_takes_every_uid_and_gid_but_the_owners():
    opts = StripOptions(actions=("chown",), chown_to=(1000, 1001), chown_from="others")
    assert 0 in opts.chown_from and 1001 in opts.chown_from and 1000 not in opts.chown_from
    assert 0 in opts.chown_gids and 1001 not in opts.chown_gids
    assert isinstance(opts.chown_from, AnyBut)
    keep_group = StripOptions(actions=("chown",), chown_to=(1000, -1), chown_from="others")
    assert keep_group.chown_gids == frozenset()
    assert StripOptions(actions=("chown",), chown_to=(1000, 1000)).chown_gids == frozenset()


def test_chown_from_others_needs_the_chown_action_and_other_strings_are_refused():
    with pytest.raises(InputError, match="needs the chown action"):
        StripOptions(chown_from="others")
    with pytest.raises(InputError, match="chown_from must be uids"):
        StripOptions(actions=("chown",), chown_to=(1, 1), chown_from="root")


def test_the_helper_runs_exactly_runner_cleanup_with_its_one_argument_in_isolated_mode(tmp_path):
    from sandboxguard._privileged import runner_texts

    text = runner_texts.helper_script(python="/usr/bin/python3", install_dir="/usr/local/lib/sandboxguard")
    assert text.startswith("#!/usr/bin/python3 -I\n")
    compile(text, "sandboxguard-runner-cleanup", "exec")
    assert 'main(["runner-cleanup", "--", sys.argv[1]])' in text
    assert "sys.path.insert(0, '/usr/local/lib/sandboxguard')" in text
    assert "len(sys.argv) != 2" in text
