# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Names from a hostile tree, made safe to print for people (pure).

A file name may hold any byte but NUL and '/': a newline forges a line of output, an
escape sequence drives the terminal, and a byte that is not UTF-8 (kept by
os.fsdecode as a lone surrogate) makes a UTF-8 stdout raise UnicodeEncodeError. The
JSON output keeps the names as they are (json.dumps escapes them); human output and
one-line error messages print them through `escape`.
"""

_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape(name):
    """`name` (str from os.fsdecode, or bytes) with every non-printable character escaped.

    A byte that was not UTF-8 becomes \\xNN, a control or invisible formatting character
    (newline, ESC, U+2028, bidi overrides) \\n, \\xNN or \\uNNNN, a backslash \\\\;
    printable text, spaces included, is kept. The result is one printable line.
    """
    if isinstance(name, bytes):
        name = name.decode("utf-8", "surrogateescape")
    if name.isprintable() and "\\" not in name:
        return name
    out = []
    for char in name:
        code = ord(char)
        if char in _NAMED:
            out.append(_NAMED[char])
        elif 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for a byte that is not UTF-8
            out.append("\\x%02x" % (code - 0xDC00))
        elif char.isprintable():
            out.append(char)
        elif code < 0x100:
            out.append("\\x%02x" % code)
        elif code < 0x10000:
            out.append("\\u%04x" % code)
        else:
            out.append("\\U%08x" % code)
    return "".join(out)
