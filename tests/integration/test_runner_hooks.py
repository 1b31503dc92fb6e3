# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The runner_hooks module for a real unprivileged runner user on this host.

A throwaway user owns a runner directory (racing.RaceWorld); the module runs through
ansible-playbook as root and must: write its hook scripts and the sudoers drop-in root-owned,
edit .env with the runner user's own rights (never root's), keep every other line, chain the
operator's hook and give it back on removal, change nothing the second time and in check
mode, and refuse what the library refuses. The hooks then run as the runner does them, as
that user, through the real sudo and the root helper, and give the work folder back. A
racing runner user swapping .env for links while the module runs changes no victim.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import uuid

import pytest
from racing import RaceWorld, exchange, hardlink
from sandboxguard._privileged import runner_hooks as rh
from sandboxguard._privileged import runner_texts
from sandboxguard.errors import InputError

pytestmark = [pytest.mark.root]  # the tests that run Ansible carry the controller mark themselves

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(TOP, "python", "src")
C, S = rh.ENV_VARS["completed"], rh.ENV_VARS["started"]
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: runner_hooks
      sandboxguard.boundary.runner_hooks: "{{ hook_args }}"
"""

if os.geteuid() != 0:
    pytest.fail("tests/integration/test_runner_hooks.py must run as root", pytrace=False)


@pytest.fixture
def world():
    with RaceWorld("sgrh") as made:
        yield made


@pytest.fixture
def rootdir():
    """A directory only root can change (the hook scripts and the helper go below it: /var/tmp,
    where the runner's tree lives, is world-writable and so never trusted)."""
    base = "/var/lib/sgrh-%s" % uuid.uuid4().hex[:8]
    os.mkdir(base, 0o755)
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def runner(world, rootdir):
    """A runner directory as ./config.sh leaves it, owned by the runner user, with the
    operator's own completed hook in .env; the module's options point below ``rootdir`` and at
    the real /etc/sudoers.d (the end-to-end test needs sudo to read it)."""
    path = world.agent_dir("actions-runner")
    world.agent_file("actions-runner/.runner", b'{"agentName": "sgrh", "workFolder": "_work"}')
    world.agent_file("actions-runner/.env", b"LANG=C.UTF-8\n# operator: keep\n%s=%s/op-completed.sh\n"
                     % (C.encode(), rootdir.encode()), mode=0o640)
    args = {"runner_dir": path, "hook_dir": rootdir + "/hooks", "helper": rootdir + "/sbin/sandboxguard-runner-cleanup"}
    yield {"dir": path, "env": path + "/.env", "args": args, "root": rootdir,
           "scripts": rootdir + "/hooks/" + rh.runner_name(path),
           "dropin": "/etc/sudoers.d/" + rh.DROPIN_PREFIX + rh.runner_name(path)}
    try:
        rh.ensure_hooks(path, state="absent", hook_dir=args["hook_dir"], helper=args["helper"])
    except InputError:  # a test that made the directory root's: the drop-in goes below
        pass
    finally:
        if os.path.lexists("/etc/sudoers.d/" + rh.DROPIN_PREFIX + rh.runner_name(path)):
            os.unlink("/etc/sudoers.d/" + rh.DROPIN_PREFIX + rh.runner_name(path))


def run_module(tmp_path, args, *flags):
    """ansible-playbook running the module once on localhost; (rc, the task's result)."""
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "vars.json").write_text(json.dumps({"hook_args": args}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           str(tmp_path / "play.yml"), "-e", "@" + str(tmp_path / "vars.json"), *flags],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        pytest.fail("ansible-playbook printed no JSON (rc %d): %s %s" % (proc.returncode, proc.stdout, proc.stderr))
    return proc.returncode, out["plays"][0]["tasks"][0]["hosts"]["localhost"]


def snapshot(*paths):
    """{path: (uid, gid, mode, bytes or link target)} of files and directory listings, lstat only."""
    seen = {}
    for path in paths:
        if not os.path.lexists(path):
            seen[path] = None
            continue
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            body = tuple(sorted(os.listdir(path)))
        elif stat.S_ISLNK(st.st_mode):
            body = os.readlink(path)
        else:
            with open(path, "rb") as handle:
                body = handle.read()
        seen[path] = (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), body)
    return seen


