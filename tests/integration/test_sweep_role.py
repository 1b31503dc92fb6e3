# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The role sandbox_sweep run by ansible-playbook on this host, against the real engine.

This host has no systemd, so these runs switch the timer and the watcher off (with the
strings an AWX survey sends) and test what the role installs and runs without them: the
library and CLI copied from the collection, the sweep now (check mode, change,
idempotence), and the installed `sandboxguard` command running the timer's `sweep` and the
watcher's `watch`. molecule/sandbox_sweep runs the units under systemd.
"""
import json
import os
import pwd
import queue
import stat
import subprocess
import sys
import threading
import time
import uuid

import pytest
from docker_sdk import sdk_client

pytestmark = [pytest.mark.controller, pytest.mark.docker, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = "sandboxguard/debian:12"
AGENT = 1000
DROP = ("cp /bin/true /workspace/suid && chmod 4755 /workspace/suid && "
        "cp /bin/true /workspace/caps && setcap cap_net_raw+ep /workspace/caps")
PLAY = """
- hosts: localhost
  gather_facts: false
  roles:
    - role: sandboxguard.boundary.sandbox_sweep
"""


def run_role(tmp_path, variables, *flags):
    """ansible-playbook with the role on localhost; returns (returncode, stats, stdout)."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAY)
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(variables))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(playbook),
                           "-e", "@" + str(extra), *flags], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        pytest.fail("ansible-playbook printed no JSON (rc %d): %s %s" % (proc.returncode, proc.stdout, proc.stderr))
    return proc.returncode, out["stats"].get("localhost", {}), out


def task_result(out, name):
    for play in out["plays"]:
        for task in play["tasks"]:
            # role tasks are named "<role> : <name>"
            if task["task"]["name"].split(" : ")[-1] == name and "localhost" in task["hosts"]:
                return task["hosts"]["localhost"]
    raise AssertionError("task %r did not run" % name)


@pytest.fixture(scope="module")
def client():
    return sdk_client()


