# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Every module with names an agent picks (issue 19 item 5), on each controller.

ansible-core 2.19 and later refuse a module result holding one string that is not UTF-8
(what os.fsdecode makes of a file name such as b"bad\\xff\\xfe"): the whole task fails and
nothing of the result reaches the play. Here each module meets names with bytes that are
not UTF-8, control characters (ESC sequences, BEL), newlines, markup (``<script>``,
``&amp;``) and a CDATA terminator ``]]>``: in file and directory names, cron lines, user
unit names and config values. Each result must come back whole and valid, every name in
it exact (``<key>_b64`` when it is not UTF-8, text.from_result), every warning and message
one line.
"""
import base64
import json
import os
import pwd
import shutil
import subprocess
import sys
import uuid

import pytest
from docker_sdk import sdk_client
from sandboxguard import caps as capsmod
from sandboxguard._core.text import escape, from_result

pytestmark = [pytest.mark.controller, pytest.mark.root]

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
IMAGE = "sandboxguard/debian:12"
PREFIX = "sgnames%d" % os.getpid()
# The hostile names: bytes that are not UTF-8, ESC and BEL, a newline, markup, a CDATA terminator.
NAMES = [b"bad\xff\xfe", b"esc\x1b[31mred\x07bell", b"two\nlines", b"<script>alert(1)<!--&amp;",
         b"cdata]]>end"]
VALID_NAMES = [n for n in NAMES if n != b"bad\xff\xfe"]  # what a module argument (text) can carry


def run_module(module, args, *flags, timeout=180):
    """One module (or action plugin) through the running venv's ansible, as test_strip_modules does."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-m", "sandboxguard.boundary." + module,
                           "-a", json.dumps(args), *flags], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        pytest.fail("ansible printed no JSON (rc %d): %s %s" % (proc.returncode, proc.stdout, proc.stderr))
    result = out["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert "Refusing to deserialize" not in str(result.get("msg", "")), result["msg"]
    assert "module_stderr" not in result, result.get("module_stderr")
    for line in [*result.get("warnings", []), result.get("msg") or ""]:
        assert "\n" not in line and "\x1b" not in line and "\x07" not in line, line
    return result


def names_under(value, key="path"):
    """Every `key` in a result, as the bytes it names (text.from_result, then os.fsencode)."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key and isinstance(v, str):
                    found.append(os.fsencode(v))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(from_result(value))
    return found


def b64(raw):
    return base64.b64encode(raw).decode()


def write(path, data=b"x", mode=None):
    with open(path, "wb") as handle:
        handle.write(data)
    if mode is not None:
        os.chmod(path, mode)


@pytest.fixture
def base(tmp_path):
    path = os.path.join(os.fsencode(str(tmp_path)), PREFIX.encode())
    os.mkdir(path)
    return path


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A throwaway unprivileged account whose home holds the leaks (removed afterwards)."""
    name = "%s-%s" % (PREFIX, uuid.uuid4().hex[:4])
    home = str(tmp_path_factory.mktemp(PREFIX) / "home")
    subprocess.run(["useradd", "--home-dir", home, "--create-home", "--shell", "/bin/sh", name], check=True)
    try:
        entry = pwd.getpwnam(name)
        yield {"name": name, "home": os.fsencode(home), "uid": entry.pw_uid, "gid": entry.pw_gid}
    finally:
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)


# --- the walk modules -----------------------------------------------------------------------

@pytest.fixture
def tree(base):
    """A sandbox with a setuid file and a file with capabilities under each hostile name, in a
    directory with a hostile name as well."""
    setuid, capped = [], []
    for name in NAMES:
        folder = os.path.join(base, b"dir-" + name)
        os.mkdir(folder)
        for path in (os.path.join(base, name), os.path.join(folder, name)):
            write(path, mode=0o4755)
            setuid.append(path)
        path = os.path.join(folder, b"caps-" + name)
        write(path)
        os.setxattr(path, capsmod.XATTR_NAME, capsmod.encode_vfs_cap(permitted={13}, effective=True))
        capped.append(path)
    return {"root": base, "setuid": setuid, "caps": capped}