@pytest.mark.controller
def test_hooks_are_root_owned_and_env_keeps_its_lines_owner_and_mode_then_nothing_changes(tmp_path, world, runner):
    rc, checked = run_module(tmp_path, runner["args"], "--check")
    assert rc == 0 and checked["changed"] and checked["env_changed"], checked
    assert not os.path.exists(runner["root"] + "/hooks") and not os.path.exists(runner["dropin"])
    before = open(runner["env"], "rb").read()
    assert b"op-completed.sh" in before and checked["hooks"]["completed"] == runner["scripts"] + "/job-completed.sh"

    rc, done = run_module(tmp_path, runner["args"])
    assert rc == 0 and done["changed"], done
    assert done["user"] == world.user and done["chained"] == {"started": "", "completed": runner["root"]
                                                                                       + "/op-completed.sh"}
    st = os.lstat(runner["env"])
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (world.uid, world.gid, 0o640)
    assert open(runner["env"], "rb").read() == b"LANG=C.UTF-8\n# operator: keep\n%s=%s/job-completed.sh\n" % (
        C.encode(), runner["scripts"].encode())
    for name, mode in (("job-completed.sh", 0o755), ("chained.json", 0o644)):
        st = os.lstat(runner["scripts"] + "/" + name)
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, mode)
    assert not os.path.exists(runner["scripts"] + "/job-started.sh")
    st = os.lstat(runner["dropin"])
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o440)
    assert subprocess.run(["visudo", "-c"], capture_output=True).returncode == 0

    state = snapshot(runner["env"], runner["scripts"], runner["scripts"] + "/job-completed.sh", runner["dropin"])
    rc, again = run_module(tmp_path, runner["args"])
    assert rc == 0 and again["changed"] is False and again["written"] == [] and again["removed"] == [], again
    rc, again = run_module(tmp_path, runner["args"], "--check")
    assert rc == 0 and again["changed"] is False
    assert snapshot(*state) == state


@pytest.mark.controller
def test_a_new_env_is_the_runner_users_file_and_an_unreadable_one_is_not_read_with_roots_rights(tmp_path, world,
                                                                                              runner):
    os.unlink(runner["env"])
    rc, done = run_module(tmp_path, runner["args"])
    assert rc == 0, done
    st = os.lstat(runner["env"])
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (world.uid, world.gid, 0o644)
    # mode 0000: root could read it, the runner user cannot, and the module reads as that user
    os.chmod(runner["env"], 0)
    rc, refused = run_module(tmp_path, runner["args"])
    assert rc != 0 and refused.get("failed") and "Permission denied" in refused["msg"], refused
    os.chmod(runner["env"], 0o644)


@pytest.mark.controller
def test_job_started_on_then_off_then_absent_gives_the_operator_every_hook_back(tmp_path, runner):
    with open(runner["env"], "ab") as handle:
        handle.write(b"%s=/opt/op-started.sh\n# trailing\n" % S.encode())
    original = open(runner["env"], "rb").read()
    rc, done = run_module(tmp_path, dict(runner["args"], job_started=True))
    assert rc == 0 and done["hooks"]["started"] == runner["scripts"] + "/job-started.sh", done
    assert json.load(open(runner["scripts"] + "/chained.json")) == {
        "runner": runner["dir"], "started": "/opt/op-started.sh", "completed": runner["root"] + "/op-completed.sh"}
    assert "chained=/opt/op-started.sh\n" in open(runner["scripts"] + "/job-started.sh").read()

    rc, done = run_module(tmp_path, runner["args"])  # job_started off: the operator's started hook comes back
    assert rc == 0 and done["hooks"]["started"] == "/opt/op-started.sh"
    assert done["removed"] == [runner["scripts"] + "/job-started.sh"]

    absent = dict(runner["args"], state="absent")
    rc, checked = run_module(tmp_path, absent, "--check")
    assert rc == 0 and checked["changed"] and os.path.exists(runner["dropin"])
    rc, done = run_module(tmp_path, absent)
    assert rc == 0 and done["changed"], done
    assert open(runner["env"], "rb").read() == original
    assert sorted(done["removed"]) == sorted([runner["dropin"], runner["scripts"], runner["scripts"] + "/chained.json",
                                              runner["scripts"] + "/job-completed.sh"])
    assert checked["removed"] == done["removed"]
    assert os.listdir(runner["root"] + "/hooks") == [] and not os.path.exists(runner["dropin"])
    rc, again = run_module(tmp_path, absent)
    assert rc == 0 and again["changed"] is False, again


@pytest.mark.controller
def test_absent_of_a_runner_directory_gone_still_removes_the_scripts_and_the_drop_in(tmp_path, world, runner):
    assert run_module(tmp_path, runner["args"])[0] == 0
    shutil.rmtree(runner["dir"])
    rc, done = run_module(tmp_path, dict(runner["args"], state="absent"))
    assert rc == 0 and runner["dropin"] in done["removed"], done
    assert any("does not exist" in w for w in done.get("warnings", [])), done


