# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The audit's runtime check against real containers (issue 28): one agent container per risky
option (a persistent Hermes sandbox: its task's home and workspace bound), each named with its
rule; a Hermes container started as Hermes starts it is clean, and a Hermes container of another
home (all its binds elsewhere) is not this home's.

Containers are Hermes-labelled (hermes-agent=1) and named sgp28rt-<tag>-...; those this
machine cannot start (--privileged, --cap-add ALL: its bounding set lacks CAP_SYS_RESOURCE,
FACTS.md) are created and left stopped: Hermes starts an exited container of its task again,
so the check reads stopped ones too.
"""
import os
import subprocess
import uuid

import pytest
from sandboxguard._fleet import audit, runtime_host
from sandboxguard._prevent import dockerargs
from sandboxguard._privileged import scope

pytestmark = [pytest.mark.docker, pytest.mark.root, pytest.mark.slow]

IMAGE = "sandboxguard/debian:12"
HERMES = [*dockerargs.HERMES_SECURITY_ARGS]
RISKY = {
    "privileged": (["--privileged"], "privileged", False),
    "cap-sys-admin": (["--cap-add", "SYS_ADMIN"], "cap-add", True),
    "cap-all": (["--cap-add", "ALL"], "cap-add", False),
    "cap-setfcap": (["--cap-add", "SETFCAP"], "cap-add", True),
    "cap-mknod": (["--cap-add", "MKNOD"], "cap-add", True),
    "cap-dac-read-search": (["--cap-add", "DAC_READ_SEARCH"], "cap-add", True),
    "seccomp-unconfined": (["--security-opt", "seccomp=unconfined"], "seccomp-unconfined", True),
    "apparmor-unconfined": (["--security-opt", "apparmor=unconfined"], "apparmor-unconfined", True),
    "pid-host": (["--pid", "host"], "host-namespace", True),
    "userns-host": (["--userns", "host"], "host-namespace", True),
    "network-host": (["--network", "host"], "host-namespace", True),
    "docker-sock": (["-v", "/var/run/docker.sock:/var/run/docker.sock"], "engine-socket", True),
    "rw-outside": (["-v", "{outside}:/data"], "rw-bind-outside-roots", True),
}


def check(homes, docker="auto"):
    """The runtime check over the scope of ``homes`` as audit_host derives it (once, the
    engines asked once)."""
    with scope.derive(audit.scope_request(hermes_homes=homes, docker=docker)) as found:
        return runtime_host.check_runtime(found)


def docker(*args, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=120)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runtime")
    home = tmp / ".hermes"
    task = home / "sandboxes" / "docker" / "t1"
    for sub in ("home", "workspace"):
        (task / sub).mkdir(parents=True)
    (tmp / "outside").mkdir()
    tag = uuid.uuid4().hex[:8]
    names = {}
    try:
        for key, (args, _rule, runs) in RISKY.items():
            name = "sgp28rt-%s-%s" % (tag, key)
            args = [a.format(outside=tmp / "outside") for a in args]
            verb = ["run", "-d"] if runs else ["create"]
            network = [] if "--network" in args else ["--network", "none"]
            # as Hermes starts a persistent sandbox: the task's home and workspace bound
            persist = ["-v", "%s:/root" % (task / "home"), "-v", "%s:/workspace" % (task / "workspace")]
            docker(*verb, "--name", name, "--label", "hermes-agent=1", *network, *HERMES, *persist, *args, IMAGE,
                   "sleep", "infinity")
            names[key] = name
        clean = "sgp28rt-%s-hermes" % tag
        docker("run", "-d", "--name", clean, "--label", "hermes-agent=1", "--network", "none", *HERMES,
               "-v", "%s:/root" % (task / "home"), "-v", "%s:/workspace" % (task / "workspace"), IMAGE,
               "sleep", "infinity")
        names["clean"] = clean
        result = check([str(home)], docker="always")
        names["home"] = str(home)
        yield result, names
    finally:
        for key, name in names.items():
            if key != "home":
                docker("rm", "-f", name, check=False)


def findings_of(result, name):
    return [f for f in result["findings"] if f["where"] == "container %s" % name]


@pytest.mark.parametrize("key", sorted(RISKY))
def test_each_risky_option_is_named_with_its_rule(engine, key):
    result, names = engine
    rules = {f["rule"] for f in findings_of(result, names[key])}
    assert RISKY[key][1] in rules, (key, rules)
    assert result["status"] == "findings"


def test_each_finding_has_a_severity_a_fix_and_the_cis_id_where_one_applies(engine):
    result, _names = engine
    by_rule = {f["rule"]: f for f in result["findings"]}
    assert by_rule["privileged"]["cis"] == "5.4" and by_rule["privileged"]["severity"] == "critical"
    assert by_rule["engine-socket"]["cis"] == "5.31" and by_rule["seccomp-unconfined"]["cis"] == "5.21"
    assert all(f["fix"] and f["severity"] for f in result["findings"])


def test_a_hermes_container_started_as_hermes_starts_it_is_clean(engine):
    result, names = engine
    assert findings_of(result, names["clean"]) == []
    listed = {c["name"] for c in result["containers"]}
    assert {n for k, n in names.items() if k != "home"} <= listed


def test_a_hermes_container_of_another_home_is_not_read(tmp_path):
    other = tmp_path / "other" / ".hermes" / "sandboxes" / "docker" / "t9" / "workspace"
    other.mkdir(parents=True)
    name = "sgp28rt-%s-other" % uuid.uuid4().hex[:8]
    try:
        docker("create", "--name", name, "--label", "hermes-agent=1", "--network", "none", "--privileged",
               "-v", "%s:/workspace" % other, IMAGE, "sleep", "infinity")
        mine = tmp_path / "mine" / ".hermes"
        (mine / "sandboxes" / "docker").mkdir(parents=True)
        result = check([str(mine)], docker="always")
        assert name not in {c["name"] for c in result["containers"]}
        theirs = check([str(tmp_path / "other" / ".hermes")], docker="always")
        assert "privileged" in {f["rule"] for f in theirs["findings"] if f["where"] == "container %s" % name}
    finally:
        docker("rm", "-f", name, check=False)


def test_the_audit_runs_runtime_as_its_fifth_check(engine):
    _result, names = engine
    record = audit.audit_host(checks=["runtime"], hermes_homes=[names["home"]], docker="always")
    assert "runtime" in record["checks"] and record["checks"]["runtime"]["status"] == "findings"
    assert record["checks"]["privileged_files"]["status"] == "skipped"


def test_nothing_to_read_on_the_engine_is_never_clean(tmp_path):
    result = check([str(tmp_path / "no-home")], docker="never")
    assert result["status"] != "clean" and "nothing to read" in result["reason"]
    assert os.path.isdir(str(tmp_path))
