# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The tarball as users get it, end to end, on every supported controller.

`ansible-galaxy collection build` makes the release tarball once; each controller (ansible-core
2.19 on .venv, 2.20 and 2.21 on their venvs in .cache/controllers) installs it with its own
`ansible-galaxy collection install --offline` into an empty collections path and runs the
playbooks from there, `ansible-playbook sandboxguard.boundary.audit` and `.remediate`, against
two container hosts of tests/integration/fleet_fixtures.py: one over the docker connection,
one over real SSH, the seeds' attack and a leak planted on the SSH host.

Nothing of the checkout is on any path of those runs: ANSIBLE_COLLECTIONS_PATH is the empty
path the tarball went into, ANSIBLE_HOME and ANSIBLE_CONFIG (blank) are temp files, the
working directory is a temp directory, and the checkout's library (the editable install that
puts python/src on .venv's sys.path) is taken off the controller's sys.path before Ansible
starts. Controller-side plugins can reach the library only through the installed
plugins/module_utils, and the hosts only through what AnsiballZ carries from there.

Phases per controller, each run once: install, audit (exits non-zero, finds exactly the
planted files and leak on exactly that host), remediate (strips them, quarantines the leak,
sets TERMINAL_HOME_MODE), audit again (exits 0, every host clean).

SANDBOXGUARD_INSTALLED_CONTROLLERS ("2.19 2.20 2.21") narrows the controllers; a controller
whose venv is missing fails (tools/run-tests.sh makes them in its venv-X.Y steps).
"""
import json
import os
import re
import subprocess

import pytest
import yaml
from fleet_fixtures import AGENT, AGENT_UID, EXTRA_ROOT, HERMES_HOME, SANDBOXES, Fleet

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FQCN = "sandboxguard.boundary"
PLAY_TIMEOUT = 600
HOME_MODE = "profile"
# Runs a console script of a venv with the checkout's library off sys.path: .venv has the
# library installed editable (a .pth puts python/src on sys.path), which would let a plugin's
# stray `import sandboxguard` succeed from the checkout. argv: CHECKOUT SCRIPT ARGS...
GUARD = (
    "import os, runpy, sys\n"
    "library = os.path.join(sys.argv.pop(1), 'python')\n"
    "sys.path[:] = [p for p in sys.path if p and not (p + os.sep).startswith(library + os.sep)]\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def controller_line(path):
    with open(path) as handle:
        match = re.search(r"^# controller: ansible-core ([0-9.]+) on Python ([0-9.]+)", handle.read(), re.M)
    return match.group(1) if match else None


def known_controllers():
    """{core: venv}: .venv for requirements/dev.txt's core, .cache/controllers/X.Y for the others."""
    found = {controller_line(os.path.join(TOP, "requirements", "dev.txt")): os.path.join(TOP, ".venv")}
    for name in sorted(os.listdir(os.path.join(TOP, "requirements"))):
        if name.startswith("controller-") and name.endswith(".txt"):
            core = controller_line(os.path.join(TOP, "requirements", name))
            found[core] = os.path.join(TOP, ".cache", "controllers", core)
    return found


KNOWN = known_controllers()
CONTROLLERS = os.environ.get("SANDBOXGUARD_INSTALLED_CONTROLLERS", " ".join(KNOWN)).replace(",", " ").split()