def test_setid_strip_lists_strips_and_warns_with_every_hostile_name(tree):
    root = os.fsdecode(tree["root"])
    check = run_module("setid_strip", {"paths": [root]}, "--check", "--diff")
    assert check["changed"] is True and not check.get("failed"), check.get("msg")
    assert sorted(names_under(check["files"])) == sorted(tree["setuid"])
    bad = [e for e in check["files"] if "path_b64" in e]
    assert len(bad) == 2 and all("\\xff\\xfe" in e["path"] for e in bad)
    assert check["diff"]["before"].count("\n") == len(tree["setuid"])  # one diff line per file
    blocked = tree["setuid"][0]
    subprocess.run(["chattr", "+i", os.fsdecode(blocked)], check=True)
    try:
        done = run_module("setid_strip", {"paths": [root], "fail_on_errors": False})
    finally:
        subprocess.run(["chattr", "-i", os.fsdecode(blocked)], check=True)
    assert done["changed"] is True and not done.get("failed")
    assert [w for w in done["warnings"] if escape(os.fsdecode(blocked)) in w]  # the name, escaped, one line
    assert names_under(done["errors"]) == [blocked]
    for path in tree["setuid"][1:]:
        assert os.stat(path).st_mode & 0o7777 == 0o755


def test_file_caps_query_and_clear_with_hostile_names(tree):
    root = os.fsdecode(tree["root"])
    query = run_module("file_caps", {"paths": [root], "state": "query"})
    assert sorted(names_under(query["files"])) == sorted(tree["caps"])
    assert {e["caps_before"] for e in query["files"]} == {"cap_net_raw=ep"}
    cleared = run_module("file_caps", {"paths": [root]})
    assert cleared["changed"] is True and sorted(names_under(cleared["files"])) == sorted(tree["caps"])
    assert all(capsmod.XATTR_NAME not in os.listxattr(p) for p in tree["caps"])


def test_a_root_that_is_not_utf8_comes_back_as_bytes_and_walks_again(base):
    root = os.path.join(base, b"task-\xff\n<b>]]>")
    os.mkdir(root)
    write(os.path.join(root, b"sh"), mode=0o4755)
    query = run_module("setid_strip", {"paths_b64": [b64(root)]}, "--check")
    assert [base64.b64decode(c) for c in query["roots_b64"]] == [root]
    done = run_module("setid_strip", {"paths_b64": query["roots_b64"]})
    assert done["changed"] and os.stat(os.path.join(root, b"sh")).st_mode & 0o7777 == 0o755


# --- Docker sandboxes --------------------------------------------------------------------------

TASK = "t1 <script>&amp;]]>\x1b[2J\x07"  # a task directory name the agent picked (valid UTF-8)
PROFILE = b"p\xff\xfe"                     # a directory under profiles/ that is no profile (not even UTF-8)


@pytest.fixture
def engine_sandbox(base):
    """A Hermes home whose Docker sandbox (a stopped container's bind mount) holds what the
    container wrote there: a setuid shell and setuid files with every hostile name."""
    docker = pytest.importorskip("docker")

    client = sdk_client()
    home = os.path.join(base, b"hermes")
    ws = os.path.join(home, b"sandboxes", b"docker", TASK.encode(), b"workspace")
    os.makedirs(ws)
    os.makedirs(os.path.join(home, b"profiles", PROFILE, b"sandboxes", b"docker"))
    os.chown(os.path.join(home, b"sandboxes"), 1000, 1000)
    script = "cp /bin/true /w/rootshell && chmod 4755 /w/rootshell && for n in \"$@\"; do " \
             "printf x > \"/w/$n\" && chmod 4755 \"/w/$n\"; done"
    # the names as the shell's arguments; the byte that is not UTF-8 written by printf
    container = client.containers.run(
        IMAGE, ["sh", "-c", script + "; printf x > \"/w/bad$(printf '\\377\\376')\"; "
                "chmod 4755 /w/bad*", "sh"] + [n.decode() for n in VALID_NAMES],
        detach=True, network_mode="none", name="%s-%s" % (PREFIX, uuid.uuid4().hex[:6]),
        mounts=[docker.types.Mount("/w", os.fsdecode(ws), type="bind")])
    try:
        assert container.wait(timeout=60)["StatusCode"] == 0, container.logs()
        yield {"home": os.fsdecode(home), "ws": ws, "name": container.name,
               "profile_root": os.path.join(home, b"profiles", PROFILE, b"sandboxes", b"docker")}
    finally:
        container.remove(force=True)


