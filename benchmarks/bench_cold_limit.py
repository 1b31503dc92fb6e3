# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The cold limit of this disk for a directory walk (issue 13 item 3).

How fast can anything walk a tree whose metadata is not cached? A walker that needs
setid bits and capabilities reads every directory (getdents) and every file's inode
(lstat; the capability xattr lives in the inode on ext4). Cold, each of those may wait
on the disk, so the question is how many reads the disk serves in parallel. This probe
walks ROOT with N workers that take directories from one shared queue as they are
discovered (work split per directory, not per subtree), N = 1, 2, 4, 8, 16, 32 by
default, with the page, dentry and inode caches dropped before every run, and prints
the wall-clock median per N. Two implementations, both measured in the same run:

  c   a tiny C program (pthreads, compiled at run time with gcc when gcc exists):
      getdents through readdir(3), fstatat(AT_SYMLINK_NOFOLLOW) and llistxattr per
      regular file: no interpreter in the way, the disk's limit.
  py  the same in stdlib Python threads (os.scandir + entry.stat + os.listxattr):
      directory reads and stats release the GIL, so this says whether threads are
      enough for I/O-bound cold reads.

GNU find -perm /6000 (cold) runs in every round as the yardstick. Root only (drop_caches):

    python3 benchmarks/bench_cold_limit.py ROOT [--jobs 1,2,4,8,16,32] [--impl c,py] [--repeat 3]
"""
import argparse
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

C_SOURCE = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

struct item { struct item *next; char path[]; };
static struct item *head;
static long pending, files, dirs, errors;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void push(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    struct item *it = malloc(sizeof *it + a + b + 2);
    memcpy(it->path, dir, a); it->path[a] = '/'; memcpy(it->path + a + 1, name, b + 1);
    pthread_mutex_lock(&mu);
    it->next = head; head = it; pending++;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

static void *worker(void *arg) {
    (void)arg;
    char buf[8192], xbuf[1024];
    long f = 0, d = 0, e = 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!head && pending) pthread_cond_wait(&cv, &mu);
        if (!head) { pthread_mutex_unlock(&mu); break; }
        struct item *it = head; head = it->next;
        pthread_mutex_unlock(&mu);
        int fd = open(it->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
        if (!dp) { e++; if (fd >= 0) close(fd); }
        else {
            d++;
            struct dirent *de;
            while ((de = readdir(dp))) {
                if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
                    continue;
                if (de->d_type == DT_DIR) { push(it->path, de->d_name); continue; }
                if (de->d_type != DT_REG) continue;
                struct stat st;
                if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW)) { e++; continue; }
                f++;
                snprintf(buf, sizeof buf, "%s/%s", it->path, de->d_name);
                if (llistxattr(buf, xbuf, sizeof xbuf) < 0) e++;
            }
            closedir(dp);
        }
        free(it);
        pthread_mutex_lock(&mu);
        if (--pending == 0) pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    __atomic_add_fetch(&files, f, __ATOMIC_RELAXED);
    __atomic_add_fetch(&dirs, d, __ATOMIC_RELAXED);
    __atomic_add_fetch(&errors, e, __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s ROOT JOBS\n", argv[0]); return 2; }
    int jobs = atoi(argv[2]);
    struct item *it = malloc(sizeof *it + strlen(argv[1]) + 1);
    strcpy(it->path, argv[1]); it->next = NULL; head = it; pending = 1;
    pthread_t *t = calloc(jobs, sizeof *t);
    for (int i = 0; i < jobs; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < jobs; i++) pthread_join(t[i], NULL);
    printf("%ld %ld %ld\n", files, dirs, errors);
    return 0;
}
"""


