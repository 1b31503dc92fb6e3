# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""tools/release.sh on a scratch clone: one command gives the release commit, tag, changelog and tarball.

Nothing here touches this checkout: the script runs in a `git clone` of HEAD in a temp dir
(with this checkout's uncommitted tools/release.sh copied in and committed there, so the
test checks the script as it is now). galaxy-importer is the `importer` layer's job, so the
runs here pass --skip-import.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.dirname(os.path.dirname(sys.executable))


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def scratch(tmp_path):
    clone = tmp_path / "boundary"
    git(TOP, "clone", "-q", TOP, str(clone))
    shutil.copy(os.path.join(TOP, "tools", "release.sh"), clone / "tools" / "release.sh")
    if not glob.glob(str(clone / "changelogs" / "fragments" / "*.yml")):
        # right after a release the fragments are gone: give the next one something to carry
        (clone / "changelogs" / "fragments").mkdir(exist_ok=True)
        (clone / "changelogs" / "fragments" / "next.yml").write_text(
            "minor_changes:\n  - release test - a change for the next release.\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "--allow-empty", "-m", "the release script under test")
    return clone


def bump(clone, minor=1, patch=0):
    """A version newer than the clone's galaxy.yml (the tests must not assume which one is current)."""
    major, current_minor, _ = (int(part) for part in load(clone / "galaxy.yml")["version"].split("."))
    return "%d.%d.%d" % (major, current_minor + minor, patch)


def release(clone, *args):
    env = dict(os.environ, SANDBOXGUARD_VENV=VENV)
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    return subprocess.run(["bash", "tools/release.sh", *args], cwd=clone, env=env, capture_output=True, text=True)


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def test_release_commits_tags_and_builds_the_version_with_every_fragment(scratch):
    fragments = sorted(glob.glob(str(scratch / "changelogs" / "fragments" / "*.yml")))
    assert fragments, "nothing to release in this checkout"
    expected = []
    for path in fragments:
        for section, entries in load(path).items():
            # `trivial` is antsibull-changelog's section for what no changelog lists
            if section != "trivial":
                expected += entries if isinstance(entries, list) else []
    version = bump(scratch)
    done = release(scratch, version, "--skip-import")
    assert done.returncode == 0, done.stderr[-3000:]
    assert load(scratch / "galaxy.yml")["version"] == version
    assert 'version = "%s"' % version in (scratch / "python" / "pyproject.toml").read_text()
    for init in ("python/src/sandboxguard/__init__.py", "plugins/module_utils/sandboxguard/__init__.py"):
        assert '__version__ = "%s"' % version in (scratch / init).read_text()
    changes = load(scratch / "changelogs" / "changelog.yaml")["releases"][version]["changes"]
    listed = [entry for key, entries in changes.items() if key != "release_summary" for entry in entries]
    assert sorted(listed) == sorted(expected)
    assert changes["release_summary"]
    title = "v" + version
    assert "\n%s\n%s\n" % (title, "=" * len(title)) in (scratch / "CHANGELOG.rst").read_text()
    assert glob.glob(str(scratch / "changelogs" / "fragments" / "*.yml")) == []
    assert git(scratch, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(scratch, "log", "-1", "--format=%s").strip() == "Release " + version
    assert git(scratch, "describe", "--exact-match", "HEAD").strip() == version
    tarball = scratch / ".cache" / "release" / ("sandboxguard-boundary-%s.tar.gz" % version)
    with tarfile.open(tarball) as tar:
        manifest = yaml.safe_load(tar.extractfile("MANIFEST.json"))
        names = tar.getnames()
    assert manifest["collection_info"]["version"] == version
    assert "CHANGELOG.rst" in names and not [n for n in names if n.startswith(("molecule/", "tests/unit/"))]


@pytest.mark.parametrize(("version", "message"), [
    ("v1.0.0", "a semantic version"),
    ("1.0", "a semantic version"),
    ("0.0.1", "is not newer than galaxy.yml's"),
])
def test_release_refuses_a_bad_version_and_changes_nothing(scratch, version, message):
    head = git(scratch, "rev-parse", "HEAD")
    done = release(scratch, version, "--skip-import")
    assert done.returncode == 1 and message in done.stderr
    assert git(scratch, "rev-parse", "HEAD") == head and git(scratch, "status", "--porcelain") == ""


def test_release_refuses_a_dirty_tree(scratch):
    (scratch / "README.md").write_text("changed\n")
    version = bump(scratch)
    done = release(scratch, version, "--skip-import")
    assert done.returncode == 1 and "uncommitted changes" in done.stderr
    assert load(scratch / "galaxy.yml")["version"] != version


def test_readme_pins_follow_the_release(scratch):
    version = bump(scratch, minor=2, patch=3)
    done = release(scratch, version, "--skip-import")
    assert done.returncode == 0, done.stderr[-3000:]
    readme = (scratch / "README.md").read_text() + (scratch / "docs" / "awx.md").read_text()
    assert set(re.findall(r"^ *version: (\S+)$", readme, re.M)) == {version}
    tarballs = re.findall(r"sandboxguard-boundary-(\d+\.\d+\.\d+)\.tar\.gz", readme)
    assert tarballs and set(tarballs) == {version}  # every tarball the install steps name
    changed = git(scratch, "show", "--name-only", "--format=", "HEAD").split()
    assert "README.md" in changed and "docs/awx.md" in changed
    # the man page and the completions carry the version too (generated again from the parser)
    assert "sandboxguard %s" % version in (scratch / "python" / "share" / "man" / "man1" / "sandboxguard.1").read_text()
    assert git(scratch, "status", "--porcelain") == ""


def test_no_commit_leaves_the_release_for_review(scratch):
    head = git(scratch, "rev-parse", "HEAD")
    tags = git(scratch, "tag")
    version = bump(scratch)
    done = release(scratch, version, "--no-commit", "--skip-import")
    assert done.returncode == 0, done.stderr[-3000:]
    assert git(scratch, "rev-parse", "HEAD") == head and git(scratch, "tag") == tags
    assert "galaxy.yml" in git(scratch, "status", "--porcelain")
