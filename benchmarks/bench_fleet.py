# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Benchmark the fleet playbooks against a raw find play over 5, 10, 20 and 40 hosts (issue 12, item 8).

Starts one fleet of docker-connection hosts (tests/integration/fleet_fixtures.py: a Hermes
sandbox per host, every second host seeded with a setuid root shell, a cap_net_raw=ep file
and a leak) and gives each sandbox workspace --files regular files, so there is a tree to
walk. Then, for each size N (the first N hosts), at the same --forks, the median of
--repeat interleaved rounds of the wall time of:

  raw_find   a play of one `ansible.builtin.shell: find PATHS -xdev -type f -perm /6000` task
  audit      `ansible-playbook sandboxguard.boundary.audit` (reports written, the gate off)
  raw_strip  a play of one shell task: `find ... -perm /6000 -exec chmod ug-s {} +` and
             `setcap -r` on what getcap lists (what remediate does, done by hand)
  remediate  `ansible-playbook sandboxguard.boundary.remediate` (the fleet re-seeded first, untimed)

and reports audit/raw_find and remediate/raw_strip (goals at the largest N, from the same run:
audit <= 1.2x raw_find (issue 26), remediate <= 1.5x raw_strip; exit 3 when one is missed),
the per-host cost of each (slope of wall time over N, least squares) and how it grows.

Where the time goes, at the largest N: the tasks of the audit and remediate plays with
their wall times (from the ansible.posix.json callback's task durations), ad hoc runs of
ansible.builtin.ping (connection + AnsiballZ of a tiny module), `shell: true`, and
setid_strip in check mode on an empty directory (transfer and start of our module, no walk),
the walk time the module itself reports (`elapsed`), and the size of each AnsiballZ payload.

Needs root, a Docker engine and the images (make images); run it under the shared lock:

    flock /work/heavy.lock .venv/bin/python benchmarks/bench_fleet.py [--hosts 5,10,20,40]
        [--forks 10] [--repeat 3] [--files 2000] [--out benchmarks/results/FILE.txt]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

from fleet_fixtures import EXTRA_ROOT, HERMES_HOME, SANDBOXES, Fleet  # noqa: E402

VENV_BIN = os.path.dirname(sys.executable)  # run it with the venv's python (ansible-playbook beside it)
# Goals at the largest N (issue 22, item 4; the audit's tightened by issue 26, item 5): the audit
# at most 1.2x a raw find play, remediate at most 1.5x a raw strip play, measured in the same run.
GOALS = {"audit": ("raw_find", 1.2), "remediate": ("raw_strip", 1.5)}
PATHS = [SANDBOXES, EXTRA_ROOT]
EMPTY_DIR = "/srv/sg-empty"  # made on every host: a module run with nothing to walk
RAW_FIND = """
- name: Raw find, the baseline
  hosts: all
  gather_facts: false
  become: true
  tasks:
    - name: Find setuid/setgid files
      ansible.builtin.shell: find {paths} -xdev -type f -perm /6000 2>/dev/null || true
      changed_when: false
"""
RAW_STRIP = """
- name: Raw strip, the baseline for remediate
  hosts: all
  gather_facts: false
  become: true
  tasks:
    - name: Strip setuid/setgid bits and capabilities
      ansible.builtin.shell: |
        for d in {paths}; do [ -d "$d" ] || continue
          find "$d" -xdev -type f -perm /6000 -exec chmod ug-s {{}} +
          getcap -r "$d" 2>/dev/null | while read -r f _; do setcap -r "$f"; done
        done
"""
# Files in each workspace: a few directories of empty files (created in the container).
MAKE_TREE = r"""
import os, sys
root = sys.argv[1]; n = int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "pkg%03d" % (i // 50), "lib")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "f%05d.js" % i), "w").close()
os.system("chown -R 1000:1000 " + root)
"""


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def env(**extra):
    collections = os.environ.get("ANSIBLE_COLLECTIONS_PATH") or os.path.join(REPO, ".cache", "collections")
    out = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections,
               ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_PIPELINING="1", NO_COLOR="1")
    out.update(extra)
    return out


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cgroup_cpu_files(names):
    """The CPU accounting file of each container (cgroup v2 cpu.stat or v1 cpuacct.usage), by name."""
    files = {}
    for name in names:
        ident = subprocess.run(["docker", "inspect", "--format", "{{.Id}}", name], capture_output=True, text=True,
                               check=True).stdout.strip()
        for path in ("/sys/fs/cgroup/system.slice/docker-%s.scope/cpu.stat" % ident,
                     "/sys/fs/cgroup/docker/%s/cpu.stat" % ident,
                     "/sys/fs/cgroup/cpuacct/docker/%s/cpuacct.usage" % ident):
            if os.path.exists(path):
                files[name] = path
                break
    return files