@pytest.mark.controller
@pytest.mark.parametrize("how, words", [
    ("root owns the runner directory", "is owned by root"),
    ("the runner directory is a symlink", "goes through a symlink"),
    (".env is a symlink to a victim", "is a symbolic link (never followed)"),
    (".env is a hard link to a victim", "hard links"),
    ("a space in the runner directory", "give a normal absolute path"),
])
def test_what_the_library_refuses_fails_with_one_line_and_changes_nothing(tmp_path, world, runner, how, words):
    args = dict(runner["args"])
    if how == "root owns the runner directory":
        os.chown(runner["dir"], 0, 0)
    elif how == "the runner directory is a symlink":
        os.symlink(runner["dir"], world.agent + "/link")
        args["runner_dir"] = world.agent + "/link"
    elif how == ".env is a symlink to a victim":
        os.unlink(runner["env"])
        os.symlink(world.victim + "/secret", runner["env"])
    elif how == ".env is a hard link to a victim":
        os.unlink(runner["env"])
        os.link(world.victim + "/program", runner["env"])
    else:
        args["runner_dir"] = world.agent + "/actions runner"
    rc, refused = run_module(tmp_path, args)
    assert rc != 0 and words in refused["msg"] and "\n" not in refused["msg"], refused
    assert not world.what_changed()
    assert not os.path.exists(runner["dropin"])
    assert not os.path.exists(runner["scripts"] + "/job-completed.sh") or how.startswith(".env")


@pytest.mark.controller
def test_the_hooks_run_as_the_runner_user_through_sudo_and_give_the_work_folder_back(tmp_path, world, runner):
    sbin = runner["root"] + "/sbin"
    os.mkdir(sbin, 0o755)
    with open(runner["args"]["helper"], "w", encoding="utf-8") as handle:
        handle.write(runner_texts.helper_script(install_dir=SRC, helper=runner["args"]["helper"]))
    os.chmod(runner["args"]["helper"], 0o755)
    marks = runner["root"] + "/marks"
    os.mkdir(marks, 0o1777)
    os.chmod(marks, 0o1777)
    with open(runner["root"] + "/op-completed.sh", "w") as handle:
        handle.write("#!/bin/bash\nid -un > %s/operator.ran\nexit 4\n" % marks)
    os.chmod(runner["root"] + "/op-completed.sh", 0o755)
    work = world.agent_dir("actions-runner/_work")
    with open(work + "/left-by-root", "wb") as handle:  # what a root container step leaves
        handle.write(b"x")
    os.chmod(work + "/left-by-root", 0o4755)
    assert run_module(tmp_path, dict(runner["args"], fail_job=True))[0] == 0
    hook = rh.env_value(open(runner["env"], "rb").read(), C)
    env = {"PATH": "/usr/bin:/bin", "GITHUB_WORKSPACE": world.victim, "HOME": "/nonexistent"}
    done = world.as_user(["bash", "-e", hook], env=env, text=True, timeout=120)
    assert done.returncode == 4, (done.stdout, done.stderr)  # the operator's failure fails the job
    st = os.lstat(work + "/left-by-root")
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (world.uid, 0o755), done.stdout + done.stderr
    assert open(marks + "/operator.ran").read().strip() == world.user
    assert not world.what_changed()
    # sudo allows exactly the helper with exactly this directory
    other = world.as_user(["sudo", "-n", runner["args"]["helper"], world.victim], text=True)
    assert other.returncode != 0 and "password is required" in other.stderr


@pytest.mark.parametrize("swap", ["symlink", "hardlink"])
def test_a_runner_user_swapping_env_for_links_during_the_module_changes_no_victim(world, runner, swap):
    rh.ensure_hooks(**runner["args"])
    if swap == "symlink":
        world.attack(exchange(runner["env"], world.victim + "/secret"))
    else:
        world.attack(hardlink(runner["env"], world.victim + "/program"))
    states = ["absent", "present"]

    def flip(_outcome):
        states.reverse()
    result = world.race(lambda: rh.ensure_hooks(state=states[0], **runner["args"]), after_call=flip,
                        min_calls=20, until=lambda r: r.errors.get("HooksRefused", 0) > 0)
    assert result.clean, result.describe()
    assert result.errors.get("HooksRefused", 0) > 0, result.describe()


def test_env_changed_between_the_look_and_the_write_is_left_alone(tmp_path):
    env = tmp_path / ".env"
    env.write_bytes(b"A=1\n")
    fd = os.open(str(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(rh.HooksRefused, match="changed while it was being edited"):
            rh._edit_env(fd, str(env), "QT0xCg==-stale", {C: "/ours.sh"}, dry_run=False)
    finally:
        os.close(fd)
    assert env.read_bytes() == b"A=1\n"



@pytest.mark.controller
def test_the_diff_shows_the_hook_lines_of_env_never_its_other_lines(tmp_path, runner):
    with open(runner["env"], "ab") as handle:
        handle.write(b"HTTPS_PROXY=http://user:s3cret@proxy:3128\n")
    rc, done = run_module(tmp_path, runner["args"], "--check", "--diff")
    assert rc == 0, done
    env_diff = [d for d in done["diff"] if d["before_header"] == runner["env"]]
    assert env_diff == [{"before_header": runner["env"], "after_header": runner["env"],
                         "before": "%s=%s/op-completed.sh\n" % (C, runner["root"]),
                         "after": "%s=%s/job-completed.sh\n" % (C, runner["scripts"])}]
    assert "s3cret" not in json.dumps(done)
