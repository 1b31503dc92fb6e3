# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""An execution environment with the collection, built for real and used the way AWX uses it
(issue 12, item 6).

The EE definition is the one docs/execution-environment.md gives users, with this machine's
differences: the base image is our locally built sandboxguard/debian:12 (no registry is
reachable), the collection comes from the tarball `ansible-galaxy collection build` makes
(Galaxy is not reachable), and pip inside the build gets the host's CA bundle (without it,
PyPI's TLS fails with `certificate verify failed`). The collection's own
meta/execution-environment.yml, requirements.txt and bindep.txt are what ansible-builder
introspects from the installed collection; the image must carry what they name.

The image is tagged and labelled with a hash of everything that goes into it (the definition,
the collection's files, the base image's id), so a second run reuses it. Then
`ansible-runner --process-isolation` runs the audit playbook inside it against two SSH test
hosts (one seeded), with host networking to reach their 127.0.0.1 ports.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml
from fleet_fixtures import SANDBOXES, Fleet

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
BASE_IMAGE = "sandboxguard/debian:12"
EE_REPO = "sandboxguard/ee"
HASH_LABEL = "org.sandboxguard.ee-inputs-sha256"
HOST_CA = "/etc/ssl/certs/ca-certificates.crt"
BUILD_CA = "/usr/local/share/sandboxguard-build-ca.crt"
BUILD_TIMEOUT = 1500


def run(argv, timeout=600, **kwargs):
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)
    if proc.returncode != 0:
        pytest.fail("%s exited %d\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(argv), proc.returncode, proc.stdout[-5000:], proc.stderr[-5000:]))
    return proc.stdout


def collection_digest(tarball):
    """sha256 of the tarball's members (names, modes, contents), not of the gzip stream, which
    carries build times."""
    digest = hashlib.sha256()
    with tarfile.open(tarball) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            digest.update(("%s %o %s\n" % (member.name, member.mode, member.type.decode())).encode())
            if member.isfile():
                digest.update(archive.extractfile(member).read())
    return digest.hexdigest()


def definition(tarball_name, tag, inputs_hash):
    """The EE definition of docs/execution-environment.md, built from a local base image and
    the collection tarball, with the host's CA bundle for pip during the build only."""
    return {
        "version": 3,
        "images": {"base_image": {"name": BASE_IMAGE}},
        "dependencies": {
            "python_interpreter": {"package_system": "python3-pip", "python_path": "/usr/bin/python3"},
            "ansible_core": {"package_pip": "ansible-core==2.19.14"},
            "ansible_runner": {"package_pip": "ansible-runner==2.4.3"},
            "galaxy": {"collections": [{"name": "collections/" + tarball_name, "type": "file"}]},
        },
        "options": {"package_manager_path": "/usr/bin/apt-get", "skip_pip_install": True, "tags": [tag]},
        "build_arg_defaults": {"ANSIBLE_GALAXY_CLI_COLLECTION_OPTS": "--offline"},
        "additional_build_files": [
            {"src": "collections/" + tarball_name, "dest": "collections"},
            {"src": "ca/ca-certificates.crt", "dest": "ca"},
        ],
        "additional_build_steps": {
            # Debian's pip reads PIP_CERT; apt's lists are not in our images (build-image.sh).
            "prepend_base": ["COPY _build/ca/ca-certificates.crt " + BUILD_CA, "ENV PIP_CERT=" + BUILD_CA,
                             "RUN echo 'APT::Install-Recommends \"false\";' >/etc/apt/apt.conf.d/00no-recommends",
                             "RUN apt-get update"],
            "prepend_final": ["RUN apt-get update"],
            "append_final": ["RUN rm -rf /var/lib/apt/lists/* " + BUILD_CA, "ENV PIP_CERT=",
                             "LABEL %s=%s" % (HASH_LABEL, inputs_hash)],
        },
    }


def image_label(tag):
    proc = subprocess.run(["docker", "image", "inspect", "-f", "{{ index .Config.Labels \"%s\" }}" % HASH_LABEL, tag],
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def ee_inputs(work, top=TOP):
    """Build the collection tarball into work/collections and copy the CA bundle to work/ca;
    returns (tarball name, sha256 of every input of the image)."""
    os.makedirs(work / "collections")
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(work / "collections"), top])
    tarball = os.listdir(work / "collections")[0]
    os.makedirs(work / "ca")
    shutil.copyfile(HOST_CA, work / "ca" / "ca-certificates.crt")
    base_id = run(["docker", "image", "inspect", "-f", "{{.Id}}", BASE_IMAGE]).strip()
    template = json.dumps(definition(tarball, "TAG", "HASH"), sort_keys=True)
    return tarball, hashlib.sha256("\n".join(
        [template, collection_digest(work / "collections" / tarball), base_id]).encode()).hexdigest()


