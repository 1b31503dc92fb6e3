# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""setid_strip and file_caps as Ansible runs them: check mode, diff, idempotence, failures."""
import base64
import json
import os
import subprocess
import sys

import pytest
from sandboxguard import caps as capsmod

pytestmark = pytest.mark.controller

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")


def run_module(module, args, *flags):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([ANSIBLE, "localhost", "-m", "sandboxguard.boundary." + module, "-a", json.dumps(args),
                           *flags], capture_output=True, text=True, env=env, timeout=120, check=False)
    out = json.loads(proc.stdout)
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.fixture
def sandbox(tmp_path):
    root = tmp_path / "sb"
    root.mkdir()
    suid = root / "suid"
    suid.write_bytes(b"x")
    os.chmod(suid, 0o6755)
    capped = root / "ping"
    capped.write_bytes(b"y")
    os.setxattr(capped, capsmod.XATTR_NAME, capsmod.encode_vfs_cap(permitted={13}, effective=True))
    return root, suid, capped


def test_setid_strip_check_mode_reports_and_changes_nothing(sandbox):
    root, suid = sandbox[:2]
    result = run_module("setid_strip", {"paths": [str(root)]}, "--check", "--diff")
    assert result["changed"] is True and result["dry_run"] is True
    assert os.stat(suid).st_mode & 0o7777 == 0o6755
    assert "%s mode=06755" % suid in result["diff"]["before"]
    assert "%s mode=0755" % suid in result["diff"]["after"]


def test_setid_strip_then_second_run_reports_no_change(sandbox):
    root, suid, capped = sandbox
    first = run_module("setid_strip", {"paths": [str(root)]})
    assert first["changed"] is True and os.stat(suid).st_mode & 0o7777 == 0o755
    assert capsmod.XATTR_NAME in os.listxattr(capped)  # caps default to false in setid_strip
    second = run_module("setid_strip", {"paths": [str(root)]})
    assert second["changed"] is False and second["files"] == []


def test_setid_strip_with_owner_returns_ownership_first(sandbox):
    root, suid, capped = sandbox
    result = run_module("setid_strip", {"paths": [str(root)], "owner": "1000", "group": "1000", "caps": True})
    assert result["changed"]
    for path in (root, suid, capped):
        assert os.stat(path).st_uid == 1000
    assert capsmod.XATTR_NAME not in os.listxattr(capped)


def test_file_caps_query_never_changes(sandbox):
    root, capped = sandbox[0], sandbox[2]
    result = run_module("file_caps", {"paths": [str(root)], "state": "query"})
    assert result["changed"] is False
    assert [e["caps_before"] for e in result["files"]] == ["cap_net_raw=ep"]
    assert capsmod.XATTR_NAME in os.listxattr(capped)


def test_file_caps_absent_is_idempotent(sandbox):
    root, suid, capped = sandbox
    assert run_module("file_caps", {"paths": [str(root)]})["changed"] is True
    assert capsmod.XATTR_NAME not in os.listxattr(capped)
    assert os.stat(suid).st_mode & 0o7777 == 0o6755  # file_caps leaves setid bits alone
    assert run_module("file_caps", {"paths": [str(root)]})["changed"] is False


def test_refused_root_fails_the_task_naming_the_path():
    result = run_module("setid_strip", {"paths": ["/usr"]})
    assert result["failed"] is True and "/usr" in result["msg"] and "system" in result["msg"]


def test_per_file_error_fails_the_task_unless_told_otherwise(sandbox):
    root, suid = sandbox[:2]
    subprocess.run(["chattr", "+i", str(suid)], check=True)
    try:
        failed = run_module("setid_strip", {"paths": [str(root)]})
        warned = run_module("setid_strip", {"paths": [str(root)], "fail_on_errors": False})
    finally:
        subprocess.run(["chattr", "-i", str(suid)], check=True)
    assert failed["failed"] is True and str(suid) in failed["msg"] and "EPERM" in failed["msg"]
    assert "failed" not in warned or warned["failed"] is False
    assert any(str(suid) in w for w in warned["warnings"])


def test_setid_strip_reports_names_as_they_are_or_escaped_with_their_bytes(tmp_path):
    root = tmp_path / "sb"
    root.mkdir()
    for name in (b"bad-\xff", b"two\nlines"):
        path = os.path.join(os.fsencode(root), name)
        with open(path, "wb") as handle:
            handle.write(b"x")
        os.chmod(path, 0o4755)
    result = run_module("setid_strip", {"paths": [str(root)]})
    assert result["changed"] and not result.get("failed"), result.get("msg")
    files = sorted(result["files"], key=lambda e: e["path"])
    assert [e["path"] for e in files] == [str(root) + "/bad-\\xff", str(root) + "/two\nlines"]
    assert base64.b64decode(files[0]["path_b64"]) == os.fsencode(str(root)) + b"/bad-\xff"
    assert "path_b64" not in files[1]  # valid UTF-8: as it is, the newline included
    assert os.stat(os.path.join(os.fsencode(root), b"bad-\xff")).st_mode & 0o7777 == 0o755


