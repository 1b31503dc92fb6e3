# GENERATED from python/src/sandboxguard/fetch.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Fetch one file back from a remote sandbox: guarded, size-capped, sanitised on arrival.

The sandbox is reached through an *exec channel*: any callable
``exec_fn(argv) -> (rc, stdout_bytes, stderr_bytes)`` that runs ``argv`` (always
``["/bin/sh", "-c", PROGRAM]``) inside the sandbox. Transports: ``transport_ssh``
(paramiko), ``transport_docker`` (Docker SDK exec), ``transport_local`` (subprocess),
and the ``safe_fetch`` action plugin (the task's Ansible connection). String-based
channels turn the argv into one command line with :func:`shell_join`.

The protocol, in order; a refusal at any step ends it with nothing written:

1. strict mode: refused before anything else; the channel is never used.
2. pass 1 (controller, pure): the requested path must be absolute, normalised, free of
   control characters and outside the denylist (:func:`check_path`).
3. resolve (sandbox): ``readlink -f``; an unresolvable or missing path fails closed.
4. pass 2 (controller, pure): the resolved path passes the same :func:`check_path`, against
   the home as given and as resolved in the sandbox (a home behind a symlink).
5. read (sandbox), on the resolved path only: refuse a symlink, a FIFO or anything but a
   regular file *before* opening it (opening a FIFO would block); open it once on
   descriptor 3 under a watchdog (a FIFO swapped in between the test and the open kills
   the program after ``open_timeout`` seconds instead of hanging); prove through the
   descriptor that the opened file *is* the validated path (``readlink /proc/self/fd/3``
   must equal it, so a name swapped after pass 2 cannot change what is read) and that it
   is a regular file with one link (``stat -L`` on the descriptor); refuse a size over
   ``max_bytes``; then ``head -c max_bytes+1`` from that same descriptor, base64, every
   line tagged with a random token so login-shell noise cannot be mistaken for payload.
6. decode (controller): strict base64; more than ``max_bytes`` or a length other than the
   size the descriptor reported is refused.
7. land (controller): temp file in the destination directory, fsync, chmod 0644 (0600
   with ``private``; execute bits only with ``executable``; never setid), rename, fsync of
   the directory. A fresh file carries no xattrs of the original.

What this does not protect against: a sandbox whose own tools lie (a replaced ``head``
or ``readlink``). The controller-side guarantees hold regardless: names are checked
before any byte moves, at most ``output_limit(max_bytes)`` bytes are accepted by our
transports, decoding is strict, and what lands is a plain non-setid file.
"""
import base64
import binascii
import hashlib
import os
import posixpath
import re
import secrets
import shlex
import stat
import time
import unicodedata

from . import atomicfile, credentials, safefs
from . import report as envelope
from .errors import InputError
from .pathnames import is_within
from .text import escape

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

MODE_PUBLIC = 0o644
MODE_PRIVATE = 0o600

_CONTROL = re.compile("[\x00-\x1f\x7f]")
_TOKEN_RE = re.compile(r"^[0-9a-f]{16,64}$")
_B64_LINE = re.compile(rb"^[A-Za-z0-9+/]*={0,2}$")


class FetchError(InputError):
    """The request itself is bad (a malformed home, a missing destination directory)."""


class TransportUnavailable(FetchError):
    """A transport's optional package is not installed (the message names it)."""


# ---------------------------------------------------------------- pure checks (pass 1/2)

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


def shell_join(argv):
    """One command line for channels that take a string (ssh, Ansible connections)."""
    return " ".join(shlex.quote(arg) for arg in argv)


# ---------------------------------------------------------------- the sandbox program

_PRELUDE = r"""
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}; export PATH
LC_ALL=C; export LC_ALL
T=%(token)s
say() { printf '%%s:%%s\n' "$T" "$*"; }
refuse() { say "REFUSE $1 $2"; exit 0; }
for t in readlink stat head base64 od sed tr sleep kill; do
  command -v "$t" >/dev/null 2>&1 || refuse missing_tool "the sandbox has no '$t' (install coreutils or busybox)"
done
"""

# readlink's output keeps a trailing newline of the name: '; printf x' then strip 'x' and
# the one newline readlink adds (a bare $(...) would eat every trailing newline).
_RESOLVE = _PRELUDE + r"""
p=%(path)s
r=$(readlink -f -- "$p" 2>/dev/null && printf x) || refuse unresolvable "readlink -f cannot resolve the path"
r=${r%%x}; r=${r%%?}
[ -n "$r" ] || refuse unresolvable "readlink -f gave nothing"
[ -e "$r" ] || refuse missing "no such file"
say "RESOLVED $(printf '%%s' "$r" | od -An -v -tx1 | tr -d ' \n')"
h=%(home)s
if [ -n "$h" ]; then
  rh=$(readlink -f -- "$h" 2>/dev/null && printf x) || refuse unresolvable "readlink -f cannot resolve the home $h"
  rh=${rh%%x}; rh=${rh%%?}
  say "HOME $(printf '%%s' "$rh" | od -An -v -tx1 | tr -d ' \n')"
fi
hh=%(hermes_home)s
if [ -n "$hh" ]; then
  rhh=$(readlink -f -- "$hh" 2>/dev/null && printf x) ||
    refuse unresolvable "readlink -f cannot resolve the Hermes home $hh"
  rhh=${rhh%%x}; rhh=${rhh%%?}
  say "HHOME $(printf '%%s' "$rhh" | od -An -v -tx1 | tr -d ' \n')"
fi
say DONE
"""

# open_fd3 PATH SECONDS: open PATH on descriptor 3 in this shell. A FIFO swapped in between
# the type tests and the open would block the open: a watchdog kills this shell (-9) after
# SECONDS. Its output goes nowhere, so a leftover sleep cannot hold the channel open.
_OPEN_FD3 = r"""
open_fd3() {
  ( sleep "$2"; kill -9 $$ ) >/dev/null 2>&1 </dev/null &
  w=$!
  command exec 3< "$1" || { kill $w 2>/dev/null; refuse unreadable "cannot open"; }
  kill $w 2>/dev/null
}
"""

_READ = _PRELUDE + _OPEN_FD3 + r"""
r=%(path)s
max=%(max_bytes)d
[ -L "$r" ] && refuse swapped "the resolved path became a symlink after pass 2"
[ -e "$r" ] || refuse missing "no such file"
[ -p "$r" ] && refuse fifo "a FIFO is never opened (it could block forever)"
[ -f "$r" ] || refuse not_regular "not a regular file"
[ -r "$r" ] || refuse unreadable "permission denied"
open_fd3 "$r" %(open_timeout)d
fd=/proc/self/fd/3
[ -e "$fd" ] || fd=/dev/fd/3
o=$(readlink "$fd" 2>/dev/null && printf x) ||
  refuse unverifiable "cannot read the descriptor's path (is /proc mounted in the sandbox?)"
o=${o%%x}; o=${o%%?}
[ "$o" = "$r" ] || refuse swapped "the opened file is not the validated path (name swapped after pass 2)"
s=$(stat -L -c '%%f %%h %%s' "$fd" 2>/dev/null) || refuse unverifiable "stat on the open descriptor failed"
set -- $s
[ $# -eq 3 ] || refuse unverifiable "unexpected stat output"
say "STAT $1 $2 $3"
[ $(( 0x$1 & 0xF000 )) -eq $(( 0x8000 )) ] || refuse not_regular "the open descriptor is not a regular file"
[ "$2" -eq 1 ] || refuse hard_link "the file has $2 hard links (an alias of another name)"
[ "$3" -le "$max" ] || refuse too_large "the file has $3 bytes, more than max_bytes=$max"
# Long lines keep the per-line tag cheap; a base64 without -w wraps at 76.
b64="base64 -w 4096"
printf x | $b64 >/dev/null 2>&1 || b64=base64
say BEGIN
head -c $(( max + 1 )) <&3 | $b64 | sed "s/^/$T:D:/"
say END
exec 3<&-
say DONE
"""


def new_token():
    """A random token for the marker lines of one call."""
    return secrets.token_hex(12)


def resolve_program(path, token, home=None, hermes_home=None):
    """The sandbox program of the resolve step (the path, and the homes when known), as an argv."""
    _check_token(token)
    return ["/bin/sh", "-c", _RESOLVE % {"token": token, "path": shlex.quote(path), "home": shlex.quote(home or ""),
                                         "hermes_home": shlex.quote(hermes_home or "")}]


def read_program(resolved, token, max_bytes=DEFAULT_MAX_BYTES, open_timeout=DEFAULT_OPEN_TIMEOUT_S):
    """The sandbox program of the read step, as an argv for the exec channel."""
    _check_token(token)
    return ["/bin/sh", "-c", _READ % {
        "token": token, "path": shlex.quote(resolved), "max_bytes": int(max_bytes),
        "open_timeout": int(open_timeout),
    }]


def _check_token(token):
    if not _TOKEN_RE.match(token):
        raise ValueError("marker token must be 16 to 64 lowercase hex digits")


# ---------------------------------------------------------------- parsing the output

_PATH_RECORDS = {b"RESOLVED": "resolved", b"HOME": "resolved_home", b"HHOME": "resolved_hermes_home"}


def parse_output(stdout, token):
    """Split the program's stdout into records; everything without the token is noise.

    Returns {"refuse_code": str or None, "refuse_reason": str or None, "resolved": bytes or None,
    "resolved_home": bytes or None, "resolved_hermes_home": bytes or None, "stat": bool (a STAT line
    came), "mode": int, "nlink": int, "size": int, "begin": bool, "end": bool, "done": bool,
    "data": [bytes lines], "noise": int}.
    Raises ValueError on a malformed tagged line.
    """
    prefix = token.encode() + b":"
    result = {"refuse_code": None, "refuse_reason": None, "resolved": None, "resolved_home": None,
              "resolved_hermes_home": None, "stat": False,
              "mode": 0, "nlink": 0, "size": 0, "begin": False, "end": False,
              "done": False, "data": [], "noise": 0}
    for raw in stdout.split(b"\n"):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line.startswith(prefix):
            if line.strip():
                result["noise"] += 1
            continue
        rest = line[len(prefix):]
        if rest.startswith(b"D:"):
            if not result["begin"] or result["end"]:
                raise ValueError("payload line outside BEGIN/END")
            result["data"].append(rest[2:])
        elif rest.startswith(b"REFUSE "):
            code, _sep, reason = rest[7:].decode("utf-8", "replace").partition(" ")
            result["refuse_code"], result["refuse_reason"] = code, reason
        elif rest.startswith((b"RESOLVED ", b"HOME ", b"HHOME ")):
            key, _sep, hexpath = rest.partition(b" ")
            try:
                result[_PATH_RECORDS[key]] = binascii.unhexlify(hexpath.strip())
            except (binascii.Error, ValueError):
                raise ValueError("malformed %s line" % key.decode()) from None
        elif rest.startswith(b"STAT "):
            fields = rest[5:].split()
            if len(fields) != 3 or not all(re.match(rb"^[0-9a-fA-F]+$", f) for f in fields[:1]) or not (
                fields[1].isdigit() and fields[2].isdigit()
            ):
                raise ValueError("malformed STAT line")
            result.update(stat=True, mode=int(fields[0], 16), nlink=int(fields[1]), size=int(fields[2]))
        elif rest == b"BEGIN":
            if result["begin"]:
                raise ValueError("second BEGIN")
            result["begin"] = True
        elif rest == b"END":
            if not result["begin"] or result["end"]:
                raise ValueError("END without BEGIN")
            result["end"] = True
        elif rest == b"DONE":
            result["done"] = True
        else:
            raise ValueError("unknown tagged line %r" % rest[:40])
    return result


def decode_payload(lines):
    """Strict base64 of the tagged payload lines; raises ValueError on anything else."""
    for index, line in enumerate(lines):
        if not _B64_LINE.match(line):
            raise ValueError("payload line %d is not base64" % (index + 1))
        if b"=" in line and index != len(lines) - 1:
            raise ValueError("padding before the last payload line")
    joined = b"".join(lines)
    if len(joined) % 4:
        raise ValueError("payload length %d is not a multiple of 4" % len(joined))
    try:
        return base64.b64decode(joined, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("payload is not valid base64: %s" % exc) from None


# ---------------------------------------------------------------- landing (controller side)

def land_file(data, dest_dir, name, *, private=False, executable=False, overwrite=True, dry_run=False, held=None):
    """Write ``data`` as ``dest_dir/name`` atomically; return (path, mode, changed).

    Touches the file system: the destination directory is proven component by component
    (safefs.open_dir: a symlink is followed only where only root, or this user, could have
    made it; ``held``: a safefs.Dir of it the caller proved already), then, below that
    descriptor only, a temp file created O_EXCL|O_NOFOLLOW, chmod to 0644 (0600 when
    ``private``; matching execute bits only when ``executable``; never setuid/setgid/sticky),
    fsync, rename over the final name, fsync of the directory. An identical existing file
    (same bytes and mode) is left alone. Nothing is left behind when it fails. ``dry_run``
    decides ``changed`` and writes nothing.
    """
    mode = MODE_PRIVATE if private else MODE_PUBLIC
    if executable:
        mode |= (mode & 0o444) >> 2
    if name != safe_name(name):
        raise FetchError("destination name %r is not a safe file name; use %r" % (name, safe_name(name)))
    final = os.path.join(dest_dir, name)
    if held is None:
        try:
            directory = safefs.open_dir(dest_dir)
        except FileNotFoundError:
            if dry_run:
                return final, mode, True  # the caller would create it
            raise FetchError("destination directory %s does not exist; create it first" % escape(dest_dir)) from None
        except safefs.PathRefused as exc:
            fix = exc.with_fix("give a directory only you can change")
            raise FetchError("destination directory %s" % fix) from None
        except OSError as exc:
            raise FetchError("destination directory %s: %s; create it first"
                             % (escape(dest_dir), exc.strerror)) from None
    else:
        directory = held
    try:
        dfd = directory.fd
        st = safefs.lstat_at(dfd, name)
        if st is not None:
            if not stat.S_ISREG(st.st_mode):
                raise FetchError("destination %s exists and is not a regular file; remove it or pick another name"
                                 % escape(final))
            if not overwrite:
                raise FetchError("destination %s exists; remove it or allow overwrite" % escape(final))
            if stat.S_IMODE(st.st_mode) == mode and st.st_size == len(data) and _same_content(dfd, name, data):
                return final, mode, False
        if dry_run:
            return final, mode, True
        try:
            atomicfile.write_at(dfd, name, data, mode=mode)
        except FileExistsError:
            raise FetchError("cannot create a temporary file in %s" % escape(dest_dir)) from None
        return final, mode, True
    finally:
        if held is None:
            directory.close()


def _same_content(dfd, name, data):
    """Whether ``name`` in the held directory is a regular file holding exactly ``data``
    (safefs.read_at: never a FIFO or device, never through a symlink)."""
    try:
        found, _st = safefs.read_at(dfd, name, limit=len(data) + 1)
    except (safefs.PathRefused, OSError):
        return False
    return found == data


# ---------------------------------------------------------------- the whole protocol

def _report(src, dest_dir, max_bytes, home, hermes_home, strict):
    """The report envelope (report.new_report) with the fetch's own keys; a refusal is
    also its one error, {path: src, op: stage, error: reason}."""
    return envelope.new_report(
        [src] if isinstance(src, (str, bytes)) else [],
        src=src, path=None, resolved=None, dest=None, dest_dir=dest_dir, fetched=False, refused=None,
        refused_code=None, stage=None, size=None, sha256=None, mode=None, remote_mode=None, max_bytes=max_bytes,
        remote_home=home, resolved_home=None, remote_hermes_home=hermes_home, resolved_hermes_home=None,
        strict=bool(strict), bytes_received=0, noise_lines=0,
    )


class _Refused(Exception):
    """One step refused; carries (stage, code, reason) up to :func:`fetch`."""


def _refuse(report, stage, code, reason, started):
    report.update(refused=reason, refused_code=code, stage=stage, elapsed=round(time.monotonic() - started, 3))
    envelope.add_error(report, report["src"] if isinstance(report["src"], (str, bytes)) else "", stage, reason)
    return report


def _first_line(stderr):
    text = stderr.decode("utf-8", "replace").strip().splitlines() if stderr else []
    return (", stderr: %s" % text[0][:200]) if text else ""


def _run(exec_fn, argv, report):
    rc, out, err = exec_fn(argv)
    out = out or b""
    report["bytes_received"] += len(out) + len(err or b"")
    return rc, out, err or b""


def _parse(out, token, stage, report):
    try:
        parsed = parse_output(out, token)
    except ValueError as exc:
        raise _Refused(stage, "protocol", "malformed sandbox output: %s" % exc) from None
    report["noise_lines"] += parsed["noise"]
    return parsed


def _resolve_step(exec_fn, path, home, hermes_home, report):
    """Step 3: ``readlink -f`` of the path and of the homes in the sandbox; returns the homes to check against."""
    token = new_token()
    rc, out, err = _run(exec_fn, resolve_program(path, token, home, hermes_home), report)
    parsed = _parse(out, token, "resolve", report)
    if parsed["refuse_code"]:
        raise _Refused("resolve", parsed["refuse_code"], "%s: %s" % (escape(path), parsed["refuse_reason"]))
    if parsed["resolved"] is None or not parsed["done"]:
        raise _Refused("resolve", "protocol", "the sandbox did not report a resolved path (exit status %s%s)"
                       % (rc, _first_line(err)))
    report["resolved"] = parsed["resolved"].decode("utf-8", "surrogateescape")
    # A home may itself be (or lie under) a symlink, /home/agent -> /data/agent: the resolved
    # path must then pass the check against the resolved home as well.
    homes, hermes_homes = [home], [hermes_home]
    for given, key, checker, found in ((home, "resolved_home", check_home, homes),
                                       (hermes_home, "resolved_hermes_home", check_hermes_home, hermes_homes)):
        if given is None:
            continue
        if parsed[key] is None:
            raise _Refused("resolve", "protocol", "the sandbox did not report its resolved %s"
                           % ("home" if key == "resolved_home" else "Hermes home"))
        resolved = parsed[key].decode("utf-8", "surrogateescape")
        report[key] = resolved
        try:
            found.append(checker(resolved))
        except FetchError as exc:
            raise _Refused("pass2", "denylisted", "%s resolves to %s: %s"
                           % (escape(given), escape(resolved), exc)) from None
    return homes, [h for h in hermes_homes if h is not None]


def _pass2(resolved, homes, hermes_homes):
    """Step 4: the resolved path against every spelling of the homes."""
    for candidate in homes:
        problem = check_path(resolved, candidate, hermes_homes)
        if problem:
            raise _Refused("pass2", problem[0], "resolved to %s: %s" % (escape(resolved), problem[1]))


def _read_step(exec_fn, resolved, max_bytes, open_timeout, report):
    """Steps 5 and 6: read through the checked descriptor, verify and decode; returns the bytes."""
    token = new_token()
    rc, out, err = _run(exec_fn, read_program(resolved, token, max_bytes, open_timeout), report)
    if len(out) > output_limit(max_bytes):
        raise _Refused("read", "too_large", "the sandbox sent %d bytes, more than max_bytes=%d allows"
                       % (len(out), max_bytes))
    parsed = _parse(out, token, "read", report)
    if parsed["stat"]:
        report["remote_mode"] = envelope.mode_text(parsed["mode"])
    if parsed["refuse_code"]:
        raise _Refused("read", parsed["refuse_code"], "%s: %s" % (escape(resolved), parsed["refuse_reason"]))
    if not (parsed["stat"] and parsed["begin"] and parsed["end"] and parsed["done"]):
        raise _Refused("read", "protocol",
                       "the sandbox program ended early (exit status %s%s; -9/137 means the open watchdog killed it)"
                       % (rc, _first_line(err)))
    mode_bits, nlink, size = parsed["mode"], parsed["nlink"], parsed["size"]
    # The same decisions as inside the sandbox, on the values the sandbox reported.
    if not stat.S_ISREG(mode_bits):
        raise _Refused("read", "not_regular", "%s: not a regular file" % escape(resolved))
    if nlink != 1:
        raise _Refused("read", "hard_link", "%s: %d hard links" % (escape(resolved), nlink))
    if size > max_bytes:
        raise _Refused("read", "too_large", "%s: %d bytes > max_bytes=%d" % (escape(resolved), size, max_bytes))
    try:
        data = decode_payload(parsed["data"])
    except ValueError as exc:
        raise _Refused("decode", "decode", "%s: %s" % (escape(resolved), exc)) from None
    if len(data) > max_bytes:
        raise _Refused("decode", "too_large", "%s: more than max_bytes=%d bytes arrived although the size said %d"
                       % (escape(resolved), max_bytes, size))
    if len(data) != size:
        raise _Refused("decode", "changed", "%s: %d bytes arrived but the descriptor said %d (file changed while "
                       "read?)" % (escape(resolved), len(data), size))
    return data


def _make_dest_dir(dest_dir):
    """Create a missing destination directory (and parents) at 0755, just before landing;
    return it as a proven safefs.Dir (each missing directory made with mkdirat and checked
    through its descriptor; a symlink on the way that another user could have planted
    refuses the path)."""
    try:
        return safefs.open_dir(dest_dir, create=True, mode=0o755)
    except safefs.PathRefused as exc:
        raise FetchError("destination directory %s" % exc.with_fix("give a directory only you can change")) from None
    except OSError as exc:
        raise FetchError("destination directory %s: %s; pick a directory this user can create"
                         % (escape(dest_dir), exc.strerror)) from None


def fetch(exec_fn, src, dest_dir, *, max_bytes=DEFAULT_MAX_BYTES, remote_home=None, remote_hermes_home=None,
          strict=False, name=None, private=False, executable=False, overwrite=True,
          open_timeout=DEFAULT_OPEN_TIMEOUT_S, dry_run=False, create_dest=False, after_pass2=None):
    """Fetch ``src`` from the sandbox behind ``exec_fn`` into ``dest_dir``; return a report.

    ``exec_fn(argv) -> (rc, stdout, stderr)`` runs ``argv`` in the sandbox. ``src`` is an
    absolute path, or ``~/...`` when ``remote_home`` is known (refused when it is not); the
    report's ``path`` is the absolute path asked for. ``remote_hermes_home`` is the
    sandbox's HERMES_HOME when known: its credential stores are refused as those of
    ``~/.hermes`` are. The report has ``fetched`` and ``changed`` (bools), ``dest``,
    ``size``, ``sha256``, ``mode`` of what landed, ``remote_mode`` (octal string, setid
    bits shown but never carried), ``refused`` (a sentence, or None) with ``refused_code``
    and ``stage`` (strict, pass1, resolve, pass2, read, decode, done), and
    ``bytes_received`` (every stdout+stderr byte the channel delivered). A channel with a
    ``max_output`` attribute (ours) gets it set to ``output_limit(max_bytes)``.
    ``after_pass2`` is a hook called between pass 2 and the read (tests use it to swap
    names in). ``dry_run`` (check mode) runs every check and the transfer, reports whether
    the destination would change, and writes nothing (``fetched`` false). A missing
    ``dest_dir`` is an error unless ``create_dest``: then it is created only when a file
    is about to land, so a refusal or a dry run writes nothing at all. Bad input (a
    malformed home, a missing destination) raises FetchError; so do our transports when
    the channel fails; other exceptions of ``exec_fn`` propagate.
    """
    started = time.monotonic()
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0:
        raise FetchError("max_bytes must be a non-negative integer, got %r" % (max_bytes,))
    if hasattr(exec_fn, "max_output"):
        # Our transports stop reading there; see output_limit().
        exec_fn.max_output = output_limit(max_bytes)
    home = check_home(remote_home)
    hermes_home = check_hermes_home(remote_hermes_home)
    report = _report(src, dest_dir, max_bytes, home, hermes_home, strict)
    if strict:
        return _refuse(report, "strict", "strict", "strict mode: remote files are never fetched", started)
    if not os.path.isdir(dest_dir) and not ((create_dest or dry_run) and not os.path.lexists(dest_dir)):
        raise FetchError("destination directory %s does not exist; create it first" % dest_dir)
    path = expand_home(src, home)
    report["path"] = path if isinstance(path, str) and path.startswith("/") else None
    target_name = safe_name(name if name else path if isinstance(path, str) else "")
    try:
        problem = check_path(path, home, [hermes_home])
        if problem:
            raise _Refused("pass1", problem[0], problem[1])
        homes, hermes_homes = _resolve_step(exec_fn, path, home, hermes_home, report)
        _pass2(report["resolved"], homes, hermes_homes)
        if after_pass2 is not None:
            after_pass2(report["resolved"])
        data = _read_step(exec_fn, report["resolved"], max_bytes, open_timeout, report)
    except _Refused as refusal:
        return _refuse(report, *refusal.args, started)
    held = _make_dest_dir(dest_dir) if create_dest and not dry_run else None
    try:
        dest, mode, changed = land_file(data, dest_dir, target_name, private=private, executable=executable,
                                        overwrite=overwrite, dry_run=dry_run, held=held)
    finally:
        if held is not None:
            held.close()
    report.update(dest=dest, fetched=not dry_run, changed=changed, size=len(data),
                  sha256=hashlib.sha256(data).hexdigest(), mode=envelope.mode_text(mode), stage="done",
                  elapsed=round(time.monotonic() - started, 3))
    return report
