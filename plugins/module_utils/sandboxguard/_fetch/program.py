# GENERATED from python/src/sandboxguard/_fetch/program.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The program the fetch runs inside the sandbox (/bin/sh and coreutils only): the resolve step
and the read step, every line it prints tagged with a random token; and the one command line
for channels that take a string.
"""
import re
import secrets
import shlex

from .policy import DEFAULT_MAX_BYTES, DEFAULT_OPEN_TIMEOUT_S

_TOKEN_RE = re.compile(r"^[0-9a-f]{16,64}$")


def shell_join(argv):
    """One command line for channels that take a string (ssh, Ansible connections)."""
    return " ".join(shlex.quote(arg) for arg in argv)


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
