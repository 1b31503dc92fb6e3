# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""safe_fetch over the ansible.builtin.local connection (the sandbox is this machine)."""
import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.controller, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)

PLAYBOOK = textwrap.dedent("""\
    - name: safe_fetch over ansible.builtin.local
      hosts: localhost
      connection: local
      gather_facts: false
      tasks:
        - name: Fetch each case
          sandboxguard.boundary.safe_fetch:
            src: "{{ home }}/{{ item }}"
            dest: "{{ out }}/{{ item }}.d"
            remote_home: "{{ home }}"
            fail_on_refused: false
          loop: [model.bin, keylink, tool]
          register: cases

        - name: A refusal fails the task by default
          sandboxguard.boundary.safe_fetch:
            src: "{{ home }}/keylink"
            dest: "{{ out }}/failing"
          register: failing
          ignore_errors: true

        - name: A refusal creates no destination directory
          sandboxguard.boundary.safe_fetch:
            src: /etc/shadow
            dest: "{{ out }}/never/made"
            fail_on_refused: false
          register: shadow

        - name: A ~ source is read against the known home
          sandboxguard.boundary.safe_fetch:
            src: "~/model.bin"
            dest: "{{ out }}/tilde"
            remote_home: "{{ home }}"
          register: tilde

        - name: A ~ source is refused when the home is unknown
          sandboxguard.boundary.safe_fetch:
            src: "~/model.bin"
            dest: "{{ out }}/tilde-unknown"
            fail_on_refused: false
          register: tilde_unknown

        - name: A store of the known Hermes home is refused
          sandboxguard.boundary.safe_fetch:
            src: "{{ home }}/data/hermes/state.db-wal"
            dest: "{{ out }}/hermes"
            remote_home: "{{ home }}"
            remote_hermes_home: "{{ home }}/data/hermes"
            fail_on_refused: false
          register: hermes_store

        - name: Save the results for the tests
          ansible.builtin.copy:
            content: "{{ {'cases': cases.results, 'failing': failing, 'shadow': shadow, 'tilde': tilde,
                          'tilde_unknown': tilde_unknown, 'hermes_store': hermes_store} | to_json }}"
            dest: "{{ out }}/results.json"
            mode: "0600"
          vars:
            ansible_python_interpreter: "{{ ansible_playbook_python }}"
    """)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    home = tmp_path_factory.mktemp("local-home")
    out = tmp_path_factory.mktemp("local-out")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_bytes(b"key\n")
    data = os.urandom(200 * 1024)
    (home / "model.bin").write_bytes(data)
    (home / "keylink").symlink_to(home / ".ssh" / "id_rsa")
    (home / "tool").write_bytes(b"#!/bin/sh\n")
    (home / "data" / "hermes").mkdir(parents=True)
    (home / "data" / "hermes" / "state.db-wal").write_bytes(b"wal\n")
    os.chmod(home / "tool", 0o2755)
    (out / "fetch.yml").write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(TOP, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCALHOST_WARNING="False", PATH=BIN + os.pathsep + os.environ["PATH"])
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", str(out / "fetch.yml"),
                           "-e", json.dumps({"home": str(home), "out": str(out)})],
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    path = out / "results.json"
    assert path.exists(), "ansible-playbook failed:\n%s\n%s" % (proc.stdout[-4000:], proc.stderr[-2000:])
    results = json.loads(path.read_text())
    return {"proc": proc, "cases": {r["item"]: r for r in results["cases"]}, "failing": results["failing"],
            "data": data, "out": out, **{key: results[key] for key in ("shadow", "tilde", "tilde_unknown",
                                                                         "hermes_store")}}


def test_playbook_succeeds(run):
    assert run["proc"].returncode == 0, run["proc"].stdout[-3000:]


def test_binary_file_round_trips_byte_exact(run):
    assert (run["out"] / "model.bin.d" / "model.bin").read_bytes() == run["data"]
    assert run["cases"]["model.bin"]["sha256"] == hashlib.sha256(run["data"]).hexdigest()


def test_symlink_to_the_key_is_refused_and_nothing_is_written(run):
    assert run["cases"]["keylink"]["refused_code"] == "denylisted"
    assert not (run["out"] / "keylink.d").exists()


def test_a_refused_fetch_creates_no_destination_directory_on_the_controller(run):
    assert (run["shadow"]["stage"], run["shadow"]["refused_code"]) == ("pass1", "denylisted")
    assert run["shadow"]["bytes_received"] == 0
    assert not (run["out"] / "never").exists()


def test_a_tilde_source_is_fetched_against_the_known_home(run):
    assert run["tilde"]["fetched"] is True
    assert (run["out"] / "tilde" / "model.bin").read_bytes() == run["data"]


def test_a_tilde_source_is_refused_when_the_home_is_unknown(run):
    assert run["tilde_unknown"]["refused_code"] == "not_absolute"
    assert not (run["out"] / "tilde-unknown").exists()


def test_a_store_of_the_known_hermes_home_is_refused(run):
    assert run["hermes_store"]["refused_code"] == "denylisted"
    assert "state.db-wal" in run["hermes_store"]["refused"]


def test_setgid_file_arrives_without_setgid(run):
    assert run["cases"]["tool"]["remote_mode"] == "02755"
    assert stat.S_IMODE(os.stat(run["out"] / "tool.d" / "tool").st_mode) == 0o644


def test_refusal_fails_the_task_unless_told_otherwise(run):
    assert run["failing"]["failed"] is True
    assert "denylisted" in run["failing"]["msg"]
    assert not (run["out"] / "failing").exists()
