# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

CI runners as scope providers, and the ownership return after a GitHub runner's job.

The hosts that run other people's containers are CI runners. What a root container leaves
there lands in directories the runner binds into its jobs:

* **GitHub Actions self-hosted runner** (container jobs): the whole work folder
  (``<runner>/_work``, or ``workFolder`` of the JSON file ``<runner>/.runner``) is bound to
  ``/__w``; ``_work/_temp/_github_home`` to ``/github/home``. A root step leaves root-owned
  files there and the next ``actions/checkout`` fails (actions/runner#434). Every container
  the runner starts carries the label ``sha256(lowercased runner directory)[:6]``
  (DockerCommandManager.DockerInstanceLabel = IOUtil.GetPathHash(root directory)).
* **GitLab Runner, docker executor**: ``/builds`` and ``/cache`` are Docker named volumes by
  default (under the engine's root-only directory); host-bound ``volumes`` of
  ``[runners.docker]`` in ``/etc/gitlab-runner/config.toml`` are host directories.

Providers return what they found in one shape (:func:`new_found`): ``roots`` (``{path,
source, owner}``: owner the (uid, gid) files there belong to, or None), ``labels``
(``{label: source}``: a label only names which in-scope containers a runner started, it
never adds a root), ``out_of_scope`` (``{what, source, reason}``) and ``errors``
(report.error_entry). Nothing a container controls adds a root here: roots come from the
runner's own files, read as root through descriptors (safefs), never following a link.

:func:`cleanup_github_runner` is ``sandboxguard runner-cleanup DIR``: the work folder given
back to the runner user after a job, through the walker (strip.run_opened).

Standard library only (tomllib where the host's Python has it, 3.11 and later).
"""
import fnmatch
import hashlib
import json
import os
import posixpath
import time

from .. import report as envelope
from .. import strip as stripmod
from .._core import defaults, safefs
from .._core.pathnames import is_within
from .._core.text import escape, one_line
from .._walk.fileops import CHOWN_FROM_OTHERS
from .._walk.walk import new_report
from ..errors import InputError
from ..roots import OpenRoot, RootRefused, open_root

try:
    import tomllib
except ImportError:  # Python before 3.11: gitlab_roots says what to do instead
    tomllib = None

GITHUB_RUNNER_FILE = ".runner"
GITHUB_DEFAULT_WORK_FOLDER = "_work"
GITHUB_LABEL_HEX = 6
# .runner is a few hundred bytes; anything near this is not a runner's settings file.
RUNNER_FILE_LIMIT = 64 << 10
SYSTEMD_UNIT_DIR = "/etc/systemd/system"
GITHUB_UNIT_PATTERN = "actions.runner.*.service"
UNIT_FILE_LIMIT = 64 << 10
GITLAB_CONFIG = "/etc/gitlab-runner/config.toml"
GITLAB_CONFIG_LIMIT = 4 << 20
# A job hook runs synchronously after every job: long enough for a large work folder, short
# enough that a job does not hang on it (a partial walk exits 1; the next job's hook goes on).
RUNNER_CLEANUP_BUDGET_S = defaults.RUNNER_CLEANUP_BUDGET_S
NAMED_VOLUME_REASON = ("a Docker named volume: it lives under the engine's root-only directory "
                       "(/var/lib/docker/volumes), low exposure; bind a host directory to put it in scope")
SOCKET_REASON = ("a socket, not a directory: nothing to walk (a job given the engine's socket is root-equivalent "
                 "on this host)")
ANONYMOUS_VOLUME_REASON = "an anonymous Docker volume (no host path): under the engine's root-only directory"


class RunnerRefused(InputError):
    """A runner directory or configuration the root side will not act on; str() is one line
    naming the path, why, and the fix."""

    def __init__(self, path, reason):
        super().__init__("%s: %s" % (escape(os.fsdecode(path)), reason))
        self.path = os.fsdecode(path)
        self.reason = reason


class WorkFolderMissing(RunnerRefused):
    """The runner's work folder does not exist (yet): no job has run, nothing to clean."""


def new_found():
    """An empty provider result: {roots, labels, out_of_scope, errors} (pure)."""
    return {"roots": [], "labels": {}, "out_of_scope": [], "errors": []}


def github_label(runner_dir):
    """The label the GitHub runner puts on every container it starts: the first 6 hex digits
    of the SHA-256 of its root directory's path, lowercased (IOUtil.GetPathHash) (pure)."""
    text = os.fsdecode(runner_dir)
    return hashlib.sha256(text.lower().encode("utf-8", "surrogateescape")).hexdigest()[:GITHUB_LABEL_HEX]


def _work_folder_setting(data, shown):
    """workFolder of a .runner file's bytes (a UTF-8 BOM allowed: the runner writes one)."""
    try:
        settings = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RunnerRefused(shown, "is not the runner's JSON settings (%s); run ./config.sh in the runner "
                            "directory again" % type(exc).__name__) from None
    if not isinstance(settings, dict):
        raise RunnerRefused(shown, "is not a JSON object; run ./config.sh in the runner directory again")
    folder = settings.get("workFolder")
    if folder is None or folder == "":
        return GITHUB_DEFAULT_WORK_FOLDER
    if not isinstance(folder, str) or "\0" in folder:
        raise RunnerRefused(shown, "workFolder is not a path (%r); set it to a directory the runner user owns, "
                            "e.g. _work" % (folder,))
    return folder


class GithubRunner:
    """A GitHub runner directory and its work folder, both held open (open_github_runner).

    ``path``: the runner directory, as the chain of opens proves it. ``owner``: (uid, gid) of
    that directory (fstat of the held descriptor): the runner user. ``label``: github_label.
    ``work_folder``: workFolder as .runner says it. ``work``: a roots.OpenRoot of the work
    folder (walk from it: strip.run_opened). Close it when done, or use ``with``.
    """

    def __init__(self, path, owner, label, work_folder, work):
        self.path, self.owner, self.label, self.work_folder, self.work = path, owner, label, work_folder, work

    @property
    def source(self):
        return "GitHub runner %s" % self.path

    def root(self):
        """The work folder as a scope root: {path, source, owner, held}: ``held`` is the work
        folder's descriptor itself, handed over (the scope keeps it and never walks the path
        again; this runner no longer closes it)."""
        held, self.work = self.work, None
        return {"path": held.path, "source": self.source, "owner": self.owner, "held": held}

    def close(self):
        if self.work is not None:
            self.work.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_runner_directory(runner_dir):
    """The GitHub runner directory ``runner_dir`` held open (a safefs.Dir; close it), as root.

    The one refusal of a runner directory every root-side user of it shares (the cleanup, the
    scope provider, runner_hooks): missing (RunnerRefused naming what to give), reached through
    a symlink another user could have planted (safefs.PathRefused), owned by root (a runner
    running as root has nothing to get back, and root's own directory is no runner user's).
    Touches the system (opens) but changes nothing.
    """
    text = os.fsdecode(runner_dir)
    try:
        held = safefs.open_dir(text)
    except FileNotFoundError:
        raise RunnerRefused(text, "does not exist; give the directory the runner was installed in "
                            "(the one holding .runner and run.sh)") from None
    if held.st.st_uid == 0:
        held.close()
        raise RunnerRefused(held.path, "is owned by root; a GitHub runner directory belongs to the runner user, "
                            "who gets the work folder back: give the directory of a runner that runs as its "
                            "own user")
    return held


def open_github_runner(runner_dir):
    """Open the GitHub runner installed in ``runner_dir`` and its work folder; a GithubRunner.

    As root, through descriptors: the runner directory with safefs.open_dir (no link below a
    directory another user can change), ``.runner`` with safefs.read_at (a regular file with
    one link, at most RUNNER_FILE_LIMIT bytes, never a link), the work folder component by
    component with O_NOFOLLOW from the runner directory's descriptor (relative, the
    default ``_work``) or from ``/`` (absolute: roots.open_root). Refuses (RunnerRefused,
    PathRefused, RootRefused: InputErrors naming the fix): a runner directory owned by root,
    no ``.runner``, a workFolder through a symlink, with ``..``, naming the runner directory
    or one above it, and a work folder (relative or absolute) that the runner user does not
    own, or below a directory between it and the runner directory that the runner user does
    not own. Touches the system (opens, reads) but changes nothing.
    """
    held = open_runner_directory(runner_dir)
    try:
        owner = (held.st.st_uid, held.st.st_gid)
        shown = held.path.rstrip("/") + "/" + GITHUB_RUNNER_FILE
        data, _st = safefs.read_at(held.fd, GITHUB_RUNNER_FILE, limit=RUNNER_FILE_LIMIT, single_link=True,
                                   path_for_errors=shown)
        if data is None:
            raise RunnerRefused(shown, "does not exist: %s is not a configured GitHub runner (run ./config.sh "
                                "there first)" % escape(held.path))
        folder = _work_folder_setting(data, shown)
        work = _open_work_folder(held, folder, owner, shown)
        return GithubRunner(held.path, owner, github_label(held.path), folder, work)
    finally:
        held.close()


def _open_work_folder(held, folder, owner, shown):
    """The work folder as an OpenRoot (see open_github_runner for what is refused)."""
    base = held.path.rstrip("/")
    if folder.startswith("/"):
        normal = posixpath.normpath(folder)
        if is_within(base, normal):
            raise RunnerRefused(shown, "workFolder %s is the runner directory or one above it; set it to a "
                                "directory below, e.g. _work" % escape(folder))
        if not is_within(normal, base, strict=True):
            return _open_outside_work_folder(folder, owner, shown)
        folder = normal[len(base) + 1:]
    names = [name for name in folder.split("/") if name not in ("", ".")]
    if ".." in names:
        raise RunnerRefused(shown, "workFolder %s has a '..' component; set it to a directory below the runner "
                            "directory, e.g. _work" % escape(folder))
    if not names:
        raise RunnerRefused(shown, "workFolder %s names the runner directory itself; set it to a directory "
                            "below it, e.g. _work" % escape(folder))
    fd = os.dup(held.fd)
    path = base
    try:
        for name in names:
            path = path + "/" + name
            try:
                child = safefs.open_dir_at(fd, name, path_for_errors=path)
            except FileNotFoundError:
                raise WorkFolderMissing(path, "the work folder does not exist (yet): no job ran here") from None
            except safefs.PathRefused as exc:
                raise RunnerRefused(path, "%s; a job may have planted it in the work folder's place: look at it "
                                    "and remove it (the runner makes its work folder again)" % exc.reason) from None
            os.close(fd)
            fd = child
            _check_runner_owns(fd, path, owner)
    except BaseException:
        os.close(fd)
        raise
    return OpenRoot(path, fd, os.fstat(fd))


def _check_runner_owns(fd, path, owner):
    """RunnerRefused unless the held directory belongs to the runner user: the work folder and
    every directory between it and the runner directory are the runner user's, or the cleanup
    would give a directory it does not own (a root-owned one ``svc.sh install`` made, named as
    workFolder) to the runner user."""
    uid = os.fstat(fd).st_uid
    if uid != owner[0]:
        raise RunnerRefused(path, "is owned by %s, not by the runner user (%s): the work folder and every "
                            "directory between it and the runner directory must be the runner user's, or the "
                            "cleanup would give away what the runner does not own; look at it, then chown it to "
                            "the runner user (chown %d %s) or set workFolder in .runner to a directory the runner "
                            "user owns" % (_who(uid), _who(owner[0]), owner[0], escape(path)))


def _who(uid):
    import pwd  # noqa: PLC0415 - POSIX only

    try:
        return "uid %d (%s)" % (uid, pwd.getpwuid(uid).pw_name)
    except KeyError:
        return "uid %d" % uid


def _open_outside_work_folder(folder, owner, shown):
    """An absolute work folder outside the runner directory: no symlink anywhere on its path,
    no system path (roots.open_root), and owned by the runner user."""
    try:
        work = open_root(folder)
    except RootRefused as exc:
        raise RunnerRefused(shown, "workFolder %s: %s" % (escape(folder), exc.reason)) from None
    try:
        _check_runner_owns(work.fd, work.path, owner)
    except RunnerRefused:
        work.close()
        raise
    return work


def github_runner(runner_dir):
    """Scope provider: the work folder of the GitHub runner installed in ``runner_dir``.

    Returns a provider result (new_found) with one root ``{path, source: "GitHub runner
    <dir>", owner: the runner directory's (uid, gid)}`` and the runner's container label.
    Raises what open_github_runner raises. Touches the system (reads) but changes nothing.
    """
    found = new_found()
    try:
        runner = open_github_runner(runner_dir)
    except WorkFolderMissing as exc:
        found["out_of_scope"].append({"what": "work folder %s" % exc.path, "source": "GitHub runner %s" % runner_dir,
                                      "reason": exc.reason})
        return found
    with runner:
        found["labels"][runner.label] = runner.source
        found["roots"].append(runner.root())
    return found


def _unit_working_directory(data):
    """WorkingDirectory= of a unit file's [Service] section, or None (pure; the last one wins,
    as systemd reads it; a leading '-' (missing is fine) is dropped)."""
    section, found = None, None
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        if section == "Service" and "=" in line:
            key, value = line.split("=", 1)
            if key.strip() == "WorkingDirectory":
                found = value.strip()
    if found is not None and found.startswith("-"):
        found = found[1:]
    return found or None


def github_runners_from_systemd(unit_dir=SYSTEMD_UNIT_DIR):
    """Scope provider: the GitHub runners installed as systemd services (svc.sh install).

    Reads the unit files ``actions.runner.*.service`` in ``unit_dir`` (their
    ``WorkingDirectory=`` is the runner directory) through descriptors; no systemctl needed.
    Each runner is opened as github_runner does; a unit or runner that cannot be read or is
    refused is an error entry (the other runners are still found). No unit directory: found
    empty. Touches the system (reads) but changes nothing.
    """
    found = new_found()
    try:
        units = safefs.open_dir(unit_dir)
    except FileNotFoundError:
        return found
    except (OSError, safefs.PathRefused) as exc:
        found["errors"].append(envelope.error_entry(unit_dir, "open unit directory", exc))
        return found
    with units:
        names = sorted(n for n in safefs.list_dir_at(units.fd) if fnmatch.fnmatchcase(n, GITHUB_UNIT_PATTERN))
        for name in names:
            shown = units.path.rstrip("/") + "/" + name
            try:
                data, _st = safefs.read_at(units.fd, name, limit=UNIT_FILE_LIMIT, path_for_errors=shown)
            except (OSError, safefs.PathRefused) as exc:
                found["errors"].append(envelope.error_entry(shown, "read unit", exc))
                continue
            runner_dir = _unit_working_directory(data or b"")
            if runner_dir is None:
                found["errors"].append(envelope.error_entry(shown, "read unit", "no WorkingDirectory= in [Service]: "
                                                            "not a unit of the runner's svc.sh"))
                continue
            try:
                one = github_runner(runner_dir)
            except (OSError, InputError) as exc:
                found["errors"].append(envelope.error_entry(runner_dir, "open runner", exc))
                continue
            for root in one["roots"]:
                if all(root["path"] != known["path"] for known in found["roots"]):
                    found["roots"].append(root)
                elif root.get("held") is not None:
                    root["held"].close()
            found["labels"].update(one["labels"])
    return found


def _load_toml(data, shown):
    if tomllib is None:
        raise InputError("%s: reading the GitLab runner's config.toml needs Python 3.11 or later (tomllib); this "
                         "host's Python is older: give the host directories of its [runners.docker] volumes as "
                         "operator roots instead, or run with a newer python3" % escape(shown))
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError("%s: not valid TOML (%s); fix the file (gitlab-runner verify reads it too)"
                         % (escape(shown), one_line(str(exc)))) from None


def _covered(path, binds):
    """Whether the container path ``path`` is at or below one of ``binds``' destinations."""
    return any(is_within(path, dest) for dest in binds)


def _add_root(found, path, source):
    if all(path != known["path"] for known in found["roots"]):
        found["roots"].append({"path": path, "source": source, "owner": None})


def _gitlab_runner(found, runner, index):
    """Add one [[runners]] entry's roots and out-of-scope volumes to ``found``."""
    name = runner.get("name") if isinstance(runner.get("name"), str) else "#%d" % index
    source = "GitLab runner %s" % name
    executor = runner.get("executor", "")
    if not (isinstance(executor, str) and executor.startswith("docker")):
        found["out_of_scope"].append({"what": "executor %s" % executor, "source": source,
                                      "reason": "not a docker executor: its jobs start no containers on this host"})
        return
    docker = runner.get("docker") if isinstance(runner.get("docker"), dict) else {}
    volumes = docker.get("volumes", [])
    binds = []
    for volume in volumes if isinstance(volumes, list) else []:
        if not isinstance(volume, str):
            continue
        parts = volume.split(":")
        if len(parts) == 1:
            found["out_of_scope"].append({"what": "volume %s" % volume, "source": source,
                                          "reason": ANONYMOUS_VOLUME_REASON})
        elif parts[0].startswith("/") and parts[0].endswith(".sock"):
            found["out_of_scope"].append({"what": "volume %s" % volume, "source": source, "reason": SOCKET_REASON})
        elif parts[0].startswith("/"):
            _add_root(found, posixpath.normpath(parts[0]), "%s volume" % source)
            binds.append(posixpath.normpath(parts[1]))
        elif parts[0].startswith("."):
            found["out_of_scope"].append({"what": "volume %s" % volume, "source": source,
                                          "reason": "a relative host path: give the directory as an operator root"})
        else:
            found["out_of_scope"].append({"what": "volume %s" % volume, "source": source,
                                          "reason": NAMED_VOLUME_REASON})
    for key in ("builds_dir", "cache_dir"):
        value = runner.get(key)
        if isinstance(value, str) and value and not _covered(posixpath.normpath(value), binds):
            found["out_of_scope"].append({"what": "%s %s" % (key, value), "source": source,
                                          "reason": "no host directory is bound there: " + NAMED_VOLUME_REASON})
    cache_dir = docker.get("cache_dir")
    if isinstance(cache_dir, str) and cache_dir and not docker.get("disable_cache"):
        if cache_dir.startswith("/"):  # the docker executor binds <cache_dir>/<project>/... as /cache
            _add_root(found, posixpath.normpath(cache_dir), "%s docker cache_dir" % source)
        else:
            found["out_of_scope"].append({"what": "docker cache_dir %s" % cache_dir, "source": source,
                                          "reason": "relative to the runner's working directory: give the "
                                          "directory as an operator root"})


def gitlab_roots(config_path=GITLAB_CONFIG):
    """Scope provider: the host directories GitLab Runner's docker executor binds into jobs.

    Parses ``config_path`` (TOML, with tomllib: Python 3.11 or later; on an older Python an
    InputError says to give the roots as operator roots). Every ``[[runners]]`` with a docker
    executor: ``[runners.docker] volumes`` entries ``HOST:CONTAINER[:MODE]`` with an absolute
    host path become roots ``{path, source: "GitLab runner <name> volume", owner: None}``;
    named and anonymous volumes are out of scope (with the reason); ``builds_dir`` and
    ``cache_dir`` count only through a host bind that covers them (else out of scope); an
    absolute ``[runners.docker] cache_dir`` (host-based cache) is a root. The file is read
    through descriptors (no link below a directory another user can change). No file:
    RunnerRefused. Touches the system (reads) but changes nothing.
    """
    text = os.fsdecode(config_path)
    try:
        parent, name = safefs.open_parent(text)
    except FileNotFoundError:
        raise RunnerRefused(text, "does not exist; give the GitLab runner's config.toml") from None
    with parent:
        data, _st = safefs.read_at(parent.fd, name, limit=GITLAB_CONFIG_LIMIT, path_for_errors=text)
    if data is None:
        raise RunnerRefused(text, "does not exist; give the GitLab runner's config.toml")
    config = _load_toml(data, text)
    found = new_found()
    runners = config.get("runners", [])
    for index, runner in enumerate(runners if isinstance(runners, list) else []):
        if isinstance(runner, dict):
            _gitlab_runner(found, runner, index)
    return found


def cleanup_github_runner(runner_dir, budget=RUNNER_CLEANUP_BUDGET_S, dry_run=False,
                          max_listed=stripmod.DEFAULT_MAX_LISTED):
    """Give the work folder of the GitHub runner in ``runner_dir`` back to the runner user.

    Root only. Everything under the work folder whose uid or gid is not the runner
    directory's is given to that (uid, gid); setuid/setgid bits are cleared and file
    capabilities removed; within ``budget`` seconds, never following a link, staying on the
    work folder's mount: one strip walk (strip.run_opened) from the work folder's descriptor
    (open_github_runner). Nothing is taken from the environment. Returns the strip report
    with ``runner`` ({dir, work_folder, owner, label}); a work folder that does not exist
    yet (no job ran) gives an empty, complete report with ``runner.missing``. Raises
    InputError subclasses for a refused runner (see open_github_runner). Touches the system
    unless ``dry_run``.
    """
    started = time.monotonic()
    try:
        runner = open_github_runner(runner_dir)
    except WorkFolderMissing as exc:
        report = new_report([exc.path], dry_run)
        report["runner"] = {"dir": os.fsdecode(runner_dir), "work_folder": exc.path, "missing": True}
        report["elapsed"] = round(time.monotonic() - started, 3)
        return report
    with runner:
        report = stripmod.run_opened([runner.work], actions=("chown", "setid", "caps", "device"),
                                     chown_to=runner.owner,
                                     chown_from=CHOWN_FROM_OTHERS, budget=budget, dry_run=dry_run,
                                     max_listed=max_listed)
        report["runner"] = {"dir": runner.path, "work_folder": runner.work.path, "owner": list(runner.owner),
                            "label": runner.label}
    report["elapsed"] = round(time.monotonic() - started, 3)
    return report


def _refused_provider(what, exc):
    """A provider result whose one candidate is refused: derive reports it in ``refused``."""
    found = new_found()
    if isinstance(exc, InputError):
        reason = one_line(str(exc))  # names the file refused (.runner, the work folder) and the fix
    else:
        reason = one_line("%s: %s" % (escape(os.fsdecode(what)), exc.strerror or exc))
    found["roots"].append({"path": os.fsdecode(what), "reason": reason})
    return found


def _guarded(provider, what):
    """``provider`` as a scope provider that turns a refusal (InputError, OSError) into a
    refused candidate: one bad runner directory does not hide the other roots."""
    def provide():
        try:
            return provider()
        except (OSError, InputError) as exc:
            return _refused_provider(what, exc)
    return provide


def _github_provider(runner_dir):
    return lambda: github_runner(runner_dir)


def runner_providers(github_runners=(), gitlab_config=None, find_github_runners=False,
                     unit_dir=SYSTEMD_UNIT_DIR):
    """The scope providers (scope.derive's ``providers``) for the CI runner options every
    consumer takes: one per GitHub runner directory in ``github_runners``, the GitLab
    runner's ``gitlab_config`` (config.toml) when given, and the runners installed as
    systemd services when ``find_github_runners`` (github_runners_from_systemd). A runner
    directory or configuration refused is a refused root (scope.derive's ``refused``, with
    the reason naming the fix), never an exception. Pure: the providers touch the system
    only when scope.derive calls them."""
    if isinstance(github_runners, (str, bytes)):
        github_runners = [github_runners]
    providers = [_guarded(_github_provider(os.fsdecode(d)), d) for d in github_runners or () if d]
    if gitlab_config:
        providers.append(_guarded(lambda: gitlab_roots(gitlab_config), gitlab_config))
    if find_github_runners:
        providers.append(_guarded(lambda: github_runners_from_systemd(unit_dir), unit_dir))
    return providers
