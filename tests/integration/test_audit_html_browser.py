# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The HTML report in a real browser: headless Chromium renders it offline and takes a screenshot.

SANDBOXGUARD_UPDATE_SCREENSHOT=1 also writes the screenshot to docs/boundary-audit-report.png
(the one the README shows).
"""
import os
import shutil
import struct
import subprocess
import zlib

import pytest
from sandboxguard._fleet import audit_report as ar

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS_PNG = os.path.join(TOP, "docs", "boundary-audit-report.png")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (tools/apt-packages.txt)")


def sample_fleet():
    """What an audit of a small fleet looks like: seeded hosts, clean ones, an error, one not audited (its
    Hermes home not found, no agent user given), an unreachable one."""
    def check(status, findings=(), reason=None, **extra):
        result = {"status": status, "findings": list(findings), "reason": reason, "errors": []}
        result.update(extra)
        return result

    def suid(host, name, mode="04755", caps=None, reasons=("setuid",)):
        return {"path": "/home/hermes/.hermes/sandboxes/docker/task-%s/workspace/%s" % (host, name), "mode": mode,
                "caps": caps, "uid": 0, "gid": 0, "reasons": list(reasons)}

    clean = {"privileged_files": check("clean", roots=["/home/hermes/.hermes/sandboxes/docker"]),
             "home_mode": check("clean"), "leaks": check("clean"),
             "bwrap": check("clean", version="0.12.0"), "runtime": check("clean")}
    results = {}
    for i in range(1, 7):
        results["agent-%02d" % i] = {"record": ar.host_record(dict(clean))}
    for i in (7, 8):
        host = "agent-%02d" % i
        checks = dict(clean)
        checks["privileged_files"] = check("findings", [suid(i, "rootshell"),
                                                         suid(i, "ping", "0755", "cap_net_raw=ep", ("caps",))])
        checks["leaks"] = check("findings", [{"kind": "cron_job", "path": "/var/spool/cron/crontabs/hermes",
                                              "entry": "*/5 * * * * /home/hermes/.hermes/scripts/beacon.sh",
                                              "user": "hermes", "age": 86400, "line": 1}])
        results[host] = {"record": ar.host_record(checks)}
    checks = dict(clean)
    checks["home_mode"] = check("findings", [{"path": "/home/hermes/.hermes", "mode": "real", "wanted": "profile",
                                              "reason": "TERMINAL_HOME_MODE is real, asked for profile"}])
    results["agent-09"] = {"record": ar.host_record(checks)}
    checks = dict(clean)
    checks["bwrap"] = check("error", reason="no such user: hermes")
    results["agent-10"] = {"record": ar.host_record(checks)}
    checks = dict(clean)
    checks["privileged_files"] = check("not_checked", reason=(
        "none of the paths, Hermes homes or sandbox directory given exist on this host (/srv/hermes/.hermes/sandboxes/"
        "docker): set sandboxguard_hermes_homes, sandboxguard_sandbox_dir, sandboxguard_paths or "
        "sandboxguard_github_runners"), engine={"answered": False, "reason": "no container engine", "targets": []})
    checks["bwrap"] = check("not_checked", reason="no agent user given (the probe never runs as root): set "
                                                  "sandboxguard_agent_user")
    results["agent-12"] = {"record": ar.host_record(checks)}
    hosts = ar.collect(results, [*sorted(results), "agent-11"],
                       {"agent-11": "Failed to connect to the host via ssh: connect to host 10.0.0.11 port 22: "
                                    "Connection timed out"})
    return ar.fleet_report(hosts, generated="2026-12-01T10:00:00Z")


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def distinct_rows(data):
    """How many different scanlines the image has (a blank page has one)."""
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    _width, height = png_size(data)
    raw = zlib.decompress(idat)
    stride = len(raw) // height
    return len({raw[r * stride + 1:(r + 1) * stride] for r in range(height)})


def chromium(tmp_path, *args):
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    proc = subprocess.run([CHROMIUM, *FLAGS, "--user-data-dir=%s" % profile, *args], capture_output=True,
                          timeout=120, check=False)
    return proc


def test_the_html_report_renders_in_chromium_offline_and_screenshots(tmp_path):
    report = sample_fleet()
    ar.write_reports(report, str(tmp_path / "out"), formats=("html",), host_files=False)
    page = tmp_path / "out" / ar.HTML_NAME
    dom = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    text = dom.stdout.decode()
    assert "3 of 12 host(s) have findings" in text and "1 not audited" in text
    assert text.index("agent-11") < text.index("agent-07") < text.index("agent-10") < text.index("agent-12") < \
        text.index("agent-01")
    shot = tmp_path / "shot.png"
    proc = chromium(tmp_path, "--window-size=1200,1500", "--screenshot=%s" % shot, page.as_uri())
    assert proc.returncode == 0 and shot.exists(), proc.stderr.decode(errors="replace")[-2000:]
    data = shot.read_bytes()
    assert png_size(data) == (1200, 1500)
    assert distinct_rows(data) > 100, "the screenshot is (nearly) blank"
    if os.environ.get("SANDBOXGUARD_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(shot, DOCS_PNG)


def test_docs_keep_a_screenshot_of_the_report():
    with open(DOCS_PNG, "rb") as f:
        width, height = png_size(f.read())
    assert width >= 800 and height >= 600
