# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""safe_fetch over the community.docker.docker connection: same protocol, same checks, same result shape."""
import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest
from fetch_fixtures import Container

pytestmark = [pytest.mark.controller, pytest.mark.docker, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
HOME = "/home/agent"

PLAYBOOK = textwrap.dedent("""\
    - name: safe_fetch over community.docker.docker
      hosts: boxes
      gather_facts: false
      tasks:
        - name: Fetch each case
          sandboxguard.boundary.safe_fetch:
            src: "{{ item.src }}"
            dest: "{{ out }}/{{ inventory_hostname }}/{{ item.case }}"
            remote_home: /home/agent
            strict: "{{ item.strict | default(false) }}"
            fail_on_refused: false
          loop:
            - {case: roundtrip, src: /home/agent/out/model.bin}
            - {case: keylink, src: /home/agent/out/report.pdf}
            - {case: hardlink, src: /home/agent/out/notes.txt}
            - {case: fifo, src: /home/agent/out/pipe}
            - {case: setuid, src: /home/agent/out/tool}
            - {case: strict, src: /home/agent/out/model.bin, strict: true}
          register: cases

        - name: Save the results for the tests
          ansible.builtin.copy:
            content: "{{ cases | to_json }}"
            dest: "{{ out }}/results.json"
            mode: "0600"
          delegate_to: localhost
          vars:
            ansible_connection: local
            ansible_python_interpreter: "{{ ansible_playbook_python }}"
    """)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    box = Container()
    out = tmp_path_factory.mktemp("ansible-docker-fetch")
    try:
        data = os.urandom(512 * 1024)
        box.put(HOME + "/out/model.bin", data)
        box.sh("cd %s/out && ln -s %s/.ssh/id_rsa report.pdf && ln %s/.ssh/id_rsa notes.txt && mkfifo pipe"
               % (HOME, HOME, HOME), user="agent")
        box.sh("cp /bin/true %s/out/tool && chmod 4755 %s/out/tool" % (HOME, HOME))
        inventory = out / "inventory.ini"
        inventory.write_text("[boxes]\n%s ansible_connection=community.docker.docker ansible_user=agent\n" % box.name)
        (out / "fetch.yml").write_text(PLAYBOOK)
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(TOP, "ansible.cfg"),
                   ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
                   ANSIBLE_FORCE_COLOR="0", PATH=BIN + os.pathsep + os.environ["PATH"])
        proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), str(out / "fetch.yml"),
                               "-e", json.dumps({"out": str(out)})],
                              capture_output=True, text=True, env=env, check=False, timeout=300)
        path = out / "results.json"
        assert path.exists(), "ansible-playbook failed:\n%s\n%s" % (proc.stdout[-4000:], proc.stderr[-2000:])
        results = {item["item"]["case"]: item for item in json.loads(path.read_text())["results"]}
        yield {"proc": proc, "results": results, "out": out / box.name, "data": data}
    finally:
        box.remove()


def test_playbook_succeeds(run):
    assert run["proc"].returncode == 0, run["proc"].stdout[-3000:]


def test_binary_file_round_trips_byte_exact(run):
    assert (run["out"] / "roundtrip" / "model.bin").read_bytes() == run["data"]
    assert run["results"]["roundtrip"]["sha256"] == hashlib.sha256(run["data"]).hexdigest()


def test_symlink_to_ssh_key_is_refused_after_resolution(run):
    result = run["results"]["keylink"]
    assert (result["stage"], result["refused_code"]) == ("pass2", "denylisted")
    assert not (run["out"] / "keylink").exists()


def test_hard_link_to_credential_file_is_refused(run):
    assert run["results"]["hardlink"]["refused_code"] == "hard_link"


def test_fifo_is_refused_without_blocking(run):
    assert run["results"]["fifo"]["refused_code"] == "fifo"
    assert run["results"]["fifo"]["elapsed"] < 3


def test_setuid_executable_arrives_without_setid_bits(run):
    result = run["results"]["setuid"]
    assert result["remote_mode"] == "04755"
    assert stat.S_IMODE(os.stat(result["dest"]).st_mode) == 0o644


def test_strict_mode_fetches_nothing(run):
    assert (run["results"]["strict"]["refused_code"], run["results"]["strict"]["bytes_received"]) == ("strict", 0)
