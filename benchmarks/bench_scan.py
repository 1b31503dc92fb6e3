# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Benchmark sandboxguard's privileged-file walker against GNU find and getcap (issue 3).

Builds (or reuses) a node_modules-shaped tree of N regular files, 0.1 % setuid, 0.1 %
setgid, 0.05 % carrying security.capability, then times on it, warm cache, the median
of --repeat interleaved rounds of:

  (a)  sandboxguard scan for setid + caps in one walk: the CLI as a fresh process
       (`sandboxguard scan ROOT --json --budget 0`), and in-process
       (`sandboxguard.strip.scan(ROOT, budget=0)`, which forks its worker);
  (b)  GNU `find -P ROOT -xdev -type f -perm /6000` then `getcap -r ROOT` (the sum);
  (c)  GNU find alone.

Checks that (a)'s setid and caps counts equal what find and getcap report (exit 1 if
not) and prints files/s, the ratios a/b and a/c against the targets (a <= 0.8x b,
a <= 2.0x c) and the peak RSS of the CLI run (target < 64 MiB). Must run as root.
Stdlib only:

    /work/main/.venv/bin/python benchmarks/bench_scan.py [--files 200000[,1000000]]
        [--dir /var/tmp/sandboxguard-bench] [--repeat 5] [--keep] [--syscalls] [--profile]