@pytest.mark.docker
def test_sandbox_mounts_info_and_sweep_with_hostile_names(engine_sandbox):
    ws, home = engine_sandbox["ws"], engine_sandbox["home"]
    expected = sorted([os.path.join(ws, b"rootshell"), os.path.join(ws, b"bad\xff\xfe")] +
                      [os.path.join(ws, n) for n in VALID_NAMES])
    info = run_module("sandbox_mounts_info", {"hermes_home": [home], "containers": [engine_sandbox["name"]]})
    assert info["changed"] is False and not info.get("failed"), info.get("msg")
    [container] = info["containers"]
    assert [os.fsencode(m["source"]) for m in container["mounts"]] == [ws]
    assert [os.fsencode(t["realpath"]) for t in from_result(info)["targets"]] == [ws]
    # a name under profiles/ that is no Hermes profile id (sandboxes.is_profile_name) gives no root
    assert "roots_b64" not in info and info["roots"] == [os.path.join(home, "sandboxes", "docker")]
    check = run_module("sandbox_sweep", {"hermes_home": [home], "containers": [engine_sandbox["name"]]}, "--check")
    assert check["changed"] is True and not check.get("failed"), check.get("msg")
    [sandbox] = from_result(check)["sandboxes"]
    assert os.fsencode(sandbox["path"]) == ws
    setid = next(s for s in sandbox["steps"] if s["step"] == "setid")
    assert sorted(os.fsencode(f["path"]) for f in setid["report"]["files"]) == expected
    swept = run_module("sandbox_sweep", {"hermes_home": [home], "containers": [engine_sandbox["name"]]})
    assert swept["changed"] is True and not swept.get("failed"), swept.get("msg")
    [sandbox] = from_result(swept)["sandboxes"]
    chowned = next(s for s in sandbox["steps"] if s["step"] == "chown")  # chown(2) drops the setid bits too
    assert set(expected) <= {os.fsencode(f["path"]) for f in chowned["report"]["files"]}
    for path in expected:
        st = os.lstat(path)
        assert st.st_mode & 0o7777 == 0o755 and st.st_uid == 1000, path


# --- Hermes homes: terminal_home, hermes_config, audit_info --------------------------------------

CONFIG = (b"# operator's comment \xff\n"
          b"terminal:\n  backend: \"loc\xffal \x1b[2J\x07 <script>]]>\"\n  home_mode: real\n")
ENV_FILE = b"TERMINAL_HOME_MODE=real\nSECRET=\xfe\x1b]0;title\x07 <b>&amp;]]>\n"
PROFILES = [b"work", b"lab-2"]
# Directories under profiles/ whose names are no Hermes profile id: never configured, never a root.
NOT_PROFILES = [b"p\xff\xfe", b"p\nforged", b"p<script>&amp;]]>", b"Work", b".deleted"]


@pytest.fixture
def hermes_home(base):
    home = os.path.join(base, b"hermes-home")
    for folder in [home] + [os.path.join(home, b"profiles", p) for p in PROFILES + NOT_PROFILES]:
        os.makedirs(folder)
        write(os.path.join(folder, b"config.yaml"), CONFIG)
        write(os.path.join(folder, b".env"), ENV_FILE)
    return home


def test_terminal_home_edits_configs_with_hostile_values_and_leaves_hostile_names_that_are_no_profile(
        hermes_home):
    args = {"hermes_home": os.fsdecode(hermes_home), "mode": "profile", "where": "both"}
    check = run_module("terminal_home", args, "--check", "--diff")
    assert check["changed"] is True and not check.get("failed"), check.get("msg")
    homes = sorted(os.fsencode(h["hermes_home"]) for h in from_result(check)["homes"])
    assert homes == sorted([hermes_home] + [os.path.join(hermes_home, b"profiles", p) for p in PROFILES])
    shown = json.dumps(check["diff"], ensure_ascii=False)
    assert "\x1b" not in shown and "\x07" not in shown and "loc\\\\xffal \\\\x1b[2J" in shown  # one_line per line
    done = run_module("terminal_home", args)
    assert done["changed"] is True and not done.get("failed"), done.get("msg")
    for folder in [hermes_home] + [os.path.join(hermes_home, b"profiles", p) for p in PROFILES]:
        with open(os.path.join(folder, b"config.yaml"), "rb") as handle:
            text = handle.read()
        assert b"home_mode: profile" in text and b"loc\xffal \x1b[2J\x07 <script>]]>" in text  # bytes kept
        with open(os.path.join(folder, b".env"), "rb") as handle:
            env = handle.read()
        assert b"TERMINAL_HOME_MODE=profile\n" in env and b"SECRET=\xfe\x1b]0;title\x07 <b>&amp;]]>\n" in env
    for folder in [os.path.join(hermes_home, b"profiles", p) for p in NOT_PROFILES]:
        with open(os.path.join(folder, b"config.yaml"), "rb") as handle:
            assert handle.read() == CONFIG, folder
    again = run_module("terminal_home", args)
    assert again["changed"] is False


