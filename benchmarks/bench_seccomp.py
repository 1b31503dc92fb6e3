#!/usr/bin/env python3
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""What the prevention profile costs inside a container, as a ratio to the engine's own default profile.

    sudo .venv/bin/python benchmarks/bench_seccomp.py [--image sandboxguard/debian:12] [--repeat 7] [--out FILE]

1. Makes the prevention profile from the running Docker daemon's own default
   (``sandboxguard._prevent.profile.make``: a throwaway container's OCI runtime spec) and
   writes it to a root-only directory.
2. Compiles a small C program on the host (gcc; the benchmark's own, bind-mounted read-only
   into the container: the library has no compiled helper) that loops over chmod 0644/0755,
   open(O_CREAT|O_WRONLY, 0644) + close and mkdir + rmdir on one scratch file: every call goes
   through one of the filtered syscalls.
3. Runs three workloads in containers of IMAGE (no network, the options of Hermes' sandbox:
   --cap-drop ALL plus its five capabilities, no-new-privileges, a tmpfs /tmp), each once under Docker's
   default profile and once under the prevention profile, interleaved, ``--repeat`` rounds in
   alternating order; each container measures its workload's own CPU time, user and system
   (the filter runs in the kernel on the caller's time; CPU time, unlike wall time, holds on a
   machine shared with other work; the container's start is not in it):
   * ``find / -xdev``, ``--find-passes`` times (lstat and getdents, unfiltered syscalls: the
     filter's cost on a walk);
   * a Python loop of stat, chmod and open(O_CREAT) + close (``--py-loops`` iterations);
   * the C loop (``--c-loops`` iterations).
4. Prints the medians, the ratio prevention / default per workload, and the cost per
   filtered call of the C loop in microseconds; ``--out`` writes the numbers as JSON.

Needs root, a Docker engine, gcc and the local image (with python3 and find). Stdlib only.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "python", "src"))

HERMES = ["--cap-drop", "ALL", "--cap-add", "DAC_OVERRIDE", "--cap-add", "CHOWN", "--cap-add", "FOWNER",
          "--cap-add", "SETUID", "--cap-add", "SETGID", "--security-opt", "no-new-privileges",
          "--tmpfs", "/tmp:rw,nosuid,size=64m"]
C_LOOP = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    const char *f = "/tmp/bench-c-file", *d = "/tmp/bench-c-dir";
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (long i = 0; i < n; i++) {
        int fd = open(f, O_CREAT | O_WRONLY, 0644);
        if (fd < 0) { perror("open"); return 1; }
        close(fd);
        if (chmod(f, (i & 1) ? 0755 : 0644)) { perror("chmod"); return 1; }
        if (mkdir(d, 0755)) { perror("mkdir"); return 1; }
        rmdir(d);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    printf("%.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
"""
C_CALLS_PER_LOOP = 3  # open, chmod, mkdir are filtered (close and rmdir are not)
PY_LOOP = r"""
import os, sys, time
n = int(sys.argv[1]); path = "/tmp/bench-py-file"
start = time.process_time()
for i in range(n):
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    os.stat(path)
    os.chmod(path, 0o755 if i & 1 else 0o644)
print("%.6f" % (time.process_time() - start))
"""
FIND = r"""
import resource, subprocess, sys
for _ in range(int(sys.argv[1])):
    subprocess.run(["find", "/", "-xdev"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(usage.ru_utime + usage.ru_stime)
"""


def docker(*args, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=600)


def timed(image, seccomp, binds, argv):
    """Seconds the workload reported from inside one container."""
    opts = ["--security-opt", "seccomp=%s" % seccomp] if seccomp else []
    mounts = [a for src, dst in binds for a in ("-v", "%s:%s:ro" % (src, dst))]
    out = docker("run", "--rm", "--network", "none", *HERMES, *opts, *mounts, image, *argv).stdout
    return float(out.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="sandboxguard/debian:12")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--py-loops", type=int, default=100000)
    parser.add_argument("--c-loops", type=int, default=300000)
    parser.add_argument("--find-passes", type=int, default=20, help="find / -xdev runs per container")
    parser.add_argument("--out", help="write the numbers as JSON here")
    args = parser.parse_args(argv)
    from sandboxguard._prevent import profile, seccomp  # noqa: PLC0415 - after the checkout's src is on sys.path

    work = tempfile.mkdtemp(prefix="sg-bench-seccomp-", dir="/run")
    try:
        prof = os.path.join(work, "prevent.json")
        with open(prof, "w") as handle:
            handle.write(seccomp.profile_text(profile.make("docker", image=args.image)))
        os.chmod(work, 0o755)
        os.chmod(prof, 0o644)
        source = os.path.join(work, "loop.c")
        with open(source, "w") as handle:
            handle.write(C_LOOP)
        binary = os.path.join(work, "loop")
        subprocess.run(["gcc", "-O2", "-static", "-o", binary, source], check=True)
        script = os.path.join(work, "loop.py")
        with open(script, "w") as handle:
            handle.write(PY_LOOP)
        workloads = {
            "find / -xdev": ([], ["python3", "-c", FIND, str(args.find_passes)]),
            "python stat/chmod/open loop": ([(script, "/bench/loop.py")],
                                            ["python3", "/bench/loop.py", str(args.py_loops)]),
            "C chmod/open/mkdir loop": ([(binary, "/bench/loop")], ["/bench/loop", str(args.c_loops)]),
        }
        results = {name: {"default": [], "prevention": []} for name in workloads}
        for binds, command in workloads.values():  # warm-up
            timed(args.image, None, binds, command)
        for round_ in range(args.repeat):
            for name, (binds, command) in workloads.items():
                order = [("default", None), ("prevention", prof)]
                for label, opt in (order if round_ % 2 == 0 else order[::-1]):
                    results[name][label].append(timed(args.image, opt, binds, command))
        report = {"generated": time.strftime("%Y-%m-%d %H:%M:%S"), "image": args.image, "repeat": args.repeat,
                  "docker": docker("version", "--format", "{{.Server.Version}}").stdout.strip(), "workloads": {}}
        print("%-30s %12s %12s %8s" % ("workload (median of %d)" % args.repeat, "default s", "prevention s", "ratio"))
        for name, times in results.items():
            base, prevented = statistics.median(times["default"]), statistics.median(times["prevention"])
            ratio = prevented / base if base else float("nan")
            report["workloads"][name] = {"default": times["default"], "prevention": times["prevention"],
                                         "median_default": base, "median_prevention": prevented, "ratio": ratio}
            print("%-30s %12.4f %12.4f %7.2fx" % (name, base, prevented, ratio))
        c = report["workloads"]["C chmod/open/mkdir loop"]
        per_call = (c["median_prevention"] - c["median_default"]) / (args.c_loops * C_CALLS_PER_LOOP) * 1e6
        report["c_cost_per_filtered_call_us"] = per_call
        print("C loop: %.3f us more per filtered call (%d calls)" % (per_call, args.c_loops * C_CALLS_PER_LOOP))
        if args.out:
            with open(args.out, "w") as handle:
                json.dump(report, handle, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
