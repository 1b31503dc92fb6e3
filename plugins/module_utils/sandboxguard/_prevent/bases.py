# GENERATED from python/src/sandboxguard/_prevent/bases.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Where an engine's own default seccomp profile comes from (touches the system).

- **Docker** compiles its default in; no API returns it and ``docker inspect`` does not show
  it. What the daemon applies is in the OCI runtime spec of a running container, so a
  throwaway container (``sleep`` from a local image, no network, default options otherwise:
  the default capabilities decide which of the default's conditional rules apply) is started
  and its ``config.json`` read from the runtime's state directory, where containerd's runc
  shim keeps the bundle: :data:`DOCKER_BUNDLE_DIRS` (Docker's own containerd first, then a
  system containerd), then the container is removed. ``docker info`` says whether that is
  Docker's builtin default (``profile=default``) or a daemon-wide ``seccomp-profile``; one
  that is already ours is refused (its builtin default is hidden while it is set).
- **Podman** reads containers-common's ``/usr/share/containers/seccomp.json`` (whatever
  ``containers.conf`` says: that may name ours).
- Or the operator gives the file (``--base FILE``).

Every file is read through descriptors (safefs: no symlink followed below a directory
another user can change, a regular file of one link, a size cap).
"""
import os
import platform
import time

from .._core import proc, safefs
from .._core.text import escape
from . import seccomp

PODMAN_DEFAULT_PROFILE = "/usr/share/containers/seccomp.json"
DOCKER_BUNDLE_DIRS = (
    "/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby",  # dockerd's own containerd (Debian's 20.10)
    "/run/containerd/io.containerd.runtime.v2.task/moby",  # a system containerd (docker-ce 23 and later)
    "/run/docker/containerd/daemon/io.containerd.runtime.v1.linux/moby",  # the v1 shim
)
PROFILE_READ_LIMIT = 4 << 20  # a default profile is about 20 KiB; an OCI spec of a container about 10 KiB
SPEC_WAIT_S = 5.0
THROWAWAY_LABEL = {"sandboxguard": "seccomp-base"}
ENGINE_CHOICES = ("auto", "docker", "podman")
NO_IMAGE = ("Docker's default profile is read from a throwaway container: name a local image that has sleep "
            "(the sandbox's own image will do), or give the base file")


class BaseHidden(seccomp.SeccompError):
    """Docker's daemon-wide default is a sandboxguard profile, so its builtin default cannot be
    read; ``version`` is the running engine's version."""

    def __init__(self, message, version):
        super().__init__(message)
        self.version = version


def read_json_file(path, what="the base"):
    """(profile dict, path) of a JSON file read through descriptors; SeccompError naming it."""
    try:
        parent, name = safefs.open_parent(os.path.abspath(path))
    except safefs.PathRefused as exc:
        raise seccomp.SeccompError("%s: %s" % (what, exc.with_fix("give the real path"))) from None
    except FileNotFoundError:
        raise seccomp.SeccompError("%s %s does not exist: give the path of a seccomp profile" % (
            what, escape(path))) from None
    with parent:
        try:
            data, _st = safefs.read_at(parent.fd, name, limit=PROFILE_READ_LIMIT, single_link=True,
                                       path_for_errors=path)
        except safefs.PathRefused as exc:
            raise seccomp.SeccompError("%s: %s" % (what, exc.with_fix("give a regular file"))) from None
    if data is None:
        raise seccomp.SeccompError("%s %s does not exist: give the path of a seccomp profile" % (what, escape(path)))
    return seccomp.load_profile(data.decode("utf-8", "replace"), escape(path))


def from_file(path, engine=None):
    """(base, source) of a base the operator gave."""
    base = read_json_file(path)
    return base, {"engine": engine, "engine_version": None, "origin": "file %s" % path}


def podman_version():
    """The installed podman's version, or None (no podman, or it did not answer in 10 s)."""
    try:
        done = proc.run(["podman", "version", "--format", "{{.Client.Version}}"], capture_output=True, timeout=10)
    except (OSError, proc.TimeoutExpired):
        return None
    text = done.stdout.decode("utf-8", "replace").strip()
    return text if done.returncode == 0 and text else None


