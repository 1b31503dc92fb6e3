# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Reading what the sandbox program printed (controller side, pure): the token-tagged records
and the strict base64 payload; noise lines (a login shell's banner) are counted, never taken.
"""
import base64
import binascii
import re

_B64_LINE = re.compile(rb"^[A-Za-z0-9+/]*={0,2}$")


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
