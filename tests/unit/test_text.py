# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Hostile names: printable for people, valid and lossless in results (pure)."""
import base64
import json
import os
import random

import pytest
from sandboxguard._core.text import escape, for_result, from_result, one_line
from sandboxguard.roots import RootRefused


@pytest.mark.parametrize("raw, shown", [
    (b"plain name.txt", "plain name.txt"),
    (b"caf\xc3\xa9", "caf\u00e9"),
    (b"bad\xff\xfe", "bad\\xff\\xfe"),
    (b"two\nlines", "two\\nlines"),
    (b"cr\rtab\t", "cr\\rtab\\t"),
    (b"esc\x1b[31m", "esc\\x1b[31m"),
    (b"back\\slash", "back\\\\slash"),
    ("line\u2028sep\u202eltr".encode(), "line\\u2028sep\\u202eltr"),
    (b"del\x7f", "del\\x7f"),
])
def test_names_are_escaped_to_one_printable_line(raw, shown):
    assert escape(os.fsdecode(raw)) == shown
    assert escape(raw) == shown
    assert escape(raw).isprintable()
    escape(raw).encode("utf-8")  # never a lone surrogate


def test_a_refused_root_with_a_newline_is_one_line():
    message = str(RootRefused(os.fsdecode(b"/srv/a\nb\xff"), "does not exist"))
    assert message == "/srv/a\\nb\\xff: does not exist"


# --- escape is one-to-one -------------------------------------------------------------------

def _unescape(text):
    """The bytes escape() was given (test-local inverse, proving escape is one-to-one)."""
    out = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
            continue
        kind = text[i + 1]
        if kind in "\\nrt":
            out += {"\\": b"\\", "n": b"\n", "r": b"\r", "t": b"\t"}[kind]
            i += 2
        elif kind == "x":
            code = int(text[i + 2:i + 4], 16)
            out += bytes([code]) if code >= 0x80 else chr(code).encode()  # a raw byte / a control character
            i += 4
        else:
            width = 4 if kind == "u" else 8
            out += chr(int(text[i + 2:i + 2 + width], 16)).encode("utf-8")
            i += 2 + width
    return bytes(out)


def test_a_raw_byte_and_the_c1_control_character_it_looks_like_print_differently():
    assert escape(b"a\x85") == "a\\x85"                     # the byte 0x85 (not UTF-8)
    assert escape("a\u0085".encode()) == "a\\u0085"         # NEL, valid UTF-8 (c2 85)
    assert escape(b"a\xc2\x85") != escape(b"a\x85")
    assert escape("soft\u00adhyphen") == "soft\\u00adhyphen"


def _random_names(count=3000, seed=19):
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    alphabet = [b"a", b"/", b"\\", b"\\x85", b"\n", b"\x1b", b"\x07", b"\x7f", b"\x85", b"\xc2\x85", b"\xff",
                b"\xfe", b"\xed\xb2\x80", "\u2028".encode(), "\u202e".encode(), "\U0001f600".encode(),
                "\u00e9".encode(), b"<script>", b"&amp;", b"]]>", b" ", b"\t", b"\r", b"x"]
    for _ in range(count):
        yield b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))


def test_escape_is_one_to_one_and_gives_the_bytes_back():
    seen = {}
    for raw in _random_names():
        shown = escape(os.fsdecode(raw))
        assert shown.isprintable() and "\n" not in shown
        assert _unescape(shown) == raw, (raw, shown)
        assert seen.setdefault(shown, raw) == raw, "two names print alike: %r %r" % (seen[shown], raw)


# --- one_line ---------------------------------------------------------------------------------

@pytest.mark.parametrize("message", [
    "plain message", "ENOENT: C:\\dir kept as it is", "forged\nWARNING: line", "bell\x07 esc\x1b[2J",
    os.fsdecode(b"bad\xff name"), "tab\tand\rcr", "sep\u2028arator"])
def test_one_line_is_one_printable_line_and_leaves_escaped_text_alone(message):
    line = one_line(message)
    assert line.isprintable()
    line.encode("utf-8")
    assert one_line(line) == line
    assert one_line(escape(message)) == escape(message)
    if "\\" in message and message.isprintable():
        assert line == message  # backslashes are not doubled: a message, not a name


