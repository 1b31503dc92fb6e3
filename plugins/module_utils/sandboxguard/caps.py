# GENERATED from python/src/sandboxguard/caps.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""File capabilities: decode `security.capability` the way libcap's getcap prints it.

Pure functions over bytes; no libcap needed. The xattr holds a `vfs_cap_data`
(linux/capability.h): a little-endian u32 `magic_etc` (revision in the top byte,
VFS_CAP_FLAGS_EFFECTIVE in bit 0), then per 32-bit word a `permitted` and an
`inheritable` u32 (one word in revision 1, two in 2 and 3), and in revision 3 a u32
`rootid`: the namespace root uid the capabilities belong to.
"""
import struct

from .errors import InputError

__all__ = ["caps_to_text", "decode_vfs_cap", "encode_vfs_cap"]

XATTR_NAME = "security.capability"

VFS_CAP_REVISION_MASK = 0xFF000000
VFS_CAP_FLAGS_EFFECTIVE = 0x000001
VFS_CAP_REVISION_1 = 0x01000000
VFS_CAP_REVISION_2 = 0x02000000
VFS_CAP_REVISION_3 = 0x03000000
_WORDS = {VFS_CAP_REVISION_1: 1, VFS_CAP_REVISION_2: 2, VFS_CAP_REVISION_3: 2}

# Capability names by number (linux/capability.h), as cap_to_name() prints them.
CAP_NAMES = (
    "cap_chown", "cap_dac_override", "cap_dac_read_search", "cap_fowner", "cap_fsetid",
    "cap_kill", "cap_setgid", "cap_setuid", "cap_setpcap", "cap_linux_immutable",
    "cap_net_bind_service", "cap_net_broadcast", "cap_net_admin", "cap_net_raw",
    "cap_ipc_lock", "cap_ipc_owner", "cap_sys_module", "cap_sys_rawio", "cap_sys_chroot",
    "cap_sys_ptrace", "cap_sys_pacct", "cap_sys_admin", "cap_sys_boot", "cap_sys_nice",
    "cap_sys_resource", "cap_sys_time", "cap_sys_tty_config", "cap_mknod", "cap_lease",
    "cap_audit_write", "cap_audit_control", "cap_setfcap", "cap_mac_override",
    "cap_mac_admin", "cap_syslog", "cap_wake_alarm", "cap_block_suspend", "cap_audit_read",
    "cap_perfmon", "cap_bpf", "cap_checkpoint_restore",
)

_EFF, _PER, _INH = 1, 2, 4  # libcap's flag bits in its text histogram (the order it lists groups in)


class CapabilityDecodeError(InputError):
    """The xattr value is not a vfs_cap_data libcap or the kernel would accept."""


def decode_vfs_cap(data):
    """Decode a `security.capability` value.

    Returns a dict: revision (1, 2 or 3), effective (bool, the single file flag),
    permitted and inheritable (sets of capability numbers), rootid (int or None).
    Raises CapabilityDecodeError for a value of the wrong size or revision.
    """
    data = bytes(data)
    if len(data) < 4:
        raise CapabilityDecodeError("security.capability is %d bytes, too short for a header" % len(data))
    (magic,) = struct.unpack_from("<I", data, 0)
    revision = magic & VFS_CAP_REVISION_MASK
    if revision not in _WORDS:
        raise CapabilityDecodeError("unknown vfs_cap_data revision 0x%08x" % revision)
    words = _WORDS[revision]
    size = 4 + 8 * words + (4 if revision == VFS_CAP_REVISION_3 else 0)
    if len(data) != size:
        raise CapabilityDecodeError(
            "revision %d vfs_cap_data must be %d bytes, got %d" % (revision >> 24, size, len(data))
        )
    permitted, inheritable = set(), set()
    for word in range(words):
        perm, inh = struct.unpack_from("<II", data, 4 + 8 * word)
        for bit in range(32):
            if perm >> bit & 1:
                permitted.add(32 * word + bit)
            if inh >> bit & 1:
                inheritable.add(32 * word + bit)
    rootid = struct.unpack_from("<I", data, size - 4)[0] if revision == VFS_CAP_REVISION_3 else None
    return {
        "revision": revision >> 24,
        "effective": bool(magic & VFS_CAP_FLAGS_EFFECTIVE),
        "permitted": permitted,
        "inheritable": inheritable,
        "rootid": rootid,
    }


def encode_vfs_cap(permitted=(), inheritable=(), effective=False, rootid=None):
    """Build a revision 2 (or, with rootid, revision 3) `security.capability` value."""
    revision = VFS_CAP_REVISION_2 if rootid is None else VFS_CAP_REVISION_3
    magic = revision | (VFS_CAP_FLAGS_EFFECTIVE if effective else 0)
    out = [struct.pack("<I", magic)]
    for word in range(2):
        perm = sum(1 << (cap - 32 * word) for cap in permitted if 32 * word <= cap < 32 * word + 32)
        inh = sum(1 << (cap - 32 * word) for cap in inheritable if 32 * word <= cap < 32 * word + 32)
        out.append(struct.pack("<II", perm, inh))
    if rootid is not None:
        out.append(struct.pack("<I", rootid))
    return b"".join(out)


def cap_name(number):
    """The name getcap prints for a capability number (the number itself when unnamed)."""
    return CAP_NAMES[number] if number < len(CAP_NAMES) else str(number)


def _flags_text(flags):
    return ("e" if flags & _EFF else "") + ("i" if flags & _INH else "") + ("p" if flags & _PER else "")


def caps_to_text(decoded, named_bits=None):
    """Render decoded capabilities exactly as libcap's cap_to_text() (and so getcap) does.

    `named_bits` is how many capabilities the kernel knows (cap_last_cap + 1); libcap
    puts the most common flag combination of those into a leading "=..." clause and
    lists the rest grouped by combination, highest combination first; bits above it
    are listed as numbers with "+". The file's single effective flag raises the
    effective bit of every permitted or inheritable capability (libcap does the same).
    """
    if named_bits is None:
        named_bits = kernel_cap_bits()
    state = {}
    for cap in decoded["permitted"]:
        state[cap] = state.get(cap, 0) | _PER
    for cap in decoded["inheritable"]:
        state[cap] = state.get(cap, 0) | _INH
    if decoded["effective"]:
        for cap in list(state):
            state[cap] |= _EFF
    histo = [0] * 8
    for cap in range(named_bits):
        histo[state.get(cap, 0)] += 1
    base_flags = 7
    for flags in range(6, -1, -1):  # ties go to the lower combination, as libcap's >= does
        if histo[flags] >= histo[base_flags]:
            base_flags = flags
    text = "=" + _flags_text(base_flags)
    first = True
    for flags in range(7, -1, -1):
        if flags == base_flags or not histo[flags]:
            continue
        names = ",".join(cap_name(cap) for cap in range(named_bits) if state.get(cap, 0) == flags)
        clause = names
        raised, lowered = flags & ~base_flags, ~flags & base_flags & 7
        if raised:
            if first and base_flags == 0:
                # libcap writes "= a,b+ep" as the shorter equivalent "a,b=ep"
                text, clause = "", clause + "=" + _flags_text(raised)
            else:
                clause += "+" + _flags_text(raised)
        if lowered:
            clause += "-" + _flags_text(lowered)
        text = (text + " " + clause) if text else clause
        first = False
    extra = sorted(cap for cap in state if cap >= named_bits)
    for flags in range(7, 0, -1):
        names = [str(cap) for cap in extra if state[cap] == flags]
        if names:
            text += " " + ",".join(names) + "+" + _flags_text(flags)
    return text


def describe(data, named_bits=None):
    """getcap -n style text for a raw xattr value: 'cap_net_raw=ep [rootid=1000]'."""
    decoded = decode_vfs_cap(data)
    text = caps_to_text(decoded, named_bits)
    if decoded["rootid"]:
        text += " [rootid=%d]" % decoded["rootid"]
    return text


_KERNEL_CAP_BITS = []


def kernel_cap_bits(proc_root="/proc"):
    """Number of capabilities this kernel knows (reads /proc/sys/kernel/cap_last_cap once)."""
    if not _KERNEL_CAP_BITS:
        try:
            with open(proc_root + "/sys/kernel/cap_last_cap") as handle:
                _KERNEL_CAP_BITS.append(int(handle.read().strip()) + 1)
        except (OSError, ValueError):
            _KERNEL_CAP_BITS.append(len(CAP_NAMES))
    return _KERNEL_CAP_BITS[0]