@pytest.fixture(scope="module")
def ee_context(tmp_path_factory):
    """`ansible-builder create` for the definition: (definition path, context dir, tag, hash)."""
    work = tmp_path_factory.mktemp("ee")
    tarball, inputs_hash = ee_inputs(work)
    tag = "%s:%s" % (EE_REPO, inputs_hash[:12])
    path = work / "execution-environment.yml"
    path.write_text(yaml.safe_dump(definition(tarball, tag, inputs_hash), sort_keys=False))
    context = work / "context"
    run([os.path.join(BIN, "ansible-builder"), "create", "-f", str(path), "-c", str(context),
         "--output-filename", "Dockerfile"])
    return path, context, tag, inputs_hash


@pytest.fixture(scope="module")
def ee_image(ee_context):
    """The EE image, built unless one with the same inputs hash exists."""
    path, context, tag, inputs_hash = ee_context
    if image_label(tag) != inputs_hash:
        run([os.path.join(BIN, "ansible-builder"), "build", "-f", str(path), "-c", str(context),
             "--container-runtime", "docker", "--output-filename", "Dockerfile", "-t", tag, "-v", "2"],
            timeout=BUILD_TIMEOUT)
    assert image_label(tag) == inputs_hash
    # Older builds of this definition (another checkout's hash) are 0.3-1 GB each: drop them.
    for other in run(["docker", "images", EE_REPO, "--format", "{{.Repository}}:{{.Tag}}"]).split():
        if other != tag:
            subprocess.run(["docker", "image", "rm", other], capture_output=True, check=False)
    return tag


def in_ee(tag, *argv):
    return run(["docker", "run", "--rm", "--network", "none", tag, *argv])


def test_ansible_builder_create_writes_a_build_context_from_the_definition(ee_context):
    _, context, _, _ = ee_context
    dockerfile = (context / "Dockerfile").read_text()
    assert "FROM $EE_BASE_IMAGE AS base" in dockerfile
    assert 'ARG EE_BASE_IMAGE="%s"' % BASE_IMAGE in dockerfile
    assert "ansible-galaxy collection install" in dockerfile
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert galaxy["collections"][0]["type"] == "file"
    assert os.listdir(context / "_build" / "collections")[0].startswith("sandboxguard-boundary-")


def test_execution_environment_carries_the_collection_and_its_requirements(ee_image):
    listed = in_ee(ee_image, "ansible-galaxy", "collection", "list", "sandboxguard.boundary", "--format", "json")
    versions = {name: info["version"] for info in json.loads(listed).values() for name, info in info.items()}
    with open(os.path.join(TOP, "galaxy.yml")) as handle:
        assert versions == {"sandboxguard.boundary": yaml.safe_load(handle)["version"]}
    # requirements.txt and bindep.txt, introspected from the installed collection's meta/execution-environment.yml
    # no Docker SDK any more (issue 26): the library's engine client is the standard library's
    in_ee(ee_image, "ssh", "-V")
    in_ee(ee_image, "ansible-runner", "--version")
    assert "setid_strip" in in_ee(ee_image, "ansible-doc", "-t", "module", "sandboxguard.boundary.setid_strip")


