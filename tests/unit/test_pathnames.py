# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""pathnames.is_within, the one containment rule (pure)."""
import os

import pytest
from sandboxguard._core.pathnames import is_within


@pytest.mark.parametrize("path,root,within,strictly", [
    ("/a", "/a", True, False),
    ("/a/b", "/a", True, True),
    ("/a/b/c", "/a", True, True),
    ("/ab", "/a", False, False),
    ("/a", "/ab", False, False),
    ("/a", "/a/b", False, False),
    ("/a/", "/a", True, False),
    ("/a", "/a/", True, False),
    ("/a/b/", "/a/", True, True),
    ("/a//b", "/a", True, True),
    ("/", "/", True, False),
    ("/x", "/", True, True),
    ("/x/y", "//", True, True),
    ("/", "/a", False, False),
    ("/etc2", "/etc", False, False),
])
def test_is_within_edges(path, root, within, strictly):
    assert is_within(path, root) is within
    assert is_within(path, root, strict=True) is strictly
    assert is_within(os.fsencode(path), os.fsencode(root)) is within
    assert is_within(os.fsencode(path), os.fsencode(root), strict=True) is strictly


def test_is_within_takes_any_bytes():
    assert is_within(b"/r/\xff\n/x", b"/r/\xff\n", strict=True)
    assert not is_within(b"/r/\xff\nx", b"/r/\xff\n")
