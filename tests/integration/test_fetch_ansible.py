# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""safe_fetch (action plugin) over Ansible's own ssh connection to a real sshd on 127.0.0.1.

One ansible-playbook run covers every case (each into its own destination directory); the
results are written to JSON and each test below checks one case. Two inventory hosts point
at the same sshd to show the fleet layout: one directory per host. The sandbox user's shell
is noisy and swaps ``swapme`` for a symlink to ~/.ssh/id_rsa right before the read step.
"""
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest
from fetch_fixtures import SECRET, SSHD, make_file

pytestmark = [pytest.mark.controller, pytest.mark.root, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
CAP = 1024 * 1024
SMALL = 1024

PLAYBOOK = textwrap.dedent("""\
    - name: safe_fetch over ansible.builtin.ssh
      hosts: sandboxes
      gather_facts: false
      vars:
        home: "{{ remote_home }}"
      tasks:
        - name: The operator path - one report per host into a per-host directory
          sandboxguard.boundary.safe_fetch:
            src: "{{ work }}/model.bin"
            dest: "{{ out }}/fleet/{{ inventory_hostname }}"
            remote_home: "{{ home }}"
          register: fleet

        - name: Every guarded case, on one host (they share one file system)
          sandboxguard.boundary.safe_fetch:
            src: "{{ item.src }}"
            dest: "{{ out }}/cases/{{ item.case }}"
            remote_home: "{{ home }}"
            max_bytes: "{{ item.max_bytes | default(52428800) }}"
            strict: "{{ item.strict | default(false) }}"
            fail_on_refused: false
          loop:
            - {case: keylink, src: "{{ work }}/report.pdf"}
            - {case: hardlink, src: "{{ work }}/notes.txt"}
            - {case: devzero, src: /dev/zero}
            - {case: zeros, src: "{{ work }}/zeros"}
            - {case: big, src: "{{ work }}/big", max_bytes: %(cap)d}
            - {case: liar, src: "{{ work }}/cpuinfo", max_bytes: 100}
            - {case: fifo, src: "{{ work }}/pipe"}
            - {case: setuid, src: "{{ work }}/tool"}
            - {case: swapme, src: "{{ work }}/swapme"}
            - {case: strict, src: "{{ work }}/model.bin", strict: true}
          when: inventory_hostname == 'sandbox-a'
          register: cases

        - name: Check mode fetches and compares but writes nothing
          sandboxguard.boundary.safe_fetch:
            src: "{{ work }}/model.bin"
            dest: "{{ out }}/checkmode"
            remote_home: "{{ home }}"
          check_mode: true
          when: inventory_hostname == 'sandbox-a'
          register: checkmode

        - name: Second fetch of an unchanged file reports no change
          sandboxguard.boundary.safe_fetch:
            src: "{{ work }}/model.bin"
            dest: "{{ out }}/fleet/{{ inventory_hostname }}"
            remote_home: "{{ home }}"
          register: again

        - name: Save the results for the tests
          ansible.builtin.copy:
            content: "{{ {'fleet': fleet, 'cases': cases, 'again': again, 'checkmode': checkmode} | to_json }}"
            dest: "{{ out }}/results-{{ inventory_hostname }}.json"
            mode: "0600"
          delegate_to: localhost
          vars:
            ansible_connection: local
            ansible_python_interpreter: "{{ ansible_playbook_python }}"
    """) % {"cap": CAP}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    sshd = SSHD()
    work = sshd.workdir()
    out = tmp_path_factory.mktemp("ansible-fetch")
    liar = os.path.join(work, "cpuinfo")
    try:
        data = os.urandom(CAP)
        make_file(os.path.join(work, "model.bin"), data, owner=sshd.user)
        os.symlink(os.path.join(sshd.home, ".ssh", "id_rsa"), os.path.join(work, "report.pdf"))
        os.link(os.path.join(sshd.home, ".ssh", "id_rsa"), os.path.join(work, "notes.txt"))
        os.symlink("/dev/zero", os.path.join(work, "zeros"))
        make_file(os.path.join(work, "big"), b"x" * (CAP + 1), owner=sshd.user)
        make_file(liar, b"")
        subprocess.run(["mount", "--bind", "/proc/cpuinfo", liar], check=True)
        os.mkfifo(os.path.join(work, "pipe"))
        make_file(os.path.join(work, "tool"), b"\x7fELF not really", mode=0o4755)
        make_file(os.path.join(work, "swapme"), b"an honest report\n", owner=sshd.user)
        inventory = out / "inventory.ini"
        common = "-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes" % sshd.known_hosts
        inventory.write_text("[sandboxes]\n" + "".join(
            "%s ansible_host=127.0.0.1 ansible_port=%d\n" % (name, sshd.port) for name in ("sandbox-a", "sandbox-b")
        ) + "[sandboxes:vars]\nansible_connection=ansible.builtin.ssh\nansible_user=sgfetch\n"
            "ansible_ssh_private_key_file=%s\nansible_ssh_common_args='%s'\n" % (sshd.client_key, common))
        playbook = out / "fetch.yml"
        playbook.write_text(PLAYBOOK)
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(TOP, "ansible.cfg"),
                   ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
                   ANSIBLE_SSH_CONTROL_PATH_DIR=str(out / "cp"), ANSIBLE_HOST_KEY_CHECKING="True",
                   ANSIBLE_FORCE_COLOR="0", PATH=BIN + os.pathsep + os.environ["PATH"],
                   # no ControlPersist master outliving the test (and its sshd)
                   ANSIBLE_SSH_ARGS="-o ControlMaster=no")
        proc = subprocess.run(
            [os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), str(playbook),
             "-e", json.dumps({"work": work, "out": str(out), "remote_home": sshd.home})],
            capture_output=True, text=True, env=env, check=False, timeout=300)
        results = {}
        for name in ("sandbox-a", "sandbox-b"):
            path = out / ("results-%s.json" % name)
            assert path.exists(), "ansible-playbook failed:\n%s\n%s" % (proc.stdout[-4000:], proc.stderr[-2000:])
            results[name] = json.loads(path.read_text())
        swapped = os.path.islink(os.path.join(work, "swapme"))
        yield {"proc": proc, "results": results, "out": out, "data": data, "swapped": swapped}
    finally:
        subprocess.run(["umount", liar], check=False)
        shutil.rmtree(work, ignore_errors=True)
        sshd.stop()


def case(run, name):
    for item in run["results"]["sandbox-a"]["cases"]["results"]:
        if item["item"]["case"] == name:
            return item
    raise AssertionError("no result for case %s" % name)


def files_in(run, name):
    path = run["out"] / "cases" / name
    return sorted(p.name for p in path.iterdir()) if path.exists() else []


def test_playbook_succeeds(run):
    assert run["proc"].returncode == 0, run["proc"].stdout[-3000:]


def test_each_host_of_the_fleet_gets_its_own_byte_exact_copy(run):
    for host in ("sandbox-a", "sandbox-b"):
        landed = run["out"] / "fleet" / host / "model.bin"
        assert landed.read_bytes() == run["data"]
        assert run["results"][host]["fleet"]["sha256"] == hashlib.sha256(run["data"]).hexdigest()
        assert stat.S_IMODE(landed.stat().st_mode) == 0o644


def test_second_fetch_of_an_unchanged_file_is_not_a_change(run):
    assert run["results"]["sandbox-a"]["fleet"]["changed"] is True
    assert run["results"]["sandbox-a"]["again"]["changed"] is False


def test_check_mode_writes_nothing(run):
    assert run["results"]["sandbox-a"]["checkmode"]["changed"] is True
    assert not (run["out"] / "checkmode").exists()


def test_symlink_to_ssh_key_is_refused_after_resolution(run):
    result = case(run, "keylink")
    assert (result["stage"], result["refused_code"]) == ("pass2", "denylisted")
    assert result["bytes_received"] < SMALL
    assert files_in(run, "keylink") == []


def test_hard_link_to_credential_file_is_refused(run):
    result = case(run, "hardlink")
    assert result["refused_code"] == "hard_link"
    assert files_in(run, "hardlink") == []


def test_dev_zero_is_refused_before_the_connection_is_used(run):
    assert (case(run, "devzero")["stage"], case(run, "devzero")["bytes_received"]) == ("pass1", 0)


def test_symlink_to_dev_zero_is_refused_without_moving_its_bytes(run):
    result = case(run, "zeros")
    assert result["refused_code"] == "denylisted"
    assert result["bytes_received"] < SMALL


def test_file_of_max_bytes_plus_one_is_refused_without_moving_its_bytes(run):
    result = case(run, "big")
    assert result["refused_code"] == "too_large"
    assert result["bytes_received"] < SMALL
    assert files_in(run, "big") == []


def test_file_that_lies_about_its_size_is_cut_at_max_bytes_plus_one(run):
    result = case(run, "liar")
    assert (result["stage"], result["refused_code"]) == ("decode", "too_large")
    assert result["bytes_received"] < 101 * 4 // 3 + SMALL


def test_fifo_is_refused_without_blocking(run):
    result = case(run, "fifo")
    assert result["refused_code"] == "fifo"
    assert result["elapsed"] < 3


def test_setuid_executable_arrives_without_setid_bits(run):
    result = case(run, "setuid")
    assert result["remote_mode"] == "04755"
    assert stat.S_IMODE(os.stat(result["dest"]).st_mode) == 0o644


def test_symlink_swapped_in_after_pass_2_leaves_nothing(run):
    assert run["swapped"], "the hostile .bashrc did not swap the file"
    result = case(run, "swapme")
    assert (result["stage"], result["refused_code"]) == ("read", "swapped")
    assert files_in(run, "swapme") == []


def test_strict_mode_fetches_nothing(run):
    result = case(run, "strict")
    assert (result["refused_code"], result["bytes_received"]) == ("strict", 0)
    assert files_in(run, "strict") == []


def test_the_key_never_reaches_the_controller(run):
    for path in run["out"].rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_bytes(), path
