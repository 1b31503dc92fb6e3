# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The README's install-and-audit block works as written (issue 27 item 3).

The block between the README's ``first-hour`` markers is run, unchanged, by bash in a new
Ansible project (an empty directory holding the built tarball, as the README says), on this
machine as root: it installs the collection with ``-p ./collections``, writes the
``ansible.cfg`` that makes Ansible find it, and audits localhost's ``$HOME/.hermes``. Nothing of
the checkout or of the test environment can answer instead: ``ANSIBLE_COLLECTIONS_PATH``,
``ANSIBLE_CONFIG`` and the other ``ANSIBLE_*`` variables are removed, ``ANSIBLE_HOME`` points
into the project, ``PATH`` is the system's plus the venv's ``bin`` (where a user's ansible is).

Before, the README's install ended with "the playbook could not be found" (no
``collections_path`` for ``./collections``).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.root, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BLOCK = re.compile(r"<!-- first-hour: begin[^>]*-->\s*```sh\n(.*?)```\s*<!-- first-hour: end -->", re.S)


def first_hour_block():
    with open(os.path.join(TOP, "README.md"), encoding="utf-8") as handle:
        found = BLOCK.findall(handle.read())
    assert len(found) == 1, "README.md needs exactly one ```sh block between the first-hour markers"
    return found[0]


def test_the_block_is_there_and_installs_into_the_project_with_a_config_that_finds_it():
    block = first_hour_block()
    assert "ansible-galaxy collection install" in block and "-p ./collections" in block
    assert "collections_path = ./collections" in block and "sandboxguard.boundary.audit" in block


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("tarball")
    proc = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out), TOP],
                          capture_output=True, text=True, cwd=str(out), check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [name] = os.listdir(str(out))
    return out / name


def hermes_home(home, planted):
    """A user's ``~/.hermes`` with a persistent Docker sandbox (a setuid-root shell in it when
    *planted*), TERMINAL_HOME_MODE profile with its profile home, owned by nobody (the agent)."""
    hermes = home / ".hermes"
    ws = hermes / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    (hermes / "config.yaml").write_text("terminal:\n  home_mode: profile\n")
    (hermes / "home").mkdir(mode=0o700)
    (ws / "notes.txt").write_text("hello\n")
    for here, dirs, files in os.walk(str(home)):
        for name in [*dirs, *files]:
            os.chown(os.path.join(here, name), 65534, 65534)
    os.chown(str(home), 65534, 65534)
    if planted:
        shell = ws / "rootshell"
        shutil.copyfile("/bin/true", str(shell))
        os.chown(str(shell), 0, 0)
        os.chmod(str(shell), 0o4755)
    return hermes


def run_block(tmp_path, tarball, planted):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(str(tarball), str(project))
    home = tmp_path / "home"
    home.mkdir()
    hermes_home(home, planted)
    script = project.parent / "first-hour.sh"
    script.write_text("set -euo pipefail\n" + first_hour_block())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    # a user's PATH: the system's (the target's Python is Debian's, without the Docker SDK), then where
    # their ansible is; no pyenv shims, which need the real HOME
    env.update(HOME=str(home), ANSIBLE_HOME=str(project / ".ansible"), PATH=os.pathsep.join((SYSTEM_PATH, BIN)),
               ANSIBLE_LOCALHOST_WARNING="0")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=str(project), env=env,
                          check=False, timeout=900)
    return project, proc


def test_the_readme_block_as_written_installs_and_audits_a_clean_host(tmp_path, tarball):
    project, proc = run_block(tmp_path, tarball, planted=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    assert os.path.isdir(project / "collections" / "ansible_collections" / "sandboxguard" / "boundary")
    with open(project / "reports" / "boundary-audit.json") as handle:
        report = json.load(handle)
    [(name, host)] = report["hosts"].items()
    assert (name, host["status"]) == ("localhost", "clean"), host
    assert host["checks"]["privileged_files"]["roots"] == [str(tmp_path / "home" / ".hermes" / "sandboxes" / "docker")]
    assert {c["status"] for c in host["checks"].values()} == {"clean", "skipped"}
    assert os.path.exists(project / "reports" / "boundary-audit.sarif")
    if host["warnings"]:  # no engine asked (Debian's python3 has no Docker SDK): said on the console too
        assert "container engine discovery off or failed" in proc.stdout + proc.stderr


def test_the_readme_block_as_written_fails_on_a_setuid_shell_in_the_hermes_home(tmp_path, tarball):
    project, proc = run_block(tmp_path, tarball, planted=True)
    assert proc.returncode != 0, "a host with findings must fail the run"
    with open(project / "reports" / "boundary-audit.json") as handle:
        host = json.load(handle)["hosts"]["localhost"]
    assert host["status"] == "findings"
    assert [os.path.basename(f["path"]) for f in host["checks"]["privileged_files"]["findings"]] == ["rootshell"]
