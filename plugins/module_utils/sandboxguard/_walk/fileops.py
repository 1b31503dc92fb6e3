# GENERATED from python/src/sandboxguard/_walk/fileops.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

What a strip does to ONE regular file, and the one parameters object of a strip.

The named file actions (``return_owner``, ``clear_caps``, ``strip_setid``) each take a
proven handle (an O_PATH fd of the very inode the scan saw, fstat-checked) and act
through /proc/self/fd/N, so nothing is opened for I/O and a name swapped for a symlink
after the check is never followed. ``fix_proven_file`` runs them in the kernel's order
(ownership return first: chown clears setid bits and caps, capabilities(7));
``fix_file_at`` is the single-file path of a strip (the walk's per-file path, a file
given as a root and the real-time guard all go through it). ``StripOptions`` holds
every option of a strip, validated once. Touches the system where a name says so.
"""
import errno
import os
import stat

from .. import caps as capsmod
from .. import report as envelope
from .._core import inputs
from ..errors import InputError

DEFAULT_BUDGET_S = 10.0
DEFAULT_MAX_LISTED = 1000
PROGRESS_INTERVAL_S = 0.5
CAP_XATTR = capsmod.XATTR_NAME
PATH_FLAGS = getattr(os, "O_PATH", 0o10000000) | os.O_NOFOLLOW | os.O_CLOEXEC
ACTIONS = ("setid", "caps", "chown", "device")
CAPS_METHODS = ("xattr", "chown")
DEFAULT_CAPS_METHOD = "xattr"
HARDLINK_POLICIES = ("strip", "skip")
DEFAULT_HARDLINKS = "strip"
# chown_from for an ownership return to the owner of a whole tree (a CI runner's work
# folder): every file or directory whose uid or gid is not chown_to's is given back.
CHOWN_FROM_OTHERS = "others"
# setid_strip's chown_from choices: root's files only (the default), or every file whose uid
# or gid is not chown_to's (a CI runner's work folder: what breaks the next checkout).
CHOWN_FROM_ROOT = "root"
CHOWN_FROM_CHOICES = (CHOWN_FROM_ROOT, CHOWN_FROM_OTHERS)


class ChangedUnderUs(Exception):
    """The inode at a name is no longer the one the scan saw."""


_UID_MAX = (1 << 32) - 2  # (uid_t)-1 means "leave unchanged" to chown(2)
PROTECTED_HARDLINKS = "/proc/sys/fs/protected_hardlinks"
# One rule for a regular file with more than one hard link, in every walk: never given away
# (where fs.protected_hardlinks is 1 a user may still have linked a root file it can read and
# write through a group); where the sysctl is 0 nothing is changed on it at all, not even its
# setid bits or capabilities: any user may have linked a system binary (sudo, passwd) into the
# tree, and stripping the shared inode would strip it host-wide (see hardlinks_protected).
LINKED_OWNER_KEPT = "owner kept: a file with more than one hard link is never given away"
LINKED_UNCHANGED = ("left unchanged: a file with more than one hard link where fs.protected_hardlinks is 0 may be "
                    "a system file any user linked here; set sysctl fs.protected_hardlinks=1 (and in /etc/sysctl.d)")
LINKED_OWNER_WARNING = (
    "files with more than one hard link kept their owner (listed with owner_kept): a hard link may be a file of "
    "another user or root linked into the tree, so ownership return never gives one away")
LINKED_UNCHANGED_WARNING = (
    "files with more than one hard link were left unchanged (listed with skipped): fs.protected_hardlinks is not 1 "
    "on this host, so any user may have linked a system file (/usr/bin/sudo, /etc/shadow) into the tree, and "
    "changing the shared inode would change it host-wide; set sysctl fs.protected_hardlinks=1 (and in "
    "/etc/sysctl.d), then run again")
# A block or character device node in an agent's tree opens a host device to whoever may open
# it: made harmless (root-owned, mode 0000: unlinkable by the directory's owner, no longer
# openable or chmod-able by it), never given away.
DEVICE_MODE = 0o000
DEVICE_OWNER = (0, 0)


def hardlinks_protected(path=PROTECTED_HARDLINKS):
    """Whether the kernel lets users hard-link only files they own or may read and write
    (``fs.protected_hardlinks`` is 1; systemd's sysctl sets it, the kernel's own default is 0).

    Where it is not, a multi-link file in an agent's tree may be a root file the agent linked
    there: ownership return leaves such files alone. Unreadable counts as not protected.
    Read once per strip (StripOptions), never per file.
    """
    try:
        with open(path, "rb") as handle:
            return handle.read().strip() == b"1"
    except OSError:
        return False


OPTION_DEFAULTS = {
    "actions": ("setid", "caps", "device"), "dry_run": False, "budget": DEFAULT_BUDGET_S, "chown_to": None,
    "chown_from": (0,), "caps_method": DEFAULT_CAPS_METHOD, "hardlinks": DEFAULT_HARDLINKS, "one_file_system": True,
    "prune_mounts": True, "max_listed": DEFAULT_MAX_LISTED, "progress": None,
    "progress_interval": PROGRESS_INTERVAL_S, "fork": None, "allow_files": True, "setuid": True,
    "setgid": True, "workers": None,
}


class AnyBut:
    """Every id except ``kept`` (``id in AnyBut(1000)`` is True for 0 and 1001): the uids
    and gids an ownership return with chown_from=CHOWN_FROM_OTHERS takes back."""

    __slots__ = ("kept",)

    def __init__(self, kept):
        self.kept = kept

    def __contains__(self, value):
        return value != self.kept

    def __repr__(self):
        return "AnyBut(%r)" % (self.kept,)


class StripOptions:
    """The one parameters object of a strip: which actions, how to walk, what to report.

    Keyword names and defaults: OPTION_DEFAULTS (run()'s keywords). Built once per call
    and validated here, so a bad value fails with InputError (a ValueError) naming the option before
    anything is opened.
    ``chown_from``: the uids whose files the chown action takes (root by default), or
    CHOWN_FROM_OTHERS: every file or directory not owned by chown_to's uid and gid.
    Derived, read-only: ``chown_gids`` (the gids the chown action takes as well: none,
    or every gid but chown_to's with CHOWN_FROM_OTHERS), ``setid_mask``, ``do_setid``, ``do_caps``, ``do_chown``,
    ``do_device``, ``skip_hardlinks``, ``links_protected`` (``fs.protected_hardlinks`` is
    1, read here once per strip: see LINKED_UNCHANGED).
    """

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(OPTION_DEFAULTS))
        if unknown:
            raise TypeError("unknown strip option(s): %s" % ", ".join(unknown))
        values = dict(OPTION_DEFAULTS, **kwargs)
        for key, value in values.items():
            setattr(self, key, value)
        self._validate()

    def _validate(self):
        self.actions = tuple(self.actions)
        unknown = [a for a in self.actions if a not in ACTIONS]
        if unknown:
            raise InputError("unknown action(s) %s; choose from %s" % (", ".join(unknown), ", ".join(ACTIONS)))
        if self.caps_method not in CAPS_METHODS:
            raise InputError("caps_method must be one of %s, not %r" % (", ".join(CAPS_METHODS), self.caps_method))
        if self.hardlinks not in HARDLINK_POLICIES:
            raise InputError("hardlinks must be one of %s, not %r" % (", ".join(HARDLINK_POLICIES), self.hardlinks))
        self.budget = inputs.budget(self.budget)
        self.progress_interval = inputs.seconds(self.progress_interval, "progress_interval")
        if isinstance(self.max_listed, bool) or not isinstance(self.max_listed, int) or self.max_listed < 0:
            raise InputError("max_listed must be a whole number 0 or more, not %r" % (self.max_listed,))
        if "chown" in self.actions:
            if self.chown_to is None:
                raise InputError("the chown action needs chown_to=(uid, gid)")
            self.chown_to = check_owner(self.chown_to)
        self.chown_gids = frozenset()
        if isinstance(self.chown_from, str) and self.chown_from == CHOWN_FROM_OTHERS:
            if "chown" not in self.actions:
                raise InputError("chown_from=%r needs the chown action and chown_to=(uid, gid)" % CHOWN_FROM_OTHERS)
            uid, gid = self.chown_to
            self.chown_from = AnyBut(uid)
            self.chown_gids = AnyBut(gid) if gid != -1 else frozenset()
        elif isinstance(self.chown_from, (str, bytes)):
            raise InputError("chown_from must be uids or %r, not %r" % (CHOWN_FROM_OTHERS, self.chown_from))
        elif not isinstance(self.chown_from, AnyBut):
            self.chown_from = frozenset(self.chown_from)
        if self.workers is not None:
            self.workers = max(1, int(self.workers))
        self.setid_mask = (stat.S_ISUID if self.setuid else 0) | (stat.S_ISGID if self.setgid else 0)
        self.do_setid = "setid" in self.actions and bool(self.setid_mask)
        self.do_caps = "caps" in self.actions
        self.do_chown = "chown" in self.actions
        self.do_device = "device" in self.actions
        self.skip_hardlinks = self.hardlinks == "skip"
        self.links_protected = hardlinks_protected()


def check_owner(chown_to):
    """(uid, gid) as ints a chown(2) can take (gid -1: keep the group); ValueError otherwise."""
    try:
        uid, gid = chown_to
        if isinstance(uid, bool) or isinstance(gid, bool):
            raise TypeError
        uid, gid = int(uid), int(gid)
    except (TypeError, ValueError):
        raise InputError("chown_to must be (uid, gid) numbers, not %r" % (chown_to,)) from None
    if not 0 <= uid <= _UID_MAX:
        raise InputError("chown_to uid %d is out of range (0 to %d)" % (uid, _UID_MAX))
    if not (gid == -1 or 0 <= gid <= _UID_MAX):
        raise InputError("chown_to gid %d is out of range (0 to %d, or -1 to keep the group)" % (gid, _UID_MAX))
    return uid, gid


def options_from(options=None, **kwargs):
    """A StripOptions from a StripOptions, a dict of run()'s keywords, or keywords."""
    if isinstance(options, StripOptions):
        if kwargs:
            raise TypeError("give a StripOptions or keywords, not both")
        return options
    return StripOptions(**dict(options or {}, **kwargs))


# -- the file actions: each takes a proven handle (an O_PATH fd of the very inode the
# scan saw) and acts through /proc/self/fd/N, so nothing is opened for I/O and a name
# swapped for a symlink after the check is never followed.

def new_entry(path, st, kind="file"):
    mode = envelope.mode_text(st.st_mode)
    return {"path": path, "type": kind, "mode_before": mode, "mode_after": mode,
            "caps_before": None, "uid": st.st_uid, "gid": st.st_gid, "nlink": st.st_nlink, "actions": []}


def owner_after(st, chown_to):
    """(uid, gid) ownership return to ``chown_to`` leaves (a gid of -1 keeps the group; pure)."""
    uid, gid = chown_to
    return uid, (st.st_gid if gid == -1 else gid)


def return_owner(fd, fst, opts, entry):
    """Give the file to opts.chown_to; the kernel clears setid bits and caps (capabilities(7))."""
    uid, gid = opts.chown_to
    os.chown("/proc/self/fd/%d" % fd, uid, gid)
    entry["uid_after"], entry["gid_after"] = owner_after(fst, opts.chown_to)


def clear_caps(fd, opts):
    """Remove security.capability: the xattr itself, or (method chown) re-chown to the same owner."""
    handle = "/proc/self/fd/%d" % fd
    if opts.caps_method == "chown":
        cur = os.fstat(fd)
        os.chown(handle, cur.st_uid, cur.st_gid)
        return
    try:
        os.removexattr(handle, CAP_XATTR)
    except OSError as exc:
        if exc.errno != errno.ENODATA:  # an ownership return just before may have removed it
            raise


def strip_setid(fd, opts):
    """Clear the setuid/setgid bits opts asks for, keeping every other bit."""
    cur = os.fstat(fd)
    if cur.st_mode & opts.setid_mask:
        os.chmod("/proc/self/fd/%d" % fd, stat.S_IMODE(cur.st_mode) & ~opts.setid_mask)


def _caps_text(fd, cap_bits):
    """getcap-style text of the file's capabilities, or None when it carries none."""
    try:
        raw = os.getxattr("/proc/self/fd/%d" % fd, CAP_XATTR)
    except OSError as exc:
        if exc.errno == errno.ENODATA:
            return None
        raise
    try:
        return capsmod.describe(raw, cap_bits)
    except capsmod.CapabilityDecodeError as exc:
        return "undecodable (%s): %s" % (exc, raw.hex())


def fix_proven_file(fd, fst, entry, opts, has_setid, has_caps, needs_chown, cap_bits):
    """Report and (unless dry run or a skipped hard link) fix one regular file.

    ``fd`` is an O_PATH handle whose fstat ``fst`` the caller has proven (regular file,
    the inode it means). Fills ``entry``; returns (found, changed): found is False when
    nothing needs doing after all (the caps were gone). An OSError from a change is left in
    entry["error"], and entry["failed"] lists the actions that were not done (changed says
    what had already happened): a change that failed is never counted as done.

    A file with more than one hard link is never given away (LINKED_OWNER_KEPT); where
    fs.protected_hardlinks is 0 nothing at all is changed on it (LINKED_UNCHANGED).
    """
    caps_text = _caps_text(fd, cap_bits) if has_caps else None
    has_caps = caps_text is not None
    entry["caps_before"] = caps_text
    actions = entry["actions"]
    linked = fst.st_nlink > 1
    if needs_chown and linked:  # maybe another user's file linked here: never given away
        needs_chown = False
        entry["owner_kept"] = LINKED_OWNER_KEPT
    if needs_chown:
        actions.append("chown")
    if has_setid:
        actions.extend(bit for flag, bit in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid"))
                       if fst.st_mode & opts.setid_mask & flag)
    if has_caps:
        actions.append("caps")
    if not actions:
        return "owner_kept" in entry, False
    if linked and opts.skip_hardlinks:
        entry["skipped"] = "hard link (nlink %d): left unchanged by policy hardlinks=skip" % fst.st_nlink
        return True, False
    if linked and not opts.links_protected:
        entry["skipped"] = LINKED_UNCHANGED
        return True, False
    if opts.dry_run:
        mode_after = fst.st_mode & ~opts.setid_mask if has_setid else fst.st_mode
        if needs_chown or (has_caps and opts.caps_method == "chown"):
            mode_after = mode_after_chown(mode_after)
        entry["mode_after"] = envelope.mode_text(mode_after)
        if needs_chown:  # what the change would leave, as mode_after says
            entry["uid_after"], entry["gid_after"] = owner_after(fst, opts.chown_to)
        return True, True
    changed = False
    steps = ((needs_chown, ["chown"], lambda: return_owner(fd, fst, opts, entry)),
             (has_caps, ["caps"], lambda: clear_caps(fd, opts)),
             (has_setid, [a for a in actions if a in ("setuid", "setgid")], lambda: strip_setid(fd, opts)))
    pending = [step for step in steps if step[0]]
    try:
        while pending:
            pending[0][2]()
            pending.pop(0)
            changed = True
    except OSError as exc:
        entry["error"] = envelope.error_text(exc)
        entry["failed"] = [name for step in pending for name in step[1]]
    try:
        entry["mode_after"] = envelope.mode_text(os.fstat(fd).st_mode)
    except OSError:
        pass
    return True, changed


def fix_device(fd, fst, entry, opts):
    """Make the block or character device node held by ``fd`` harmless: root-owned, mode
    0000 (DEVICE_OWNER, DEVICE_MODE), through /proc/self/fd/N (the magic link is the inode
    held: the device is never opened). Owner first, so its old owner can no longer chmod it
    back between the two calls. Fills ``entry`` as fix_proven_file does; returns (found,
    changed). A node with more than one link where fs.protected_hardlinks is 0 may be a
    system node linked here: left unchanged (LINKED_UNCHANGED)."""
    entry["actions"].append("device")
    entry["uid_after"], entry["gid_after"] = DEVICE_OWNER
    entry["mode_after"] = envelope.mode_text(stat.S_IFMT(fst.st_mode) | DEVICE_MODE)
    if fst.st_nlink > 1 and (opts.skip_hardlinks or not opts.links_protected):
        entry["skipped"] = LINKED_UNCHANGED if not opts.skip_hardlinks else (
            "hard link (nlink %d): left unchanged by policy hardlinks=skip" % fst.st_nlink)
        entry["mode_after"] = entry["mode_before"]
        del entry["uid_after"], entry["gid_after"]
        return True, False
    if opts.dry_run:
        return True, True
    handle = "/proc/self/fd/%d" % fd
    changed = False
    try:
        if (fst.st_uid, fst.st_gid) != DEVICE_OWNER:
            os.chown(handle, *DEVICE_OWNER)
            changed = True
        if stat.S_IMODE(os.fstat(fd).st_mode) != DEVICE_MODE:
            os.chmod(handle, DEVICE_MODE)
            changed = True
    except OSError as exc:
        entry["error"] = envelope.error_text(exc)
        entry["failed"] = ["device"]
    after = os.fstat(fd)
    entry["mode_after"] = envelope.mode_text(after.st_mode)
    entry["uid_after"], entry["gid_after"] = after.st_uid, after.st_gid
    return True, changed


def device_is_harmless(st):
    """Whether a device node's fstat already says root-owned, mode 0000 (pure)."""
    return (st.st_uid, st.st_gid) == DEVICE_OWNER and stat.S_IMODE(st.st_mode) == DEVICE_MODE


def is_device(st):
    return stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)


def fix_file_at(dir_fd, name, options=None, display_path=None, expected=None):
    """Fix ONE file named ``name`` in the directory held open as ``dir_fd`` (public API).

    The single-file path of a strip, for callers that hold a directory descriptor they
    have proven themselves (the real-time guard): ``name`` (str or bytes, one path
    component) is opened O_PATH|O_NOFOLLOW relative to ``dir_fd``, fstat'ed, and acted
    on only when it is a regular file, or a block or character device node (made
    root-owned, mode 0000, with the ``device`` action) (and, when ``expected`` is given, the
    inode ``(st_dev, st_ino)``); every change goes through /proc/self/fd/N, so a name
    swapped for a symlink is never followed and nothing is opened for I/O.

    ``options``: a StripOptions, or a dict of run()'s keywords (actions, dry_run,
    chown_to, chown_from, caps_method, hardlinks, setuid, setgid; walk options are
    accepted and ignored); None means run()'s defaults (setid, caps and device).
    ``display_path``: the path to report (default: ``name``).

    Returns the per-file entry of a strip report (path, type, mode_before, mode_after,
    caps_before, uid, gid, nlink, actions, and uid_after/gid_after, owner_kept, skipped,
    or error with failed (the actions not done) where they apply), or None when there is
    nothing to do: the name is gone, is neither a regular file nor a device node, or it
    carries nothing the options act on. Raises ChangedUnderUs
    when ``expected`` is given and the name now holds another inode; OSError when the
    name cannot be opened for another reason than ENOENT; InputError for bad options.
    Threads: safe (no fchdir). Touches the system unless options say dry_run.
    """
    opts = options_from(options)
    path = os.fsdecode(name) if display_path is None else os.fsdecode(display_path)
    try:
        return fix_at(dir_fd, name, opts, path, expected, capsmod.kernel_cap_bits())[0]
    except FileNotFoundError:
        return None


def fix_at(dir_fd, name, opts, path, expected, cap_bits):
    """fix_file_at's work (the walk calls it too); returns (entry or None, changed). The walk calls it with the
    scan's (st_dev, st_ino) as ``expected``; FileNotFoundError is the caller's to word."""
    fd = os.open(name, PATH_FLAGS, dir_fd=dir_fd)
    try:
        fst = os.fstat(fd)
        if expected is not None and (fst.st_dev, fst.st_ino) != tuple(expected):
            raise ChangedUnderUs("replaced (not the inode scanned); left alone")
        if is_device(fst):
            if not opts.do_device or device_is_harmless(fst):
                return None, False
            entry = new_entry(path, fst, "block device" if stat.S_ISBLK(fst.st_mode) else "character device")
            return entry, fix_device(fd, fst, entry, opts)[1]
        if not stat.S_ISREG(fst.st_mode):
            if expected is not None:
                raise ChangedUnderUs("replaced (not the inode scanned); left alone")
            return None, False
        has_setid = fst.st_mode & opts.setid_mask if opts.do_setid else 0
        needs_chown = opts.do_chown and (fst.st_uid in opts.chown_from or fst.st_gid in opts.chown_gids)
        # The magic link /proc/self/fd/N is followed to the inode fd holds, never re-resolved by name.
        has_caps = opts.do_caps and has_caps_xattr("/proc/self/fd/%d" % fd, follow=True)
        if not (has_setid or has_caps or needs_chown):
            return None, False
        entry = new_entry(path, fst)
        found, changed = fix_proven_file(fd, fst, entry, opts, has_setid, has_caps, needs_chown, cap_bits)
        return (entry if found else None), changed
    finally:
        os.close(fd)


def has_caps_xattr(name, follow=False):
    """Whether `name` carries security.capability; False where the filesystem has no xattrs."""
    try:
        return CAP_XATTR in os.listxattr(name, follow_symlinks=follow)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return False
        raise


def mode_after_chown(mode):
    """The mode the kernel leaves after chown of a regular file (fs/attr.c)."""
    mode &= ~stat.S_ISUID
    if mode & stat.S_ISGID and mode & stat.S_IXGRP:
        mode &= ~stat.S_ISGID
    return mode