def test_hermes_config_reports_a_previous_value_that_is_not_utf8(base):
    folder = os.path.join(base, b"h <script>&amp;]]>\x1b\x07\nx")
    os.mkdir(folder)
    path = os.path.join(folder, b"config.yaml")
    write(path, CONFIG)
    args = {"path": os.fsdecode(path), "settings": {"terminal.backend": "docker <b>]]>\x1b",
                                                    "terminal.timeout": 30}}
    done = run_module("hermes_config", args, "--diff")
    assert done["changed"] is True and not done.get("failed"), done.get("msg")
    assert os.fsencode(done["path"]) == path  # valid UTF-8: as it is, newline and all
    previous = from_result(done)["previous"]
    assert os.fsencode(previous["terminal.backend"]) == b"loc\xffal \x1b[2J\x07 <script>]]>"
    assert "terminal.backend_b64" in done["previous"]
    with open(path, "rb") as handle:
        text = handle.read()
    assert b"# operator's comment \xff\n" in text and b"timeout: 30" in text


def test_audit_info_reports_findings_beside_hostile_names(base, hermes_home, user):
    ws = os.path.join(hermes_home, b"sandboxes", b"docker", b"t\xff", b"workspace")
    os.makedirs(ws)
    write(os.path.join(ws, b"rootshell"), open("/bin/true", "rb").read(), 0o4755)
    write(os.path.join(ws, b"bad\xff\xfe"), mode=0o4755)
    profile_ws = os.path.join(hermes_home, b"profiles", PROFILES[0], b"sandboxes", b"docker", b"t", b"w")
    os.makedirs(profile_ws)
    write(os.path.join(profile_ws, b"<script>]]>\n"), mode=0o2755)
    spool = os.path.join(base, b"spool")
    os.mkdir(spool)
    write(os.path.join(spool, user["name"].encode()), b"* * * * * /tmp/\xff\x1b]]> <b>\n")
    result = run_module("audit_info", {
        "checks": ["privileged_files", "home_mode", "leaks"], "hermes_home": [os.fsdecode(hermes_home)],
        "docker": "never", "home_mode": "profile", "leak_users": [user["name"]],
        "leak_spool_dir": os.fsdecode(spool), "leak_tmp_dir": os.fsdecode(base)})
    assert result["status"] == "findings", result["record"]
    checks = result["record"]["checks"]
    priv = checks["privileged_files"]
    assert sorted(names_under(priv["findings"])) == sorted([os.path.join(ws, b"rootshell"),
                                                            os.path.join(ws, b"bad\xff\xfe"),
                                                            os.path.join(profile_ws, b"<script>]]>\n")])
    assert os.path.join(hermes_home, b"profiles", PROFILES[0], b"sandboxes", b"docker") in [
        os.fsencode(r) for r in from_result(priv)["roots"]]
    assert checks["home_mode"]["status"] == "findings"
    assert os.path.join(hermes_home, b"profiles", PROFILES[0]) in names_under(checks["home_mode"]["findings"])
    [job] = from_result(checks["leaks"])["findings"]
    assert job["kind"] == "cron_job" and os.fsencode(job["entry"]) == b"* * * * * /tmp/\xff\x1b]]> <b>"



