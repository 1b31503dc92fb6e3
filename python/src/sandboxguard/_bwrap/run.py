# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Whom the probe runs as (never root) and running a command in the sandbox as that user
(effectful: passwd lookups, processes).
"""
import os
import time

from .._core import defaults, proc
from ..errors import InputError
from .host import SEARCH_PATH

DEFAULT_TIMEOUT_S = defaults.BWRAP_PROBE_TIMEOUT_S


class ProbeUserRefused(InputError):
    """The probe cannot run as the user asked for; ``reason`` is one of PROBE_ERRORS'
    user codes (root-probe-refused, user-unknown, user-switch-denied), str() the message."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


def resolve_probe_user(user=None, euid=None):
    """Decide whom to probe as: a dict with uid, gid, name, home, groups and switch.

    Pure apart from the passwd lookup. As root, ``user`` is required and must not be
    root; as an unprivileged user, the probe runs as that user (``user``, if given,
    must name it: only root can switch users). Raises ProbeUserRefused otherwise.
    """
    import pwd  # noqa: PLC0415  (Unix only; imported where used)

    euid = os.geteuid() if euid is None else euid
    if user is None or user == "":
        if euid == 0:
            raise ProbeUserRefused("root-probe-refused",
                                   "running as root: name the agent user to probe as (the probe never runs as root)")
        entry = pwd.getpwuid(euid)
    else:
        try:
            entry = pwd.getpwuid(int(user)) if str(user).isdigit() else pwd.getpwnam(str(user))
        except (KeyError, ValueError):
            raise ProbeUserRefused("user-unknown", "no such user: %s" % user) from None
    if entry.pw_uid == 0:
        raise ProbeUserRefused("root-probe-refused",
                               "refusing to probe as root (%s): root bypasses user namespace restrictions and "
                               "passes where the agent user fails; name the agent user instead" % entry.pw_name)
    if euid not in (0, entry.pw_uid):
        raise ProbeUserRefused("user-switch-denied",
                               "only root can probe as another user; run as %s or as root" % entry.pw_name)
    try:
        groups = os.getgrouplist(entry.pw_name, entry.pw_gid)
    except OSError:
        groups = [entry.pw_gid]
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir,
            "groups": sorted(set(groups)), "switch": euid != entry.pw_uid}


def _user_env(user):
    return {
        "HOME": user["home"], "USER": user["name"], "LOGNAME": user["name"],
        "PATH": SEARCH_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
    }


def run_sandbox_probe(argv, user, timeout=DEFAULT_TIMEOUT_S, pass_fds=()):
    """Run ``argv`` as ``user`` (effectful). Returns returncode, stdout, stderr, timed_out, elapsed.

    Privileges are dropped in the child (``subprocess`` user/group/extra_groups, Python
    >= 3.9) when the caller is root; the environment is the agent user's, not ours.
    """
    kwargs = {}
    if user.get("switch"):
        kwargs.update(user=user["uid"], group=user["gid"], extra_groups=user["groups"])
    cwd = "/"
    started = time.monotonic()
    try:
        done = proc.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                        env=_user_env(user), check=False, stdin=proc.DEVNULL,
                        pass_fds=tuple(pass_fds), **kwargs)
        return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
                "timed_out": False, "elapsed": round(time.monotonic() - started, 3)}
    except proc.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return {"returncode": None, "stdout": out, "stderr": err, "timed_out": True,
                "elapsed": round(time.monotonic() - started, 3)}
    except OSError as exc:
        return {"returncode": None, "stdout": "", "stderr": "", "timed_out": False, "error": str(exc),
                "elapsed": round(time.monotonic() - started, 3)}
