# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Decoding security.capability (vfs_cap_data revisions 1, 2, 3) into getcap's text."""
import struct

import pytest
from sandboxguard import caps

NAMED = 41  # cap_last_cap + 1 on Linux 5.9+ (cap_checkpoint_restore is 40)


def raw(hexstr):
    return bytes.fromhex(hexstr)


# Values read off real files on this kernel after `setcap`, with what `getcap -n` printed.
REAL = [
    ("0100000200200000000000000000000000000000", "cap_net_raw=ep"),
    ("0100000200202000000000000000000000000000", "cap_net_raw,cap_sys_admin=ep"),
    ("0100000300200000000000000000000000000000e8030000", "cap_net_raw=ep [rootid=1000]"),
    ("01000002feffffff00000000ff01000000000000", "=ep cap_chown-ep"),
    ("00000002ffffffff00000000ff01000000000000", "=p"),
]


@pytest.mark.parametrize("hexstr,text", REAL)
def test_real_values_render_as_getcap_printed_them(hexstr, text):
    assert caps.describe(raw(hexstr), NAMED) == text


def test_revision_1_single_word_is_decoded():
    data = struct.pack("<III", 0x01000000 | 1, 1 << 13, 0)
    decoded = caps.decode_vfs_cap(data)
    assert decoded["revision"] == 1 and decoded["permitted"] == {13} and decoded["rootid"] is None
    assert caps.caps_to_text(decoded, NAMED) == "cap_net_raw=ep"


def test_revision_3_keeps_rootid():
    data = caps.encode_vfs_cap(permitted={21}, effective=True, rootid=100000)
    decoded = caps.decode_vfs_cap(data)
    assert decoded["revision"] == 3 and decoded["rootid"] == 100000
    assert caps.describe(data, NAMED) == "cap_sys_admin=ep [rootid=100000]"


def test_groups_are_listed_in_libcaps_order_with_plus_after_the_first():
    # permitted only, inheritable only, both: libcap lists ip, then i, then p
    data = caps.encode_vfs_cap(permitted={7, 0}, inheritable={7, 5})
    assert caps.describe(data, NAMED) == "cap_setuid=ip cap_kill+i cap_chown+p"


def test_permitted_without_effective():
    data = caps.encode_vfs_cap(permitted={13})
    assert caps.describe(data, NAMED) == "cap_net_raw=p"


def test_bits_above_the_kernels_known_set_are_listed_by_number():
    data = caps.encode_vfs_cap(permitted={13, 45}, effective=True)
    assert caps.describe(data, NAMED) == "cap_net_raw=ep 45+ep"


def test_unknown_name_beyond_the_table_is_a_number_when_the_kernel_knows_it():
    assert caps.cap_name(41) == "41"
    assert caps.cap_name(40) == "cap_checkpoint_restore"


@pytest.mark.parametrize("data,words", [
    (b"", "too short"),
    (struct.pack("<I", 0x04000000) + bytes(16), "unknown"),
    (struct.pack("<I", 0x02000000) + bytes(8), "must be 20 bytes"),
    (struct.pack("<I", 0x03000000) + bytes(16), "must be 24 bytes"),
])
def test_malformed_values_are_refused_with_a_reason(data, words):
    with pytest.raises(caps.CapabilityDecodeError) as info:
        caps.decode_vfs_cap(data)
    assert words in str(info.value)


def test_encode_decode_round_trip():
    data = caps.encode_vfs_cap(permitted={0, 31, 32, 40}, inheritable={1}, effective=True)
    decoded = caps.decode_vfs_cap(data)
    assert decoded["permitted"] == {0, 31, 32, 40} and decoded["inheritable"] == {1} and decoded["effective"]
