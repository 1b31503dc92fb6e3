# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Which directories sandboxguard covers: the one decision, for every consumer.

The sweep and ``mounts_info``, the event watcher, the guard (its roots and the engine
queries below them), the audit's ``privileged_files``, the nosuid mounts and the leak
accounts all call :func:`derive`; none derives a root of its own. Roots come from
*providers*, each a callable with no argument returning candidate roots:

- :func:`hermes` (the Hermes layout): ``<sandbox_dir>/docker`` (TERMINAL_SANDBOX_DIR),
  ``<home>/sandboxes/docker`` for each HERMES_HOME and
  ``<home>/profiles/<name>/sandboxes/docker`` for each of its profiles
  (sandboxes.profile_names_at, the one profile rule, listed through descriptors);
- :func:`operator` (roots the operator names, taken as given);
- more providers later (CI runners), passed in ``providers``.

A candidate is a dict ``{path, source, owner}`` (``owner``: None, or the (uid, gid) a
provider knows the files there belong to, for ownership return), optionally
``accounts``: ``[(directory, why)]``, directories on the candidate's path whose owners are
the accounts that run agents (the leak audit's default scope). A provider may also return
``{path, reason}``: something it refused while listing (a symlinked ``profiles``). A
provider returns a list of those, or a provider result ``{roots, labels, out_of_scope,
errors}`` (the shape of the CI runner providers): ``roots`` are its candidates, the rest is
passed on in derive's result (a label only names which in-scope container a provider's
runner started; it never adds a root).