"""
import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python", "src"))

from sandboxguard import strip as stripmod  # noqa: E402
from sandboxguard.caps import XATTR_NAME, encode_vfs_cap  # noqa: E402

sys.path.insert(0, HERE)
import bench_cold_limit  # noqa: E402  (the C probe: the disk's limit, contender "limit")

DOMINANT_SHARE = 0.4  # --shape dominant: one package holds this share of the files
TREE_VERSION = 1  # bump when the tree's shape changes, so old cached trees are not reused
DEFAULT_DIR = "/var/tmp/sandboxguard-bench"
TARGET_VS_B = 0.8
TARGET_VS_C = 2.0
COLD_TARGET_VS_C = 0.7  # issue 13, cold: at most 0.7x of find alone (or within TARGET_VS_LIMIT of the limit)
TARGET_VS_LIMIT = 1.2  # issue 13, cold: within 1.2x of the C probe (contender "limit")
TARGET_RSS_MIB = 64
CAP_VALUES = (  # a few realistic capability sets (revision 2 vfs_cap_data)
    encode_vfs_cap(permitted=[13], effective=True),            # cap_net_raw=ep
    encode_vfs_cap(permitted=[10], effective=True),            # cap_net_bind_service=ep
    encode_vfs_cap(permitted=[13, 21], effective=True),        # cap_net_raw,cap_sys_admin=ep
    encode_vfs_cap(permitted=[12], inheritable=[12]),          # cap_net_admin=ip
)
FILE_NAMES = ("index.js", "package.json", "README.md", "LICENSE", "CHANGELOG.md", "index.d.ts")
SUBDIRS = ("lib", "dist", "src", "test", "types", "esm", "cjs", "build", "utils", "helpers")
EXTS = (".js", ".js", ".js", ".mjs", ".cjs", ".d.ts", ".map", ".json", ".ts", ".md")


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


# -- the tree ------------------------------------------------------------------------------
class _Builder:
    """Writes the tree through directory fds with mknod: one syscall per empty file."""

    def __init__(self, n_files, seed):
        self.n_files = n_files
        self.rng = random.Random(seed)  # noqa: S311 (a reproducible tree shape, not a secret)
        self.made = 0
        self.dirs = 0
        self.symlinks = 0
        self.pkg_no = 0
        # Which global file indices get which privilege: exact counts, chosen up front.
        # setuid and setgid are disjoint; caps are drawn independently, so a few files
        # carry both setid and caps (the "file with both" case).
        k_id = max(1, round(n_files * 0.001))
        k_cap = max(1, round(n_files * 0.0005))
        idx = self.rng.sample(range(n_files), 2 * k_id)
        self.setuid = set(idx[:k_id])
        self.setgid = set(idx[k_id:])
        self.caps = set(self.rng.sample(range(n_files), k_cap))
        self.file_paths = []  # a sample of (dir relpath, name) for .bin symlink targets
        self.limit = n_files  # files() and full() stop here (lowered while the dominant package is built)

    def full(self):
        return self.made >= self.limit

    def files(self, dfd, relpath, count, names=()):
        rng = self.rng
        for j in range(count):
            if self.made >= self.limit:
                return
            if j < len(names):
                name = names[j]
            else:
                name = "%s%d%s" % (rng.choice(("index", "util", "core", "main", "chunk", "mod", "x")), j,
                                   rng.choice(EXTS))
            i = self.made
            os.mknod(name, 0o100644, dir_fd=dfd)
            if i in self.setuid:
                os.chmod(name, 0o4755, dir_fd=dfd, follow_symlinks=False)
            elif i in self.setgid:
                os.chmod(name, 0o2755, dir_fd=dfd, follow_symlinks=False)
            if i in self.caps:
                os.setxattr("/proc/self/fd/%d/%s" % (dfd, name), XATTR_NAME, CAP_VALUES[i % len(CAP_VALUES)])
            self.made += 1
            if rng.random() < 0.01:
                self.file_paths.append("%s/%s" % (relpath, name))

    def subdir(self, dfd, name):
        os.mkdir(name, 0o755, dir_fd=dfd)
        self.dirs += 1
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)

    def file_dir(self, dfd, relpath, depth):
        """A directory of ~5-30 files, sometimes with nested subdirectories."""
        rng = self.rng
        self.files(dfd, relpath, rng.randint(5, 30))
        if depth < 4 and rng.random() < 0.35:
            for _ in range(rng.randint(1, 3)):
                if self.full():
                    return
                name = rng.choice(SUBDIRS) + str(rng.randint(0, 9))
                try:
                    sub = self.subdir(dfd, name)
                except FileExistsError:
                    continue
                try:
                    self.file_dir(sub, relpath + "/" + name, depth + 1)
                finally:
                    os.close(sub)

    def chain(self, dfd, relpath, length):
        """A deep chain a/b/c/... with a few files at each level (deep dependency paths)."""
        fds = []
        try:
            for level in range(length):
                if self.full():
                    break
                name = "d%d" % level
                fd = self.subdir(fds[-1] if fds else dfd, name)
                fds.append(fd)
                relpath += "/" + name
                self.files(fd, relpath, self.rng.randint(1, 4))
        finally:
            for fd in fds:
                os.close(fd)

    def package(self, nm_fd, nm_rel, depth):
        rng = self.rng
        self.pkg_no += 1
        parent_fd, owned = nm_fd, None
        if rng.random() < 0.1:  # a scoped package: node_modules/@scope/name
            scope = "@scope%d" % rng.randint(0, 40)
            try:
                owned = self.subdir(nm_fd, scope)
            except FileExistsError:
                owned = os.open(scope, os.O_RDONLY | os.O_DIRECTORY, dir_fd=nm_fd)
            parent_fd, nm_rel = owned, nm_rel + "/" + scope
        name = "pkg-%d" % self.pkg_no
        rel = nm_rel + "/" + name
        pfd = self.subdir(parent_fd, name)
        try:
            self.files(pfd, rel, rng.randint(3, 6), FILE_NAMES)
            for sub in rng.sample(SUBDIRS, rng.randint(1, 3)):
                if self.full():
                    break
                sfd = self.subdir(pfd, sub)
                try:
                    self.file_dir(sfd, rel + "/" + sub, 1)
                finally:
                    os.close(sfd)
            if rng.random() < 0.02 and not self.full():
                self.chain(pfd, rel, rng.randint(10, 30))
            if depth < 3 and rng.random() < 0.15 and not self.full():
                self.node_modules(pfd, rel, depth + 1, rng.randint(1, 6))
        finally:
            os.close(pfd)
            if owned is not None:
                os.close(owned)

    def dominant_package(self, nm_fd, nm_rel, share):
        """One package holding `share` of all files (a monorepo-sized dependency such as a
        compiler or an SDK): groups of 20-60 module directories, each a file_dir."""
        rng = self.rng
        self.limit = min(self.n_files, self.made + int(self.n_files * share))
        rel = nm_rel + "/big-sdk"
        pfd = self.subdir(nm_fd, "big-sdk")
        try:
            self.files(pfd, rel, 5, FILE_NAMES)
            group = 0
            while not self.full():
                gname = "group%d" % group
                gfd = self.subdir(pfd, gname)
                try:
                    for k in range(rng.randint(20, 60)):
                        if self.full():
                            break
                        sfd = self.subdir(gfd, "mod%d" % k)
                        try:
                            self.file_dir(sfd, "%s/%s/mod%d" % (rel, gname, k), 1)
                        finally:
                            os.close(sfd)
                finally:
                    os.close(gfd)
                group += 1
        finally:
            os.close(pfd)
            self.limit = self.n_files

    def node_modules(self, parent_fd, rel, depth, n_packages=None, dominant=0.0):
        nm_rel = rel + "/node_modules"
        nm_fd = self.subdir(parent_fd, "node_modules")
        try:
            start = len(self.file_paths)
            count = 0
            if dominant:
                self.dominant_package(nm_fd, nm_rel, dominant)
            while not self.full() and (n_packages is None or count < n_packages):
                self.package(nm_fd, nm_rel, depth)
                count += 1
            # npm's .bin: relative symlinks to files of the packages just written
            targets = self.file_paths[start:]
            if targets:
                bin_fd = self.subdir(nm_fd, ".bin")
                try:
                    for k, target in enumerate(targets[: max(1, len(targets) // 4)]):
                        os.symlink(".." + target[len(nm_rel):], "bin%d" % k, dir_fd=bin_fd)
                        self.symlinks += 1
                finally:
                    os.close(bin_fd)
        finally:
            os.close(nm_fd)


SHAPES = {"balanced": 0.0, "dominant": DOMINANT_SHARE}


def tree_for(base, n_files, seed, shape="balanced"):
    """Return (root, manifest) of a tree with n_files files, building it unless cached.

    shape "balanced": many packages of similar size; "dominant": the same, but one
    package (node_modules/big-sdk) holds DOMINANT_SHARE of the files, which a walk that
    shares work only as whole subtrees leaves to one walker.
    """
    prefix = "nm-" if shape == "balanced" else "nm-%s-" % shape
    key = os.path.join(base, "%s%d-seed%d-v%d" % (prefix, n_files, seed, TREE_VERSION))
    manifest_path = key + ".json"
    root = os.path.join(key, "root")
    if os.path.exists(manifest_path) and os.path.isdir(root):
        with open(manifest_path) as f:
            manifest = json.load(f)
        log("reusing %s (%d files, built %s)" % (root, manifest["files"], manifest["built"]))
        return root, manifest, manifest_path
    if os.path.exists(key):
        log("removing an incomplete tree at %s" % key)
        shutil.rmtree(key)
    os.makedirs(root)
    log("building %d files under %s ..." % (n_files, root))
    started = time.monotonic()
    b = _Builder(n_files, seed)
    old_umask = os.umask(0)
    rfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        b.files(rfd, "", 2, ("package.json", "package-lock.json"))
        b.node_modules(rfd, "", 0, dominant=SHAPES[shape])
    finally:
        os.close(rfd)
        os.umask(old_umask)
    manifest = {
        "files": b.made, "dirs": b.dirs + 1, "symlinks": b.symlinks, "setuid": len(b.setuid),
        "setgid": len(b.setgid), "caps": len(b.caps), "setid_and_caps": len((b.setuid | b.setgid) & b.caps),
        "seed": seed, "shape": shape, "build_s": round(time.monotonic() - started, 1),
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
    log("built in %.1f s: %s" % (time.monotonic() - started, manifest))
    return root, manifest, manifest_path


def remove_tree(root, manifest_path):
    os.unlink(manifest_path)
    shutil.rmtree(os.path.dirname(root))


# -- the contenders --------------------------------------------------------------------------
SG_CLI = os.path.join(os.path.dirname(sys.executable), "sandboxguard")


def child_env():
    """The environment of the CLI child: a user's, not this sandbox's.

    PYTHONUNBUFFERED would turn the JSON report into ~20,000 tiny write()s and
    PYTHONDONTWRITEBYTECODE would recompile every module on every start (no __pycache__
    in the checkout); an installed sandboxguard has neither problem. Byte code is
    cached under --dir (PYTHONPYCACHEPREFIX), never in the checkout.
    """
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(BASE_DIR[0], "pycache")
    return env


BASE_DIR = [DEFAULT_DIR]


def run_child(argv, stdout=subprocess.DEVNULL, env=None):
    """Run argv; return (seconds, CPU seconds, exit code, stdout bytes or None, peak RSS KiB).

    CPU time and RSS come from wait4() on this child, which (Linux) include every
    descendant it waited for (the forked walker); the RSS is the largest of them.
    """
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read() if stdout == subprocess.PIPE else None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.stdout:
        proc.stdout.close()
    proc.stderr.close()
    if err and proc.returncode not in (0, 1):
        log("%s: exit %d: %s" % (argv[0], proc.returncode, err.decode(errors="replace")[:500]))
    return elapsed, usage.ru_utime + usage.ru_stime, proc.returncode, out, usage.ru_maxrss


def sg_counts(report):
    c = report["counts"]
    if not report["complete"] or c["errors"]:
        raise SystemExit("sandboxguard scan incomplete or with errors: %s" % json.dumps(c))
    return c["setid"], c["caps"], c["files"]


def contender_a_cli(root, verify):
    t, cpu, rc, out, rss = run_child([SG_CLI, "scan", root, "--json", "--budget", "0"], stdout=subprocess.PIPE,
                                     env=child_env())
    if rc not in (0, 1):
        raise SystemExit("sandboxguard scan exited %d" % rc)
    report = json.loads(out)
    verify("a_cli", *sg_counts(report))
    return t, cpu, rss, report["elapsed"]


def contender_a_lib(root, verify):
    assert threading.active_count() == 1, "the library forks its worker only in a single-threaded caller"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    report = stripmod.scan([root], budget=0)
    t = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    verify("a_lib", *sg_counts(report))
    return t, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def find_argv(root):
    return ["find", "-P", root, "-xdev", "-type", "f", "-perm", "/6000"]


def contender_find(root):
    t, cpu, rc, _, _ = run_child(find_argv(root))
    if rc != 0:
        raise SystemExit("find exited %d" % rc)
    return t, cpu


def contender_getcap(root):
    t, cpu, rc, _, _ = run_child(["getcap", "-r", root])
    if rc != 0:
        raise SystemExit("getcap exited %d" % rc)
    return t, cpu


def reference_counts(root):
    """What the anchors report: setid files (find -print0) and capability files (getcap -r)."""
    _, _, rc, out, _ = run_child([*find_argv(root), "-print0"], stdout=subprocess.PIPE)
    if rc != 0:
        raise SystemExit("find exited %d" % rc)
    setid = out.count(b"\0")
    _, _, rc, out, _ = run_child(["getcap", "-r", root], stdout=subprocess.PIPE)
    if rc != 0:
        raise SystemExit("getcap exited %d" % rc)
    caps = sum(1 for line in out.splitlines() if line.strip())
    return setid, caps


# -- measurements --------------------------------------------------------------------------
def strace_counts(argv, n_files):
    """Syscalls made by argv and its children (strace -c -f): (total, {name: calls})."""
    out_path = "/tmp/sg-bench-strace.%d" % os.getpid()
    try:
        subprocess.run(["strace", "-f", "-c", "-o", out_path, *argv], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False, env=child_env())
        with open(out_path) as f:
            lines = f.read().splitlines()
    finally:
        if os.path.exists(out_path):
            os.unlink(out_path)
    calls, total = {}, 0
    for line in lines:
        parts = line.split()
        if len(parts) < 5 or not parts[0][0].isdigit():
            continue
        if parts[-1] == "total":
            total = int(parts[3])
        else:
            calls[parts[-1]] = int(parts[3])
    return total, calls


def report_syscalls(root, n_files):
    empty = os.path.join(os.path.dirname(root), "empty")
    os.makedirs(empty, exist_ok=True)
    sg = [SG_CLI, "scan", "--json", "--budget", "0"]
    base_total, base_calls = strace_counts([*sg, empty], 0)
    rows = [
        ("a  sandboxguard scan", [*sg, root], base_total, base_calls),
        ("b1 find -perm /6000", find_argv(root), 0, {}),
        ("b2 getcap -r", ["getcap", "-r", root], 0, {}),
    ]
    print("\nsyscalls per regular file (strace -c -f; sandboxguard's start-up, %d calls on an empty dir, "
          "subtracted):" % base_total)
    per = {}
    for label, argv, b_total, b_calls in rows:
        total, calls = strace_counts(argv, n_files)
        total -= b_total
        top = sorted(((c - b_calls.get(n, 0), n) for n, c in calls.items()), reverse=True)[:6]
        per[label] = total / n_files
        print("  %-22s %5.2f   (%s)" % (label, total / n_files,
                                         ", ".join("%s %.2f" % (n, c / n_files) for c, n in top if c > 0)))
    print("  %-22s %5.2f" % ("b  find + getcap", per["b1 find -perm /6000"] + per["b2 getcap -r"]))
    return per


def profile_walk(root):
    """cProfile the in-process walk as the forked worker runs it (fchdir), in a child."""
    import cProfile  # noqa: PLC0415
    import pstats  # noqa: PLC0415

    pid = os.fork()
    if pid == 0:
        try:
            from sandboxguard._walk import walk as walkmod  # noqa: PLC0415
            from sandboxguard.roots import open_root  # noqa: PLC0415

            report = walkmod.new_report([root], True)
            opts = stripmod.StripOptions(actions=("setid", "caps"), dry_run=True, budget=0)
            walker = walkmod.Walk(report, opts, use_chdir=True, workers=1)
            prof = cProfile.Profile()
            with open_root(root) as opened:
                prof.runcall(walker.walk_root, opened)
            print("\ncProfile of the forked worker's walk (use_chdir=True), top 15 by tottime:")
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(15)
            sys.stdout.flush()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def drop_caches():
    """Write dirty pages out and drop the page, dentry and inode caches (root only)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


