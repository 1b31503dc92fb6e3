# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

What the guard watches: its roots (scope.derive, again at every rescan) and the engine
query for bind mounts below them that are other filesystems.

``sandboxguard guard`` (the CLI) parses its arguments and calls :func:`sources` once; the
Guard (guard.py) calls what it returns.
"""
import os

from .._privileged import scope

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


def _request(hermes_homes, sandbox_dir, extra_roots, providers, docker="never", docker_host=None, **more):
    return scope.Request(hermes_homes, sandbox_dir, extra_roots, providers=providers, docker=docker,
                         docker_host=docker_host, include_stopped=False, task_dirs=False, **more)


def roots_source(hermes_homes=(), sandbox_dir=None, extra_roots=(), providers=()):
    """For Guard(roots_source=...): () -> (roots, refused) from a fresh scope.derive at each
    call (a root that appears or is swapped for a symlink is seen at the next rescan):
    ``roots`` a list of (roots.OpenRoot, source), each the descriptor the scope proved (a
    duplicate the caller owns and closes: the guard keeps the first it got for a directory);
    roots that do not exist (yet) are not in it but in ``absent`` (their paths): the third
    item. ``refused``: [{path, reason}]."""
    def source():
        with scope.derive(_request(hermes_homes, sandbox_dir, extra_roots, providers)) as found:
            held = [(root.held.borrowed(), root.source) for root in found.roots if root.is_dir]
            return held, found["refused"], list(found.absent)
    return source


def engine_source(docker_host=None, hermes_homes=(), sandbox_dir=None, extra_roots=(), providers=()):
    """For Guard(engine_source=...), run in a forked child: bind-mount sources below the
    roots that lie on another filesystem than their root (a filesystem mark covers one
    filesystem). The scope's own targets (scope.derive with the engines' answers: realpath
    below a held root, opened from it); the engine only tells which directories are mounted,
    it never adds a root of its own. Returns {"roots": [[path, why]], "engines": [{name, url,
    kind, error}]}: each engine asked on its own (docker_engine.ask), the healthy ones' mounts
    kept when another fails; ``error`` (one line) too when no engine answered at all."""
    def ask():
        request = _request(hermes_homes, sandbox_dir, extra_roots, providers, docker="auto", docker_host=docker_host,
                           engine_deadline=ENGINE_SURVEY_S)
        try:
            found = scope.derive(request)
        except Exception as exc:  # a root that cannot be walked: the host-derived roots stay
            return {"error": (str(exc).splitlines() or [type(exc).__name__])[0], "roots": [], "engines": []}
        with found:
            if not found.roots:
                return {"roots": [], "engines": found.engine_summary()}
            engines = found.engine_summary()
            healthy = [a for a in found.engines if not a.get("error")]
            if not healthy:  # no engine, or none answered: the host-derived roots stay
                return {"error": found.engine_note or "; ".join(
                    "%s: %s" % (a["name"], a["error"]) for a in found.engines) or "no container engine here",
                    "roots": [], "engines": engines}
            roots = []
            for target in found.targets:
                if _other_filesystem(target):
                    roots.append([target.realpath, "bind mount of %s (another filesystem)" % ", ".join(
                        c[:12] for c in target.containers[:3])])
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


def _other_filesystem(target):
    """True when a scope.Target (held) is on another filesystem than its root's descriptor."""
    return target.held is not None and target.root.held is not None and \
        target.held.st.st_dev != target.root.held.st.st_dev