Every candidate goes through the same check (:func:`prove`): an absolute path, walked
component by component from ``/`` with O_NOFOLLOW descriptors, refused when any component
is a symlink (whoever controls the link would choose what root changes), then refused when
it is a system path (roots.refusal_reason). A component that does not exist ends the walk:
the root is kept (the guard waits for it, the sweep finds nothing there) and proven again
when it is opened (roots.open_root). The owners of ``accounts`` come from the fstat of the
descriptors of that same walk, never from a lookup by path. Nothing a container controls
(labels, mount destinations, image metadata) reaches a provider: the engine only tells
which in-scope directories are mounted (sandboxes.scope_containers).
"""
import os
import posixpath

from .._core import safefs
from .._core.text import escape
from ..roots import RootRefused, refusal_reason
from . import sandboxes

SOURCE_SANDBOX_DIR = "TERMINAL_SANDBOX_DIR"
SOURCE_OPERATOR = "operator"
REASON_RELATIVE = "relative path; sandbox roots must be absolute"

def derive(hermes_homes=(), sandbox_dir=None, extra_roots=(), providers=()):
    """The scope on this host; a dict:

    - ``roots``: usable roots, ``[{path, realpath, source, owner}]`` in the providers'
      order (Hermes, then ``providers``, then the operator's ``extra_roots``), one per
      realpath (the first provider to name it wins);
    - ``refused``: ``[{path, reason}]``;
    - ``accounts``: ``{name: [why]}``, the owners of the Hermes homes, their profiles,
      TERMINAL_SANDBOX_DIR and the ``sandboxes/docker`` directories (root included under
      ``"root"``: callers leave it out unless named);
    - ``labels`` (``{label: source}``), ``out_of_scope`` and ``errors``: what providers
      that return a provider result said besides their roots.

    ``providers``: more providers (callables returning candidates, see the module doc).
    Touches the system (opens and lists directories), changes nothing.
    """
    candidates = hermes(hermes_homes, sandbox_dir)()
    said = {"labels": {}, "out_of_scope": [], "errors": []}
    for provider in providers or ():
        given = provider()
        if isinstance(given, dict):
            said["labels"].update(given.get("labels") or {})
            said["out_of_scope"] += list(given.get("out_of_scope") or ())
            said["errors"] += list(given.get("errors") or ())
            given = given.get("roots") or ()
        candidates += list(given)
    candidates += operator(extra_roots)()
    found = resolve(candidates)
    found.update(said)
    return found


def resolve(candidates):
    """Check every candidate (:func:`prove`, system paths); see :func:`derive` for the result."""
    found = _Found()
    try:
        for item in candidates:
            found.add(item)
    finally:
        found.close()
    return {"roots": found.roots, "refused": found.refused, "accounts": found.accounts}


class _Found:
    """What resolve() finds, one candidate at a time. The walks share ``held``, the proven
    descriptors of the directories already walked ({path: (fd, uid)}), closed at the end."""

    def __init__(self):
        self.roots, self.refused, self.accounts = [], [], {}
        self.paths, self.reals, self.names, self.held = set(), set(), {}, {}

    def close(self):
        for fd, _uid, _trusted in self.held.values():
            os.close(fd)
        self.held = {}

    def add(self, item):
        path = item["path"]
        if "reason" in item:
            self.refused.append({"path": path, "reason": item["reason"]})
            return
        if path in self.paths:
            return
        self.paths.add(path)
        if not posixpath.isabs(path):
            self.refused.append({"path": path, "reason": REASON_RELATIVE})
            return
        owners = {}
        try:
            real = _walk(path, owners, held=self.held)[0]
        except RootRefused as exc:
            self.refused.append({"path": path, "reason": exc.reason})
            real = None
        self._add_accounts(item.get("accounts", ()), owners)
        reason = refusal_reason(real) if real is not None else None
        if reason:
            self.refused.append({"path": path, "reason": reason})
        elif real is not None and real not in self.reals:
            self.reals.add(real)
            self.roots.append({"path": path, "realpath": real, "source": item["source"], "owner": item.get("owner")})

    def _add_accounts(self, wanted, owners):
        for directory, why in wanted:
            uid = owners.get(_normal(directory))
            if uid is None:
                continue
            if uid not in self.names:
                self.names[uid] = "root" if uid == 0 else _user_name(uid)
            if self.names[uid]:
                self.accounts.setdefault(self.names[uid], []).append(why)


def _user_name(uid):
    import pwd  # noqa: PLC0415 - POSIX only

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _normal(path):
    return "/" + posixpath.normpath(path).lstrip("/")


# -- the one check ------------------------------------------------------------------------

def prove(path, owners=None):
    """``path`` made absolute and normal, provided no component of it is a symlink; raises
    RootRefused naming the link otherwise.

    The one walk from ``/`` (safefs.walk_path, MISSING_TAIL): a component that does not
    exist, or is not a directory, ends what can be checked: the rest is kept as spelled (a
    later ``..`` may climb back into what exists, and that is checked again). ``owners``: a
    dict filled with {proven directory: uid}. Changes nothing.
    """
    return _walk(path, owners)[0]


def _walk(path, owners=None, hold=False, held=None):
    """prove()'s walk: (path, Walked or None). With ``hold`` the Walked holds the directory
    (O_RDONLY) when every component exists (the caller closes it). ``held``: walk_path's
    cache of proven directories, shared by the roots of one derive."""
    walked = safefs.walk_path(path, missing=safefs.MISSING_TAIL, owners=owners, held=held, refused=RootRefused,
                              hold=hold)
    if walked.fd is None:
        return walked.path, None
    return walked.path, walked


# -- providers ----------------------------------------------------------------------------

def hermes(hermes_homes=(), sandbox_dir=None):
    """The Hermes provider: TERMINAL_SANDBOX_DIR's ``docker``, each home's and each of its
    profiles' ``sandboxes/docker``."""
    def provide():
        found = []
        if sandbox_dir:
            root = posixpath.join(sandbox_dir, sandboxes.DOCKER_SUBDIR)
            found.append({"path": root, "source": SOURCE_SANDBOX_DIR, "owner": None,
                          "accounts": [(sandbox_dir, "owner of TERMINAL_SANDBOX_DIR %s" % escape(sandbox_dir)),
                                       (root, "owner of the sandbox directory %s" % escape(root))]})
        for home in hermes_homes or ():
            root = posixpath.join(home, "sandboxes", sandboxes.DOCKER_SUBDIR)
            found.append({"path": root, "source": "HERMES_HOME %s" % escape(home), "owner": None,
                          "accounts": [(home, "owner of the Hermes home %s" % escape(home)),
                                       (root, "owner of the sandbox directory %s" % escape(root))]})
            names, refusal = profile_names(home)
            if refusal:
                found.append(refusal)
            for name in names:
                profile = posixpath.join(home, "profiles", name)
                root = posixpath.join(profile, "sandboxes", sandboxes.DOCKER_SUBDIR)
                found.append({"path": root, "source": "profile %s of %s" % (escape(name), escape(home)),
                              "owner": None,
                              "accounts": [(profile, "owner of the profile %s" % escape(profile)),
                                           (root, "owner of the sandbox directory %s" % escape(root))]})
        return found
    return provide


def operator(extra_roots=()):
    """The operator's provider: the roots named, as given."""
    def provide():
        return [{"path": path, "source": SOURCE_OPERATOR, "owner": None} for path in extra_roots or ()]
    return provide


def profile_names(home):
    """(names, refusal) of the profiles under ``<home>/profiles`` (sandboxes.profile_names_at,
    the one rule), the directory reached by the same walk as a root (:func:`prove`'s: no
    symlink anywhere). ``refusal``: a ``{path, reason}`` when ``profiles`` goes through a
    symlink (no profile counts then), else None. Missing or unreadable: no names."""
    profiles = posixpath.join(home, "profiles")
    if not posixpath.isabs(profiles):
        return [], None
    try:
        held = _walk(profiles, hold=True)[1]
    except RootRefused as exc:
        return [], {"path": profiles, "reason": exc.reason}
    except OSError:  # the directory itself cannot be opened for listing
        return [], None
    if held is None:
        return [], None
    with held:
        try:
            return sandboxes.profile_names_at(held.fd), None
        except OSError:
            return [], None
