# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Hostile names made printable for people: one line, nothing that encodes badly (pure)."""
import os

import pytest
from sandboxguard.roots import RootRefused
from sandboxguard.text import escape


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
