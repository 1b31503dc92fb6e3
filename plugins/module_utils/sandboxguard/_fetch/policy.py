# GENERATED from python/src/sandboxguard/_fetch/policy.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

What may be fetched (pass 1 and pass 2, pure): the requested and the resolved path are
absolute, normalised, free of control characters and outside the system prefixes and the
credential stores (credentials.py's one list); the homes given are sane; a destination name
is safe; the error classes; the byte limits.
"""
import posixpath
import re
import unicodedata

from .. import credentials
from .._core.pathnames import is_within
from ..errors import InputError

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_OPEN_TIMEOUT_S = 5

# The system prefixes of the issue, plus /run: /var/run is a symlink to /run on every
# current distribution, so pass 2 sees /run/secrets/... where pass 1 saw /var/run/...
SYSTEM_PREFIXES = (
    "/etc", "/proc", "/sys", "/dev", "/root", "/boot",
    "/var/log", "/var/lib", "/var/run", "/run",
)
# The credential stores (home-relative and Hermes-home-relative) are in credentials.py,
# the one list fetch, the bubblewrap probe and the settings validator share.


_CONTROL = re.compile("[\x00-\x1f\x7f]")


class FetchError(InputError):
    """The request itself is bad (a malformed home, a missing destination directory)."""


class TransportUnavailable(FetchError):
    """A transport's optional package is not installed (the message names it)."""


def check_home(home):
    """Validate a sandbox home; return it, or raise FetchError naming the fix."""
    if home is None:
        return None
    if not isinstance(home, str) or not home.startswith("/"):
        raise FetchError("remote home %r must be an absolute path such as /home/agent" % (home,))
    if _CONTROL.search(home) or posixpath.normpath(home) != home or home.startswith("//"):
        raise FetchError("remote home %r must be a normalised path (no '.', '..', '//' or trailing '/')" % (home,))
    if home == "/":
        raise FetchError("remote home '/' would exempt the whole filesystem; give the real home directory")
    # root's home, or a service user's home below /var/lib, may exempt itself from its prefix;
    # a home under any other system prefix is refused as bad input.
    exempt = is_within(home, "/root") or is_within(home, "/var/lib", strict=True)
    for prefix in SYSTEM_PREFIXES:
        if is_within(home, prefix) and not exempt:
            raise FetchError(
                "remote home %s lies under the system prefix %s; only /root or a directory below /var/lib "
                "can be a sandbox home" % (home, prefix)
            )
    return home


def check_hermes_home(hermes_home):
    """Validate a known Hermes home inside the sandbox (HERMES_HOME); return it, or raise FetchError."""
    if hermes_home is None:
        return None
    if not isinstance(hermes_home, str) or not hermes_home.startswith("/"):
        raise FetchError("remote Hermes home %r must be an absolute path such as /home/agent/.hermes"
                         % (hermes_home,))
    not_normal = posixpath.normpath(hermes_home) != hermes_home or hermes_home.startswith("//")
    if _CONTROL.search(hermes_home) or not_normal:
        raise FetchError("remote Hermes home %r must be a normalised path (no '.', '..', '//' or trailing '/')"
                         % (hermes_home,))
    if hermes_home == "/":
        raise FetchError("remote Hermes home '/' would make every path a Hermes path; give the real HERMES_HOME")
    return hermes_home


def expand_home(path, home):
    """``~`` and ``~/...`` spelled against a known sandbox home; any other path unchanged.

    With the home unknown the path is returned as it is, and :func:`check_path` refuses it.
    """
    if home is not None and isinstance(path, str) and (path == "~" or path.startswith("~/")):
        rest = path[2:]
        return home + ("/" + rest if rest else "")
    return path


def _credential_reason(path, home, hermes_homes):
    """Which credential store ``path`` names, as a sentence, or None (see :func:`check_path`)."""
    if home is None:
        reason = credentials.match_components(path.split("/")[1:], "fetch")
        if reason:
            return "%s (home unknown: matched at any depth)" % reason
    elif is_within(path, home, strict=True):
        reason = credentials.match_components(credentials.relative_parts(path, home), "fetch")
        if reason:
            return "%s under the sandbox home %s" % (reason, home)
    for hermes_home in hermes_homes:
        if hermes_home and is_within(path, hermes_home, strict=True):
            found = credentials.match_hermes_relative(credentials.relative_parts(path, hermes_home))
            if found:
                return "Hermes credential store %s under the Hermes home %s" % (found, hermes_home)
    return None


def check_path(path, home=None, hermes_homes=()):
    """Pass 1 and pass 2: return None when ``path`` may be fetched, else (code, reason).

    ``path`` must be absolute and normalised (no ``.``/``..`` components, no ``//``, no
    trailing ``/``) and free of control characters; ``~/...`` is read against ``home``
    (:func:`expand_home`) and refused when the home is unknown. It is refused under the
    system prefixes (except inside ``home``) and when it names a credential store of
    ``credentials.HOME_STORES`` (a directory, anything inside it, or a file): below ``home``
    when the home is known, at any depth when it is not (``home=None``). The stores of
    ``credentials.HERMES_STORES`` are refused below any ``.hermes`` directory of that scope
    and below each of ``hermes_homes`` (the sandbox's known HERMES_HOME, as given and as
    resolved), also per profile (``profiles/<name>/``). Pure: no file system access.
    """
    home = check_home(home)
    if isinstance(hermes_homes, str):
        hermes_homes = (hermes_homes,)
    hermes_homes = [check_hermes_home(h) for h in hermes_homes if h is not None]
    path = expand_home(path, home)
    if not isinstance(path, str) or not path:
        return ("not_absolute", "path %r is empty; give an absolute path inside the sandbox" % (path,))
    if _CONTROL.search(path):
        return ("control_character", "path %r contains a control character" % (path,))
    if any("\udc80" <= ch <= "\udcff" for ch in path):
        return ("not_utf8", "path %r is not valid UTF-8" % (path,))
    if path == "~" or path.startswith("~/"):
        return ("not_absolute", "path %s is relative to the sandbox home, which is not known; give the home "
                                "(remote_home) or an absolute path" % path)
    if not path.startswith("/"):
        return ("not_absolute", "path %s is relative; give an absolute path inside the sandbox" % path)
    if path.startswith("//") or posixpath.normpath(path) != path:
        return (
            "not_normalised",
            "path %s is not normalised (no '.', '..', '//' or trailing '/'); ask for %s"
            % (path, posixpath.normpath("/" + path.lstrip("/"))),
        )
    if path == "/":
        return ("not_regular", "path / is a directory")
    in_home = home is not None and is_within(path, home)
    for prefix in SYSTEM_PREFIXES:
        if is_within(path, prefix) and not in_home:
            return ("denylisted", "%s lies under the system prefix %s" % (path, prefix))
    reason = _credential_reason(path, home, hermes_homes)
    if reason:
        return ("denylisted", "%s is a %s" % (path, reason))
    return None


def safe_name(name):
    """Return a file name safe to create in a destination directory.

    The basename only; control and format characters become ``_``; a leading ``.`` becomes
    ``_`` (nothing lands hidden); at most 200 bytes, keeping the extension.
    """
    base = posixpath.basename(name.rstrip("/")) if name else ""
    cleaned = "".join("_" if unicodedata.category(ch).startswith("C") or ch in "/\\" else ch for ch in base)
    if cleaned in ("", ".", ".."):
        cleaned = "fetched"
    if cleaned.startswith("."):
        cleaned = "_" + cleaned[1:]
    encoded = cleaned.encode("utf-8", "replace")
    if len(encoded) > 200:
        stem, ext = posixpath.splitext(cleaned)
        ext = ext if len(ext.encode()) <= 20 else ""
        stem = stem.encode("utf-8")[: 200 - len(ext.encode())].decode("utf-8", "ignore")
        cleaned = stem + ext
    return cleaned


def output_limit(max_bytes):
    """The most stdout bytes a well-behaved read of ``max_bytes`` can produce.

    Transports that can stop reading (paramiko, Docker) stop there: a sandbox that ignores
    the in-sandbox cap still cannot push more than this into the controller.
    """
    encoded = 4 * ((max_bytes + 1 + 2) // 3)
    lines = encoded // 76 + 1
    return encoded + lines * (64 + 4) + 64 * 1024
