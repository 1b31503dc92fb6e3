# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The ``runtime`` check on one host: read the sandbox's settings, then judge them (runtime's rules).

Reads each Hermes home's (and profile's) config.yaml and ``.env`` through the held home, the
agent containers' inspect documents from every engine present (read-only), the kernel's LSM list
(Landlock) and, on a runner host, the Docker daemon's info. Changes nothing. A check that read
nothing (no Hermes config, no engine) is ``not_checked``, never clean.
"""
import errno
import os

from .. import hermes_config, yamlconf
from .._core.text import escape
from .._prevent import bases, dockerargs, hermes, seccomp
from .._privileged import sandboxes
from . import audit, audit_record, runtime

# nothing read is never clean: ``not_checked`` where the records know that state (issue 27),
# else ``skipped`` with the reason (a selected check that covered nothing)
NOT_CHECKED = getattr(audit_record, "NOT_CHECKED", audit_record.SKIPPED)
LSM_FILE = "/sys/kernel/security/lsm"
LANDLOCK_CREATE_RULESET = 444


def landlock_available(path=LSM_FILE):
    """Whether Landlock is usable here, as Hermes' ``auto`` decides: the ABI version
    ``landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`` answers (444 on every
    architecture); without ctypes, the kernel's LSM list. None when neither says."""
    try:
        import ctypes  # noqa: PLC0415 - only this check needs it

        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(ctypes.c_long(LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint(1))
        if version >= 1:
            return True
        if ctypes.get_errno() in (errno.ENOSYS, errno.EOPNOTSUPP):
            return False
    except (ImportError, OSError, AttributeError):
        pass
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return "landlock" in handle.read(4096).strip().split(",")
    except OSError:
        return None


def _profile_engine(settings):
    """(path, engine its x-sandboxguard names) of the seccomp profile the extra args name, or None."""
    profile = dockerargs.seccomp_option(dockerargs.parse_run_args(settings.get("extra_args"))["security_opt"])
    if not profile or profile == "unconfined" or not profile.startswith("/"):
        return None
    try:
        doc = bases.read_json_file(profile, "the profile")
    except seccomp.SeccompError:
        return None
    meta = doc.get(seccomp.META_KEY) if isinstance(doc.get(seccomp.META_KEY), dict) else {}
    return profile, (meta.get("base") or {}).get("engine")


def _config_homes(hermes_homes):
    homes = []
    for home in hermes_homes:
        homes.append(home)
        homes += [os.path.join(home, "profiles", name) for name in sandboxes.list_profile_names(home)]
    return homes


def read_configs(hermes_homes, roots, landlock, out):
    """Judge every config.yaml of the homes and their profiles into ``out`` (findings, errors,
    configs, absent, backends)."""
    for home in _config_homes(hermes_homes):
        try:
            settings, path = hermes.read_settings(home)
        except (hermes_config.ConfigError, yamlconf.YamlEditError, OSError) as exc:
            out["errors"].append(audit._error("config", os.path.join(home, hermes.CONFIG_NAME), str(exc)))
            continue
        if settings is None:
            out["absent"].append(path)
            continue
        out["configs"].append(path)
        out["findings"] += runtime.config_findings(path, settings, roots, landlock)
        backend = hermes.backend_engine(home)
        out["backends"][path] = backend
        named = _profile_engine(settings)
        if named and backend["kind"] and named[1] and named[1] != backend["kind"]:
            out["findings"].append(runtime.finding(
                "profile-other-engine", path, "the seccomp profile %s was made from %s's default, but the docker "
                "backend drives %s (%s)" % (escape(named[0]), named[1], backend["kind"], backend["why"])))


def _daemon_has_setid_rules(info):
    profile = bases.daemon_profile(info)
    if not profile or not profile.startswith("/"):
        return False
    try:
        return seccomp.has_setid_rules(bases.read_json_file(profile, "the daemon's seccomp profile"))
    except seccomp.SeccompError:
        return False


def read_containers(found, roots, runner_host, out):
    """Judge every agent container the scope's engines answered with into ``out``, stopped ones
    too (Hermes starts an exited container of its task again, with the same options); on a
    runner host, the Docker daemon's info too. An engine that could not be asked is an error of
    its own (the scope asked each engine once: docker_engine.survey)."""
    request = found.request
    if request.docker == "never":
        return
    if not found.engines:
        if request.docker == "always" or request.docker_host:
            out["errors"].append(audit._error("engine", request.docker_host or "docker",
                                              found.engine_note or "no engine answered"))
        elif found.engine_note:
            out["warnings"].append("no engine answered: %s" % found.engine_note)
        return
    for answer in found.engines:
        name = answer["name"]
        if answer.get("error"):
            out["errors"].append(audit._error("engine", answer.get("url") or name, "engine %s: %s"
                                              % (name, answer["error"])))
            continue
        out["engines"].append(name)
        for inspect in answer.get("containers") or ():
            if not runtime.is_agent_container(inspect, roots):
                continue
            out["containers"].append({"engine": name, "name": runtime.container_name(inspect),
                                      "status": (inspect.get("State") or {}).get("Status"),
                                      "runtime": (inspect.get("HostConfig") or {}).get("Runtime")})
            out["findings"] += runtime.container_findings(inspect, roots)
        if runner_host and answer.get("kind") == "docker" and answer.get("info") is not None:
            out["findings"] += runtime.daemon_findings(answer["info"], _daemon_has_setid_rules(answer["info"]))
            out["daemon_checked"] = True


def check_runtime(found, runner_host=False):
    """The ``runtime`` check's result (read-only) over the audit's one scope.Scope (its roots,
    and the inspect documents its engines answered with): see the module docstring and
    runtime's rules."""
    request = found.request
    docker = request.docker
    roots = [root.realpath for root in found.roots]
    out = {"findings": [], "errors": [], "warnings": [], "configs": [], "absent": [], "backends": {},
           "containers": [], "engines": [], "daemon_checked": False}
    landlock = landlock_available()
    read_configs(request.hermes_homes, roots, landlock, out)
    read_containers(found, roots, runner_host, out)
    complete = True
    driven = {b["kind"] for b in out["backends"].values() if b["kind"]}
    unread = sorted(k for k in driven if not any(e.startswith(k) for e in out["engines"]))
    if unread and docker != "never":
        # as privileged_files: with docker auto an engine that did not answer is a warning, with always not clean
        complete = docker != "always"
        out["warnings"].append("the docker backend drives %s, but no %s engine answered: its containers were not read "
                               "(start its API socket, e.g. podman.socket)" % (", ".join(unread), "/".join(unread)))
    details = {"configs": out["configs"], "absent": out["absent"], "containers": out["containers"],
               "engines": out["engines"], "backends": out["backends"], "landlock": landlock, "roots": roots,
               "warnings": out["warnings"],
               "counts": {"configs": len(out["configs"]), "containers": len(out["containers"]),
                          "findings": len(out["findings"])}}
    if not (out["configs"] or out["containers"] or out["daemon_checked"] or out["errors"]):
        why = "no Hermes config.yaml%s, and %s" % (
            " (none at %s)" % ", ".join(escape(p) for p in out["absent"]) if out["absent"] else " given",
            "no agent container runs (engines asked: %s)" % ", ".join(out["engines"]) if out["engines"]
            else "no container engine answered")
        return audit._result(NOT_CHECKED, reason="nothing to read: %s; give the Hermes homes of this host" % why,
                             complete=False, **details)
    reason = None if complete else "the containers of the engine the docker backend drives were not read"
    return audit._verdict(out["findings"], out["errors"], complete, reason, **details)
