# Copyright: sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Owner and group options (names or numbers) to (uid, gid), for the modules that chown."""

import grp
import pwd


def resolve_owner(module, owner, group):
    """(uid, gid) for owner/group given as names or numbers; None when owner is None.

    A numeric owner with no passwd entry needs a group; anything unknown fails the task
    with one message naming it.
    """
    if owner is None:
        return None
    try:
        entry = pwd.getpwuid(int(owner)) if owner.isdigit() else pwd.getpwnam(owner)
        uid, gid = entry.pw_uid, entry.pw_gid
    except KeyError:
        if not owner.isdigit():
            module.fail_json(msg="owner %r: no such user on this host" % owner)
        uid, gid = int(owner), None
    if group is not None:
        try:
            gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
        except KeyError:
            module.fail_json(msg="group %r: no such group on this host" % group)
    if gid is None:
        module.fail_json(msg="owner %s has no passwd entry on this host: give group too" % owner)
    return uid, gid