def galaxy():
    with open(os.path.join(TOP, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)


class Controller:
    """One ansible-core, with nothing but the installed tarball to find the collection in."""

    def __init__(self, core, venv, root):
        self.core, self.venv, self.root = core, venv, root
        self.collections = os.path.join(root, "collections")
        os.makedirs(self.collections)
        with open(os.path.join(root, "ansible.cfg"), "w") as handle:
            handle.write("[defaults]\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "VIRTUAL_ENV"))}
        path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not p.startswith(TOP + os.sep)]
        env.update(
            PATH=os.pathsep.join([os.path.join(venv, "bin"), *path]),
            ANSIBLE_HOME=os.path.join(root, "home"), ANSIBLE_CONFIG=os.path.join(root, "ansible.cfg"),
            ANSIBLE_COLLECTIONS_PATH=self.collections, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
            ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_HOST_KEY_CHECKING="1", ANSIBLE_PIPELINING="1",
            ANSIBLE_NOCOLOR="1", NO_COLOR="1")
        self.env = env

    def run(self, program, *args, timeout=PLAY_TIMEOUT):
        argv = [os.path.join(self.venv, "bin", "python"), "-c", GUARD, TOP, os.path.join(self.venv, "bin", program),
                *args]
        return subprocess.run(argv, env=self.env, cwd=self.root, capture_output=True, text=True, timeout=timeout,
                              check=False)

    def python(self, code):
        """Run *code* with the controller's Python as its console scripts run."""
        script = os.path.join(self.root, "probe.py")
        with open(script, "w") as handle:
            handle.write(code)
        argv = [os.path.join(self.venv, "bin", "python"), "-c", GUARD, TOP, script]
        return subprocess.run(argv, env=self.env, cwd=self.root, capture_output=True, text=True, timeout=60,
                              check=False)


@pytest.fixture(scope="session")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("tarball")
    proc = subprocess.run([os.path.join(TOP, ".venv", "bin", "ansible-galaxy"), "collection", "build",
                           "--output-path", str(out), TOP], capture_output=True, text=True, cwd=str(out), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [name] = os.listdir(str(out))
    return str(out / name)


@pytest.fixture(scope="module", params=CONTROLLERS)
def controller(request, tarball, tmp_path_factory):
    core = request.param
    if core not in KNOWN:
        pytest.fail("no requirements file names ansible-core %s (known: %s)" % (core, " ".join(KNOWN)))
    venv = KNOWN[core]
    if not os.path.exists(os.path.join(venv, "bin", "ansible-playbook")):
        pytest.fail("no venv for ansible-core %s at %s (tools/run-tests.sh makes it in step venv-%s)" % (
            core, venv, core))
    ctl = Controller(core, venv, str(tmp_path_factory.mktemp("controller-" + core)))
    assert os.listdir(ctl.collections) == []
    proc = ctl.run("ansible-galaxy", "collection", "install", "--offline", "-p", ctl.collections, tarball)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ctl


@pytest.fixture(scope="module")
def fleet(controller, tmp_path_factory):
    """Two hosts: d00 over the docker connection (clean), s01 over SSH with the attack planted."""
    fleet = Fleet(1, 1, prefix="sginst", seed_every=0,
                  workdir=str(tmp_path_factory.mktemp("fleet-" + controller.core)))
    fleet.hosts[1].seeded = True
    fleet.start()
    yield fleet
    fleet.stop()


def playbook(controller, fleet, name, variables):
    """ansible-playbook sandboxguard.boundary.NAME from the installed collection: (rc, json output)."""
    extra = os.path.join(fleet.dir, "%s-%d-vars.json" % (name, len(os.listdir(fleet.dir))))
    with open(extra, "w") as handle:
        json.dump(variables, handle)
    proc = controller.run("ansible-playbook", "%s.%s" % (FQCN, name), "-i", fleet.inventory(), "-e", "@" + extra)
    with open(os.path.join(fleet.dir, name + ".log"), "a") as log:
        log.write(proc.stdout + proc.stderr)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        pytest.fail("ansible-playbook %s printed no JSON (rc %d): %s %s" % (
            name, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))


def play_vars(report_dir=None, **extra):
    variables = {"sandboxguard_paths": [SANDBOXES, EXTRA_ROOT], "sandboxguard_hermes_homes": [HERMES_HOME]}
    if report_dir:
        variables["sandboxguard_report_dir"] = report_dir
    return dict(variables, **extra)


def report(report_dir):
    with open(os.path.join(report_dir, "boundary-audit.json")) as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def first_audit(controller, fleet):
    report_dir = os.path.join(fleet.dir, "reports-1")
    # the checks these hosts give inputs for: the others would be not checked (no agent user, no mode asked)
    rc, out = playbook(controller, fleet, "audit", play_vars(report_dir, sandboxguard_checks="privileged_files,leaks"))
    return rc, out, report_dir


@pytest.fixture(scope="module")
def remediated(controller, fleet, first_audit):
    rc, out = playbook(controller, fleet, "remediate", play_vars(sandboxguard_owner=AGENT,
                                                                 sandboxguard_home_mode=HOME_MODE))
    return rc, out, {h.name: h.inspect() for h in fleet.hosts}


@pytest.fixture(scope="module")
def final_audit(controller, fleet, remediated):
    report_dir = os.path.join(fleet.dir, "reports-2")
    rc, out = playbook(controller, fleet, "audit", play_vars(report_dir, sandboxguard_home_mode=HOME_MODE,
                                                             sandboxguard_checks="privileged_files,home_mode,leaks"))
    return rc, out, report_dir


def test_the_controller_sees_only_the_installed_collection(controller):
    proc = controller.run("ansible-galaxy", "collection", "list", FQCN, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    found = {path: names for path, names in json.loads(proc.stdout).items() if FQCN in names}
    assert found == {os.path.join(controller.collections, "ansible_collections"): {
        FQCN: {"version": str(galaxy()["version"])}}}


def test_the_checkout_s_library_is_not_importable_on_the_controller(controller):
    proc = controller.python(
        "import importlib, sys\n"
        "try:\n"
        "    import sandboxguard\n"
        "except ImportError:\n"
        "    print('no top-level library')\n"
        "else:\n"
        "    sys.exit('importable from ' + sandboxguard.__file__)\n")
    assert (proc.returncode, proc.stdout.strip()) == (0, "no top-level library"), proc.stderr


def test_the_installed_copy_carries_the_library_as_module_utils_and_the_cli_for_library_install(controller):
    """The modules' library is the module_utils copy; the CLI tree the sandbox_sweep role installs
    on hosts with library_install comes from the installed python/src/sandboxguard_cli."""
    installed = os.path.join(controller.collections, "ansible_collections", "sandboxguard", "boundary")

    def py_files(*parts):  # packages included (sandboxguard/_bwrap/...)
        top = os.path.join(*parts)
        return sorted(os.path.relpath(os.path.join(here, n), top) for here, dirs, names in os.walk(top)
                      if "__pycache__" not in here.split(os.sep) for n in names if n.endswith(".py"))

    assert py_files(installed, "plugins", "module_utils", "sandboxguard") == py_files(TOP, "python", "src",
                                                                                   "sandboxguard")
    assert py_files(installed, "python", "src", "sandboxguard_cli") == py_files(TOP, "python", "src",
                                                                             "sandboxguard_cli")


def test_audit_from_the_installed_collection_finds_exactly_what_was_planted(fleet, first_audit):
    rc, out, report_dir = first_audit
    assert rc != 0, "an audit with findings must fail the run"
    assert not {h: s for h, s in out["stats"].items() if s.get("unreachable")}
    data = report(report_dir)
    assert {n for n, h in data["hosts"].items() if h["status"] == "findings"} == fleet.seeded
    assert {n for n, h in data["hosts"].items() if h["status"] == "clean"} == fleet.names - fleet.seeded
    for host in fleet.hosts:
        checks = data["hosts"][host.name]["checks"]
        ws = "%s/task-%d/workspace" % (SANDBOXES, host.index)
        files = sorted(f["path"] for f in checks["privileged_files"]["findings"])
        leaks = sorted(f["path"] for f in checks["leaks"]["findings"])
        if host.seeded:
            assert files == [ws + "/.cache/rootsh", ws + "/ping"], host.name
            assert leaks == ["%s/scripts/keepalive.sh" % HERMES_HOME, "/var/spool/cron/crontabs/" + AGENT], host.name
        else:
            assert (files, leaks) == ([], []), host.name
    assert {h: s["changed"] for h, s in out["stats"].items() if s["changed"]} == {}


def test_remediate_from_the_installed_collection_fixes_what_the_audit_found(fleet, remediated):
    rc, out, state = remediated
    assert rc == 0, {h: s for h, s in out["stats"].items() if s.get("unreachable") or s.get("failures")}
    for host in fleet.hosts:
        files = state[host.name]
        if host.seeded:
            assert files[".cache/rootsh"]["mode"] == "0o755", host.name
            assert files[".cache/rootsh"]["uid"] == AGENT_UID, host.name
            assert files["ping"]["caps"] is None, host.name
            assert (files["leak_script"], files["cron_jobs"]) == (False, []), host.name
        assert files["/usr/bin/passwd"]["mode"] == "0o4755", host.name  # outside the scope: untouched
    assert {h for h, s in out["stats"].items() if s["changed"]} >= fleet.seeded


def test_audit_after_remediate_is_clean(fleet, final_audit):
    rc, out, report_dir = final_audit
    assert rc == 0, {h: s for h, s in out["stats"].items() if s.get("unreachable") or s.get("failures")}
    data = report(report_dir)
    assert {n: h["status"] for n, h in data["hosts"].items()} == {n: "clean" for n in fleet.names}
    assert data["hosts"][sorted(fleet.seeded)[0]]["checks"]["home_mode"]["status"] == "clean"
