# GENERATED from python/src/sandboxguard/owners.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Owners for ownership return, resolved once: names or ids, user or user:group.

The one rule for the modules (``owner``/``group``), the CLI (``strip --chown-to`` and
``sweep --owner``) and the roles:

- ``USER`` (a name or a uid): that user and its primary group from the passwd database,
  as ``chown USER:`` does. A uid with no passwd entry needs a group.
- ``USER:GROUP``: either side a name or a number (``1000:1000``, ``alice:staff``).
- ``:GROUP`` alone is refused: ownership return needs a user.

Touches the system only to read the passwd and group databases. Raises InputError (a ValueError) with
one line naming what is wrong and how to fix it.
"""
import grp
import pwd

from .errors import InputError

__all__ = ["parse_owner", "resolve_owner"]


def _is_id(text):
    return text.isdigit()


def resolve_owner(owner, group=None):
    """(uid, gid) for ``owner`` (name or uid, or ``USER:GROUP`` text) and ``group`` (name,
    gid or None).

    None for ``owner`` None. Unknown names and a uid with neither passwd entry nor group
    raise InputError.
    """
    if owner is None:
        if group not in (None, ""):
            raise InputError("group %r without an owner: ownership return needs a user (give owner too)" % group)
        return None
    owner = str(owner).strip()
    if not owner:
        raise InputError("owner is empty: give a user name or uid")
    if ":" in owner:
        if group not in (None, ""):
            raise InputError("owner %r names a group and group %r is given too: give one of them" % (owner, group))
        return parse_owner(owner)
    uid = gid = None
    try:
        entry = pwd.getpwuid(int(owner)) if _is_id(owner) else pwd.getpwnam(owner)
        uid, gid = entry.pw_uid, entry.pw_gid
    except KeyError:
        if not _is_id(owner):
            raise InputError("owner %r: no such user on this host (give an existing user name or a uid)"
                             % owner) from None
        uid = int(owner)
    if group not in (None, ""):
        group = str(group).strip()
        try:
            gid = int(group) if _is_id(group) else grp.getgrnam(group).gr_gid
        except KeyError:
            raise InputError("group %r: no such group on this host (give an existing group name or a gid)"
                             % group) from None
    if gid is None:
        raise InputError("owner %s has no passwd entry on this host: give the group too (%s:GID)" % (owner, owner))
    return uid, gid


def parse_owner(text):
    """(uid, gid) for ``USER``, ``USER:GROUP`` or ``UID:GID`` text (see the module docstring)."""
    text = str(text).strip()
    owner, sep, group = text.partition(":")
    if sep and not owner:
        raise InputError("%r: name the user too (USER or USER:GROUP); ownership return needs a user" % text)
    if sep and not group:
        group = None  # "alice:" is chown's "alice and her login group"
    return resolve_owner(owner, group)
