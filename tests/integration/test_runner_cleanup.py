# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""A GitHub self-hosted runner's container job, emulated to the runner's contract, and the
job-completed hook's root helper (`sandboxguard runner-cleanup DIR`) that gives the work
folder back to the runner user (issue 21, item 6).

The runner, as actions/runner starts a container job (no runner binary here): a runner user
owns ``<runner>/`` with ``.runner`` (JSON, UTF-8 BOM, ``workFolder``), ``.env``, ``bin/``,
``externals/`` and ``_work/<repo>/<repo>``; the job container is created with the work
folder at ``/__w``, ``_work/_temp`` at ``/__w/_temp``, ``_work/_actions`` at
``/__w/_actions``, the tool cache ``_work/_tool`` at ``/__t``, externals read-only at
``/__e``, ``_work/_temp/_github_home`` at ``/github/home``, ``_work/_temp/_github_workflow``
at ``/github/workflow``, the label ``sha256(runner dir)[:6]``, entrypoint ``tail -f
/dev/null``, no ``--user`` (the image's root) and here ``--network none`` (and no
docker.sock: a job with the socket is root-equivalent, see docs/runners.md); steps run
through ``docker exec``. The job-completed hook runs as the runner user and can only call
the root-owned helper through sudo with its one fixed argument: here the test runs that
helper as root with exactly that argument, and a job-controlled environment beside it.
"""
import base64
import json
import os
import stat
import subprocess
import uuid

import pytest
from docker_sdk import sdk_client
from racing import RaceWorld, exchange, relink
from racing import python as python_move
from sandboxguard import caps as capsmod
from sandboxguard._core import safefs
from sandboxguard._privileged import runner_texts, runners
from sandboxguard_cli.commands import runner_cleanup

pytestmark = [pytest.mark.docker, pytest.mark.root]

if os.geteuid() != 0:  # pragma: no cover - the suite runs as root (make test)
    pytest.fail("tests/integration/test_runner_cleanup.py must run as root", pytrace=False)

IMAGE = "sandboxguard/debian:12"
REPO = "app"
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python", "src")
BOM = b"\xef\xbb\xbf"  # the runner writes .runner with File.WriteAllText(..., Encoding.UTF8)

# A build step of a root container job: root-owned output, a tree, a private directory the
# next checkout cannot remove, a setuid-root shell and a cap_net_raw+ep file, in the
# workspace and in /github/home; one file keeps the runner's uid but gets group root; the
# home becomes root's (a root step can chown a bind mount's top; one that chowns the work
# folder itself, /__w, is refused: test_a_job_that_chowns_the_work_folder_itself_is_refused).
BUILD_STEP = r"""
set -e
mkdir -p dist/tree/a/b/c dist/private
echo built > dist/app.bin
echo deep > dist/tree/a/b/c/leaf
echo secret > dist/private/key && chmod 600 dist/private/key && chmod 700 dist/private
cp /bin/sh dist/rootsh && chmod 4755 dist/rootsh
cp /bin/true dist/ping && setcap cap_net_raw+ep dist/ping
echo mine > dist/group-root && chown "$RUNNER_UID:0" dist/group-root
mkdir -p /github/home/.cache/pip && echo wheel > /github/home/.cache/pip/wheel
cp /bin/sh /github/home/sgidsh && chmod 2755 /github/home/sgidsh
cp /bin/true /github/home/raw && setcap cap_net_raw+ep /github/home/raw
echo tool > /__t/node.tar
echo temp > /__w/_temp/leftover.sh
name=$(printf 'dist/evil\nline\377') && cp /bin/sh "$name" && chmod 4755 "$name"
chown 0:0 /github/home && chmod 700 /github/home
"""


@pytest.fixture(scope="module")
def client():
    return sdk_client()


@pytest.fixture
def world():
    with RaceWorld("sgrun_") as made:
        os.chmod(made.victim + "/bin/tool", 0o4755)  # a setuid-root victim a followed link would change
        made.victims = []
        made.add_victim(made.victim)
        yield made


def _own(world, path, data=None, mode=0o644):
    if data is None:
        os.makedirs(path, exist_ok=True)
        os.chmod(path, 0o755)
    else:
        with open(path, "wb") as handle:
            handle.write(data)
        os.chmod(path, mode)
    os.chown(path, world.uid, world.gid)
    return path


def make_runner(world, work_folder="_work", name="actions-runner"):
    """The runner directory as ./config.sh leaves it, owned by the runner user; the files
    outside the work folder are victims (compared after every call)."""
    runner = world.agent_dir(name)
    _own(world, runner + "/.runner", BOM + (
        b'{\n  "agentId": 7,\n  "agentName": "sgrun",\n  "poolId": 1,\n  "poolName": "Default",\n'
        b'  "serverUrl": "https://pipelines.actions.githubusercontent.com/x",\n'
        b'  "gitHubUrl": "https://github.com/org/%s",\n  "workFolder": "%s"\n}'
        % (REPO.encode(), work_folder.encode())))
    _own(world, runner + "/.credentials", b'{"scheme": "OAuth"}', 0o600)
    _own(world, runner + "/.env", b"LANG=C.UTF-8\nACTIONS_RUNNER_HOOK_JOB_COMPLETED=%s/hooks/job-completed.sh\n"
         % runner.encode())
    for sub in ("bin", "externals", "externals/node20", "externals/node20/bin", "hooks"):
        _own(world, runner + "/" + sub)
    _own(world, runner + "/bin/Runner.Listener", b"#!/bin/sh\n", 0o755)
    _own(world, runner + "/externals/node20/bin/node", b"#!/bin/sh\n", 0o755)
    _own(world, runner + "/hooks/job-completed.sh", b"#!/bin/sh\nexec sudo -n %s %s\n"
         % (runner_cleanup.defaults.RUNNER_CLEANUP_HELPER.encode(), runner.encode()), 0o755)
    work = work_folder if work_folder.startswith("/") else runner + "/" + work_folder
    for sub in ("", "/%s" % REPO, "/%s/%s" % (REPO, REPO), "/_temp", "/_temp/_github_home",
                "/_temp/_github_workflow", "/_actions", "/_tool"):
        _own(world, work + sub)
    _own(world, work + "/%s/%s/README.md" % (REPO, REPO), b"checked out\n")
    _own(world, work + "/_temp/_github_workflow/event.json", b"{}\n")
    for outside in ("/.runner", "/.credentials", "/.env", "/bin", "/externals", "/hooks"):
        world.add_victim(runner + outside)
    return runner


def start_job(client, runner, work="_work"):
    """The job container, created as the runner creates one (see the module docstring)."""
    work = runner + "/" + work
    return client.containers.run(
        IMAGE, entrypoint=["tail"], command=["-f", "/dev/null"], detach=True, network_mode="none",
        name="sgrun_job_%s" % uuid.uuid4().hex[:8], labels={runners.github_label(runner): ""},
        working_dir="/__w/%s/%s" % (REPO, REPO),
        environment={"HOME": "/github/home", "GITHUB_ACTIONS": "true", "CI": "true"},
        volumes={work: {"bind": "/__w", "mode": "rw"},
                 runner + "/externals": {"bind": "/__e", "mode": "ro"},
                 work + "/_temp": {"bind": "/__w/_temp", "mode": "rw"},
                 work + "/_actions": {"bind": "/__w/_actions", "mode": "rw"},
                 work + "/_tool": {"bind": "/__t", "mode": "rw"},
                 work + "/_temp/_github_home": {"bind": "/github/home", "mode": "rw"},
                 work + "/_temp/_github_workflow": {"bind": "/github/workflow", "mode": "rw"}})


def run_step(container, script, world):
    """One `run:` step: docker exec as root (the image's user), in the workspace."""
    code, out = container.exec_run(["sh", "-c", script], user="root", workdir="/__w/%s/%s" % (REPO, REPO),
                                   environment={"RUNNER_UID": str(world.uid)})
    assert code == 0, out.decode("utf-8", "replace")


@pytest.fixture
def job(client, world):
    """A runner whose container job ran the build step; the container is kept for more steps."""
    runner = make_runner(world)
    container = start_job(client, runner)
    try:
        run_step(container, BUILD_STEP, world)
        yield {"runner": runner, "work": runner + "/_work", "container": container,
               "dist": runner + "/_work/%s/%s/dist" % (REPO, REPO)}
    finally:
        container.remove(force=True)


def install_helper(world):
    """The root-owned helper, as the role installs it, running this checkout's library."""
    sbin = os.path.join(world.base, "sbin")
    os.makedirs(sbin, exist_ok=True)
    os.chmod(sbin, 0o755)
    helper = os.path.join(sbin, "sandboxguard-runner-cleanup")
    with open(helper, "w", encoding="utf-8") as handle:
        handle.write(runner_texts.helper_script(install_dir=SRC, helper=helper))
    os.chmod(helper, 0o755)
    return helper


def job_environment(world):
    """What a job controls, set around the hook: none of it may steer the helper."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "GITHUB_WORKSPACE": world.victim, "RUNNER_WORKSPACE": world.victim,
            "RUNNER_TEMP": world.victim, "HOME": world.victim, "PYTHONPATH": world.victim, "RUNNER_TOOL_CACHE": "/etc"}


def run_hook(world, runner, *extra):
    """The job-completed hook's sudo call: the helper as root with its one fixed argument."""
    return subprocess.run([install_helper(world), runner, *extra], capture_output=True, text=True,
                          env=job_environment(world), cwd=world.victim, timeout=120)


def privileged_left(work, owner):
    """[lines] naming what under ``work`` is not the runner's own or is privileged (lstat only)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(work):
        for name in ["", *dirnames, *filenames]:
            path = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                continue
            if (st.st_uid, st.st_gid) != owner:
                found.append("%s owned by %d:%d" % (path, st.st_uid, st.st_gid))
            if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                found.append("%s mode %o" % (path, st.st_mode))
            if stat.S_ISREG(st.st_mode) and capsmod.XATTR_NAME in os.listxattr(path):
                found.append("%s has file capabilities" % path)
    return found


def user_can_write(world, directory):
    return world.as_user(["sh", "-c", 'echo checkout > "$1/sgrun-checkout"', "sh", directory]).returncode == 0


def test_the_job_completed_hook_gives_the_whole_work_folder_back_to_the_runner_user(world, job):
    owner = (world.uid, world.gid)
    left = privileged_left(job["work"], owner)
    assert any(line.startswith(job["dist"] + "/rootsh ") for line in left), left  # the job did leave them
    assert any("has file capabilities" in line for line in left) and not user_can_write(world, job["dist"])

    done = run_hook(world, job["runner"])

    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("runner-cleanup %s: gave back " % job["work"])
    assert privileged_left(job["work"], owner) == []
    assert user_can_write(world, job["dist"])  # the next actions/checkout can write its workspace
    removed = world.as_user(["rm", "-rf", job["work"]])
    assert removed.returncode == 0 and not os.path.lexists(job["work"]), removed.stderr
    assert world.what_changed() == []


def test_a_job_that_chowns_the_work_folder_itself_is_refused_until_the_operator_gives_it_back(world, job):
    """issue 25 item 3: the work folder must be the runner user's. A root step that chowns /__w
    leaves a work folder root's; the helper cannot tell it from a root directory the runner
    user put in its place, so it refuses with one line naming the path, its owner and the fix,
    and gives nothing away; once the operator chowns it back, the next cleanup does the rest."""
    run_step(job["container"], "chown 0:0 /__w", world)
    before = privileged_left(job["work"], (world.uid, world.gid))
    done = run_hook(world, job["runner"])
    assert done.returncode == 2 and done.stdout == "", done
    line = done.stderr.strip()
    assert "\n" not in line and job["work"] in line and "uid 0" in line and "chown %d" % world.uid in line, line
    assert privileged_left(job["work"], (world.uid, world.gid)) == before, "something was given away"
    os.chown(job["work"], world.uid, world.gid)  # the operator, after looking at it
    assert run_hook(world, job["runner"]).returncode == 0
    assert privileged_left(job["work"], (world.uid, world.gid)) == []
    assert world.what_changed() == []


def test_a_device_node_a_job_made_is_made_root_owned_0000_and_never_given_to_the_runner_user(world, job):
    """issue 25 item 4: Docker keeps CAP_MKNOD; a root step mknods a disk's node 0666 in /__w.
    Before, the walk skipped it (complete, exit 0) and the runner user opened a root-only host
    device through it."""
    run_step(job["container"], "mknod /__w/sda b 8 0 && chmod 666 /__w/sda && mknod dist/null c 1 3", world)
    done = run_hook(world, job["runner"])
    assert done.returncode == 0, done.stderr
    assert "2 device nodes made root 0000" in done.stdout, done.stdout
    for node in (job["work"] + "/sda", job["dist"] + "/null"):
        st = os.lstat(node)
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0), node
    opened = world.as_user(["/usr/bin/python3", "-c", "import sys; open(sys.argv[1], 'rb')", job["work"] + "/sda"])
    assert opened.returncode != 0 and b"Permission denied" in opened.stderr
    assert world.as_user(["rm", "-f", job["work"] + "/sda"]).returncode == 0  # still the runner user's to remove


def test_a_second_run_finds_nothing_and_a_dry_run_changes_nothing(world, job):
    before = privileged_left(job["work"], (world.uid, world.gid))
    dry = subprocess.run([*_cli(), job["runner"], "--dry-run", "--json"], capture_output=True, text=True)
    assert dry.returncode == 1, dry.stderr  # findings remain: nothing was changed
    report = json.loads(dry.stdout)
    assert report["runner"]["owner"] == [world.uid, world.gid] and report["roots"] == [job["work"]]
    evil = [entry for entry in report["files"] if "path_b64" in entry]  # the name that is not UTF-8
    assert len(evil) == 1 and base64.b64decode(evil[0]["path_b64"]).endswith(b"/dist/evil\nline\xff")
    assert privileged_left(job["work"], (world.uid, world.gid)) == before
    assert run_hook(world, job["runner"]).returncode == 0
    again = subprocess.run([*_cli(), job["runner"], "--json"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert '"chown": 0' in again.stdout and '"changed": false' in again.stdout
    assert world.what_changed() == []


def _cli():
    return ["/usr/bin/python3", "-I", "-c", "import sys; sys.path.insert(0, %r); from sandboxguard_cli.main import "
            "main; sys.exit(main(['runner-cleanup'] + sys.argv[1:]))" % SRC]


def test_the_helper_takes_exactly_one_absolute_argument(world, job):
    for argv in ([], [job["runner"], "--budget", "0"], ["--json"], ["actions-runner"]):
        done = subprocess.run([install_helper(world), *argv], capture_output=True, text=True,
                              env=job_environment(world))
        assert done.returncode == 2 and done.stderr.startswith("usage: "), (argv, done.stderr)
    assert privileged_left(job["work"], (world.uid, world.gid)) != []  # nothing ran


def test_links_a_job_planted_in_the_work_folder_are_never_followed(world, job):
    shadow = os.lstat("/etc/shadow")
    run_step(job["container"], "ln -s /etc /__w/x && ln -s %s /__w/v && ln -s %s/bin/tool dist/tool && "
             "ln -s /etc/shadow /github/home/shadow && ln -s /etc/passwd dist/tree/a/passwd"
             % (world.victim, world.victim), world)

    done = run_hook(world, job["runner"])

    assert done.returncode == 0, done.stderr
    assert world.what_changed() == []
    now = os.lstat("/etc/shadow")
    assert (now.st_uid, now.st_gid, now.st_mode) == (shadow.st_uid, shadow.st_gid, shadow.st_mode)
    assert os.lstat("/etc").st_uid == 0 and os.lstat("/etc/passwd").st_uid == 0
    assert privileged_left(job["work"], (world.uid, world.gid)) == []
    assert world.as_user(["rm", "-rf", job["work"]]).returncode == 0


def _tamper(world, runner, how):
    """What a non-container job (the runner user) or a job with the socket can do to the runner's own files."""
    work = runner + "/_work"
    if how == "work folder swapped for a link":
        os.rename(work, runner + "/_work.real")
        os.symlink(world.victim, work)
        return
    if how == "runner directory swapped for a link":
        os.rename(runner, runner + ".real")
        os.symlink(world.victim, runner)
        return
    if how == ".runner is a link to /etc/shadow":
        os.unlink(runner + "/.runner")
        os.symlink("/etc/shadow", runner + "/.runner")
        return
    folder = {"workFolder /etc": "/etc", "workFolder a root-owned directory": world.victim,
              "workFolder through a symlink": "linked/_work", "workFolder with ..": "../../victim",
              "workFolder the runner directory": ".", "workFolder above the runner directory": world.agent}[how]
    if how == "workFolder through a symlink":
        os.symlink(world.victim, runner + "/linked")
    os.unlink(runner + "/.runner")
    _own(world, runner + "/.runner", b'{"workFolder": "%s"}' % folder.encode())


@pytest.mark.parametrize("how", [
    "work folder swapped for a link", "runner directory swapped for a link", ".runner is a link to /etc/shadow",
    "workFolder /etc", "workFolder a root-owned directory", "workFolder through a symlink", "workFolder with ..",
    "workFolder the runner directory", "workFolder above the runner directory"])
def test_a_tampered_runner_is_refused_with_one_line_and_nothing_changes(world, job, how):
    # the tampered files are not victims; with the runner directory itself swapped, its old paths lead to the victim
    gone = job["runner"] + ("/" if how == "runner directory swapped for a link" else "/.")
    world.victims = [(path, snap) for path, snap in world.victims if not path.startswith(gone)]
    shadow = os.lstat("/etc/shadow")
    _tamper(world, job["runner"], how)

    done = run_hook(world, job["runner"])

    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith("sandboxguard runner-cleanup: ")
    assert world.what_changed() == []
    now = os.lstat("/etc/shadow")
    assert (now.st_uid, now.st_gid, now.st_mode) == (shadow.st_uid, shadow.st_gid, shadow.st_mode)
    assert os.lstat("/etc").st_uid == 0


def _replant(dist):
    """Root puts a setuid-root file and a root-owned directory back in the workspace (through a
    held descriptor: the attacker swaps names meanwhile), so every call has work to do."""
    try:
        held = safefs.open_dir(dist)
    except (OSError, safefs.PathRefused):
        return
    with held:
        try:
            fd = os.open("rootsh", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=held.fd)
        except OSError:
            return
        try:
            os.fchown(fd, 0, 0)
            os.fchmod(fd, 0o4755)
        finally:
            os.close(fd)
        try:
            made, _created = safefs.make_dir_at(held.fd, "rootdir", 0o700, owner=(0, 0))
            os.close(made)
        except (OSError, safefs.PathRefused):
            pass


def test_a_job_swapping_and_renaming_directories_during_the_cleanup_changes_nothing_outside(world, job):
    work, dist = job["work"], job["dist"]
    os.chown(work, world.uid, world.gid)  # the job made it root's; the runner user's again, so it can swap in it
    # The job's container (root) renames the tree it made and puts a link to /etc in its place
    # (started first: its shell holds the workspace as its working directory); the runner user
    # swaps its own directories for links to the victims and renames them.
    job["container"].exec_run(["sh", "-c", "while :; do mv dist/tree dist/tree.x && ln -s /etc dist/tree; "
                                            "rm -f dist/tree; mv dist/tree.x dist/tree; done"],
                              user="root", workdir="/__w/%s/%s" % (REPO, REPO), detach=True)
    world.attack(
        exchange(work, world.victim),
        exchange(work + "/" + REPO, world.victim + "/bin"),
        relink(work + "/%s/%s" % (REPO, REPO), world.victim),
        python_move("try:\n    os.rename(move['a'], move['b'])\n    os.rename(move['b'], move['a'])\n"
                    "except OSError:\n    pass\n", a=work + "/_temp", b=work + "/_temp.moved"))

    def cleanup_once():
        report = runners.cleanup_github_runner(job["runner"], budget=5)
        _replant(dist)
        return report

    def met(result):  # refusals (a swapped work folder) and walks that ran both happened
        refused = result.errors.get("RunnerRefused", 0)
        return refused > 0 and result.calls - sum(result.errors.values()) > 0

    result = world.race(cleanup_once, until=met)
    assert result.clean and not result.gave_up, result.describe()


def test_the_github_provider_gives_the_work_folder_owned_by_the_runner_user_and_names_its_containers(
        world, job, client):
    found = runners.github_runner(job["runner"])

    source = "GitHub runner %s" % job["runner"]
    held = _without_held(found["roots"])
    assert found["roots"] == [{"path": job["work"], "source": source, "owner": (world.uid, world.gid)}]
    # the work folder handed over as the descriptor the provider proved: the scope never walks its path again
    assert [os.fstat(h.fd).st_ino for h in held] == [os.stat(job["work"]).st_ino]
    for h in held:
        h.close()
    [label] = found["labels"]
    assert found["labels"][label] == source
    assert [c.id for c in client.containers.list(filters={"label": label})] == [job["container"].id]


def _without_held(roots):
    """Take each provider root's ``held`` descriptor out of it (the roots then compare as data)."""
    return [root.pop("held") for root in roots if "held" in root]


SVC_UNIT = """[Unit]
Description=GitHub Actions Runner (org-app.%(name)s)
After=network.target

[Service]
ExecStart=%(dir)s/runsvc.sh
User=%(user)s
WorkingDirectory=%(dir)s
KillMode=process
KillSignal=SIGTERM
TimeoutStopSec=5min

[Install]
WantedBy=multi-user.target
"""


def test_runners_installed_as_systemd_services_are_found_from_their_units(world):
    first = make_runner(world, name="runner-1")
    elsewhere = world.agent_dir("work-elsewhere")  # an absolute workFolder outside, the runner user's
    second = make_runner(world, work_folder=elsewhere, name="runner-2")
    units = os.path.join(world.base, "system")
    os.mkdir(units)
    for name, directory in (("r1", first), ("r2", second), ("gone", world.base + "/no-runner")):
        with open(os.path.join(units, "actions.runner.org-app.%s.service" % name), "w", encoding="utf-8") as handle:
            handle.write(SVC_UNIT % {"name": name, "dir": directory, "user": world.user})

    found = runners.github_runners_from_systemd(units)

    owner = (world.uid, world.gid)
    for held in _without_held(found["roots"]):
        held.close()
    assert found["roots"] == [{"path": first + "/_work", "source": "GitHub runner %s" % first, "owner": owner},
                              {"path": elsewhere, "source": "GitHub runner %s" % second, "owner": owner}]
    assert sorted(found["labels"]) == sorted([runners.github_label(first), runners.github_label(second)])
    assert [(e["path"], e["op"]) for e in found["errors"]] == [(world.base + "/no-runner", "open runner")]
