# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Containment of one absolute path in another: the one rule, pure string logic.

Every "is this path in that tree" question (credential stores, fetch's system prefixes,
the audit's nested roots, a bind mount below a sandbox root, mount points below a root)
asks is_within. Nothing is resolved: callers pass absolute, normalised paths (no ``.``
or ``..`` components; those are not interpreted here), str or bytes alike.
"""


def is_within(path, root, strict=False):
    """True when ``path`` is ``root`` or lies below it; with ``strict``, only below it.

    Trailing slashes do not count (``/a/`` is ``/a``), ``/ab`` is not within ``/a``, and
    every absolute path is within ``/`` (strictly, every one but ``/`` itself). ``path``
    and ``root`` are both str or both bytes.
    """
    sep = b"/" if isinstance(path, bytes) else "/"
    path = path.rstrip(sep) or path[:1]
    root = root.rstrip(sep) or root[:1]
    if path == root:
        return not strict
    if root == sep:
        return path.startswith(sep)
    return path.startswith(root + sep)
