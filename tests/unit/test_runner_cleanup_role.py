# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The runner_cleanup role's templates: the root helper is the text the CLI's helper_script()
writes, the role's fixed paths are the library's defaults, and the hook script behaves as the
runner needs (exit status, chaining, nothing injected from the operator's hook path).

The hook is rendered with Jinja (the role's two filters, as Ansible renders it) and run with
bash against a stand-in for sudo that records its arguments and exits as told.
"""
import os
import shlex
import subprocess

import pytest

jinja2 = pytest.importorskip("jinja2")  # the pythons layer's venvs carry only pytest
yaml = pytest.importorskip("yaml")

from sandboxguard import defaults  # noqa: E402
from sandboxguard_cli.commands import runner_cleanup as cli  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE = os.path.join(TOP, "roles", "runner_cleanup")


def _load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def _as_bool(value):
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def render(name, **variables):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")),
                             trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["quote"] = lambda text: shlex.quote(str(text))
    env.filters["bool"] = _as_bool
    return env.get_template(name).render(**variables)


def test_fixed_paths_are_the_library_defaults():
    role_vars, role_defaults = _load("vars", "main.yml"), _load("defaults", "main.yml")
    assert role_vars["runner_cleanup_helper_path"] == defaults.RUNNER_CLEANUP_HELPER
    assert role_defaults["runner_cleanup_install_dir"] == defaults.INSTALL_DIR
    assert role_defaults["runner_cleanup_python"] == defaults.SYSTEM_PYTHON


@pytest.mark.parametrize("python, install_dir", [(defaults.SYSTEM_PYTHON, defaults.INSTALL_DIR),
                                                 ("/opt/py3.12/bin/python3", "/opt/sg/lib")])
def test_helper_template_is_what_helper_script_writes(python, install_dir):
    text = render("sandboxguard-runner-cleanup.j2", runner_cleanup_python=python,
                  runner_cleanup_install_dir=install_dir, runner_cleanup_helper_path=defaults.RUNNER_CLEANUP_HELPER)
    assert text == cli.helper_script(python=python, install_dir=install_dir)


@pytest.fixture()
def hook(tmp_path):
    """make(cleanup_rc, chained, fail_job) -> path of a rendered hook whose sudo is a stand-in."""
    log = tmp_path / "log"
    sudo = tmp_path / "sudo"
    sudo.write_text('#!/bin/bash\nprintf "sudo %%s\\n" "$*" >> %s\nexit "${FAKE_CLEANUP_RC:-0}"\n'
                    % shlex.quote(str(log)))
    sudo.chmod(0o755)

    def make(chained="", fail_job=True):
        path = tmp_path / "job-completed.sh"
        path.write_text(render(
            "hook.sh.j2", runner_cleanup_dir="/home/gh/actions-runner", runner_cleanup__user="gh",
            runner_cleanup__var="ACTIONS_RUNNER_HOOK_JOB_COMPLETED", runner_cleanup__phase="completed",
            runner_cleanup__hook_chained=chained, runner_cleanup_fail_job=fail_job,
            runner_cleanup_sudo_path=str(sudo), runner_cleanup_helper_path=defaults.RUNNER_CLEANUP_HELPER))
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
    assert annotation in done.stdout and "runner-cleanup exit 1" in done.stdout


def test_chained_hook_runs_after_the_cleanup_and_its_failure_fails_the_job(hook, tmp_path):
    theirs = tmp_path / "operator hook.sh"
    theirs.write_text('printf "operator\\n" >> %s\nexit 3\n' % shlex.quote(str(hook.log)))
    done = run_hook(hook(chained=str(theirs), fail_job=False))
    assert done.returncode == 3
    assert hook.log.read_text().splitlines() == ["sudo -n %s /home/gh/actions-runner" % defaults.RUNNER_CLEANUP_HELPER,
                                                  "operator"]
    # the operator's failure wins over a cleanup failure too
    hook.log.write_text("")
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