def test_execution_environment_inputs_hash_is_the_same_for_the_same_checkout(ee_context, tmp_path):
    """A second `make test` computes the same hash (a new tarball, new build times) and so
    finds the labelled image and builds nothing."""
    _, _, tag, inputs_hash = ee_context
    assert ee_inputs(tmp_path)[1] == inputs_hash
    assert tag.endswith(":" + inputs_hash[:12])


def test_execution_environment_inputs_hash_changes_with_the_collection(ee_context, tmp_path):
    _, _, _, inputs_hash = ee_context
    changed = tmp_path / "changed"
    shutil.copytree(TOP, changed / "boundary", ignore=shutil.ignore_patterns(".venv", ".cache", ".git"))
    with open(changed / "boundary" / "bindep.txt", "a") as handle:
        handle.write("# a change\n")
    assert ee_inputs(tmp_path / "work", str(changed / "boundary"))[1] != inputs_hash


@pytest.fixture(scope="module")
def ee_fleet(tmp_path_factory):
    fleet = Fleet(0, 2, prefix="sgee", workdir=str(tmp_path_factory.mktemp("ee-fleet"))).start()
    yield fleet
    fleet.stop()


def test_audit_runs_inside_the_execution_environment(ee_image, ee_fleet, tmp_path):
    """ansible-runner --process-isolation: the playbook, Ansible and the collection all come
    from the image; only the private data dir is mounted (at /runner)."""
    data = tmp_path / "runner"
    for sub in ("project", "inventory", "env"):
        os.makedirs(data / sub)
    shutil.copyfile(ee_fleet.key, data / "env" / "fleet_key")
    os.chmod(data / "env" / "fleet_key", 0o600)
    shutil.copyfile(ee_fleet.known_hosts, data / "env" / "known_hosts")
    ee_fleet.inventory(str(data / "inventory" / "hosts.yml"), key="/runner/env/fleet_key",
                       known_hosts="/runner/env/known_hosts")
    (data / "project" / "audit.yml").write_text("- ansible.builtin.import_playbook: sandboxguard.boundary.audit\n")
    (data / "env" / "extravars").write_text(yaml.safe_dump({
        "sandboxguard_paths": SANDBOXES, "sandboxguard_report_dir": "/runner/reports",
        # the check these hosts have inputs for (the others would be not_checked: the gate fails)
        "sandboxguard_checks": "privileged_files", "sandboxguard_fail_on_findings": "false"}))
    proc = subprocess.run([os.path.join(BIN, "ansible-runner"), "run", str(data), "-p", "audit.yml", "--ident", "ee",
                           "--process-isolation", "--process-isolation-executable", "docker",
                           "--container-image", ee_image, "--container-option=--network=host"],
                          capture_output=True, text=True, timeout=600, check=False)
    status = (data / "artifacts" / "ee" / "status").read_text()
    assert status == "successful", proc.stdout[-5000:]
    events = [json.loads((data / "artifacts" / "ee" / "job_events" / name).read_text())
              for name in os.listdir(data / "artifacts" / "ee" / "job_events")]
    stats = next(e for e in events if e["event"] == "playbook_on_stats")["event_data"]
    assert set(stats["ok"]) == ee_fleet.names
    assert not stats.get("dark") and not stats.get("failures")
    assert stats["artifact_data"]["sandboxguard_audit"]["hosts_with_findings"] == len(ee_fleet.seeded) == 1
    # the reports, written by the controller inside the EE into the mounted private data dir
    with open(data / "reports" / "boundary-audit.json") as handle:
        hosts = json.load(handle)["hosts"]
    assert {name: host["status"] for name, host in hosts.items()} == {
        h.name: "findings" if h.seeded else "clean" for h in ee_fleet.hosts}