def podman_default(path=None):
    """(base, source) of Podman's default: containers-common's seccomp.json (or ``path``)."""
    path = path or PODMAN_DEFAULT_PROFILE
    if not os.path.lexists(path):
        raise seccomp.SeccompError("%s does not exist: install containers-common (Podman's default seccomp "
                                   "profile), or give the base with --base FILE" % escape(path))
    base = read_json_file(path, "Podman's default profile")
    return base, {"engine": "podman", "engine_version": podman_version(), "origin": path}


def daemon_profile(info):
    """Docker's daemon-wide seccomp profile from ``docker info`` (pure): ``default`` (the
    builtin), ``unconfined``, a path (daemon.json ``seccomp-profile``), or None (no seccomp)."""
    for option in info.get("SecurityOptions") or ():
        parts = dict(p.split("=", 1) for p in str(option).split(",") if "=" in p)
        if parts.get("name") == "seccomp":
            return parts.get("profile", "default")
    return None


def read_bundle_spec(cid, dirs=None, wait=SPEC_WAIT_S):
    """The OCI runtime spec (dict) of the running container ``cid``, read from the runtime's
    state directory (``dirs``, default DOCKER_BUNDLE_DIRS); SeccompError naming the directories
    looked in when none has it."""
    dirs = DOCKER_BUNDLE_DIRS if dirs is None else dirs
    deadline = time.monotonic() + wait
    while True:
        for top in dirs:
            try:
                with safefs.open_dir(os.path.join(top, cid), follow_trusted_links=False) as bundle:
                    if not bundle.trusted:
                        continue  # only root's daemons write there
                    data, _st = safefs.read_at(bundle.fd, "config.json", limit=PROFILE_READ_LIMIT, single_link=True,
                                               path_for_errors=os.path.join(top, cid, "config.json"))
            except (FileNotFoundError, safefs.PathRefused, OSError):
                continue
            if data is not None:
                return seccomp.load_profile(data.decode("utf-8", "replace"), "the OCI runtime spec of %s" % cid[:12])
        if time.monotonic() > deadline:
            raise seccomp.SeccompError(
                "the OCI runtime spec of the throwaway container is in none of %s: Docker's default profile is read "
                "there on the engine's own host, as root; give the base with --base FILE" % ", ".join(dirs))
        time.sleep(0.05)


def docker_default(client, image, dirs=None):
    """(base, source) of the running Docker daemon's default profile, from a throwaway
    container of ``image`` (a local image with ``sleep``). Touches the engine: starts and
    removes one container. SeccompError when the profile cannot be had."""
    from .. import docker_engine  # noqa: PLC0415 - the engine is optional
    from . import engine_run  # noqa: PLC0415

    if not image:
        raise seccomp.SeccompError(NO_IMAGE)
    info = docker_engine.engine_info(client)
    daemon = daemon_profile(info)
    if daemon in (None, "unconfined"):
        raise seccomp.SeccompError("the Docker daemon applies no seccomp profile by default (%s): there is no "
                                   "default to keep; give the base with --base FILE" % (daemon or "seccomp off"))
    version = (engine_run.engine_version(client) or {}).get("Version")
    cid = engine_run.start_container(client, image, ["3600"], {"NetworkMode": "none"}, THROWAWAY_LABEL,
                                     entrypoint=["sleep"])
    try:
        spec = read_bundle_spec(cid, dirs)
    finally:
        engine_run.remove_container(client, cid)
    base = (spec.get("linux") or {}).get("seccomp")
    if not isinstance(base, dict):
        raise seccomp.SeccompError("the throwaway container ran without seccomp (its OCI runtime spec has none): "
                                   "is the daemon's seccomp off? give the base with --base FILE")
    origin = "%s, from the OCI runtime spec of a container of %s" % (
        "Docker's builtin default" if daemon == "default" else "the daemon's seccomp-profile %s" % daemon, image)
    if seccomp.has_setid_rules(base):
        raise BaseHidden("the Docker daemon's default profile is already a sandboxguard profile (daemon.json "
                         "seccomp-profile %s): Docker's builtin default cannot be read while it is set; remove "
                         "seccomp-profile from daemon.json and restart dockerd, or give the base with --base FILE"
                         % daemon, version)
    return base, {"engine": "docker", "engine_version": version, "origin": origin}


def native_arch():
    """The host's architecture as the engines name it in includes/excludes (Go's GOARCH)."""
    machine = platform.machine()
    return seccomp.GOARCH.get(machine, machine)