@pytest.fixture
def host(tmp_path, client):
    """A Hermes home owned by the agent, an exited root container that dropped files into
    its workspace, and role variables that install into tmp_path."""
    home = tmp_path / "hermes"
    ws = home / "sandboxes" / "docker" / "t1" / "workspace"
    ws.mkdir(parents=True)
    for p in (home, home / "sandboxes", home / "sandboxes" / "docker"):
        os.chown(p, AGENT, AGENT)
    orphan = client.containers.run(IMAGE, ["sh", "-c", DROP], detach=True, network_mode="none",
                                   labels={"hermes-agent": "1"},
                                   volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
    orphan.wait(timeout=60)
    variables = {
        "sandbox_sweep_hermes_homes": str(home) + ",",  # an AWX survey string
        "sandbox_sweep_timer": "false",
        "sandbox_sweep_watch_events": "false",
        # No systemd here for the guard; nosuid mounts and their units have their own tests
        # (test_nosuid_mount.py, molecule/sandbox_guard) and would outlive this temp dir.
        "sandbox_sweep_guard": "false",
        "sandbox_sweep_nosuid_mount": "false",
        "sandbox_sweep_now": "true",
        "sandbox_sweep_python": sys.executable,
        "sandbox_sweep_install_dir": str(tmp_path / "lib"),
        "sandbox_sweep_cli_path": str(tmp_path / "bin" / "sandboxguard"),
        "sandbox_sweep_share_dir": str(tmp_path / "share"),
    }
    (tmp_path / "bin").mkdir()
    yield {"home": home, "ws": ws, "vars": variables, "cli": str(tmp_path / "bin" / "sandboxguard"),
           "lib": tmp_path / "lib", "orphan": orphan}
    orphan.remove(force=True)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The role run once (nothing to sweep yet) into a module-wide directory: the CLI tests use it."""
    tmp_path = tmp_path_factory.mktemp("installed")
    home = tmp_path / "hermes"
    (home / "sandboxes" / "docker").mkdir(parents=True)
    for p in (home, home / "sandboxes", home / "sandboxes" / "docker"):
        os.chown(p, AGENT, AGENT)
    (tmp_path / "bin").mkdir()
    variables = {"sandbox_sweep_hermes_homes": [str(home)], "sandbox_sweep_timer": False,
                 "sandbox_sweep_watch_events": False, "sandbox_sweep_now": False,
                 "sandbox_sweep_guard": False, "sandbox_sweep_nosuid_mount": False,
                 "sandbox_sweep_python": sys.executable,
                 "sandbox_sweep_install_dir": str(tmp_path / "lib"),
                 "sandbox_sweep_cli_path": str(tmp_path / "bin" / "sandboxguard"),
                 "sandbox_sweep_share_dir": str(tmp_path / "share")}
    rc, _stats, out = run_role(tmp_path, variables)
    assert rc == 0, out
    return {"home": home, "cli": variables["sandbox_sweep_cli_path"], "lib": tmp_path / "lib",
            "share": tmp_path / "share"}


def py_tree(top):
    """{path relative to top: bytes} of every .py file below top, at any depth."""
    found = {}
    for here, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(here, name), "rb") as handle:
                    found[os.path.relpath(os.path.join(here, name), top)] = handle.read()
    return found


def test_the_role_installs_the_whole_library_and_cli_tree_packages_included(installed):
    """What library_install put on the host is the module_utils copy and the CLI, every .py
    file of every package (sandboxguard/_bwrap/..., sandboxguard_cli/commands/...), byte for byte."""
    want = {"sandboxguard/" + rel: data
            for rel, data in py_tree(os.path.join(TOP, "plugins", "module_utils", "sandboxguard")).items()}
    want.update({"sandboxguard_cli/" + rel: data
                 for rel, data in py_tree(os.path.join(TOP, "python", "src", "sandboxguard_cli")).items()})
    assert any(name.startswith("sandboxguard/_") and name.count("/") == 2 for name in want), "no private package"
    have = py_tree(str(installed["lib"]))
    assert sorted(have) == sorted(want)
    assert [name for name in want if have[name] != want[name]] == []


def test_the_role_installs_the_man_page_and_completions_the_tool_generated(installed):
    for rel in ("man/man1/sandboxguard.1", "bash-completion/completions/sandboxguard",
                "zsh/site-functions/_sandboxguard"):
        with open(os.path.join(TOP, "python", "share", rel), "rb") as handle:
            assert (installed["share"] / rel).read_bytes() == handle.read(), rel
        assert stat.S_IMODE(os.lstat(installed["share"] / rel).st_mode) == 0o644


def assert_swept(path):
    st = os.lstat(path)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (AGENT, 0o755), path
    assert "security.capability" not in os.listxattr(path, follow_symlinks=False), path


def test_check_mode_installs_nothing_and_changes_no_file(tmp_path, host):
    rc, stats, out = run_role(tmp_path, host["vars"], "--check")
    assert rc == 0, out
    assert stats["changed"] > 0
    assert not host["lib"].exists() and not os.path.exists(host["cli"])
    sweep = task_result(out, "Sweep every in-scope sandbox now (ownership return, setid, caps)")
    assert sweep["changed"] is True
    assert stat.S_IMODE(os.lstat(host["ws"] / "suid").st_mode) == 0o4755
    assert os.lstat(host["ws"] / "suid").st_uid == 0


def test_role_sweeps_an_exited_orphan_now_then_changes_nothing_then_repairs_its_install(tmp_path, host):
    rc, stats, out = run_role(tmp_path, host["vars"])
    assert rc == 0, out
    sweep = task_result(out, "Sweep every in-scope sandbox now (ownership return, setid, caps)")
    assert sweep["changed"] is True and [s["path"] for s in sweep["sandboxes"]] == [str(host["ws"])]
    for name in ("suid", "caps"):
        assert_swept(host["ws"] / name)

    rc, stats, out = run_role(tmp_path, host["vars"])
    assert rc == 0, out
    assert stats["changed"] == 0, [t["task"]["name"] for p in out["plays"] for t in p["tasks"]
                                   if t["hosts"].get("localhost", {}).get("changed")]

    stale = host["lib"] / "sandboxguard" / "gone.py"
    stale.write_text("raise SystemExit('a file the collection no longer has')\n")
    edited = host["lib"] / "sandboxguard" / "sweep.py"
    edited.write_text("# tampered\n")
    rc, stats, out = run_role(tmp_path, dict(host["vars"], sandbox_sweep_now="false"))
    assert rc == 0, out
    assert not stale.exists()
    with open(os.path.join(TOP, "plugins", "module_utils", "sandboxguard", "sweep.py"), "rb") as f:
        assert edited.read_bytes() == f.read()


def test_installed_command_runs_the_timers_sweep_on_a_running_container(installed, client):
    ws = installed["home"] / "sandboxes" / "docker" / "t2" / "workspace"
    ws.mkdir(parents=True)
    persistent = client.containers.run(IMAGE, ["sleep", "infinity"], detach=True, network_mode="none",
                                       volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
    try:
        assert persistent.exec_run(["sh", "-c", DROP]).exit_code == 0
        # PYTHONPATH must not matter: the command runs in isolated mode (-I).
        env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "does-not-exist"))
        proc = subprocess.run([installed["cli"], "sweep", "--hermes-home=" + str(installed["home"]), "--method=native"],
                              capture_output=True, text=True, env=env, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        assert "swept %s [native]" % ws in proc.stdout
        for name in ("suid", "caps"):
            assert_swept(ws / name)
        persistent.reload()
        assert persistent.status == "running"
    finally:
        persistent.remove(force=True)


def test_installed_command_runs_the_watchers_watch_and_sweeps_a_dead_rm_container(installed, client):
    ws = installed["home"] / "sandboxes" / "docker" / "t3" / "workspace"
    ws.mkdir(parents=True)
    watcher = subprocess.Popen([installed["cli"], "watch", "--hermes-home=" + str(installed["home"])],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(ln)) for ln in watcher.stdout], daemon=True).start()
    try:
        assert lines.get(timeout=60)["event"] == "watching"
        container = client.containers.run(IMAGE, ["sh", "-c", DROP + " && sleep 2"], detach=True,
                                          network_mode="none", auto_remove=True,
                                          volumes={str(ws): {"bind": "/workspace", "mode": "rw"}})
        started = time.monotonic()
        died = None
        while died is None and time.monotonic() - started < 60:
            line = lines.get(timeout=60)
            if line.get("event") == "die" and line["id"] == container.id[:12]:
                died = line
        assert died is not None and died["swept"] == [str(ws)] and died["changed"] is True
        assert time.monotonic() - started < 2 + 10  # it lived 2 s; swept within seconds of dying
        for name in ("suid", "caps"):
            assert_swept(ws / name)
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)


def test_role_on_a_host_without_systemd_says_what_to_switch_off(tmp_path, host):
    rc, _stats, out = run_role(tmp_path, dict(host["vars"], sandbox_sweep_watch_events="true"))
    assert rc != 0
    failed = task_result(out, "Check that systemd runs the host (the timer and the watcher are systemd units)")
    assert failed.get("failed") and "sandbox_sweep_watch_events: false" in failed["msg"]


# the library's budget rule (sandboxguard._core.inputs.budget), its message through the role's filter
BUDGET_REFUSED = "sandbox_sweep_budget_per_step must be a finite number of seconds, 0 (no limit) or more; not '%s'"
RULES = {  # variables that break one rule -> (the task that stops, words of its message)
    "nothing to sweep": ({"sandbox_sweep_hermes_homes": " , "},
                         "Check something to sweep is named", "nothing to sweep. Name it with"),
    "a relative path": ({"sandbox_sweep_roots": "srv/sandboxes"},
                        "Check every path of the scope is absolute", "srv/sandboxes: give absolute paths"),
    "container without an image": ({"sandbox_sweep_method": "container"},
                                    "Check the container method has an image", "needs sandbox_sweep_image"),
    **{"a budget of %s" % bad: ({"sandbox_sweep_budget_per_step": bad}, "Check the budget is a number of seconds",
                                 BUDGET_REFUSED % bad) for bad in ("-1", "nan", "inf", "abc")},
    "a group without an owner": ({"sandbox_sweep_group": "staff"},
                                 "Check a group comes with an owner", "'staff' needs sandbox_sweep_owner"),
}


def test_each_rule_fails_with_its_own_message_and_a_valid_budget_is_never_the_error(tmp_path):
    # issue 27: one assert with six conditions and one message made a valid budget_per_step: 10
    # read as the error. One ansible-playbook run: a local host per rule, each breaking only it.
    names = sorted(RULES)
    base = {"sandbox_sweep_hermes_homes": [str(tmp_path / "hermes")], "sandbox_sweep_timer": False,
            "sandbox_sweep_watch_events": False, "sandbox_sweep_budget_per_step": 10,
            "sandbox_sweep_install_dir": str(tmp_path / "lib")}
    inventory = {"all": {"hosts": {"rule%d" % i: dict(base, ansible_connection="local",
                                                       ansible_python_interpreter=sys.executable, **RULES[name][0])
                                   for i, name in enumerate(names)}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAY.replace("hosts: localhost", "hosts: all"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCALHOST_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "--check",
                           "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml")],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    out = json.loads(proc.stdout)
    assert proc.returncode != 0
    for i, name in enumerate(names):
        host = "rule%d" % i
        failed = [(t["task"]["name"].split(" : ")[-1], t["hosts"][host]) for play in out["plays"]
                  for t in play["tasks"] if t["hosts"].get(host, {}).get("failed")]
        assert len(failed) == 1, (name, failed)
        task_name, result = failed[0]
        assert task_name == RULES[name][1] and RULES[name][2] in result["msg"], (name, result["msg"])
        if "budget" not in name:
            assert "budget" not in result["msg"], (name, result["msg"])
    assert not (tmp_path / "lib").exists()


@pytest.fixture
def named_owner():
    """A user that exists only for this test, with its own primary group."""
    name = "sgsw" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name], check=True)
    entry = pwd.getpwnam(name)
    try:
        yield {"name": name, "uid": entry.pw_uid, "gid": entry.pw_gid}
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def test_role_passes_an_owner_name_through_and_the_library_resolves_it(tmp_path, host, named_owner):
    rc, _stats, out = run_role(tmp_path, dict(host["vars"], sandbox_sweep_owner=named_owner["name"]))
    assert rc == 0, out
    sweep = task_result(out, "Sweep every in-scope sandbox now (ownership return, setid, caps)")
    assert [s["owner"] for s in sweep["sandboxes"]] == [[named_owner["uid"], named_owner["gid"]]]
    assert os.lstat(host["ws"] / "suid").st_uid == named_owner["uid"]
    args = task_result(out, "Build the CLI's scope and method arguments")["ansible_facts"]["sandbox_sweep_cli_args"]
    assert "--owner=%s" % named_owner["name"] in args  # the CLI resolves the same name with the same rule


def test_role_fails_on_an_owner_this_host_does_not_know_with_the_librarys_message(tmp_path, host):
    rc, _stats, out = run_role(tmp_path, dict(host["vars"], sandbox_sweep_owner="no-such-user-sgtest"))
    assert rc != 0
    failed = task_result(out, "Sweep every in-scope sandbox now (ownership return, setid, caps)")
    assert failed.get("failed") and "owner 'no-such-user-sgtest': no such user on this host" in failed["msg"]
    assert os.lstat(host["ws"] / "suid").st_uid == 0  # nothing was swept


def test_check_diff_names_the_library_files_instead_of_printing_their_source(tmp_path, host):
    # issue 14: --check --diff printed 6,694 lines, nearly all of it the library being copied
    rc, _stats, out = run_role(tmp_path, host["vars"], "--check", "--diff")
    assert rc == 0, [(t["task"]["name"], t["hosts"]["localhost"].get("msg")) for p in out["plays"] for t in p["tasks"]
                     if t["hosts"].get("localhost", {}).get("failed")]
    install = task_result(out, "Install the library and the CLI files that differ")
    # one module call for the whole tree: the diff lists paths, never the library's source
    assert install["changed"] is True and len(install["written"]) > 20
    diff = json.dumps(install.get("diff"))
    assert "def sweep" not in diff and "write  sandboxguard/sweep.py" in diff
    assert not host["lib"].exists(), "check mode wrote the library"
    # issue 27: the summary is counts; the lists (3,316 characters each) only under -v
    summary = task_result(out, "Count the library and CLI files that were or would be copied")["msg"]
    assert summary.startswith("check mode: would copy %d of %d library/CLI file(s) into %s" % (
        len(install["written"]), len(install["written"]), host["lib"])), summary
    assert summary.endswith("(-v lists them)") and len(summary) < 200 and "sweep.py" not in summary
    assert task_result(out, "Name the library and CLI files that were or would be copied").get("skipped")
    # what a person reviews still diffs: the entry script the units run
    entry = task_result(out, "Install the sandboxguard command")
    assert entry["changed"] and "sys.exit(main())" in json.dumps(entry.get("diff"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_NOCOLOR="1")
    text = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           str(tmp_path / "play.yml"), "-e", "@" + str(tmp_path / "vars.json"), "--check", "--diff"],
                          capture_output=True, text=True, env=env, timeout=300, check=False).stdout
    assert "def sweep" not in text and len(text.splitlines()) < 600, len(text.splitlines())


def python_without_docker(tmp_path):
    venv = tmp_path / "nodocker"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    assert subprocess.run([python, "-I", "-c", "import docker"], capture_output=True).returncode != 0
    return python


def test_the_role_sweeps_with_a_python_that_cannot_import_the_docker_sdk(tmp_path, host):
    """1.1.0 needed python3-docker on every host (the role installed it, and stopped without it);
    the library speaks the Engine API itself now: check mode and a real run work without it."""
    variables = dict(host["vars"], sandbox_sweep_python=python_without_docker(tmp_path))
    rc, stats, out = run_role(tmp_path, variables, "--check")
    assert rc == 0 and stats["failures"] == 0, out
    assert not host["lib"].exists()
    rc, stats, out = run_role(tmp_path, variables)
    assert rc == 0 and stats["failures"] == 0, out
    swept = task_result(out, "Sweep every in-scope sandbox now (ownership return, setid, caps)")
    assert str(host["ws"]) in [s["path"] for s in swept["sandboxes"]]
    assert [row["error"] for row in swept["engines"] if row["name"] == "docker"] == [None]
    st = os.lstat(str(host["ws"] / "suid"))
    assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID) and st.st_uid == AGENT


@pytest.fixture
def boot():
    """A root-only directory for what the role persists (units, the nosuid boot files): this
    host's /etc/systemd and /etc/sandboxguard stay as they are."""
    top = "/run/sgsweep-rm-%s" % uuid.uuid4().hex[:8]
    os.makedirs(top + "/units", mode=0o755)
    yield top
    subprocess.run(["rm", "-rf", top], check=False)


def mounted(path):
    with open("/proc/self/mountinfo", "rb") as handle:
        return [line for line in handle if line.split(b" ")[4] == os.fsencode(str(path))]


def test_state_absent_removes_units_mounts_boot_files_command_and_library_then_changes_nothing(tmp_path, boot):
    home = tmp_path / "hermes"
    root = home / "sandboxes" / "docker"
    root.mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    variables = {"sandbox_sweep_hermes_homes": [str(home)], "sandbox_sweep_timer": False,
                 "sandbox_sweep_watch_events": False, "sandbox_sweep_guard": False, "sandbox_sweep_now": False,
                 "sandbox_sweep_python": sys.executable,
                 "sandbox_sweep_install_dir": str(tmp_path / "lib"),
                 "sandbox_sweep_cli_path": str(tmp_path / "bin" / "sandboxguard"),
                 "sandbox_sweep_unit_dir": boot + "/units", "sandbox_sweep_nosuid_persist": "systemd",
                 "sandbox_sweep_nosuid_paths_file": boot + "/etc/nosuid-paths",
                 "sandbox_sweep_nosuid_program": boot + "/sbin/sandboxguard-nosuid",
                 "sandbox_sweep_runner_helper": boot + "/no-runner-helper",
                 "sandbox_sweep_share_dir": str(tmp_path / "share"),
                 "sandbox_sweep_textfile_dir": str(tmp_path / "node-exporter")}
    (tmp_path / "node-exporter").mkdir()
    try:
        rc, _stats, out = run_role(tmp_path, variables)
        assert rc == 0, out
        assert mounted(root) and os.path.exists(boot + "/etc/nosuid-paths")
        assert (tmp_path / "share" / "man" / "man1" / "sandboxguard.1").exists()
        for command in ("sweep", "watch", "guard"):  # as the units write them
            (tmp_path / "node-exporter" / ("sandboxguard-%s.prom" % command)).write_text("x 1\n")
        (tmp_path / "node-exporter" / "other.prom").write_text("y 1\n")
        foreign = tmp_path / "share" / "zsh" / "site-functions" / "_sandboxguard"
        foreign.write_text("# someone else's\n")  # not the role's bytes: it stays
        for unit in ("sandboxguard-sweep.timer", "sandboxguard-sweep.service", "sandboxguard-watch.service"):
            with open(os.path.join(boot, "units", unit), "w") as handle:  # as a systemd host has them
                handle.write("[Unit]\n")
        # removal needs no scope: what an earlier run persisted is found
        absent = dict(variables, sandbox_sweep_state="absent", sandbox_sweep_hermes_homes=[])
        rc, stats, out = run_role(tmp_path, absent, "--check")
        assert rc == 0 and stats["changed"] > 0, out
        said = task_result(out, "Say what was removed")["msg"]
        assert said.startswith("check mode: would remove 3 unit(s), 1 nosuid mount(s) (4 boot file(s)), the command, "
                               "the library and CLI ("), said
        assert mounted(root) and len(os.listdir(boot + "/units")) == 5 and (tmp_path / "lib").exists()

        rc, stats, out = run_role(tmp_path, absent)
        assert rc == 0, out
        assert task_result(out, "Say what was removed")["msg"].startswith("removed 3 unit(s), 1 nosuid mount(s)")
        assert not mounted(root)
        assert os.listdir(boot + "/units") == [] or os.listdir(boot + "/units") == ["multi-user.target.wants"]
        assert not os.path.exists(boot + "/etc/nosuid-paths") and not os.path.exists(boot + "/sbin/sandboxguard-nosuid")
        assert not (tmp_path / "bin" / "sandboxguard").exists() and not (tmp_path / "lib").exists()
        assert os.listdir(tmp_path / "node-exporter") == ["other.prom"]
        assert not (tmp_path / "share" / "man" / "man1" / "sandboxguard.1").exists()
        assert not (tmp_path / "share" / "bash-completion" / "completions" / "sandboxguard").exists()
        assert foreign.read_text() == "# someone else's\n"

        rc, stats, out = run_role(tmp_path, absent)
        assert rc == 0 and stats["changed"] == 0, out
        assert task_result(out, "Sum up the removal")["ansible_facts"]["sandbox_sweep_removal_changed"] is False
    finally:
        while mounted(root):
            subprocess.run(["umount", "-l", str(root)], check=False)


def test_state_absent_keeps_the_library_the_runner_cleanup_role_uses(tmp_path, boot):
    helper = boot + "/sandboxguard-runner-cleanup"
    with open(helper, "w") as handle:
        handle.write("#!/usr/bin/python3 -I\n")
    lib = tmp_path / "lib" / "sandboxguard"
    lib.mkdir(parents=True)
    (lib / "sweep.py").write_text("")
    cli = tmp_path / "sandboxguard"
    cli.write_text("#!/usr/bin/python3 -I\n# Managed by Ansible (role sandboxguard.boundary.sandbox_sweep)\n")
    variables = {"sandbox_sweep_state": "absent", "sandbox_sweep_install_dir": str(tmp_path / "lib"),
                 "sandbox_sweep_cli_path": str(cli), "sandbox_sweep_unit_dir": boot + "/units",
                 "sandbox_sweep_nosuid_paths_file": boot + "/etc/nosuid-paths",
                 "sandbox_sweep_nosuid_program": boot + "/sbin/sandboxguard-nosuid",
                 "sandbox_sweep_runner_helper": helper, "sandbox_sweep_share_dir": str(tmp_path / "share")}
    rc, _stats, out = run_role(tmp_path, variables)
    assert rc == 0, out
    assert "the library kept (the runner_cleanup role uses it)" in task_result(out, "Say what was removed")["msg"]
    assert (lib / "sweep.py").exists() and not cli.exists()