LIMIT_JOBS = 32  # bench_cold_limit.py's best on this machine (benchmarks/README.md)
LIMIT_EXE = []


def contender_limit(root):
    """The C probe of bench_cold_limit.py with LIMIT_JOBS threads splitting the work per
    directory: what the disk allows a walker that reads what ours reads."""
    if not LIMIT_EXE:
        LIMIT_EXE.append(bench_cold_limit.build_c(tempfile.mkdtemp(prefix="sg-limit-")))
    if LIMIT_EXE[0] is None:
        raise SystemExit("--contenders limit needs gcc (the C probe is compiled at run time)")
    t, cpu, rc, _out, _rss = run_child([LIMIT_EXE[0], root, str(LIMIT_JOBS)])
    if rc != 0:
        raise SystemExit("the C probe exited %d" % rc)
    return t, cpu


def bench_one(root, manifest, repeat, cold=False, contenders=("a_cli", "a_lib", "b", "c")):
    n = manifest["files"]
    ref_setid, ref_caps = reference_counts(root)
    checks = []

    def verify(label, setid, caps, files):
        ok = (setid, caps, files) == (ref_setid, ref_caps, n)
        if not ok:
            checks.append("%s: setid %d caps %d files %d; find/getcap say setid %d caps %d, tree has %d files"
                          % (label, setid, caps, files, ref_setid, ref_caps, n))
        return ok

    want_setid = manifest["setuid"] + manifest["setgid"]
    if (ref_setid, ref_caps) != (want_setid, manifest["caps"]):
        checks.append("find/getcap report setid %d caps %d; the tree was built with %d and %d"
                      % (ref_setid, ref_caps, want_setid, manifest["caps"]))

    keys = ("a_cli", "a_walk", "a_lib", "b", "b_find", "b_getcap", "c", "limit")
    runs = {k: [] for k in keys}  # wall seconds
    cpu = {k: [] for k in keys}  # user + system CPU seconds
    rss = []

    def do_a_cli():
        t, c, r, walk = contender_a_cli(root, verify)
        runs["a_cli"].append(t)
        cpu["a_cli"].append(c)
        runs["a_walk"].append(walk)
        cpu["a_walk"].append(float("nan"))
        rss.append(r)

    def do_a_lib():
        t, c = contender_a_lib(root, verify)
        runs["a_lib"].append(t)
        cpu["a_lib"].append(c)

    def do_b():
        tf, cf = contender_find(root)
        tg, cg = contender_getcap(root)
        for key, t, c in (("b_find", tf, cf), ("b_getcap", tg, cg), ("b", tf + tg, cf + cg)):
            runs[key].append(t)
            cpu[key].append(c)

    def do_c():
        t, c = contender_find(root)
        runs["c"].append(t)
        cpu["c"].append(c)

    def do_limit():
        t, c = contender_limit(root)
        runs["limit"].append(t)
        cpu["limit"].append(c)

    order = [fn for key, fn in (("a_cli", do_a_cli), ("a_lib", do_a_lib), ("b", do_b), ("c", do_c),
                                ("limit", do_limit)) if key in contenders]
    if not cold:
        log("warm-up (one run of each) ...")
        for fn in order:
            fn()
        for values in (*runs.values(), *cpu.values()):
            values.clear()
        rss.clear()
    for i in range(repeat):
        log("round %d/%d%s" % (i + 1, repeat, " (caches dropped before each contender)" if cold else ""))
        rot = order[i % len(order):] + order[: i % len(order)]  # interleaved, rotating order
        for fn in rot:
            if cold:
                drop_caches()
            fn()
    nan = float("nan")
    med = {k: statistics.median(v) if v else nan for k, v in runs.items()}
    med_cpu = {k: statistics.median(v) if v else nan for k, v in cpu.items()}
    return med, med_cpu, runs, max(rss) if rss else 0, checks, (ref_setid, ref_caps)