# --- for_result / from_result -------------------------------------------------------------------

BAD = os.fsdecode(b"/srv/h/sandboxes/docker/t1/workspace/bad\xff\xfe")
B64 = base64.b64encode(b"/srv/h/sandboxes/docker/t1/workspace/bad\xff\xfe").decode()


def test_a_valid_name_stays_as_it_is_and_a_bad_one_is_escaped_with_its_bytes_beside_it():
    ok = "/srv/h/two\nlines <script>&amp;]]>\x1b[31m"
    result = for_result({"path": ok, "files": [{"path": BAD, "mode": "04755"}], "count": 2, "none": None})
    assert result["path"] == ok and "path_b64" not in result
    assert result["files"] == [{"path": "/srv/h/sandboxes/docker/t1/workspace/bad\\xff\\xfe", "path_b64": B64,
                                "mode": "04755"}]
    assert result["count"] == 2 and result["none"] is None
    json.dumps(result, ensure_ascii=False).encode("utf-8")  # strict: no lone surrogate anywhere


def test_a_list_of_names_gets_a_parallel_list_of_every_name_s_bytes():
    result = for_result({"roots": ["/srv/ok", BAD], "absent": ["/srv/a", "/srv/b"]})
    assert result["roots"] == ["/srv/ok", escape(BAD)]
    assert result["roots_b64"] == [base64.b64encode(b"/srv/ok").decode(), B64]
    assert "absent_b64" not in result
    assert [base64.b64decode(c) for c in result["roots_b64"]] == [b"/srv/ok", os.fsencode(BAD)]


def test_bytes_keys_and_tuples_come_out_as_text_and_lists():
    result = for_result({b"key": (b"/x/\xff", b"/x/ok"), os.fsdecode(b"k\xff"): 1})
    assert result["key"] == ["/x/\\xff", "/x/ok"]
    assert [base64.b64decode(c) for c in result["key_b64"]] == [b"/x/\xff", b"/x/ok"]
    assert result["k\\xff"] == 1


def _random_value(rng, depth=0):
    names = list(_random_names(40, rng.random()))
    pick = rng.random()
    if depth > 3 or pick < 0.35:
        return os.fsdecode(rng.choice(names))
    if pick < 0.45:
        return rng.choice([0, 1.5, True, None])
    if pick < 0.7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["path", "root", "entry", "source", "realpath", "name", "files", "x"]) + str(i):
            _random_value(rng, depth + 1) for i in range(rng.randint(0, 4))}


def test_round_trip_gives_back_exactly_the_names_and_every_result_is_strict_utf8():
    rng = random.Random(5)  # noqa: S311 - reproducible test data, not secrets
    for _ in range(400):
        value = {"top": _random_value(rng)}
        result = for_result(value)
        json.dumps(result, ensure_ascii=False).encode("utf-8")
        assert for_result(result) == result, "for_result is idempotent"
        assert from_result(json.loads(json.dumps(result))) == value


def test_the_lossless_form_is_the_bytes_of_the_name():
    for raw in _random_names(500):
        name = os.fsdecode(raw)
        result = for_result({"path": name, "roots": [name, "/ok"]})
        if "path_b64" in result:
            assert base64.b64decode(result["path_b64"]) == raw
            assert [base64.b64decode(c) for c in result["roots_b64"]] == [raw, b"/ok"]
        else:
            assert result["path"].encode("utf-8") == raw and "roots_b64" not in result


def test_from_result_keeps_a_sibling_that_is_not_base64():
    broken = {"path": "shown", "path_b64": "not base64!"}
    assert from_result(broken) == broken
    assert from_result({"roots": ["a"], "roots_b64": ["@@"]}) == {"roots": ["a"], "roots_b64": ["@@"]}


def test_envelope_warnings_and_errors_are_one_line():
    from sandboxguard import report

    rep = report.new_report([BAD])
    report.add_warning(rep, "sandbox %s: forged\nWARNING: line" % BAD)
    report.add_error(rep, BAD, "open", "no\nsuch file")
    assert rep["warnings"] == ["sandbox /srv/h/sandboxes/docker/t1/workspace/bad\\xff\\xfe: forged\\nWARNING: line"]
    assert rep["errors"][0]["error"] == "no\\nsuch file" and rep["errors"][0]["path"] == BAD
