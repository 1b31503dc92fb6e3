# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`make demo` (tools/demo.sh): it shows the problem and the fix with nothing `make test` builds,
explains every warning, and its closing hints work as printed in a new, plain shell."""
import os
import re
import subprocess

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = "cli27demo-test/demo:local"  # its own name: the demo's image is rebuilt here, not shared
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def demo():
    """One run of tools/demo.sh with an image of its own, made by tools/demo-image.sh."""
    env = dict(os.environ)
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    env.pop("ANSIBLE_CONFIG", None)
    made = subprocess.run(["bash", os.path.join(TOP, "tools", "demo-image.sh"), IMAGE], capture_output=True,
                          text=True, timeout=120, check=False)
    assert made.returncode == 0 and made.stdout.strip() == IMAGE, made.stderr
    env["SANDBOXGUARD_DEMO_IMAGE"] = IMAGE
    try:
        proc = subprocess.run(["bash", os.path.join(TOP, "tools", "demo.sh")], capture_output=True, text=True,
                              env=env, timeout=600, check=False)
    finally:
        subprocess.run(["docker", "image", "rm", "-f", IMAGE], capture_output=True, check=False)
    return proc, ANSI.sub("", proc.stdout + proc.stderr)


def test_the_demo_finds_fixes_and_finds_nothing_after(demo):
    proc, out = demo
    assert proc.returncode == 0, out[-3000:]
    assert "found 1 setid, 1 with capabilities" in out and "exit code 1 (1 = findings)" in out
    assert "container: setcap cap_net_raw=ep /workspace/dist/netprobe" in out
    assert "found 0 setid, 0 with capabilities" in out and "owners and contents unchanged" in out


def test_every_warning_the_demo_prints_is_one_it_explains(demo):
    _proc, out = demo
    warnings = [line for line in out.splitlines() if "WARNING" in line and "Location 'file://" not in line]
    # (pip's notes about this machine's local package mirror are the machine's, not the demo's)
    assert warnings == []
    assert "were not asked for" not in out


def test_the_closing_hints_work_as_printed_in_a_plain_shell(demo, tmp_path):
    _proc, out = demo
    tail = out[out.index("Done. Next"):]
    hints = [line.split("$ ", 1)[1] for line in tail.splitlines() if line.startswith("  $ ")]
    assert len(hints) >= 3 and hints[0].startswith(". ") and hints[0].endswith("/.venv/bin/activate")
    # a new login-less shell: no PATH entry of ours, no Ansible variables, another directory
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    script = "set -e\n" + "\n".join("%s >/dev/null" % hint for hint in hints) + "\n"
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=env,
                          cwd=str(tmp_path), timeout=300, check=False)
    assert proc.returncode == 0, (hints, proc.stderr[-2000:])


def test_the_demo_needs_no_test_image_and_no_test_tool():
    with open(os.path.join(TOP, "tools", "demo.sh"), encoding="utf-8") as handle:
        demo_sh = handle.read()
    with open(os.path.join(TOP, "Makefile"), encoding="utf-8") as handle:
        makefile = handle.read()
    assert "sandboxguard/debian" not in demo_sh and "build-images" not in demo_sh
    target = makefile[makefile.index("\ndemo:"):].split("\n\n", 1)[0]
    assert "images" not in target and "setup.sh --demo" in target
