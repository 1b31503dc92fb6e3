# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether this process runs inside a container: the one answer every capability uses.

The home mode (``auto`` picks the profile home inside a container) and the bubblewrap
probe (a namespace error inside a container is the container's seccomp profile, not a
sysctl) both ask this question; they ask this function.

Markers, read under ``root`` so tests can fake a machine, in order:

* ``/.dockerenv`` (Docker) and ``/run/.containerenv`` (Podman, Buildah);
* ``/run/systemd/container``, which systemd writes inside any container it recognises
  (``lxc``, ``docker``, ``systemd-nspawn`` ...);
* PID 1's ``container=`` environment variable, the convention every container manager
  follows (``container=lxc``, ``container=podman``); readable as root;
* PID 1's cgroup path naming a container runtime (``docker``, ``libpod``, ``containerd``,
  ``kubepods``, ``lxc``): cgroup v1 ``/docker/<id>`` and the v2 systemd driver's
  ``docker-<id>.scope`` alike.

Any one is enough. A machine may be a container and still show none of them (a
container started with a clean PID 1 and cgroup namespace); the answer is then False.
"""
import os

__all__ = ["detect_container"]

CGROUP_WORDS = ("docker", "libpod", "containerd", "kubepods", "lxc")


def _read(root, rel, mode="r"):
    try:
        if mode == "rb":
            with open(os.path.join(root, rel), "rb") as handle:
                return handle.read()
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def detect_container(root="/"):
    """True when ``root`` is a container's view of the machine (reads files under ``root``)."""
    if os.path.exists(os.path.join(root, ".dockerenv")) or os.path.exists(os.path.join(root, "run", ".containerenv")):
        return True
    if (_read(root, "run/systemd/container") or "").strip():
        return True
    environ = _read(root, "proc/1/environ", "rb")
    if environ and any(item.startswith(b"container=") and item != b"container=" for item in environ.split(b"\0")):
        return True
    cgroup = _read(root, "proc/1/cgroup") or ""
    return any(word in cgroup for word in CGROUP_WORDS)
