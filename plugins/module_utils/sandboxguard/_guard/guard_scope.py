# GENERATED from python/src/sandboxguard/_guard/guard_scope.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""What the guard watches: its roots (scope.derive, again at every rescan) and the engine
query for bind mounts below them that are other filesystems.

``sandboxguard guard`` (the CLI) parses its arguments and calls :func:`sources` once; the
Guard (guard.py) calls what it returns.
"""
import os

from .._privileged import sandboxes, scope

ENGINE_SURVEY_S = 40.0  # all of one engine's answers for one query (each call: docker_engine.DEFAULT_TIMEOUT_S)


def default_homes(hermes_homes=(), explicit=False, environ=None):
    """The Hermes homes the guard covers: those given; none when other roots are given
    (``explicit``: paths, a sandbox dir or operator roots); else ``$HERMES_HOME`` or
    ``~/.hermes``."""
    if hermes_homes:
        return list(hermes_homes)
    if explicit:
        return []
    environ = os.environ if environ is None else environ
    home = environ.get("HERMES_HOME")
    return [home] if home else [os.path.join(os.path.expanduser("~"), ".hermes")]


def roots_source(hermes_homes=(), sandbox_dir=None, extra_roots=(), providers=()):
    """For Guard(roots_source=...): () -> (roots, refused), roots a list of (realpath,
    source) from scope.derive, derived again at each call (a root that appears or is
    swapped for a symlink is seen at the next rescan)."""
    def source():
        found = scope.derive(hermes_homes, sandbox_dir, extra_roots, providers)
        return [(r["realpath"], r["source"]) for r in found["roots"]], found["refused"]
    return source


def _dev(path):
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def engine_source(docker_host=None, hermes_homes=(), sandbox_dir=None, extra_roots=(), providers=()):
    """For Guard(engine_source=...), run in a forked child: bind-mount sources below the
    roots that lie on another filesystem than their root (a filesystem mark covers one
    filesystem). The scope rule is the sweep's (sandboxes.scope_containers: realpath below
    a root of scope.derive); the engine only tells which directories are mounted, it never
    adds a root of its own. Returns {"roots": [[path, why]], "engines": [{name, url, kind,
    error}]}: each engine asked on its own (docker_engine.survey), the healthy ones' mounts
    kept when another fails; ``error`` (one line) too when no engine answered at all."""
    def ask():
        from .. import docker_engine  # noqa: PLC0415 - compiled only when an engine is asked

        usable = scope.derive(hermes_homes, sandbox_dir, extra_roots, providers)["roots"]
        if not usable:
            return {"roots": []}
        # within the guard's own limit on a query (jobs.ENGINE_QUERY_TIMEOUT_S kills it after 60 s)
        entries = docker_engine.survey(docker_host, None, False, ENGINE_SURVEY_S)
        engines = docker_engine.report_of(entries)
        answered = [e for e in entries if e["error"] is None]
        if not answered:  # no engine, or none answered: the host-derived roots stay
            why = "; ".join("%s: %s" % (e["name"], e["error"]) for e in entries) or "no container engine here"
            return {"error": why, "roots": [], "engines": engines}
        inspects = [doc for entry in answered for doc in entry["containers"]]
        targets = sandboxes.scope_containers(inspects, usable, os.path.realpath, sandboxes.path_kind)[1]
        roots = []
        for target in targets:
            if _dev(target["realpath"]) not in (None, _dev(target["root"])):
                roots.append([target["realpath"], "bind mount of %s (another filesystem)" % ", ".join(
                    c[:12] for c in target["containers"][:3])])
        return {"roots": roots, "engines": engines}
    return ask


def sources(paths=(), hermes_homes=(), sandbox_dir=None, extra_roots=(), docker_host=None, engine=True,
            environ=None, providers=()):
    """(roots_source, engine_source or None) for Guard, from the CLI's arguments: ``paths``
    (explicit roots, checked by the caller) and ``extra_roots`` are the operator's roots;
    the Hermes homes default as :func:`default_homes` says. ``providers``: more scope
    providers (runners.runner_providers: a CI runner's work folder), derived again at each
    rescan like the rest."""
    providers = list(providers or ())
    homes = default_homes(hermes_homes, bool(paths or sandbox_dir or extra_roots or providers), environ)
    operator = list(paths) + [r for r in extra_roots if r not in paths]
    roots = roots_source(homes, sandbox_dir, operator, providers)
    return roots, (engine_source(docker_host, homes, sandbox_dir, operator, providers) if engine else None)
