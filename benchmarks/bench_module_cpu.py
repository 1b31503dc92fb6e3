# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""CPU time of one module run on a host, AnsiballZ payload and all (issue 12, item 1).

Builds the AnsiballZ payload of ansible.builtin.ping and of sandboxguard.boundary.audit_info
(from each --collections path given, e.g. an older checkout's .cache/collections beside this
one's) exactly as ansible-playbook would ship it, runs each with /usr/bin/python3 --repeat
times, interleaved, and reports the median user+system CPU seconds per run, the payload size
and what is in it. ping is the floor every module pays (Python start, the AnsiballZ
wrapper, ansible.module_utils.basic); audit_info minus ping is what our module costs, and
audit_info over find (the shell module running ``find -xdev -type f -perm /6000`` on the same
tree, what a raw find play costs a host) is issue 26's goal (at most 1.2x). Every run after the
first finds the library's bytecode in the host's cache (sandboxguard/_core/bytecode.py), as a
fleet host does from its second audit on.

    .venv/bin/python benchmarks/bench_module_cpu.py [--collections PATH ...] [--repeat 15]
"""
import argparse
import base64
import io
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIND = "find (ansible.builtin.shell, as the raw find play)"
REPO = os.path.dirname(HERE)

BUILD = r"""
import json, sys
from ansible.executor.module_common import modify_module
from ansible.plugins.loader import module_loader, init_plugin_loader
from ansible.template import Templar
from ansible.parsing.dataloader import DataLoader
init_plugin_loader()
name, out, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
ctx = module_loader.find_plugin_with_context(name)
built = modify_module(module_name=ctx.resolved_fqcn, module_path=ctx.plugin_resolved_path, module_args=args,
                      templar=Templar(loader=DataLoader()),
                      task_vars={"ansible_python_interpreter": "/usr/bin/python3"}, module_compression="ZIP_DEFLATED")
open(out, "wb").write(built.b_module_data)
"""


def build(collections, module, args, out):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections)
    subprocess.run([sys.executable, "-c", BUILD, module, out, json.dumps(args)], env=env, check=True)
    data = open(out, "rb").read()
    found = re.findall(rb"'([A-Za-z0-9+/=]{10000,})'", data)
    ours = 0
    if found:
        with zipfile.ZipFile(io.BytesIO(base64.b64decode(found[0]))) as archive:
            ours = sum(i.compress_size for i in archive.infolist() if "sandboxguard" in i.filename)
    return len(data), ours


def cpu(path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["/usr/bin/python3", path], stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", action="append",
                        help="an ANSIBLE_COLLECTIONS_PATH holding sandboxguard.boundary (repeatable)")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    paths = args.collections or [os.path.join(REPO, ".cache", "collections")]
    work = tempfile.mkdtemp(prefix="sgbench-cpu-")
    home = os.path.join(work, "hermes")
    ws = os.path.join(home, "sandboxes", "docker", "t1", "workspace")
    os.makedirs(ws)
    for i in range(200):
        open(os.path.join(ws, "f%03d" % i), "w").close()
    os.makedirs(os.path.join(work, "spool"))
    # the fleet benchmark's inputs, without an engine (the hosts there have none)
    module_args = {"paths": [os.path.dirname(ws)], "hermes_home": [home], "docker": "never", "leak_users": ["root"],
                   "leak_tmp_dir": work, "leak_spool_dir": os.path.join(work, "spool")}
    runs = {"ansible.builtin.ping": os.path.join(work, "ping.py")}
    sizes = {"ansible.builtin.ping": build(paths[0], "ansible.builtin.ping", {}, runs["ansible.builtin.ping"])}
    for i, path in enumerate(paths):
        label = "audit_info (%s)" % path
        runs[label] = os.path.join(work, "audit_info-%d.py" % i)
        sizes[label] = build(path, "sandboxguard.boundary.audit_info", module_args, runs[label])
    # the baseline of the goal (issue 26: audit_info at most 1.2x find's host CPU on the same
    # tree): what a raw find play runs on a host, ansible.builtin.shell's payload with find
    find_args = {"_raw_params": "find %s -xdev -type f -perm /6000" % os.path.dirname(ws), "_uses_shell": True}
    runs[FIND] = os.path.join(work, "find.py")
    sizes[FIND] = build(paths[0], "ansible.builtin.command", find_args, runs[FIND])
    times = {label: [] for label in runs}
    for _ in range(args.repeat):
        for label, path in runs.items():
            times[label].append(cpu(path))
    load = os.getloadavg()
    print("bench_module_cpu: %d runs each, interleaved; load %.2f %.2f %.2f" % (args.repeat, *load))
    floor = statistics.median(times["ansible.builtin.ping"])
    find = statistics.median(times[FIND])
    for label, values in times.items():
        med = statistics.median(values)
        print("  %-70s cpu median %.3f s (min %.3f), over ping %+.3f s, %.2fx find; payload %d bytes, ours %d "
              "compressed" % (label, med, min(values), med - floor, med / find, sizes[label][0], sizes[label][1]))


if __name__ == "__main__":
    main()