def print_results(manifest, med, med_cpu, runs, rss_kib, refs, load_before, load_after, cold=False):
    n = manifest["files"]
    print("\n== %d regular files, %d dirs, %d symlinks; setid %d (find), caps %d (getcap); "
          "%d files with both ==" % (n, manifest["dirs"], manifest["symlinks"], refs[0], refs[1],
                                      manifest["setid_and_caps"]))
    print("load average before %s, after %s (2 shared cores: numbers are noisy)" % (load_before, load_after))
    rows = [
        ("a  sandboxguard scan (CLI, fresh process)", "a_cli"),
        ("   - its walk alone (report elapsed)", "a_walk"),
        ("a' strip.scan() in-process (forked worker)", "a_lib"),
        ("b  find -perm /6000 + getcap -r", "b"),
        ("   - find -perm /6000", "b_find"),
        ("   - getcap -r", "b_getcap"),
        ("c  find -perm /6000 alone", "c"),
        ("l  C probe, %d threads (the limit)" % LIMIT_JOBS, "limit"),
    ]
    print("%-44s %8s %11s %8s   %s" % ("contender (median of rounds)", "wall s", "files/s", "CPU s",
                                      "all rounds, wall s"))
    for label, key in rows:
        if not runs[key]:
            continue
        cpu_text = "-" if med_cpu[key] != med_cpu[key] else "%.3f" % med_cpu[key]  # NaN: not measured
        print("%-44s %8.3f %11s %8s   %s" % (label, med[key], f"{n / med[key]:,.0f}", cpu_text,
                                           " ".join("%.3f" % t for t in runs[key])))
    results = []
    print("\nratios (wall-clock medians; the targets) and, for information, CPU-time ratios:")
    for label, key in (("a (CLI)", "a_cli"), ("a' (in-process)", "a_lib")):
        for other, target in (("b", TARGET_VS_B), ("c", COLD_TARGET_VS_C if cold else TARGET_VS_C)):
            if not (runs[key] and runs[other]):
                continue
            ratio = med[key] / med[other]
            ok = ratio <= target
            results.append(ok)
            print("  %-16s / %s = %.2fx   target <= %.1fx   %s   (CPU %.2fx)" % (
                label, other, ratio, target, "PASS" if ok else "FAIL", med_cpu[key] / med_cpu[other]))
        if runs[key] and runs["limit"]:  # issue 13: within 1.2x of the disk's limit
            ratio = med[key] / med["limit"]
            results.append(ratio <= TARGET_VS_LIMIT)
            print("  %-16s / l = %.2fx   target <= %.1fx   %s   (CPU %.2fx)" % (
                label, ratio, TARGET_VS_LIMIT, "PASS" if ratio <= TARGET_VS_LIMIT else "FAIL",
                med_cpu[key] / med_cpu["limit"]))
    rss_mib = rss_kib / 1024
    rss_ok = rss_mib < TARGET_RSS_MIB
    if not runs["a_cli"]:
        return results, rss_mib
    print("  peak RSS of (a) CLI (wait4, includes its forked worker) = %.1f MiB   target < %d MiB   %s"
          % (rss_mib, TARGET_RSS_MIB, "PASS" if rss_ok else "FAIL"))
    return [*results, rss_ok], rss_mib


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", default="200000",
                    help="regular files in the tree; a comma-separated list runs each size in turn and "
                         "compares peak RSS (e.g. 200000,1000000). Default %(default)s")
    ap.add_argument("--dir", default=DEFAULT_DIR, help="where trees are built and cached (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=5, help="timed rounds after the warm-up (default %(default)s)")
    ap.add_argument("--seed", type=int, default=1, help="tree shape seed (default %(default)s)")
    ap.add_argument("--keep", action="store_true", help="keep the tree for the next run (else removed at the end)")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="balanced",
                    help="tree shape: balanced, or dominant (one package holds %d %%%% of the files); "
                         "default %%(default)s" % (DOMINANT_SHARE * 100))
    ap.add_argument("--cold", action="store_true",
                    help="cold cache: no warm-up; sync and drop the page, dentry and inode caches before "
                         "each contender of each round")
    ap.add_argument("--contenders", default="a_cli,a_lib,b,c",
                    help="which to run, comma-separated from a_cli,a_lib,b,c,limit (limit: the C probe "
                         "of bench_cold_limit.py with 32 threads, compiled with gcc; default %(default)s)")
    ap.add_argument("--syscalls", action="store_true", help="also count syscalls per file with strace -c -f")
    ap.add_argument("--profile", action="store_true", help="also cProfile the walk (in a forked child)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("run as root: the tree needs setuid/setgid bits and security.capability xattrs")
    for tool in ("find", "getcap"):
        if not shutil.which(tool):
            raise SystemExit("%s not found (apt-get install findutils libcap2-bin)" % tool)
    base = os.path.realpath(args.dir)
    if base == REPO or base.startswith(REPO + "/"):
        raise SystemExit("--dir %s is inside the checkout; the tree must not end up in git" % base)
    contenders = tuple(c.strip() for c in args.contenders.split(",") if c.strip())
    unknown = set(contenders) - {"a_cli", "a_lib", "b", "c", "limit"}
    if unknown or not contenders:
        raise SystemExit("--contenders: unknown %s (choose from a_cli,a_lib,b,c,limit)" % ",".join(sorted(unknown)))
    sizes = [int(s) for s in args.files.split(",")]
    if min(sizes) < 1:
        raise SystemExit("--files must be positive")
    os.makedirs(base, exist_ok=True)
    BASE_DIR[0] = base
    print("sandboxguard walker benchmark: %s, python %s, %d CPUs, %s, shape %s, %s cache" % (
        time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime()), sys.version.split()[0], os.cpu_count() or 0,
        os.uname().release, args.shape, "cold" if args.cold else "warm"))
    correct, targets_met, rss_by_size = True, True, []
    for n in sizes:
        root, manifest, manifest_path = tree_for(base, n, args.seed, args.shape)
        try:
            load_before = loadavg()
            med, med_cpu, runs, rss_kib, checks, refs = bench_one(root, manifest, args.repeat, args.cold,
                                                                  contenders)
            results, rss_mib = print_results(manifest, med, med_cpu, runs, rss_kib, refs, load_before, loadavg(),
                                             cold=args.cold)
            rss_by_size.append((manifest["files"], rss_mib))
            targets_met = targets_met and all(results)
            if checks:
                correct = False
                print("\nCORRECTNESS FAILURES:")
                for c in sorted(set(checks)):
                    print("  " + c)
            else:
                print("  correctness: setid and caps counts of (a) equal find -perm /6000 and getcap -r: OK")
            if args.syscalls:
                report_syscalls(root, manifest["files"])
            if args.profile:
                profile_walk(root)
            sys.stdout.flush()
        finally:
            if not args.keep:
                log("removing %s (use --keep to reuse it)" % os.path.dirname(root))
                remove_tree(root, manifest_path)
    if len(rss_by_size) > 1:
        print("\npeak RSS of (a) by tree size: " + ", ".join("%d files: %.1f MiB" % r for r in rss_by_size))
    if rss_by_size:
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print("(this benchmark process itself peaked at %.1f MiB)" % own)
    if not correct:
        print("\nCORRECTNESS CHECK FAILED (exit 1)")
        return 1
    if not targets_met:
        print("\nsome performance targets were missed (exit 3)")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
