# GENERATED from python/src/sandboxguard/_prevent/profile.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection: the CLI, the ``sandbox_prevent`` module and the audit
call these.

``sandboxguard seccomp-profile``: the engine's default found, the profile made, or a profile checked.

Pure decisions are in ``seccomp``, the reading of bases in ``bases``.
"""
import os
import time

from .. import report as envelope
from .._core import defaults
from .._core.text import escape
from . import bases, seccomp

DEFAULT_ENGINE_TIMEOUT_S = 60


def pick_engine(engine="auto", docker_host=None, exists=os.path.exists):
    """``docker`` or ``podman`` for ``auto``: Docker when DOCKER_HOST or its socket is there,
    else Podman when its default profile is installed; SeccompError when neither is."""
    if engine in ("docker", "podman"):
        return engine
    if engine != "auto":
        raise seccomp.SeccompError("engine %r: choose one of %s" % (engine, ", ".join(bases.ENGINE_CHOICES)))
    if docker_host or os.environ.get("DOCKER_HOST") or exists(defaults.DOCKER_SOCKET):
        return "docker"
    if exists(bases.PODMAN_DEFAULT_PROFILE):
        return "podman"
    where = (defaults.DOCKER_SOCKET, bases.PODMAN_DEFAULT_PROFILE)
    raise seccomp.SeccompError("no container engine found: %s and %s do not exist; name the engine (docker or "
                               "podman) or give the base with --base FILE" % where)


def engine_base(engine="auto", base=None, image=None, docker_host=None, timeout=DEFAULT_ENGINE_TIMEOUT_S):
    """(base profile, source, engine) of the running engine's own default, or of the file
    ``base``. Touches the system (Docker: one throwaway container). SeccompError (an
    InputError) when there is no base to be had, docker_engine.EngineError when Docker does
    not answer."""
    engine = pick_engine(engine, docker_host) if base is None or engine != "auto" else engine
    if base is not None:
        found, source = bases.from_file(base, None if engine == "auto" else engine)
        return found, source, source["engine"]
    if engine == "podman":
        found, source = bases.podman_default()
        return found, source, engine
    if not image:
        raise seccomp.SeccompError(bases.NO_IMAGE)
    from .. import docker_engine  # noqa: PLC0415 - the engine is optional

    client = docker_engine.connect(docker_host or None, timeout=timeout)
    try:
        found, source = bases.docker_default(client, image)
    finally:
        client.close()
    return found, source, "docker"


def make(engine="auto", base=None, image=None, docker_host=None, devices=False):
    """The prevention profile (a dict) from the running engine's default or from ``base``."""
    found, source, _engine = engine_base(engine, base, image, docker_host)
    return seccomp.build_profile(found, source, devices=devices)


def check(path, engine="auto", base=None, image=None, docker_host=None):
    """Check the profile file ``path`` (a profile in effect) against the running engine's
    default (or ``base``); return the report envelope with ``ok``, ``problems``, ``notes``,
    ``made_by``, ``engine``, ``base`` (where the base came from) and ``devices_denied``.

    A base that cannot be had is a warning and ``complete: false`` (the engine's own denials
    were not checked: never a clean result), not an error that hides the setid check.
    """
    started = time.monotonic()
    profile = bases.read_json_file(path, "the profile")
    report = envelope.new_report([path], ok=False, problems=[], notes=[], made_by=None, engine=None, base=None,
                                 devices_denied=False)
    found, where, kind = None, None, None
    try:
        found, source, kind = engine_base(engine, base, image, docker_host)
        where = source
    except seccomp.SeccompError as exc:
        if base is not None:
            raise
        envelope.add_warning(report, "the engine's default was not read (%s): its denials were not checked" % exc)
        report["complete"] = False
        kind = None if engine == "auto" else engine
    except Exception as exc:  # an engine that does not answer: its own failure, the setid check still runs
        envelope.add_warning(report, "the engine did not answer (%s): its default's denials were not checked" % exc)
        report["complete"] = False
        kind = None if engine == "auto" else engine
    result = seccomp.check_profile(profile, found, kind, bases.native_arch())
    report.update(result, base=where)
    report["counts"] = {"problems": len(result["problems"])}
    return envelope.finish(report, started)


def problem_lines(report):
    """One line per problem of a check report, for people."""
    return ["%s: %s%s" % (p["rule"], p["detail"], (" (%s)" % ", ".join(p["syscalls"])) if p["syscalls"] else "")
            for p in report["problems"]]


def describe_source(source):
    """Where a base came from, in words."""
    if not source:
        return "no base"
    version = " %s" % source["engine_version"] if source.get("engine_version") else ""
    return "%s%s: %s" % (source.get("engine") or "an engine", version, escape(source.get("origin") or "?"))
