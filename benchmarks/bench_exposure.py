#!/usr/bin/env python3
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""How long does a file a container makes privileged stay privileged on the host, with the guard?

    sudo .venv/bin/python benchmarks/bench_exposure.py [--image sandboxguard/debian:12] [--out FILE]

1. Starts `sandboxguard guard ROOT --json` (the CLI, a fresh process) on ROOT = a task
   workspace under --dir, and waits for its start sweep.
2. Runs a root container (default capabilities, no network) with the task directory
   bind-mounted at /task, which (a) writes 200 setuid files into /task/workspace at 100 Hz,
   (b) 20 files with cap_net_raw+ep (setxattr security.capability), (c) builds a tree of 50
   setuid files in /task/staging (outside the root), waits, and renames it into the
   workspace, and (d) leaves setuid and capability files in /task/staging. The container
   logs, with its clock (the host's), the moment each file became privileged in the root
   (after the chmod / setxattr; for the tree, after the rename).
3. Meanwhile a host-side poller (this process) lstats every expected file about every
   millisecond and records the state transitions; a file's exposure is from the moment
   the container logged to the first observation that it is no longer privileged.
4. Checks: exposure p99 <= 100 ms and max <= 1 s, nothing left privileged under ROOT
   (strip.scan), every staging file outside the root still privileged, and every path the
   guard reported lies under ROOT. Exit 1 when any check fails.
5. CPU: the guard's CPU time (utime + stime + reaped children, /proc/PID/stat) while idle,
   during the workload, and during an unrelated `docker build` that churns the same
   filesystem (a few RUN steps creating and copying tens of thousands of files), beside the
   build's wall time.

Results go to stdout as a table and to --out as JSON. Needs root, a Docker engine and the
local test image (no registry). Stdlib only.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(TOP, "python", "src")
sys.path.insert(0, SRC)

from sandboxguard import strip  # noqa: E402

N_SUID, N_CAPS, N_TREE = 200, 20, 50
RATE_HZ = 100
P99_BOUND_MS, MAX_BOUND_MS = 100.0, 1000.0
LABEL = "sandboxguard.bench.exposure"

CONTAINER_SCRIPT = r"""
import json, os, struct, sys, time
N_SUID, N_CAPS, N_TREE, RATE = %d, %d, %d, %d
ws, staging = "/task/workspace", "/task/staging"
cap = struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)  # VFS_CAP_REVISION_2 | effective, cap_net_raw
data = b"\x7fELF" + b"\0" * 4000
log = []
def make(path, mode):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755)
    os.write(fd, data)
    os.close(fd)
    if mode != 0o755:
        os.chmod(path, mode)
start = time.time()
for i in range(N_SUID):
    delay = start + i / RATE - time.time()
    if delay > 0:
        time.sleep(delay)
    name = "suid-%%03d" %% i
    make(ws + "/" + name, 0o4755)
    log.append([name, time.time()])
for i in range(N_CAPS):
    name = "cap-%%02d" %% i
    make(ws + "/" + name, 0o755)
    os.setxattr(ws + "/" + name, "security.capability", cap)
    log.append([name, time.time()])
    time.sleep(1 / RATE)
names = []
for i in range(N_TREE):
    d = "tree/d%%d/e%%d" %% (i %% 5, i %% 3)
    os.makedirs(staging + "/" + d, exist_ok=True)
    make("%%s/%%s/s%%02d" %% (staging, d, i), 0o4755)
    names.append("%%s/s%%02d" %% (d, i))
make(staging + "/left-suid", 0o4755)
make(staging + "/left-cap", 0o755)
os.setxattr(staging + "/left-cap", "security.capability", cap)
time.sleep(0.5)  # the guard must leave the staging tree alone while it is outside the root
os.rename(staging + "/tree", ws + "/tree")
moved = time.time()
log += [[n, moved] for n in names]
sys.stdout.write(json.dumps(log))
""" % (N_SUID, N_CAPS, N_TREE, RATE_HZ)

DOCKERFILE = """FROM %s
COPY churn.py /churn.py
RUN python3 /churn.py
RUN cp -a /usr/lib /churn-lib && cp -a /usr/share /churn-share
RUN rm -rf /churn /churn-share && find /churn-lib -type f | head -n 20000 | xargs -r touch
"""
CHURN_SCRIPT = """import os
for i in range(50):
    for j in range(10):
        d = "/churn/%d/%d" % (i, j)
        os.makedirs(d)
        for k in range(40):
            open("%s/f%d" % (d, k), "w").close()
"""


def privileged(path, caps):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if st.st_mode & 0o6000:
        return True
    if caps:
        try:
            return "security.capability" in os.listxattr(path, follow_symlinks=False)
        except OSError:
            return None
    return False


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    # fields after the comm: state is [0]; utime [11], stime [12], cutime [13], cstime [14]
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks


def pct(values, q):
    ordered = sorted(values)
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, round(q / 100.0 * len(ordered) + 0.5) - 1))
    return ordered[index]