def test_remediate_fixes_and_reports_every_hostile_name(base, hermes_home, user):
    """The one remediate call per host: each fix's section lists the hostile names exactly
    (lossless through path_b64), and the files are fixed."""
    ws = os.path.join(hermes_home, b"sandboxes", b"docker", b"t\xff", b"workspace")
    os.makedirs(ws)
    planted = [os.path.join(ws, b"bad\xff\xfe"), os.path.join(ws, b"<script>]]>\n"), os.path.join(ws, b"two\nlines")]
    for path in planted:
        write(path, mode=0o4755)
    spool = os.path.join(base, b"spool")
    os.mkdir(spool)
    write(os.path.join(spool, user["name"].encode()), b"* * * * * /tmp/\xff\x1b]]> <b>\n")
    args = {"fixes": ["setid", "leaks"], "hermes_home": [os.fsdecode(hermes_home)], "docker": "never",
            "leak_users": [user["name"]], "leak_spool_dir": os.fsdecode(spool), "leak_tmp_dir": os.fsdecode(base),
            "quarantine_dir": os.fsdecode(os.path.join(base, b"quarantine"))}
    check = run_module("remediate", args, "--check")
    assert check["fixes"]["setid"]["status"] == "changed", check["fixes"]["setid"]
    assert sorted(names_under(check["fixes"]["setid"]["files"])) == sorted(planted)
    assert all(os.lstat(p).st_mode & 0o4000 for p in planted)  # check mode changed nothing
    result = run_module("remediate", args)
    assert result["fixes"]["setid"]["status"] == "changed", result["fixes"]["setid"]
    assert sorted(names_under(result["fixes"]["setid"]["files"])) == sorted(planted)
    assert not any(os.lstat(p).st_mode & 0o6000 for p in planted)
    assert result["fixes"]["leaks"]["status"] == "changed", result["fixes"]["leaks"]

# --- leaks ---------------------------------------------------------------------------------

@pytest.fixture
def leaks_planted(base, user):
    """Cron lines, scripts, user units and run directories with hostile names and contents."""
    spool = os.path.join(base, b"spool")
    tmp = os.path.join(base, b"tmp")
    runtime = os.path.join(base, b"run-user")
    for folder in (spool, tmp, runtime):
        os.mkdir(folder)
    jobs = [b"* * * * * /tmp/x\xff\xfe", b"*/5 * * * * echo \"\x1b]0;pwn\x07 <script>&amp;]]>\"", b"@daily true"]
    write(os.path.join(spool, user["name"].encode()), b"".join(j + b"\n" for j in jobs))
    home = user["home"]
    for folder in (b".hermes", b".config"):  # what an earlier test planted (the account is the module's)
        shutil.rmtree(os.path.join(home, folder), ignore_errors=True)
    scripts = os.path.join(home, b".hermes", b"scripts")
    units = os.path.join(home, b".config", b"systemd", b"user")
    os.makedirs(scripts)
    os.makedirs(units)
    planted = []
    for name in NAMES:
        planted.append(os.path.join(scripts, name + b".sh"))
        write(planted[-1])
        planted.append(os.path.join(units, name + b".service"))
        write(planted[-1], b"[Service]\nExecStart=/bin/true\n")
        planted.append(os.path.join(tmp, b"ab-" + name))
        os.mkdir(planted[-1])
    for path in (os.path.join(home, b".hermes"), scripts, os.path.join(home, b".config"), units):
        os.chown(path, user["uid"], user["gid"])
    return {"spool": spool, "tmp": tmp, "runtime": runtime, "jobs": jobs, "planted": planted,
            "args": {"users": [user["name"]], "spool_dir": os.fsdecode(spool), "tmp_dir": os.fsdecode(tmp),
                     "at_spool_dirs": [], "runtime_root": os.fsdecode(runtime)}}


def test_leaks_info_lists_every_hostile_leak_exactly(leaks_planted):
    result = run_module("leaks_info", leaks_planted["args"])
    assert not result.get("failed"), result.get("msg")
    findings = from_result(result)["findings"]
    entries = sorted(os.fsencode(f["entry"]) for f in findings if f["kind"] == "cron_job")
    assert entries == sorted(leaks_planted["jobs"])
    assert sorted(os.fsencode(f["path"]) for f in findings if f["kind"] != "cron_job") == \
        sorted(leaks_planted["planted"])
    units = [f for f in findings if f["kind"] == "user_unit"]
    assert sorted(os.fsencode(f["unit"]) for f in units) == sorted(n + b".service" for n in NAMES)
    assert all("\n" not in f["reason"] and "\x1b" not in f["reason"] for f in result["findings"])


