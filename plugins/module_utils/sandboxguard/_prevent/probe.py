# GENERATED from python/src/sandboxguard/_prevent/probe.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection (the ``seccomp_probe`` module and the ``sandboxguard
seccomp-probe`` command).

The seccomp probe: a throwaway container started the way the sandbox starts, and what it can make.

As the bubblewrap probe proves bwrap as the agent user, this proves the prevention where it
acts: it starts a container from a local image through the engine (docker_engine), as

- ``hermes``: Hermes Agent's docker backend does (its security arguments, then
  ``terminal.docker_extra_args`` from the Hermes config or as given; never the host binds:
  the probe mounts nothing of the host, and its network is none);
- ``daemon``: a CI job does on a runner host (no options: the daemon's default profile);
- ``podman``: Podman does by default (``containers.conf``'s ``seccomp_profile``);

runs :data:`probe_script.SCRIPT` in it, and reports each attempt: the setid, device-node and
file-capability attempts must be refused with EPERM (``fchmodat2`` may be ENOSYS: libc then
falls back to ``fchmodat``, which the profile filters), ``chmod 755``, ``mkdir -p`` and a
venv must work, and ``unshare -U``, ``keyctl`` and ``io_uring_setup`` must stay denied where
the engine's own default denies them. A reference container with the engine's own default
profile (the same options otherwise) runs the same attempts, so the report shows what the
prevention changed. A probe that cannot run (no engine, no image, no python3 in it, an
output it cannot read) says so: ``ran: false``, ``ok: false`` and the error.
"""
import json
import time

from .. import report as envelope
from .._core.text import escape
from . import bases, dockerargs, probe_script, seccomp

MODES = ("hermes", "daemon", "podman")
DEFAULT_MODE = "hermes"
DEFAULT_TIMEOUT_S = 120
OUTPUT_LIMIT = 1 << 20
LABELS = {"sandboxguard": "seccomp-probe"}
DENIED, ALLOWED, AS_DEFAULT = "denied", "allowed", "as_default"
EXPECT = {
    "chmod_4755": DENIED, "chmod_2755": DENIED, "install_4755": DENIED, "open_creat_04755": DENIED,
    "fchmodat2_4755": DENIED, "mknod_c": DENIED, "setcap": DENIED,
    "chmod_755": ALLOWED, "mkdir_p": ALLOWED, "venv": ALLOWED,
    "unshare_user": AS_DEFAULT, "keyctl": AS_DEFAULT, "io_uring_setup": DENIED,
}
# Refusals that count as denied: EPERM, and for fchmodat2 ENOSYS (unknown to the engine's
# libseccomp, runc answers ENOSYS; libc then falls back to fchmodat, which the profile filters).
DENIAL_ERRNOS = {"fchmodat2_4755": ("EPERM", "ENOSYS")}
FIXES = {
    "mknod_c": "drop CAP_MKNOD (--cap-drop MKNOD), or a profile made with devices (seccomp-profile --devices)",
    "setcap": "drop CAP_SETFCAP (--cap-drop SETFCAP): seccomp cannot read the xattr's name",
    "io_uring_setup": "use a profile made by sandboxguard seccomp-profile (io_uring_* denied)",
}
SETID_FIX = "use a profile made by sandboxguard seccomp-profile from this engine's own default"


def host_config(mode, extra_args=(), kind="docker", read_profile=bases.read_json_file):
    """(HostConfig dict, seccomp in effect (a path, ``unconfined`` or None: the engine's default),
    warnings) for the probe container of ``mode`` (pure but for reading a profile file named
    in the arguments). Host binds, devices and the network are never taken from the arguments."""
    config, warnings = {"NetworkMode": "none"}, []
    if mode != "hermes":
        return config, None, warnings
    parsed = dockerargs.parse_run_args([*dockerargs.HERMES_SECURITY_ARGS, *extra_args])
    config.update(CapDrop=dockerargs.capabilities(parsed["cap_drop"]),
                  CapAdd=dockerargs.capabilities(parsed["cap_add"]), Privileged=parsed["privileged"],
                  ReadonlyRootfs=parsed["read_only"], Init=parsed["init"] or None,
                  Tmpfs=dict([*t.split(":", 1), ""][:2] for t in parsed["tmpfs"]))
    for key, option in (("PidMode", "pid"), ("UsernsMode", "userns"), ("IpcMode", "ipc"), ("UTSMode", "uts")):
        if parsed[option]:
            config[key] = parsed[option]
    if parsed["user"]:
        config["User"] = parsed["user"]
    profile = dockerargs.seccomp_option(parsed["security_opt"])
    options = [o for o in parsed["security_opt"] if dockerargs.seccomp_option([o]) is None]
    if profile and profile != "unconfined":
        # Docker's API takes the profile's content (its CLI reads the file); Podman's the path
        content = profile if kind == "podman" else json.dumps(read_profile(profile, "the profile"))
        options.append("seccomp=" + content)
    elif profile:
        options.append("seccomp=unconfined")
    config["SecurityOpt"] = options
    left_out = [a for key in ("volumes", "mounts", "devices") for a in parsed[key]]
    if left_out or parsed["network"]:
        shown = [*left_out, *(["--network"] if parsed["network"] else [])]
        warnings.append("the probe container gets no host binds, devices or network from the arguments (left out: "
                        "%s)" % ", ".join(escape(a) for a in shown))
    if parsed["unknown"]:
        warnings.append("docker_extra_args this probe does not read (ignored): %s"
                        % ", ".join(escape(a) for a in parsed["unknown"]))
    return config, profile, warnings


def reference_config(config, mode, kind):
    """The reference container's HostConfig: the engine's own default profile instead of the
    one probed (Podman's: containers-common's file, since containers.conf may name ours), or
    None when no distinct reference exists (a Docker daemon-wide default is the one probed)."""
    options = [o for o in config.get("SecurityOpt") or () if dockerargs.seccomp_option([o]) is None]
    if mode == "podman" or (mode == "hermes" and kind == "podman"):
        options.append("seccomp=" + bases.PODMAN_DEFAULT_PROFILE)
    elif mode == "daemon":
        return None
    return dict(config, SecurityOpt=options)


def parse_output(data):
    """{name: attempt dict} from the script's output lines, and whether it finished (pure)."""
    found, done = {}, False
    for line in data[:OUTPUT_LIMIT].decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("done") is True:
            done = True
        elif isinstance(item, dict) and item.get("name") in EXPECT:
            found[item["name"]] = item
    return found, done


def outcome(item, name):
    """``denied``, ``allowed`` or ``not_run`` of one attempt (pure)."""
    if item is None:
        return "not_run"
    if item.get("succeeded"):
        return ALLOWED
    if EXPECT[name] == ALLOWED or item.get("errno"):
        return DENIED
    return "not_run"


def judge(name, item, reference):
    """One row of the report (pure): the attempt, what was expected, what happened, ok."""
    got, default = outcome(item, name), (outcome(reference, name) if reference is not None else None)
    expect = EXPECT[name]
    errno_name = (item or {}).get("errno")
    if expect == DENIED:
        ok = got == DENIED and errno_name in DENIAL_ERRNOS.get(name, ("EPERM",))
    elif expect == ALLOWED:
        ok = got == ALLOWED
    else:
        ok = got == DENIED or (got == ALLOWED and default == ALLOWED)
    words = dict(probe_script.ATTEMPTS)[name]
    row = {"name": name, "attempt": words, "expect": expect, "outcome": got, "errno": errno_name,
           "default": default, "detail": (item or {}).get("detail", ""), "ok": ok, "fix": None}
    if not ok:
        row["fix"] = FIXES.get(name, SETID_FIX if expect == DENIED else "see the detail")
    if expect == AS_DEFAULT and got == ALLOWED and ok:
        row["detail"] = "allowed, as the engine's own default allows it"
    return row


def run_attempts(client, image, config, timeout):
    """(attempts {name: item}, finished, error or None): one container of ``image``."""
    from .. import docker_engine  # noqa: PLC0415
    from . import engine_run  # noqa: PLC0415

    try:
        cid = engine_run.start_container(client, image, ["-c", probe_script.SCRIPT], config, LABELS,
                                         entrypoint=["python3"])
    except docker_engine.EngineError as exc:
        return {}, False, str(exc)
    try:
        code = engine_run.wait_container(client, cid, timeout)
        stdout, stderr = engine_run.container_output(client, cid)
    finally:
        engine_run.remove_container(client, cid)
    found, done = parse_output(stdout)
    if done:
        return found, True, None
    why = "timed out after %ss" % timeout if code is None else "exited %s" % code
    tail = stderr[-400:].decode("utf-8", "replace").strip()
    return found, False, "the probe program %s before it finished%s" % (why, (": " + tail) if tail else "")


def probe(mode=DEFAULT_MODE, image=None, engine_url=None, extra_args=(), timeout=DEFAULT_TIMEOUT_S,
          reference=True):
    """Run the probe (effectful: starts and removes one or two containers); return the report
    envelope plus ``ok``, ``ran``, ``mode``, ``image``, ``engine`` ({url, kind, version}),
    ``seccomp`` (the profile option probed: a path, ``unconfined`` or None for the engine's
    default), ``results`` (one row per attempt, in the order of probe_script.ATTEMPTS),
    ``findings`` (the rows not ok) and ``reason`` (why not ok, one line)."""
    started = time.monotonic()
    if mode not in MODES:
        raise seccomp.SeccompError("mode %r: choose one of %s" % (mode, ", ".join(MODES)))
    if not image:
        raise seccomp.SeccompError("the probe needs a local image with python3 (the sandbox's own image will do)")
    report = envelope.new_report([image], ok=False, ran=False, mode=mode, image=image, seccomp=None,
                                 engine={"url": engine_url, "kind": None, "version": None}, results=[], findings=[],
                                 reason=None)
    from .. import docker_engine  # noqa: PLC0415 - the engine is optional

    try:
        client = docker_engine.connect(engine_url or None, timeout=max(timeout, 30))
    except docker_engine.EngineError as exc:
        return _not_run(report, "engine", engine_url or "docker", str(exc), started)
    try:
        kind, version = docker_engine.engine_kind(client)
        report["engine"].update(kind=kind, version=version)
        config, profile, warnings = host_config(mode, extra_args, kind)
        report["seccomp"] = profile
        for line in warnings:
            envelope.add_warning(report, line)
        found, done, error = run_attempts(client, image, config, timeout)
        if error:
            return _not_run(report, "probe", image, error, started)
        other = reference_config(config, mode, kind) if reference else None
        ref = run_attempts(client, image, other, timeout) if other is not None else None
    finally:
        client.close()
    if ref is not None and ref[2]:
        envelope.add_warning(report, "the reference container (the engine's own default) did not run: %s" % ref[2])
    report["ran"] = done
    report["results"] = [judge(name, found.get(name), ref[0].get(name) if ref and not ref[2] else None)
                         for name, _words in probe_script.ATTEMPTS]
    report["findings"] = [row for row in report["results"] if not row["ok"]]
    report["ok"] = not report["findings"]
    if report["findings"]:
        first = report["findings"][0]
        report["reason"] = "%s: %s (expected %s); %d attempt(s) not as expected" % (
            first["name"], first["outcome"], first["expect"], len(report["findings"]))
    report["counts"] = {"attempts": len(report["results"]), "findings": len(report["findings"])}
    return envelope.finish(report, started)


def _not_run(report, op, path, error, started):
    envelope.add_error(report, path, op, error)
    report.update(ok=False, ran=False, complete=False, reason="the probe did not run: %s" % error)
    return envelope.finish(report, started)