def docker(*args, **kwargs):
    return subprocess.run(["docker", *args], check=False, capture_output=True, text=True, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="sandboxguard/debian:12")
    parser.add_argument("--dir", default="/var/tmp/sandboxguard-bench-exposure")
    parser.add_argument("--out", default=None, help="JSON results (default: benchmarks/results/exposure-<date>.json)")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of idle CPU measurement")
    parser.add_argument("--no-build", action="store_true", help="skip the docker build churn phase")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_exposure: needs root (the guard and the container's files)")
    if docker("image", "inspect", args.image).returncode != 0:
        sys.exit("bench_exposure: image %s not found; run tools/build-images.sh" % args.image)

    task = os.path.join(args.dir, "task")
    root = os.path.join(task, "workspace")
    staging = os.path.join(task, "staging")
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(root)
    os.makedirs(staging)
    log_dir = os.path.join(args.dir, "logs")
    os.makedirs(log_dir)
    out_path = os.path.join(log_dir, "guard.jsonl")
    err_path = os.path.join(log_dir, "guard.err")
    env = dict(os.environ, PYTHONPATH=SRC)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        guard = subprocess.Popen([sys.executable, "-m", "sandboxguard_cli", "guard", root, "--json"],
                                 stdout=out, stderr=err, env=env)
    results = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "image": args.image,
               "loadavg_start": open("/proc/loadavg").read().split()[:3]}
    failures = []
    try:
        limit = time.monotonic() + 30
        while b"done" not in open(err_path, "rb").read():
            if time.monotonic() > limit or guard.poll() is not None:
                sys.exit("bench_exposure: the guard did not start: %s" % open(err_path).read())
            time.sleep(0.05)

        cpu0 = cpu_seconds(guard.pid)
        time.sleep(args.idle)
        results["guard_cpu_idle_s"] = round(cpu_seconds(guard.pid) - cpu0, 3)
        results["idle_s"] = args.idle

        expected = (["suid-%03d" % i for i in range(N_SUID)] + ["cap-%02d" % i for i in range(N_CAPS)]
                    + ["tree/d%d/e%d/s%02d" % (i % 5, i % 3, i) for i in range(N_TREE)])
        caps_names = {n for n in expected if n.startswith("cap-")}
        timeline = {n: [] for n in expected}  # [(round index, privileged)] state changes
        last = {}
        rounds = []  # (start, end) of each polling round
        cpu1 = cpu_seconds(guard.pid)
        started = time.time()
        proc = subprocess.Popen(["docker", "run", "--rm", "--network", "none", "--label", LABEL,
                                 "-v", "%s:/task" % task, args.image, "python3", "-c", CONTAINER_SCRIPT],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        settle_until = None
        while True:
            index = len(rounds)
            now = time.time()
            for name in expected:
                state = privileged(os.path.join(root, name), name in caps_names)
                if state is not None and last.get(name) != state:
                    last[name] = state
                    timeline[name].append((index, state))
            rounds.append((now, time.time()))
            if proc.poll() is not None:
                if settle_until is None:
                    settle_until = time.time() + 2.0
                elif time.time() > settle_until or all(last.get(n) is False for n in expected):
                    break
            time.sleep(0.001)
        stdout, stderr = proc.communicate()
        results["workload_wall_s"] = round(time.time() - started, 3)
        results["polls"] = len(rounds)
        results["poll_gap_ms"] = round(statistics.median(
            [(b[1] - a[1]) * 1000.0 for a, b in zip(rounds, rounds[1:])] or [0.0]), 3)
        time.sleep(0.5)
        results["guard_cpu_workload_s"] = round(cpu_seconds(guard.pid) - cpu1, 3)
        if proc.returncode != 0:
            sys.exit("bench_exposure: the container failed: %s" % stderr[-2000:])
        became = {name: t for name, t in json.loads(stdout)}
        # A file's exposure ends at the first round that saw it unprivileged after the container
        # logged it privileged; the end of that round is used (an upper bound). A file stripped
        # between two rounds is never seen privileged: its state at the first round that
        # started after the log is what counts.
        exposure = {}
        for name in expected:
            t_priv = became[name]
            first = next((i for i, (start, _end) in enumerate(rounds) if start >= t_priv), None)
            exposure[name] = None
            if first is None:
                continue
            state_then = None
            for index, state in timeline[name]:
                if index <= first:
                    state_then = state
            if state_then is False:
                exposure[name] = (rounds[first][1] - t_priv) * 1000.0
                continue
            clean = [index for index, state in timeline[name] if state is False and index > first]
            if clean:
                exposure[name] = (rounds[clean[0]][1] - t_priv) * 1000.0
        measured = [v for v in exposure.values() if v is not None]
        never = [n for n, v in exposure.items() if v is None]
        groups = {"setuid at 100 Hz": [n for n in expected if n.startswith("suid-")],
                  "cap_net_raw+ep": sorted(caps_names), "moved-in tree": [n for n in expected if n.startswith("tree/")]}
        results["exposure_ms"] = {}
        for label, names in [("all", expected), *groups.items()]:
            values = [exposure[n] for n in names if exposure[n] is not None]
            results["exposure_ms"][label] = {
                "n": len(values), "median": round(statistics.median(values), 1) if values else None,
                "p99": round(pct(values, 99), 1) if values else None, "max": round(max(values), 1) if values else None}
        results["never_seen_clean"] = never
        p99, worst = pct(measured, 99), max(measured) if measured else None
        if never:
            failures.append("%d file(s) never seen unprivileged: %s" % (len(never), never[:5]))
        if p99 is None or p99 > P99_BOUND_MS:
            failures.append("exposure p99 %s ms > %s ms" % (p99, P99_BOUND_MS))
        if worst is None or worst > MAX_BOUND_MS:
            failures.append("exposure max %s ms > %s ms" % (worst, MAX_BOUND_MS))

        report = strip.scan([root], budget=0)
        results["left_privileged"] = report["counts"]["setid"] + report["counts"]["caps"]
        if results["left_privileged"]:
            failures.append("left privileged under the root: %s" % [f["path"] for f in report["files"]][:5])
        outside = [os.path.join(staging, "left-suid"), os.path.join(staging, "left-cap")]
        results["outside_untouched"] = all(privileged(p, True) for p in outside)
        if not results["outside_untouched"]:
            failures.append("a file outside the root was changed: %s" % outside)
        guard_lines = [json.loads(line) for line in open(out_path) if line.strip()]
        strays = [r["path"] for r in guard_lines if not r["path"].startswith(root + "/")]
        results["guard_reported"] = len(guard_lines)
        if strays:
            failures.append("the guard reported paths outside the root: %s" % strays[:5])
        reported = [r["latency_ms"] for r in guard_lines if r.get("via") == "event" and r["latency_ms"] is not None]
        results["guard_latency_ms"] = {"n": len(reported), "p99": pct(reported, 99),
                                       "max": max(reported) if reported else None}
        results["guard_via"] = {v: sum(1 for r in guard_lines if r.get("via") == v)
                                for v in sorted({r.get("via") for r in guard_lines})}

        if not args.no_build:
            tag = "sandboxguard/bench-churn:%d" % os.getpid()
            ctx = os.path.join(args.dir, "build")
            os.makedirs(ctx)
            with open(os.path.join(ctx, "Dockerfile"), "w") as handle:
                handle.write(DOCKERFILE % args.image)
            with open(os.path.join(ctx, "churn.py"), "w") as handle:
                handle.write(CHURN_SCRIPT)
            cpu2 = cpu_seconds(guard.pid)
            t0 = time.monotonic()
            build = subprocess.run(["docker", "build", "--network", "none", "--label", LABEL, "-t", tag, ctx],
                                   check=False, capture_output=True, text=True,
                                   env=dict(os.environ, DOCKER_BUILDKIT="0"))
            results["build_wall_s"] = round(time.monotonic() - t0, 2)
            time.sleep(0.5)
            results["guard_cpu_build_s"] = round(cpu_seconds(guard.pid) - cpu2, 3)
            results["guard_cpu_build_share"] = round(results["guard_cpu_build_s"] / results["build_wall_s"], 4)
            results["build_ok"] = build.returncode == 0
            if build.returncode != 0:
                failures.append("docker build failed: %s" % build.stderr[-500:])
            docker("rmi", "-f", tag)
            docker("image", "prune", "-f", "--filter", "label=%s" % LABEL)
    finally:
        guard.terminate()
        try:
            guard.wait(timeout=5)
        except subprocess.TimeoutExpired:
            guard.kill()
            failures.append("the guard did not exit within 5 s of SIGTERM")
        results["guard_exit"] = guard.returncode
        results["guard_summary"] = [ln for ln in open(err_path).read().splitlines() if "stopped:" in ln]
        results["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    results["failures"] = failures
    out = args.out or os.path.join(TOP, "benchmarks", "results", "exposure-%s.json" % time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as handle:
        json.dump(results, handle, indent=2, sort_keys=True)
        handle.write("\n")
    print("exposure (ms, container's log to the end of the first host poll that saw it unprivileged; %d polls, "
          "median gap %.2f ms):" % (results["polls"], results["poll_gap_ms"]))
    for label, row in results["exposure_ms"].items():
        print("  %-18s n=%-4s median %-7s p99 %-7s max %s" % (label, row["n"], row["median"], row["p99"], row["max"]))
    print("guard's own latency_ms (events): %s" % results["guard_latency_ms"])
    print("left privileged: %d; outside untouched: %s; guard lines: %d %s" % (
        results["left_privileged"], results["outside_untouched"], results["guard_reported"], results["guard_via"]))
    print("guard CPU: idle %.3f s in %.0f s; workload %.3f s in %.1f s" % (
        results["guard_cpu_idle_s"], results["idle_s"], results["guard_cpu_workload_s"], results["workload_wall_s"]))
    if "build_wall_s" in results:
        print("guard CPU during docker build: %.3f s over %.1f s wall (%.1f %%)" % (
            results["guard_cpu_build_s"], results["build_wall_s"], 100 * results["guard_cpu_build_share"]))
    print("load average %s -> %s; %s" % (results["loadavg_start"], results["loadavg_end"], results["guard_summary"]))
    print("results: %s" % out)
    for failure in failures:
        print("FAIL: %s" % failure)
    shutil.rmtree(args.dir, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