def test_leaks_remove_quarantines_every_hostile_leak(leaks_planted, base):
    args = dict(leaks_planted["args"], quarantine_dir=os.fsdecode(os.path.join(base, b"quarantine")))
    check = run_module("leaks_remove", args, "--check")
    assert check["changed"] is True and not check.get("failed"), check.get("msg")
    done = run_module("leaks_remove", args)
    assert done["changed"] is True and not done.get("failed"), done.get("msg")
    assert done.get("warnings", []) == []  # the job line that is not UTF-8 matched: removed, not kept
    removed = from_result(done)["removed"]
    assert sorted(os.fsencode(r["entry"]) for r in removed if r["kind"] == "cron_job") == \
        sorted(leaks_planted["jobs"])
    assert sorted(os.fsencode(r["path"]) for r in removed if r["kind"] != "cron_job") == \
        sorted(leaks_planted["planted"])
    with open(os.path.join(leaks_planted["spool"], args["users"][0].encode()), "rb") as handle:
        assert not [line for line in handle.read().splitlines() if line and not line.startswith(b"#")]
    assert not any(os.path.lexists(p) for p in leaks_planted["planted"])
    for item in removed:
        if item["kind"] != "cron_job":
            assert os.path.lexists(os.fsencode(item["quarantine"])), item


# --- the rest of the modules --------------------------------------------------------------------

@pytest.fixture
def mount_point():
    """A sandbox root with a hostile name, and beside it a directory whose name is not UTF-8
    (mounted on the root by a test: mountinfo then shows that name as the mount's root)."""
    # Below /var/tmp with 0755 parents, as test_nosuid_mount's roots are.
    top = "/var/tmp/%s-%s" % (PREFIX, uuid.uuid4().hex[:6])
    path = top + "/h <script>&amp;]]>\x1b\x07\nx/sandboxes/docker"
    source = os.path.join(os.fsencode(top), b"src\xff\xfe\n<b>")
    os.makedirs(path)
    os.makedirs(source)
    yield {"path": path, "source": source}
    for _ in range(4):
        if subprocess.run(["umount", path], capture_output=True, check=False).returncode != 0:
            break
    shutil.rmtree(top, ignore_errors=True)


def test_nosuid_mount_mounts_and_unmounts_a_hostile_path(mount_point):
    path = mount_point["path"]
    mounted = run_module("nosuid_mount", {"path": [path], "persist": "none"}, "--diff")
    assert mounted["changed"] is True and not mounted.get("failed"), mounted.get("msg")
    assert [p["path"] for p in mounted["paths"]] == [path]
    again = run_module("nosuid_mount", {"path": [path], "persist": "none"})
    assert again["changed"] is False
    gone = run_module("nosuid_mount", {"path": [path], "persist": "none", "state": "unmounted"})
    assert gone["changed"] is True and not gone.get("failed"), gone.get("msg")


def test_nosuid_mount_describes_a_mount_whose_root_is_not_utf8(mount_point):
    path = mount_point["path"]
    subprocess.run([b"mount", b"--bind", mount_point["source"], os.fsencode(path)], check=True)
    shown = escape(os.fsdecode(mount_point["source"]))
    left = run_module("nosuid_mount", {"path": [path], "persist": "none", "state": "unmounted"})
    assert left["changed"] is False and not left.get("failed"), left.get("msg")
    assert [w for w in left["warnings"] if shown in w and "left mounted" in w]  # one line, the name escaped
    fixed = run_module("nosuid_mount", {"path": [path], "persist": "none"})
    assert fixed["changed"] is True and not fixed.get("failed"), fixed.get("msg")
    [entry] = from_result(fixed)["paths"]
    assert os.fsencode(entry["path"]) == os.fsencode(path)  # exact, through path_b64 where needed
    assert shown in entry["before"] and "\n" not in entry["before"]  # a line for people: names escaped


def test_library_install_removes_stale_files_with_hostile_names(base):
    dest = os.path.join(base, b"lib")
    os.makedirs(os.path.join(dest, b"pkg"))
    stale = [os.path.join(dest, b"pkg", n + b".py") for n in NAMES]
    for path in stale:
        write(path)
    files = {"pkg/__init__.py": "", "pkg/tool.py": "# <script>&amp;]]>\x1b\x07\n"}
    check = run_module("library_install", {"dest": os.fsdecode(dest), "files": files}, "--check", "--diff")
    assert sorted(os.path.join(dest, os.fsencode(r)) for r in from_result(check)["removed"]) == sorted(stale)
    assert check["diff"]["prepared"].count("\n") == len(stale) + len(files)  # one line per file
    done = run_module("library_install", {"dest": os.fsdecode(dest), "files": files})
    assert done["changed"] is True and not any(os.path.lexists(p) for p in stale)


