# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

What the host says about bubblewrap, read under a ``root`` directory so tests can fake a
host: the user namespace knobs, AppArmor's profiles, the credential stores and docker sockets
the sandbox must hide, where bwrap is and its version; and the AppArmor profile text that
lets it create user namespaces. Effectful parts read files or run ``bwrap --version``;
``apparmor_profile`` is pure.
"""
import fnmatch
import os
import re
import shutil
import stat

from .. import credentials
from .._core import proc
from .._core.pathnames import is_within
from ..container import detect_container
from ..errors import InputError
from .diagnosis import parse_version

SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DOCKER_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock")
APPARMOR_PROFILE_NAME = "sandboxguard-bwrap"


def _read_text(root, path):
    try:
        with open(os.path.join(root, path.lstrip("/")), encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _read_int(root, path):
    text = _read_text(root, path)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def loaded_apparmor_profiles(root="/"):
    """Names of the loaded AppArmor profiles (from securityfs), or None without AppArmor."""
    text = _read_text(root, "/sys/kernel/security/apparmor/profiles")
    if text is None:
        return None
    names = set()
    for line in text.splitlines():
        # "name (mode)"; names may contain spaces only when quoted, which we keep whole.
        name = line.rsplit(" (", 1)[0].strip()
        if name:
            names.add(name)
    return names


_PROFILE_HEADER_RE = re.compile(
    r"^\s*(?:profile\s+(?P<name>\S+)\s+(?P<attach>/\S*)|(?P<path>/\S+))\s*(?:flags\s*=\s*\([^)]*\)\s*)?\{",
)


def apparmor_profiles_for(bwrap_path, root="/"):
    """Profiles in ``root``/etc/apparmor.d whose attachment matches ``bwrap_path``.

    Each entry: name, file, loaded (the name is in the kernel's loaded list), and
    grants_userns (the file holds a ``userns,`` rule). A parsed profile is not an
    attached one: only a loaded profile whose attachment matches applies to bwrap.
    """
    found = []
    if not bwrap_path:
        return found
    policy_dir = os.path.join(root, "etc/apparmor.d")
    try:
        names = sorted(os.listdir(policy_dir))
    except OSError:
        return found
    loaded = loaded_apparmor_profiles(root) or set()
    for entry in names:
        path = os.path.join(policy_dir, entry)
        if not os.path.isfile(path):
            continue
        text = _read_text(root, os.path.join("/etc/apparmor.d", entry)) or ""
        for line in text.splitlines():
            match = _PROFILE_HEADER_RE.match(line)
            if not match:
                continue
            attach = match.group("attach") or match.group("path")
            name = match.group("name") or attach
            # AppArmor globs: '*' within a component, '**' across; fnmatch is close enough here.
            if attach == bwrap_path or fnmatch.fnmatchcase(bwrap_path, attach.replace("**", "*")):
                found.append({
                    "name": name,
                    "file": os.path.join("/etc/apparmor.d", entry),
                    "loaded": name in loaded,
                    "grants_userns": bool(re.search(r"^\s*userns\b", text, re.MULTILINE)),
                })
    return found


def read_host_facts(bwrap_path=None, root="/"):
    """Read the user namespace knobs and AppArmor state under ``root`` (effectful: reads files)."""
    apparmor_enabled = (_read_text(root, "/sys/module/apparmor/parameters/enabled") or "").strip() == "Y"
    profiles = apparmor_profiles_for(bwrap_path, root) if apparmor_enabled else []
    return {
        "userns": {
            "max_user_namespaces": _read_int(root, "/proc/sys/user/max_user_namespaces"),
            "unprivileged_userns_clone": _read_int(root, "/proc/sys/kernel/unprivileged_userns_clone"),
            "apparmor_restrict": _read_int(root, "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        },
        "apparmor": {
            "enabled": apparmor_enabled,
            "profiles": profiles,
            "attached": any(p["loaded"] and p["grants_userns"] for p in profiles),
        },
        "in_container": detect_container(root),
    }


def _root_relative(full, root):
    return full if root == "/" else "/" + os.path.relpath(full, root).lstrip("/")


def hidden_paths(home, root="/", hermes_home=None):
    """(directories, files) the sandbox must hide for ``home``: every credential store of the
    one list (``credentials.home_stores("bwrap")``, the Hermes home ``~/.hermes`` included)
    and ``hermes_home`` when it lies elsewhere, that exists under ``root``.

    Reads the file system (lstat/stat/realpath under ``root``). A store that is a symlink (a
    dotfiles repository) is hidden at its target; one that resolves to the home directory
    or above it is skipped, since hiding it would hide the home; a path inside another
    hidden path is covered by it and dropped.
    """
    dirs, files = [], []
    if not home:
        return dirs, files
    real_home = _root_relative(os.path.realpath(os.path.join(root, home.lstrip("/"))), root)
    found = []
    for path in credentials.hidden_roots(home, hermes_home, "bwrap"):
        full = os.path.join(root, path.lstrip("/"))
        try:
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                target = os.path.realpath(full)
                st = os.stat(target)
                path = _root_relative(target, root)
        except OSError:
            continue
        if is_within(real_home, path) or path in (p for p, _d in found):
            continue
        found.append((path, stat.S_ISDIR(st.st_mode)))
    for path, is_dir in found:
        if any(is_within(path, other, strict=True) for other, _d in found):
            continue
        (dirs if is_dir else files).append(path)
    return dirs, files


def existing_docker_sockets(root="/"):
    found = []
    seen = set()
    for path in DOCKER_SOCKETS:
        full = os.path.join(root, path.lstrip("/"))
        try:
            st = os.stat(full)
        except OSError:
            continue
        if stat.S_ISSOCK(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            found.append(path)
    return found


def find_bwrap(bwrap=None, path=None):
    """Absolute path of bwrap: ``bwrap`` if given (a path or a name), else the first on ``path``."""
    search = path or (os.environ.get("PATH", "") + os.pathsep + SEARCH_PATH)
    if bwrap:
        if os.sep in bwrap:
            return os.path.abspath(bwrap) if os.path.isfile(bwrap) else None
        return shutil.which(bwrap, path=search)
    return shutil.which("bwrap", path=search)


def read_bwrap_version(bwrap_path, timeout=10):
    """Run ``bwrap --version`` (effectful) and return (text, parsed tuple or None)."""
    try:
        done = proc.run([bwrap_path, "--version"], capture_output=True, text=True, timeout=timeout,
                        check=False)
    except (OSError, proc.TimeoutExpired) as exc:
        return str(exc), None
    text = (done.stdout or done.stderr).strip()
    return text, parse_version(text)


def apparmor_profile(bwrap_path, name=APPARMOR_PROFILE_NAME):
    """Text of an AppArmor profile that lets ``bwrap_path`` create user namespaces. Pure.

    The ``userns`` rule needs AppArmor 4.0 (abi 4.0), which is also the first version
    that can restrict unprivileged user namespaces (Ubuntu 23.10+). ``unconfined``
    keeps bwrap otherwise unrestricted, as Ubuntu's own profiles for such tools do.
    """
    if not bwrap_path or not bwrap_path.startswith("/") or re.search(r"[\s{},\"#]", bwrap_path):
        raise InputError("bwrap path %r must be absolute and free of spaces, quotes, braces and commas" % bwrap_path)
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", name):
        raise InputError("profile name %r must be letters, digits, '.', '_' or '-'" % name)
    return (
        "# Managed by sandboxguard (bwrap.apparmor_profile): lets bubblewrap at %(path)s create\n"
        "# unprivileged user namespaces where kernel.apparmor_restrict_unprivileged_userns=1.\n"
        "abi <abi/4.0>,\n"
        "include <tunables/global>\n"
        "\n"
        "profile %(name)s %(path)s flags=(unconfined) {\n"
        "  userns,\n"
        "\n"
        "  # Site-specific additions and overrides.\n"
        "  include if exists <local/%(name)s>\n"
        "}\n"
    ) % {"path": bwrap_path, "name": name}
