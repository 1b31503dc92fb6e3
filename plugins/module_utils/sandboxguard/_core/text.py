# GENERATED from python/src/sandboxguard/_core/text.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Names from a hostile tree: printable for people, valid in every result, lossless (pure).

A file name may hold any byte but NUL and '/': a newline forges a line of output, an
escape sequence drives the terminal, and a byte that is not UTF-8 (kept by
os.fsdecode as a lone surrogate) makes a UTF-8 stdout raise UnicodeEncodeError and
ansible-core 2.19+ refuse a whole module result ("Refusing to deserialize an invalid
UTF8 string value"). Three functions, one for each place a name goes:

- :func:`escape`: a name for people (human output, log lines, messages): one printable
  line, and two different names never print alike.
- :func:`one_line`: a message already built (its names escaped) made safe to print as
  one line whatever it holds: non-printable characters escaped, backslashes kept.
- :func:`for_result`: what a result carries (a module's result, ``--json``, the fleet
  reports): every string that is valid UTF-8 stays as it is (JSON escapes its control
  characters; people see ``escape`` of it when it is printed); a string holding bytes
  that are not UTF-8 is carried as ``escape(value)``, and its key ``K`` gets a sibling
  ``K_b64`` with the base64 of the raw bytes. For a list holding one such string (in it
  or in a list in it), ``K_b64`` is a parallel list: the base64 of every string, a
  parallel list for every list, null for anything else (a dict inside carries its own
  siblings). :func:`from_result` undoes it (``from_result(for_result(x)) == x``): the
  names as os.fsdecode makes them.

The rule a reader of a result applies: when ``K_b64`` is present, it is the bytes;
otherwise ``K`` encoded as UTF-8 is.
"""
import base64
import binascii
import os

_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
B64_SUFFIX = "_b64"


def escape(name):
    """`name` (str from os.fsdecode, or bytes) with every non-printable character escaped.

    A byte that is not UTF-8 becomes \\xNN (NN from 80 to ff); a control or invisible
    formatting character \\n, \\r, \\t, \\xNN below 0x80 (ESC is \\x1b), \\uNNNN or
    \\UNNNNNNNN above (the C1 control U+0085 is \\u0085, never the \\x85 of a raw byte);
    a backslash \\\\. Printable text, spaces included, is kept. The result is one
    printable line, and escape is one-to-one: two different names never look alike.
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
        elif code < 0x80:
            out.append("\\x%02x" % code)
        elif code < 0x10000:
            out.append("\\u%04x" % code)
        else:
            out.append("\\U%08x" % code)
    return "".join(out)


def one_line(message):
    """`message` with every non-printable character escaped as escape() does, backslashes
    kept: for a line already built from escaped names (one_line of it changes nothing)
    that must stay one printable line whatever a caller put in it."""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "surrogateescape")
    message = str(message)
    if message.isprintable():
        return message
    return "".join(char if char.isprintable() else escape(char) for char in message)


def is_valid(text):
    """True when the str `text` encodes as UTF-8 (holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def raw_bytes(text):
    """The bytes a str from os.fsdecode stands for (a surrogate not from it: as UTF-8 would)."""
    try:
        return os.fsencode(text)
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _b64(text):
    return base64.b64encode(raw_bytes(text)).decode("ascii")


def _text(value):
    return os.fsdecode(value) if isinstance(value, bytes) else value


def _needs_bytes(value):
    """True when a string in `value` (or in its lists, not in its dicts) is not UTF-8."""
    if isinstance(value, (str, bytes)):
        return not is_valid(_text(value))
    if isinstance(value, (list, tuple)):
        return any(_needs_bytes(item) for item in value)
    return False


def _coded(value):
    if isinstance(value, (str, bytes)):
        return _b64(_text(value))
    if isinstance(value, (list, tuple)):
        return [_coded(item) for item in value]
    return None  # a number, None, or a dict (whose own keys carry their siblings)


def _lossless(value):
    """The `K_b64` sibling of a value, or None when the value is carried as it is."""
    return _coded(value) if _needs_bytes(value) else None


def for_result(value):
    """`value` (dicts, lists, strings, bytes, numbers) as a result may carry it: valid UTF-8
    everywhere, names lossless through `K_b64` siblings (see the module doc). A tuple
    becomes a list; a dict key that is not UTF-8 is escaped (keys are never file names in
    sandboxguard's results: users, checks, hosts, settings). Pure, and idempotent."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(key, bytes):
                key = os.fsdecode(key)
            if isinstance(key, str) and not is_valid(key):
                key = escape(key)
            out[key] = for_result(item)
            lossless = _lossless(item)
            if lossless is not None and isinstance(key, str) and key + B64_SUFFIX not in value:
                out[key + B64_SUFFIX] = lossless
        return out
    if isinstance(value, (list, tuple)):
        return [for_result(item) for item in value]
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if isinstance(value, str) and not is_valid(value):
        return escape(value)
    return value


def _decode_b64(text):
    try:
        return os.fsdecode(base64.b64decode(text.encode("ascii"), validate=True))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None


def from_result(value):
    """Undo for_result: each `K` that has a `K_b64` gets back the name os.fsdecode made of
    the bytes, and the sibling goes. A sibling that is not base64 (a hand-edited report)
    is left as it is, with its `K`."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(key, str) and key.endswith(B64_SUFFIX) and key[:-len(B64_SUFFIX)] in value:
                continue
            out[key] = from_result(item)
            lossless = value.get(key + B64_SUFFIX) if isinstance(key, str) else None
            if lossless is None:
                continue
            restored = _restore(item, lossless)
            if restored is None:
                out[key + B64_SUFFIX] = lossless
            else:
                out[key] = restored
        return out
    if isinstance(value, list):
        return [from_result(item) for item in value]
    return value


def _restore(item, lossless):
    """`item` as it was before for_result, from its sibling, or None when they do not fit."""
    if isinstance(lossless, str) and isinstance(item, str):
        return _decode_b64(lossless)
    if isinstance(lossless, list) and isinstance(item, list) and len(lossless) == len(item):
        out = []
        for shown, coded in zip(item, lossless):
            if coded is None:
                out.append(from_result(shown))
                continue
            restored = _restore(shown, coded)
            if restored is None:
                return None
            out.append(restored)
        return out
    return None