def hosts_cpu(files):
    """CPU seconds the containers have used so far (their cgroups: the modules, find, the shells)."""
    total = 0.0
    for path in files.values():
        with open(path) as handle:
            text = handle.read()
        if path.endswith("cpu.stat"):
            total += int(text.split("usage_usec", 1)[1].split()[0]) / 1e6
        else:
            total += int(text) / 1e9
    return total


def timed(argv, **extra):
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env(**extra), check=False, timeout=1800)
    wall = time.monotonic() - start
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        out = None
    return wall, proc.returncode, out, proc


def check_ok(label, rc, out, proc, allow_rc=(0,)):
    if rc not in allow_rc or out is None:
        raise SystemExit("%s failed (rc %d): %s %s" % (label, rc, proc.stdout[-2000:], proc.stderr[-2000:]))
    bad = {h: s for h, s in out["stats"].items() if s.get("unreachable") or s.get("failures")}
    if bad:
        raise SystemExit("%s: hosts failed or unreachable: %s" % (label, bad))


def task_times(out):
    """[(task name, wall seconds)] from the json callback's per-task durations."""
    rows = []
    for play in out["plays"]:
        for task in play["tasks"]:
            duration = task["task"].get("duration", {})
            if duration.get("start") and duration.get("end"):
                rows.append((task["task"]["name"], seconds(duration["end"]) - seconds(duration["start"])))
    return rows


