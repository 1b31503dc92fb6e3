# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Child processes: sandboxguard._core.proc is the library's one door to ``subprocess``.

ansible-core 2.20+ sanity flags ``subprocess.*`` and ``os.system``/``os.popen``/``os.spawn*``
in module_utils (pylint ``ansible-bad-function``); proc.py's calls carry the one justified
disable, and no ignore file does. These tests keep it so.
"""
import ast
import io
import os
import signal

from sandboxguard import crontab as ct
from sandboxguard._core import proc

SRC = os.path.dirname(os.path.abspath(proc.__file__))
BAD_OS = {"system", "popen", "posix_spawn", "posix_spawnp", "spawnl", "spawnle", "spawnlp", "spawnlpe",
          "spawnv", "spawnve", "spawnvp", "spawnvpe"}


def offences(path):
    """(line, what) for each subprocess import and os.<spawning function> use in one file."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, "import " + a.name) for a in node.names if a.name.split(".")[0] == "subprocess"]
        elif isinstance(node, ast.ImportFrom):
            if node.module == "subprocess" or (node.module == "os" and {a.name for a in node.names} & BAD_OS):
                found.append((node.lineno, "from %s import ..." % node.module))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr in BAD_OS:
                found.append((node.lineno, "os." + node.attr))
    return sorted(found)


def test_only_proc_module_starts_processes_through_subprocess():
    bad = {}
    for name in sorted(os.listdir(SRC)):
        if name.endswith(".py") and name != "proc.py":
            hits = offences(os.path.join(SRC, name))
            if hits:
                bad[name] = hits
    assert bad == {}, "start child processes through sandboxguard._core.proc (one sanity ignore line): %r" % bad


def test_the_checker_sees_a_subprocess_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import subprocess\nimport os\nos.system('x')\nfrom subprocess import run\n")
    assert offences(str(sample)) == [(1, "import subprocess"), (3, "os.system"), (4, "from subprocess import ...")]


def test_proc_run_passes_arguments_and_does_not_raise_on_failure():
    done = proc.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_proc_popen_reads_a_stream_and_call_returns_the_status():
    child = proc.popen(["/bin/echo", "hi"], stdout=proc.PIPE, stdin=proc.DEVNULL)
    assert child.stdout.read() == b"hi\n"
    child.stdout.close()
    assert child.wait() == 0
    assert proc.call(["/bin/sh", "-c", "exit 4"]) == 4


def test_crontab_editor_runs_in_the_table_directory_through_the_shell(tmp_path):
    # the shim forks and execs /bin/sh -c "EDITOR FILE" itself (it is a self-contained file)
    seen = tmp_path / "seen"
    env = {"VISUAL": "", "EDITOR": "pwd > %s; true" % seen, "TMPDIR": str(tmp_path)}
    status, err = edit(tmp_path, env)
    assert status == 0, err
    assert err.endswith("No modification made\n")
    assert seen.read_text().strip().startswith(str(tmp_path))


def test_crontab_editor_killed_by_a_signal_is_reported_with_its_number(tmp_path):
    env = {"VISUAL": "", "EDITOR": "kill -%d $$;" % signal.SIGTERM, "TMPDIR": str(tmp_path)}
    status, err = edit(tmp_path, env)
    assert status == 1
    assert err.endswith('crontab: "kill -15 $$;" killed; signal 15 (no core dumped)\n')


def edit(tmp_path, env):
    err = io.BytesIO()
    old = dict(os.environ)
    os.environ.update(env)
    try:
        status = ct.main(["-e"], table=str(tmp_path / "crontab"), stdin=io.BytesIO(b""), stdout=io.BytesIO(),
                         stderr=err)
    finally:
        os.environ.clear()
        os.environ.update(old)
    return status, err.getvalue().decode()


def test_proc_calls_carry_the_disable_and_no_ignore_file_does():
    # (crontab_shim.py's sys.exit carries its own, for the shim's __main__; that is no process start)
    with open(os.path.join(SRC, "proc.py")) as handle:
        lines = [line for line in handle if line.lstrip().startswith("return subprocess.")]
    assert len(lines) == 3 and all(line.rstrip().endswith("# pylint: disable=ansible-bad-function") for line in lines)
    sanity = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(SRC))), "tests", "sanity")
    for name in os.listdir(sanity) if os.path.isdir(sanity) else []:
        with open(os.path.join(sanity, name)) as handle:
            assert "ansible-bad-function" not in handle.read(), name