def build_c(workdir):
    """Compile the C probe into workdir; None when gcc is missing or fails."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        return None
    src = os.path.join(workdir, "coldprobe.c")
    exe = os.path.join(workdir, "coldprobe")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    done = subprocess.run([gcc, "-O2", "-pthread", "-o", exe, src], capture_output=True, text=True, check=False)
    if done.returncode:
        sys.stderr.write("gcc failed, C probe skipped:\n%s\n" % done.stderr[-2000:])
        return None
    return exe


def py_walk(root, jobs):
    """N threads, one shared LIFO of directory paths; returns (files, dirs, errors)."""
    work = queue.LifoQueue()
    work.put(root)
    totals = [0, 0, 0]
    lock = threading.Lock()

    def worker():
        f = d = e = 0
        while True:
            path = work.get()
            if path is None:
                work.task_done()
                break
            try:
                with os.scandir(path) as it:
                    d += 1
                    for entry in it:
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                work.put(entry.path)
                            elif entry.is_file(follow_symlinks=False):
                                entry.stat(follow_symlinks=False)
                                os.listxattr(entry.path, follow_symlinks=False)
                                f += 1
                        except OSError:
                            e += 1
            except OSError:
                e += 1
            work.task_done()
        with lock:
            totals[0] += f
            totals[1] += d
            totals[2] += e

    threads = [threading.Thread(target=worker) for _ in range(jobs)]
    for t in threads:
        t.start()
    work.join()  # every directory listed (each put is matched by a task_done)
    for _ in threads:
        work.put(None)
    for t in threads:
        t.join()
    return tuple(totals)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_one(kind, root, jobs, exe):
    """One cold run: (wall seconds, files, dirs, errors)."""
    drop_caches()
    started = time.perf_counter()
    if kind == "find":
        out = subprocess.run(["find", "-P", root, "-xdev", "-type", "f", "-perm", "/6000"],
                             stdout=subprocess.DEVNULL, check=True)
        counts = (0, 0, out.returncode)
    elif kind == "c":
        out = subprocess.run([exe, root, str(jobs)], capture_output=True, text=True, check=True)
        counts = tuple(int(x) for x in out.stdout.split())
    else:
        counts = py_walk(root, jobs)
    return (time.perf_counter() - started, *counts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="the tree to walk (e.g. one bench_scan.py built with --keep)")
    ap.add_argument("--jobs", default="1,2,4,8,16,32", help="worker counts (default %(default)s)")
    ap.add_argument("--impl", default="c,py", help="c, py or both (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="cold runs per setting (default %(default)s)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("run as root: dropping the caches needs it")
    root = os.path.realpath(args.root)
    if not os.path.isdir(root):
        raise SystemExit("%s: not a directory" % args.root)
    jobs = [int(j) for j in args.jobs.split(",")]
    impls = [i.strip() for i in args.impl.split(",") if i.strip()]
    with tempfile.TemporaryDirectory(prefix="sg-coldprobe-") as tmp:
        exe = build_c(tmp) if "c" in impls else None
        if "c" in impls and exe is None:
            impls.remove("c")
            print("C probe: no working gcc, skipped")
        settings = [("find", 1)] + [(i, j) for i in impls for j in jobs]
        times = {s: [] for s in settings}
        counts = {}
        print("cold directory-walk limit: %s, %s, %d CPUs, kernel %s, python %s" % (
            time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime()), root, os.cpu_count() or 0,
            os.uname().release, sys.version.split()[0]))
        print("C probe: %s" % ("gcc -O2 -pthread (built at run time)" if exe else "not run"))
        load_before = loadavg()
        for rnd in range(args.repeat):
            sys.stderr.write("round %d/%d\n" % (rnd + 1, args.repeat))
            order = settings[rnd % len(settings):] + settings[:rnd % len(settings)]
            for kind, n in order:
                wall, *cnt = run_one(kind, root, n, exe)
                sys.stderr.write("  %s %d: %.2f s\n" % (kind, n, wall))
                times[(kind, n)].append(wall)
                counts[(kind, n)] = cnt
        load_after = loadavg()
    print("load average before %s, after %s" % (load_before, load_after))
    find_med = statistics.median(times[("find", 1)])
    print("%-26s %8s %8s   %-28s %s" % ("walker (cold, each run)", "median s", "vs find", "runs, s",
                                        "files dirs errors"))
    for kind, n in settings:
        med = statistics.median(times[(kind, n)])
        label = "GNU find -perm /6000" if kind == "find" else "%s, %d job%s" % (
            "C threads" if kind == "c" else "Python threads", n, "" if n == 1 else "s")
        cnt = "" if kind == "find" else " ".join(str(c) for c in counts[(kind, n)])
        print("%-26s %8.2f %7.2fx   %-28s %s" % (label, med, med / find_med,
                                                " ".join("%.2f" % t for t in times[(kind, n)]), cnt))
    for kind in impls:
        best = min((statistics.median(times[(kind, n)]), n) for n in jobs)
        print("best %s: %.2f s with %d jobs (%.2fx find)" % (kind, best[0], best[1], best[0] / find_med))
    return 0


if __name__ == "__main__":
    sys.exit(main())
