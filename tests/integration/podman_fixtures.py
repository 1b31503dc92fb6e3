# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Rootful Podman for the engine tests, set up by the tests themselves (issue 21).

Debian's ``podman`` package (tools/apt-packages.txt; tools/setup.sh installs it) run as root
the way these VMs need it: a ``containers.conf`` of our own given through CONTAINERS_CONF
with ``default_ulimits = []`` (podman's default RLIMIT_NOFILE cannot be set here: runc fails
with "error setting rlimit type 7: operation not permitted") and runc (``--runtime runc``:
crun refuses this machine's hybrid cgroups), cgroupfs and file events (no systemd as PID 1).
Storage is ours too: ``.cache/podman/storage`` of the checkout (the test image stays there
between runs: it is loaded again only when its recipe label changed) and a run root under
/run; nothing of /etc/containers or /var/lib/containers is touched.

The image is the one tools/build-images.sh built for Docker, copied with
``docker save | podman load`` (no registry). The API service
(``podman system service --time=0``) listens on a socket the test names: a private one
under a temporary directory, or Podman's default path /run/podman/podman.sock for the
tests of ``auto`` discovery. Containers are named with PREFIX and removed at start and end.
"""
import hashlib
import os
import shutil
import subprocess
import time

from sandboxguard import docker_engine

PREFIX = "sgpod_"
IMAGE = "sandboxguard/debian:12"
RECIPE_LABEL = "org.sandboxguard.recipe-sha256"  # written by images/build-image.sh
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONTAINERS_CONF = """\
# sandboxguard tests (tests/integration/podman_fixtures.py): rootful podman in these VMs
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""
START_TIMEOUT_S = 60


class PodmanUnavailable(RuntimeError):
    """podman is not installed (the reason says how to get it)."""


class Podman:
    """Rootful podman with our containers.conf and storage; ``cli()`` runs the podman CLI,
    ``service(url)`` starts an API service on a unix socket and waits until it answers."""

    def __init__(self, workdir):
        self.podman = shutil.which("podman")
        if not self.podman:
            raise PodmanUnavailable("podman is not installed: bash tools/setup.sh installs Debian's podman "
                                    "(tools/apt-packages.txt), or apt-get install podman")
        self.workdir = workdir
        self.conf = os.path.join(workdir, "containers.conf")
        with open(self.conf, "w") as handle:
            handle.write(CONTAINERS_CONF)
        self.storage = os.path.join(TOP, ".cache", "podman", "storage")
        os.makedirs(self.storage, mode=0o700, exist_ok=True)
        # the run root (locks, container state) must be the same for every podman on this
        # storage, and short-lived: one per checkout under /run
        self.runroot = "/run/sandboxguard-podman-%s" % hashlib.sha256(self.storage.encode()).hexdigest()[:12]
        self.flags = ["--root", self.storage, "--runroot", self.runroot, "--runtime", "runc",
                      "--storage-driver", "overlay", "--cgroup-manager", "cgroupfs", "--events-backend", "file"]
        self.env = dict(os.environ, CONTAINERS_CONF=self.conf)
        self.env.pop("CONTAINER_HOST", None)
        self.services = []

    def cli(self, *args, check=True, input=None, timeout=300):
        return subprocess.run([self.podman, *self.flags, *args], env=self.env, capture_output=True, check=check,
                              input=input, timeout=timeout)

    def version(self):
        return self.cli("version", "--format", "{{.Client.Version}}").stdout.decode().strip()

    def ensure_image(self, image=IMAGE):
        """The Docker test image in podman's storage: loaded when missing or built from another recipe."""
        want = subprocess.run(["docker", "image", "inspect", "-f", '{{ index .Config.Labels "%s" }}' % RECIPE_LABEL,
                               image], capture_output=True, check=True).stdout.strip()
        have = self.cli("image", "inspect", "-f", '{{ index .Config.Labels "%s" }}' % RECIPE_LABEL, image,
                        check=False)
        if have.returncode == 0 and have.stdout.strip() == want:
            return image
        started = time.monotonic()
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        load = subprocess.run([self.podman, *self.flags, "load", "-q"], env=self.env, stdin=save.stdout,
                              capture_output=True, check=False, timeout=600)
        save.stdout.close()
        save.wait()
        if load.returncode or save.returncode:
            raise RuntimeError("docker save %s | podman load failed: %s" % (image, load.stderr.decode()[-2000:]))
        self.loaded_in = time.monotonic() - started
        return image

    def remove_ours(self):
        names = self.cli("ps", "-a", "--format", "{{.Names}}", check=False).stdout.decode().split()
        ours = [n for n in names if n.startswith(PREFIX)]
        if ours:
            self.cli("rm", "-f", *ours, check=False)

    def service(self, socket_path):
        """Start ``podman system service`` on ``socket_path``; return its unix:// URL once
        the Docker SDK gets an answer there (EngineError when it never does)."""
        os.makedirs(os.path.dirname(socket_path), mode=0o700, exist_ok=True)
        url = "unix://" + socket_path
        log = open(os.path.join(self.workdir, "service-%d.log" % len(self.services)), "wb")
        proc = subprocess.Popen([self.podman, *self.flags, "system", "service", "--time=0", url], env=self.env,
                                stdout=log, stderr=subprocess.STDOUT)
        self.services.append((proc, socket_path, log))
        limit = time.monotonic() + START_TIMEOUT_S
        while True:  # waits for what the tests count on: the API answering
            if proc.poll() is not None:
                raise docker_engine.EngineError("podman system service exited %s: %s" % (
                    proc.returncode, open(log.name, "rb").read().decode(errors="replace")[-2000:]))
            if os.path.exists(socket_path):
                try:
                    docker_engine.connect(url, timeout=5).close()
                    return url
                except docker_engine.EngineError:
                    if time.monotonic() > limit:
                        raise
            elif time.monotonic() > limit:
                raise docker_engine.EngineError("podman system service did not create %s" % socket_path)
            time.sleep(0.05)

    def stop_service(self, socket_path):
        for proc, path, log in list(self.services):
            if path != socket_path:
                continue
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
            self.services.remove((proc, path, log))
            if os.path.exists(path):
                os.unlink(path)

    def close(self):
        self.remove_ours()
        for _, path, _ in list(self.services):
            self.stop_service(path)
