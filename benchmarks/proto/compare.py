# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Compare the shipped walker with prototype variants on a tree bench_scan.py built.

    /work/main/.venv/bin/python benchmarks/proto/compare.py ROOT [--repeat 7] [--variants a,b,...]

Each variant runs `scan(ROOT, budget=0)` in this (single-threaded) process, so it uses
its forked worker, like the CLI; rounds are interleaved with a rotating order, and
find / getcap run in the same rounds as anchors. Prints median wall and CPU seconds
(user + system of the children, from RUSAGE_CHILDREN) and checks that every variant's
counts equal the shipped walker's.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python", "src"))
sys.path.insert(0, HERE)

import strip_proto  # noqa: E402
from sandboxguard import strip as shipped  # noqa: E402

VARIANTS = {
    # name: (module, FAST_LIST, WORKERS)
    "shipped": (shipped, None, None),
    "proto-orig": (strip_proto, False, 1),
    "fastlist": (strip_proto, True, 1),
    "lean": (strip_proto, "lean", 1),
    "lean+2proc": (strip_proto, "lean", 2),
    "2proc": (strip_proto, False, 2),
    "fastlist+2proc": (strip_proto, True, 2),
}
KEYS = ("dirs", "files", "setid", "caps", "symlinks", "special", "errors")


def cpu_children():
    """(user, system) CPU seconds of waited-for children so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime, ru.ru_stime


def cpu_since(before):
    now = cpu_children()
    return now[0] - before[0], now[1] - before[1]


def run_variant(name, root):
    mod, fast, workers = VARIANTS[name]
    if fast is not None:
        mod.FAST_LIST, mod.WORKERS = fast, workers
    c0, t0 = cpu_children(), time.perf_counter()
    report = mod.scan([root], budget=0)
    t, c = time.perf_counter() - t0, cpu_since(c0)
    counts = tuple(report["counts"][k] for k in KEYS)
    if not report["complete"]:
        raise SystemExit("%s: incomplete walk" % name)
    return t, c, counts, len(report["files"])


def run_tool(argv):
    c0, t0 = cpu_children(), time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0, cpu_since(c0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    names = args.variants.split(",")
    tools = {"find": ["find", "-P", args.root, "-xdev", "-type", "f", "-perm", "/6000"],
             "getcap": ["getcap", "-r", args.root]}
    wall = {n: [] for n in [*names, *tools, "find+getcap"]}
    cpu = {n: [] for n in wall}
    ref = None
    jobs = [*names, "tools"]
    for rnd in range(args.repeat + 1):  # round 0 is the warm-up
        k = rnd % len(jobs)
        for job in jobs[k:] + jobs[:k]:
            if job == "tools":
                tf, cf = run_tool(tools["find"])
                tg, cg = run_tool(tools["getcap"])
                got = {"find": (tf, cf), "getcap": (tg, cg),
                       "find+getcap": (tf + tg, (cf[0] + cg[0], cf[1] + cg[1]))}
            else:
                t, c, counts, _listed = run_variant(job, args.root)
                if ref is None:
                    ref = counts
                elif counts != ref:
                    raise SystemExit("%s counts %s differ from %s" % (job, counts, ref))
                got = {job: (t, c)}
            if rnd:
                for n, (t, c) in got.items():
                    wall[n].append(t)
                    cpu[n].append(c)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("root %s: counts %s = %s; load %s" % (args.root, KEYS, ref, load))
    base = statistics.median(wall["find+getcap"])
    base_cpu = statistics.median(sum(c) for c in cpu["find+getcap"])
    print("%-16s %8s %8s %8s %8s %7s %7s   %s" % ("variant", "wall s", "CPU s", "user s", "sys s", "wall/b",
                                              "CPU/b", "rounds (wall s)"))
    for n, runs in wall.items():
        mw = statistics.median(runs)
        mc = statistics.median(sum(c) for c in cpu[n])
        mu = statistics.median(c[0] for c in cpu[n])
        ms = statistics.median(c[1] for c in cpu[n])
        print("%-16s %8.3f %8.3f %8.3f %8.3f %7.2f %7.2f   %s" % (n, mw, mc, mu, ms, mw / base, mc / base_cpu,
                                                             " ".join("%.2f" % t for t in runs)))


if __name__ == "__main__":
    main()