def seconds(stamp):
    # "2026-12-01T09:40:00.123456Z"
    from datetime import datetime  # noqa: PLC0415
    return datetime.strptime(stamp.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def module_elapsed(out):
    """The time each host's module itself reports: setid_strip's `elapsed` (its walk),
    audit_info's `record.elapsed` with each check's own `elapsed`, and remediate's `elapsed`
    with each fix's own. {label: [seconds per host]}."""
    found = {}
    for play in out["plays"]:
        for task in play["tasks"]:
            for result in task["hosts"].values():
                if isinstance(result.get("fixes"), dict) and isinstance(result.get("elapsed"), (int, float)):
                    found.setdefault("remediate, all fixes", []).append(result["elapsed"])
                    for name, section in result["fixes"].items():
                        if section.get("status") != "skipped" and isinstance(section.get("elapsed"), (int, float)):
                            found.setdefault("remediate " + name, []).append(section["elapsed"])
                elif isinstance(result.get("elapsed"), (int, float)) and "counts" in result:
                    found.setdefault("setid_strip walk", []).append(result["elapsed"])
                record = result.get("record")
                if isinstance(record, dict) and isinstance(record.get("elapsed"), (int, float)):
                    found.setdefault("audit_info, all checks", []).append(record["elapsed"])
                    for name, check in (record.get("checks") or {}).items():
                        if isinstance(check.get("elapsed"), (int, float)):
                            found.setdefault("audit_info " + name, []).append(check["elapsed"])
    return found


def slope(points):
    """Least-squares seconds per host over [(N, seconds)]."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def payload_sizes(fleet, work):
    """AnsiballZ payload sizes as they land on a host (no pipelining, remote files kept)."""
    host = fleet.hosts[0]
    inventory = fleet.inventory(os.path.join(work, "one.yml"), hosts=[host])
    sizes = {}
    for module, args in (("ansible.builtin.ping", ""), ("ansible.builtin.shell", "true"),
                         ("sandboxguard.boundary.setid_strip", "paths=" + EMPTY_DIR),
                         ("sandboxguard.boundary.audit_info", "paths=" + EMPTY_DIR),
                         ("sandboxguard.boundary.remediate", "paths=" + EMPTY_DIR)):
        host.sh("rm -rf /root/.ansible/tmp")
        subprocess.run([os.path.join(VENV_BIN, "ansible"), "all", "-i", inventory, "-m", module, "-a", args],
                       capture_output=True, text=True, check=False,
                       env=env(ANSIBLE_PIPELINING="0", ANSIBLE_KEEP_REMOTE_FILES="1",
                               ANSIBLE_STDOUT_CALLBACK="default"))
        listing = host.sh("find /root/.ansible/tmp -name 'AnsiballZ_*.py' -printf '%s\\n' 2>/dev/null || true")
        sizes[module] = int(listing.split()[0]) if listing.split() else None
    host.sh("rm -rf /root/.ansible/tmp")
    return sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", default="5,10,20,40")
    parser.add_argument("--forks", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int, default=2000, help="regular files per sandbox workspace")
    parser.add_argument("--out", help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="leave the fleet running at the end")
    parser.add_argument("--adhoc-repeat", type=int, help="rounds of each ad hoc run (default: --repeat)")
    parser.add_argument("--before", metavar="COLLECTIONS_PATH",
                        help="also run audit and remediate from this collections path (an older checkout's "
                             ".cache/collections), interleaved in the same rounds (audit_before, remediate_before)")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.hosts.split(","))
    work = tempfile.mkdtemp(prefix="sgbench-fleet-")
    lines = []
    missed = []

    def say(msg=""):
        print(msg)
        sys.stdout.flush()
        lines.append(msg)

    load = os.getloadavg()
    say("bench_fleet: hosts %s, forks %d, repeat %d, %d files per workspace; load %.2f %.2f %.2f; %s" % (
        sizes, args.forks, args.repeat, args.files, *load, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    start = time.monotonic()
    fleet = Fleet(max(sizes), 0, prefix="sgbench", workdir=os.path.join(work, "fleet")).start()
    log("fleet of %d started in %.1fs" % (max(sizes), time.monotonic() - start))
    try:
        fleet.for_each("mkdir -p %s" % EMPTY_DIR)
        for host in fleet.hosts:
            subprocess.run(["docker", "exec", host.name, "python3", "-c", MAKE_TREE,
                            "%s/task-%d/workspace/node_modules" % (SANDBOXES, host.index), str(args.files)], check=True)
        playbooks = {}
        for name, text in (("raw_find", RAW_FIND), ("raw_strip", RAW_STRIP)):
            playbooks[name] = os.path.join(work, name + ".yml")
            with open(playbooks[name], "w") as handle:
                handle.write(text.format(paths=" ".join(PATHS)))
        variables = os.path.join(work, "vars.json")
        with open(variables, "w") as handle:
            json.dump({"sandboxguard_paths": PATHS, "sandboxguard_hermes_homes": [HERMES_HOME],
                       "boundary_audit_report_dir": os.path.join(work, "reports"),
                       "boundary_audit_fail_on_findings": False, "boundary_audit_allow_not_checked": True}, handle)

        cpu_files = cgroup_cpu_files([h.name for h in fleet.hosts])
        cpus = {}

        def run(kind, inventory):
            if kind in ("remediate", "raw_strip", "remediate_before"):
                fleet.reseed()
            base = kind[:-len("_before")] if kind.endswith("_before") else kind
            extra = {"ANSIBLE_COLLECTIONS_PATH": args.before} if base != kind else {}
            target = playbooks.get(base, "sandboxguard.boundary." + base)
            before = (children_cpu(), hosts_cpu(cpu_files))
            wall, rc, out, proc = timed([os.path.join(VENV_BIN, "ansible-playbook"), target, "-i", inventory,
                                         "-e", "@" + variables, "-f", str(args.forks)], **extra)
            # CPU seconds of the run: the controller (ansible-playbook, its workers, the docker
            # clients) and the hosts (their cgroups); far less moved by other work than wall time
            cpus.setdefault(kind, []).append((children_cpu() - before[0], hosts_cpu(cpu_files) - before[1]))
            check_ok(kind, rc, out, proc)
            return wall, out

        kinds = ("raw_find", "audit", "raw_strip", "remediate")
        if args.before:
            kinds += ("audit_before", "remediate_before")
        goals = dict(GOALS)
        if args.before:
            goals.update({kind + "_before": goal for kind, goal in GOALS.items()})
        medians = {}
        cpu_ratio = {}
        last = {}
        for n in sizes:
            inventory = fleet.inventory(os.path.join(work, "inv-%d.yml" % n), hosts=fleet.hosts[:n])
            run("audit", inventory)  # warm-up: controller caches, page cache in the hosts, bytecode caches
            if args.before:
                run("audit_before", inventory)
            cpus.clear()
            walls = {k: [] for k in kinds}
            for r in range(args.repeat):
                order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
                for kind in order:
                    wall, out = run(kind, inventory)
                    walls[kind].append(wall)
                    last[(n, kind)] = out
            medians[n] = {k: statistics.median(v) for k, v in walls.items()}
            cells = ["%s %6.2fs [%s]" % (k, medians[n][k], " ".join("%.1f" % w for w in walls[k])) for k in kinds]
            say("N=%-3d %s  (load %.2f)" % (n, "  ".join(cells), os.getloadavg()[0]))
            say("      CPU s (controller + hosts), median: %s" % "  ".join(
                "%s %.2f+%.2f" % (k, statistics.median(c for c, _ in cpus[k]), statistics.median(h for _, h in cpus[k]))
                for k in kinds))
            paired = {kind: [walls[kind][r] / walls[base][r] for r in range(args.repeat)]
                      for kind, (base, _goal) in goals.items()}
            say("      per-round ratios: %s" % "  ".join(
                "%s/%s [%s]" % (kind, goals[kind][0], " ".join("%.2f" % x for x in paired[kind])) for kind in goals))
            cpu_ratio[n] = {kind: statistics.median(c + h for c, h in cpus[kind]) /
                            statistics.median(c + h for c, h in cpus[base]) for kind, (base, _goal) in goals.items()}
        fleet.reseed()
        say()
        say("| hosts | raw find | audit | audit / raw find | raw strip | remediate | remediate / raw strip |")
        say("| --- | --- | --- | --- | --- | --- | --- |")
        for n in sizes:
            m = medians[n]
            say("| %d | %.2f s | %.2f s | %.2fx | %.2f s | %.2f s | %.2fx |" % (
                n, m["raw_find"], m["audit"], m["audit"] / m["raw_find"], m["raw_strip"], m["remediate"],
                m["remediate"] / m["raw_strip"]))
            if args.before:
                say("| %d, before | %.2f s | %.2f s | %.2fx | %.2f s | %.2f s | %.2fx |" % (
                    n, m["raw_find"], m["audit_before"], m["audit_before"] / m["raw_find"], m["raw_strip"],
                    m["remediate_before"], m["remediate_before"] / m["raw_strip"]))
        say()
        if len(sizes) > 1:
            for kind in kinds:
                pts = [(n, medians[n][kind]) for n in sizes]
                say("per-host cost of %-9s %.3f s/host (least squares over N); per host at N=%d: %.3f s, "
                    "at N=%d: %.3f s" % (kind, slope(pts), sizes[0], pts[0][1] / sizes[0], sizes[-1],
                                         pts[-1][1] / sizes[-1]))
            say("per-host overhead of the audit over raw find: %.3f s/host" % (
                slope([(n, medians[n]["audit"] - medians[n]["raw_find"]) for n in sizes])))
        big = sizes[-1]
        missed = []
        for kind, (base, goal) in goals.items():
            ratio = medians[big][kind] / medians[big][base]
            verdict = "PASS" if ratio <= goal else "FAIL"
            if verdict == "FAIL" and kind in GOALS:  # the before kinds are for comparison
                missed.append(kind)
            say("goal %s <= %.1fx %s at %d hosts: %.2fx %s (medians %.2f s / %.2f s; CPU, controller + hosts: %.2fx)"
                % (kind, goal, base.replace("_", " "), big, ratio, verdict, medians[big][kind], medians[big][base],
                   cpu_ratio[big][kind]))
        say()
        say("where the time goes at N=%d (forks %d): task wall times of the last round" % (big, args.forks))
        for kind in ("audit", "remediate", "raw_find") + (("audit_before",) if args.before else ()):
            out = last[(big, kind)]
            rows = task_times(out)
            say("  %s: %d tasks, %.2f s in tasks" % (kind, len(rows), sum(t for _, t in rows)))
            for name, secs in sorted(rows, key=lambda r: -r[1])[:12]:
                say("    %6.2f s  %s" % (secs, name))
            for label, times in sorted(module_elapsed(out).items()):
                say("    in the module, %s: median %.3f s, max %.3f s per host (%d hosts)" % (
                    label, statistics.median(times), max(times), len(times)))
        inventory = fleet.inventory(os.path.join(work, "inv-%d.yml" % big), hosts=fleet.hosts[:big])
        adhoc_repeat = args.adhoc_repeat or args.repeat
        say("  ad hoc over %d hosts, forks %d (median of %d):" % (big, args.forks, adhoc_repeat))
        for label, module, margs, check in (
                ("ping (connection + a tiny module)", "ansible.builtin.ping", "", False),
                ("shell: true", "ansible.builtin.shell", "true", False),
                ("setid_strip on an empty dir, check mode", "sandboxguard.boundary.setid_strip", "paths=" + EMPTY_DIR,
                 True),
                ("setid_strip on the sandboxes, check mode", "sandboxguard.boundary.setid_strip",
                 "paths=%s caps=true" % SANDBOXES, True)):
            walls = []
            for _ in range(adhoc_repeat):
                wall, rc, _, proc = timed([os.path.join(VENV_BIN, "ansible"), "all", "-i", inventory, "-m", module,
                                           "-a", margs, "-f", str(args.forks), *(["--check"] if check else [])],
                                          ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
                if rc != 0:
                    raise SystemExit("ad hoc %s failed (rc %d): %s" % (module, rc, proc.stdout[-2000:]))
                walls.append(wall)
            say("    %6.2f s  %s" % (statistics.median(walls), label))
        say("  AnsiballZ payload per task (bytes, as written to the host without pipelining):")
        for module, size in payload_sizes(fleet, work).items():
            say("    %8s  %s" % (size, module))
        say()
        say("load after: %.2f %.2f %.2f; total %.0f s" % (*os.getloadavg(), time.monotonic() - start))
    finally:
        if not args.keep:
            fleet.stop()
    if args.out:
        with open(args.out, "w") as handle:
            handle.write("\n".join(lines) + "\n")
    if missed:
        sys.exit(3)


if __name__ == "__main__":
    main()