def test_bwrap_probe_warns_on_a_bind_that_resolves_to_a_hostile_hidden_path(base, user):
    ssh = os.path.join(user["home"], b".ssh")
    os.makedirs(os.path.join(ssh, b"k\xff\x1b\n"), exist_ok=True)
    link = os.path.join(base, b"link")
    os.symlink(os.path.join(ssh, b"k\xff\x1b\n"), link)
    result = run_module("bwrap_probe", {"user": user["name"], "checks": ["user_namespace"],
                                        "plugin_settings": {"binds": [{"src": os.fsdecode(link)}]}})
    assert not result.get("failed"), result.get("msg")
    warnings = [w for w in result["warnings"] if "resolves to" in w]
    assert warnings and escape(os.fsdecode(os.path.join(ssh, b"k\xff\x1b\n"))) in warnings[0]


def test_safe_fetch_reports_a_resolved_path_that_is_not_utf8(base):
    home = os.path.join(base, b"sandbox-home")
    target = os.path.join(home, b"data\xff\xfe")
    os.makedirs(target)
    write(os.path.join(target, b"model.bin"), b"weights")
    os.symlink(os.path.join(b"data\xff\xfe", b"model.bin"), os.path.join(home, b"model.bin"))
    write(os.path.join(home, b"<script>&amp;]]>.bin"), b"fine")
    out = os.path.join(base, b"out")
    refused = run_module("safe_fetch", {"src": os.fsdecode(os.path.join(home, b"model.bin")),
                                        "dest": os.fsdecode(out), "remote_home": os.fsdecode(home),
                                        "fail_on_refused": False}, "-c", "local")
    assert refused["refused_code"] == "not_utf8", refused
    assert base64.b64decode(refused["resolved_b64"]) == os.path.join(target, b"model.bin")
    fetched = run_module("safe_fetch", {"src": os.fsdecode(os.path.join(home, b"<script>&amp;]]>.bin")),
                                        "dest": os.fsdecode(out), "remote_home": os.fsdecode(home)}, "-c", "local")
    assert fetched["changed"] is True and not fetched.get("failed"), fetched.get("msg")
    with open(os.fsencode(fetched["dest"]), "rb") as handle:
        assert handle.read() == b"fine"


@pytest.mark.parametrize("module, args", [
    ("runner_hooks", lambda where: {"runner_dir": where}),
    ("sandbox_prevent", lambda where: {"place": "hermes", "hermes_home": where, "base": where + "/default.json"}),
    ("seccomp_probe", lambda where: {"image": "sandboxguard/debian:12", "hermes_home": where, "reference": False}),
])
def test_the_runner_and_prevention_modules_name_a_hostile_path_in_one_line(base, module, args):
    """A runner directory or a Hermes home whose name holds a newline, an escape and markup: the
    module refuses it (it is not a runner, not a Hermes home) in one readable line, the name
    escaped. (A parameter that is not UTF-8 cannot reach a module at all: ansible-core refuses
    its echo in the result; the walk modules take such roots as ``paths_b64``.)"""
    where = os.path.join(base, b"bad\n\x1b[31mred<b>")
    os.mkdir(where)
    result = run_module(module, args(os.fsdecode(where)), "--check")
    said = " ".join([result.get("msg") or "", result.get("reason") or "", *map(str, result.get("errors") or [])])
    assert result.get("failed") or result.get("ok") is False or result.get("errors"), result
    assert "bad\\n\\x1b[31mred<b>" in said, said


def test_every_module_and_action_plugin_is_covered_here():
    with open(os.path.abspath(__file__), encoding="utf-8") as handle:
        text = handle.read()
    modules = sorted(n[:-3] for n in os.listdir(os.path.join(TOP, "plugins", "modules")) if n.endswith(".py"))
    # audit_report (the action) runs in test_audit_and_remediate_with_hostile_names (test_audit_playbooks.py)
    missing = [m for m in modules if '"%s"' % m not in text and m != "audit_report"]
    assert missing == []
    assert "def test_audit_and_remediate_with_hostile_names" in open(
        os.path.join(TOP, "tests", "integration", "test_audit_playbooks.py"), encoding="utf-8").read()

