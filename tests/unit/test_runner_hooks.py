# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""runner_hooks, the pure half: how .env is read and edited the way the runner reads it, what
the operator's hook is, the texts of the hook scripts, the helper and the drop-in, and how a
hook script behaves as the runner runs it (bash -e, exit status, chaining, nothing injected).

The hook is run with bash against a stand-in for sudo that records its arguments and exits as
told. tests/integration/test_runner_hooks.py runs the whole module for a real runner user.
"""
import os
import shlex
import subprocess

import pytest
from sandboxguard._core import defaults
from sandboxguard._privileged import runner_hooks as rh
from sandboxguard._privileged import runner_texts
from sandboxguard.errors import InputError

OURS = {"started": "/h/r/job-started.sh", "completed": "/h/r/job-completed.sh"}
C, S = rh.ENV_VARS["completed"], rh.ENV_VARS["started"]


def test_the_last_line_of_a_name_wins_split_at_the_first_equals_nothing_trimmed():
    data = b"%s=/a.sh\nLANG=C\n%s=/b=c.sh \n#%s=/comment.sh\n" % (C.encode(), C.encode(), C.encode())
    assert rh.env_value(data, C) == "/b=c.sh "
    assert rh.env_value(data, S) is None
    assert rh.env_value(b"=x\n" + C.encode() + b"=\n", C) == ""
    assert rh.env_value(b"%s=/crlf.sh\r\n" % C.encode(), C) == "/crlf.sh"


def test_plan_env_replaces_the_line_that_wins_in_place_and_keeps_every_other_byte():
    data = b"LANG=C.UTF-8\n# keep me\n%s=/old.sh\nX=1\r\n%s=/theirs.sh\r\nY=\xff\n" % (C.encode(), C.encode())
    after = rh.plan_env(data, {C: "/ours.sh"})
    assert after == b"LANG=C.UTF-8\n# keep me\n%s=/old.sh\nX=1\r\n%s=/ours.sh\r\nY=\xff\n" % (C.encode(), C.encode())


def test_plan_env_appends_a_missing_name_after_an_unterminated_last_line_and_removes_the_winner():
    assert rh.plan_env(b"A=1", {S: "/s.sh"}) == b"A=1\n%s=/s.sh\n" % S.encode()
    assert rh.plan_env(b"", {S: "/s.sh"}) == b"%s=/s.sh\n" % S.encode()
    data = b"%s=/early.sh\nA=1\n%s=/ours.sh\n" % (S.encode(), S.encode())
    assert rh.plan_env(data, {S: None}) == b"%s=/early.sh\nA=1\n" % S.encode()
    assert rh.plan_env(b"A=1\n", {S: None}) == b"A=1\n"


def test_present_names_ours_and_chains_what_the_env_named():
    data = b"%s=/op/after.sh\n" % C.encode()
    changes, chained = rh.env_plan(data, "present", OURS, {}, job_started=False)
    assert changes == {C: OURS["completed"]} and chained == {"started": "", "completed": "/op/after.sh"}
    changes, chained = rh.env_plan(data, "present", OURS, {}, job_started=True)
    assert changes == {C: OURS["completed"], S: OURS["started"]}


def test_once_ours_is_named_the_operators_hook_is_the_one_remembered():
    data = b"%s=%s\n" % (C.encode(), OURS["completed"].encode())
    changes, chained = rh.env_plan(data, "present", OURS, {"completed": "/op/after.sh"}, job_started=False)
    assert changes == {} and chained["completed"] == "/op/after.sh"


@pytest.mark.parametrize("recorded, restored", [({"started": "/op/before.sh"}, "/op/before.sh"), ({}, None)])
def test_a_started_hook_switched_off_gives_way_to_the_operators_or_to_no_line(recorded, restored):
    data = b"%s=%s\n%s=%s\n" % (C.encode(), OURS["completed"].encode(), S.encode(), OURS["started"].encode())
    changes, _chained = rh.env_plan(data, "present", OURS, recorded, job_started=False)
    assert changes == {S: restored}


def test_absent_gives_back_every_phase_that_names_ours_and_leaves_the_operators_lines():
    data = b"%s=%s\n%s=/op/changed-since.sh\n" % (C.encode(), OURS["completed"].encode(), S.encode())
    changes, chained = rh.env_plan(data, "absent", OURS, {"completed": "/op/after.sh", "started": "/op/x.sh"},
                                   job_started=True)
    assert changes == {C: "/op/after.sh"}
    assert chained["started"] == "/op/changed-since.sh"
    assert rh.env_plan(b"A=1\n", "absent", OURS, {}, job_started=False)[0] == {}


@pytest.mark.parametrize("path", ["relative", "/a b", "/a/../b", "/a//b", "/a/", "/a*", "/a,b", "/a:b", "/\u00e9", ""])
def test_a_path_a_sudoers_rule_cannot_take_as_it_is_is_refused_naming_it(path):
    with pytest.raises(InputError, match="give a normal absolute path"):
        rh.check_path_text(path, "runner directory")


def test_runner_names_keep_letters_digits_dash_and_underscore():
    assert rh.runner_name("/home/gh/actions-runner") == "home_gh_actions-runner"
    assert rh.runner_name("/srv/r.two+x@y") == "srv_r_two_x_y"


def test_the_helper_runs_exactly_runner_cleanup_with_its_one_argument_in_isolated_mode():
    text = runner_texts.helper_script(python="/opt/py/bin/python3", install_dir="/opt/sg/lib")
    assert text.startswith("#!/opt/py/bin/python3 -I\n")
    compile(text, "sandboxguard-runner-cleanup", "exec")
    assert "sys.path.insert(0, '/opt/sg/lib')" in text and 'main(["runner-cleanup", "--", sys.argv[1]])' in text
    assert "usage: %s RUNNER_DIR" % defaults.RUNNER_CLEANUP_HELPER in text
    with pytest.raises(InputError, match="install_dir /opt/sg lib"):
        runner_texts.helper_script(install_dir="/opt/sg lib")


def test_the_drop_in_allows_exactly_the_helper_with_exactly_the_runner_directory():
    text = rh.sudoers_text("/home/gh/actions-runner", "gh", "/usr/local/lib/sandboxguard-runner")
    rules = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert rules == ["gh ALL=(root) NOPASSWD: %s /home/gh/actions-runner" % defaults.RUNNER_CLEANUP_HELPER]


@pytest.fixture()
def hook(tmp_path):
    """make(chained, fail_job) -> path of a hook script whose sudo is a stand-in."""
    log = tmp_path / "log"
    sudo = tmp_path / "sudo"
    sudo.write_text('#!/bin/bash\nprintf "sudo %%s\\n" "$*" >> %s\nexit "${FAKE_CLEANUP_RC:-0}"\n'
                    % shlex.quote(str(log)))
    sudo.chmod(0o755)

    def make(chained="", fail_job=True):
        path = tmp_path / "job-completed.sh"
        path.write_text(rh.hook_script("/home/gh/actions-runner", "gh", "completed", chained, fail_job, str(sudo)))
        return path
    make.log = log
    return make


def run_hook(path, cleanup_rc=0, cwd=None):
    env = dict(os.environ, FAKE_CLEANUP_RC=str(cleanup_rc), GITHUB_WORKSPACE="/etc")
    return subprocess.run(["bash", "-e", str(path)], capture_output=True, text=True, env=env, cwd=cwd, timeout=30)


def test_hook_runs_the_helper_with_exactly_the_runner_directory(hook):
    done = run_hook(hook())
    assert done.returncode == 0, done.stderr
    assert hook.log.read_text() == "sudo -n %s /home/gh/actions-runner\n" % defaults.RUNNER_CLEANUP_HELPER


@pytest.mark.parametrize("fail_job, status, annotation", [(True, 1, "::error::"), (False, 0, "::warning::")])
def test_unclean_work_folder_fails_the_job_only_when_asked(hook, fail_job, status, annotation):
    done = run_hook(hook(fail_job=fail_job), cleanup_rc=1)
    assert done.returncode == status
    assert annotation in done.stdout and "(runner-cleanup exit 1); the next checkout may fail" in done.stdout


def test_chained_hook_runs_after_the_cleanup_and_its_failure_fails_the_job(hook, tmp_path):
    theirs = tmp_path / "operator hook.sh"
    theirs.write_text('printf "operator\\n" >> %s\nexit 3\n' % shlex.quote(str(hook.log)))
    done = run_hook(hook(chained=str(theirs), fail_job=False))
    assert done.returncode == 3
    assert hook.log.read_text().splitlines() == ["sudo -n %s /home/gh/actions-runner" % defaults.RUNNER_CLEANUP_HELPER,
                                                  "operator"]
    hook.log.write_text("")  # the operator's failure wins over a cleanup failure too
    assert run_hook(hook(chained=str(theirs)), cleanup_rc=1).returncode == 3


def test_chained_hook_runs_with_bash_e_as_the_runner_does(hook, tmp_path):
    theirs = tmp_path / "stops.sh"
    theirs.write_text('false\nprintf "went on\\n" >> %s\n' % shlex.quote(str(hook.log)))
    done = run_hook(hook(chained=str(theirs)))
    assert done.returncode == 1
    assert "went on" not in hook.log.read_text()


def test_chained_path_is_data_not_shell(hook, tmp_path):
    odd = tmp_path / "a b;$(touch INJECTED)'\".sh"
    odd.write_text('printf "odd ran\\n" >> %s\n' % shlex.quote(str(hook.log)))
    done = run_hook(hook(chained=str(odd)), cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "odd ran" in hook.log.read_text()
    assert not (tmp_path / "INJECTED").exists()
