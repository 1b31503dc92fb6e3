# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Our capability text equals what the real getcap (libcap2-bin) prints for the same files."""
import os
import shutil
import subprocess

import pytest
from sandboxguard import strip

GETCAP = shutil.which("getcap") or "/usr/sbin/getcap"
SETCAP = shutil.which("setcap") or "/usr/sbin/setcap"

SPECS = [
    "cap_net_raw=ep",
    "cap_net_raw,cap_sys_admin+ep",
    "cap_net_bind_service=p",
    "cap_sys_admin=ip cap_net_raw+p",
    "cap_chown,cap_net_raw=i cap_sys_admin+p",
    "cap_setuid=ip cap_chown+i cap_kill+p",
    "=ep cap_chown-ep",
    "=p",
    "cap_checkpoint_restore,cap_bpf,cap_perfmon=eip",
    "cap_dac_override,cap_fowner,cap_setfcap+ep",
]


@pytest.fixture(scope="module")
def capped_tree(tmp_path_factory):
    if not os.path.exists(SETCAP):
        pytest.fail("setcap missing: install libcap2-bin (tools/apt-packages.txt lists it)", pytrace=False)
    root = tmp_path_factory.mktemp("caps")
    files = {}
    for i, spec in enumerate(SPECS):
        path = root / ("f%02d" % i)
        shutil.copy("/bin/true", path)
        subprocess.run([SETCAP, spec, str(path)], check=True)
        files[str(path)] = None
    for i, rootid in enumerate((1000, 100000)):  # revision 3 (namespaced) capabilities
        path = root / ("ns%d" % i)
        shutil.copy("/bin/true", path)
        subprocess.run([SETCAP, "-n", str(rootid), "cap_net_raw,cap_net_admin=ep", str(path)], check=True)
    return root


def getcap_text(path):
    out = subprocess.run([GETCAP, "-n", path], check=True, capture_output=True, text=True).stdout.strip()
    assert out.startswith(path + " ")
    return out[len(path) + 1:]


def test_every_encoding_matches_getcap(capped_tree):
    report = strip.scan([str(capped_tree)], setid=False)
    ours = {e["path"]: e["caps_before"] for e in report["files"]}
    assert len(ours) == len(SPECS) + 2
    for path, text in sorted(ours.items()):
        assert text == getcap_text(path), path


def test_v3_files_show_rootid(capped_tree):
    report = strip.scan([str(capped_tree)], setid=False)
    ours = {os.path.basename(e["path"]): e["caps_before"] for e in report["files"]}
    assert ours["ns0"] == "cap_net_admin,cap_net_raw=ep [rootid=1000]"
    assert ours["ns1"] == "cap_net_admin,cap_net_raw=ep [rootid=100000]"


def test_after_clearing_getcap_finds_nothing_and_no_empty_xattr_is_left(capped_tree):
    strip.strip([str(capped_tree)], setid=False)
    out = subprocess.run([GETCAP, "-r", str(capped_tree)], check=True, capture_output=True, text=True).stdout
    assert out == ""
    for name in os.listdir(capped_tree):
        assert "security.capability" not in os.listxattr(str(capped_tree / name))