def test_setid_strip_walks_a_root_that_is_not_utf8_given_as_paths_b64(tmp_path):
    broot = os.fsencode(str(tmp_path)) + b"/task-\xfe$HOME"
    os.mkdir(broot)
    shell = broot + b"/sh"
    with open(shell, "wb") as handle:
        handle.write(b"x")
    os.chmod(shell, 0o4755)
    query = run_module("setid_strip", {"paths_b64": [base64.b64encode(broot).decode()]}, "--check")
    assert query["roots"] == [str(tmp_path) + "/task-\\xfe$HOME"], query.get("msg")
    assert [base64.b64decode(c) for c in query["roots_b64"]] == [broot]
    again = run_module("setid_strip", {"paths_b64": query["roots_b64"]})  # what remediate passes on
    assert again["changed"] and os.stat(shell).st_mode & 0o7777 == 0o755
    bad = run_module("setid_strip", {"paths_b64": ["not base64!"]})
    assert bad["failed"] and "paths_b64" in bad["msg"]
    none = run_module("setid_strip", {"paths": []})
    assert none["failed"] and "paths and paths_b64 are both empty" in none["msg"]


@pytest.mark.parametrize("module, args, words", [
    ("setid_strip", {"budget": "inf"}, "budget"),
    ("setid_strip", {"budget": "nan"}, "budget"),
    ("file_caps", {"budget": "1e400"}, "budget"),
    ("file_caps", {"budget": -1}, "budget"),
    ("setid_strip", {"max_listed": -1}, "max_listed"),
    ("setid_strip", {"owner": "99999999999", "group": "0"}, "owner 99999999999"),
])
def test_bad_option_values_fail_the_module_with_a_message_naming_the_option(sandbox, module, args, words):
    root, suid = sandbox[:2]
    result = run_module(module, dict(args, paths=[str(root)]))
    assert result.get("failed") and words in result["msg"], result
    assert "Traceback" not in result.get("module_stderr", "")
    assert os.stat(suid).st_mode & 0o7777 == 0o6755


# -- the budget rule (issue 29): the modules' argument specs defer to the library's one rule
# (sandboxguard._core.inputs.budget), and its message is the task's failure, word for word.

BUDGET_PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
%s
"""
BUDGET_TASK = """    - name: "%(id)s"
      sandboxguard.boundary.%(module)s: %(args)s
      check_mode: true
      ignore_errors: true
"""
BUDGET_MODULES = {  # module -> (its budget option, the other options it needs)
    "setid_strip": ("budget", {}),
    "file_caps": ("budget", {"state": "query"}),
    "audit_info": ("budget", {"checks": ["privileged_files"]}),
    "remediate": ("budget", {"fixes": ["privileged_files"]}),
    "sandbox_sweep": ("budget_per_step", {"docker_host": "unix:///nonexistent-one29.sock"}),
}


def test_every_module_refuses_a_bad_budget_with_the_librarys_message_and_takes_0_and_10(sandbox, tmp_path):
    root, suid = sandbox[:2]
    cases, tasks = {}, []
    for module, (option, more) in sorted(BUDGET_MODULES.items()):
        for value in ("nan", "inf", "-1", "abc", "", "0", "10"):
            name = "%s %s=%r" % (module, option, value)
            cases[name] = (module, option, value)
            args = dict(more, paths=[str(root)], **{option: value})
            if module == "sandbox_sweep":
                args = dict(more, hermes_home=[str(tmp_path / "hermes")], **{option: value})
            tasks.append(BUDGET_TASK % {"id": name, "module": module, "args": json.dumps(args)})
    (tmp_path / "play.yml").write_text(BUDGET_PLAY % "".join(tasks))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                           "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
                           str(tmp_path / "play.yml")], capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    results = {t["task"]["name"]: t["hosts"]["localhost"] for t in json.loads(proc.stdout)["plays"][0]["tasks"]}
    for name, (module, option, value) in cases.items():
        result = results[name]
        refused = "%s must be a finite number of seconds, 0 (no limit) or more; not %r" % (option, value)
        if value in ("0", "10"):
            assert refused not in result.get("msg", ""), (name, result.get("msg"))
            if module in ("setid_strip", "file_caps", "audit_info"):
                assert not result.get("failed"), (name, result.get("msg"))
        else:
            assert result.get("failed") and result["msg"] == refused, (name, result.get("msg"))
    assert os.stat(suid).st_mode & 0o7777 == 0o6755  # check mode throughout
