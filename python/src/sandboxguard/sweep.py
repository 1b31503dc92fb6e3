# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Sweep Docker sandboxes: the seeds' teardown pass, for every in-scope bind mount.

For each target directory (see sandboxes.scope_containers), three steps run in the
order the seeds give, each with its own budget so a huge tree in one step cannot
starve the next:

1. ``chown``: ownership return. Files and directories owned by root (or by the
   engine's remapped root) go back to the sandbox directory's owner. The kernel
   clears setuid, setgid and file capabilities on what it chowns, so this goes first.
2. ``setid``: clear setuid/setgid on every regular file.
3. ``caps``: clear file capabilities.

Two methods: ``native`` walks the tree on the host with strip.run (needs root on the
host); ``container`` runs each step in a disposable hardened container that mounts only
the target, by its resolved path, for hosts where the engine is reachable but root is
not. A step that cannot run produces one warning naming the sandbox path.
"""
import os
import posixpath
import stat
import time

from . import docker_engine, sandboxes
from . import strip as stripmod

STEPS = ("chown", "setid", "caps")
METHODS = ("native", "container")
DEFAULT_BUDGET_PER_STEP_S = 10.0
CONTAINER_TARGET = "/sweep/target"

# POSIX sh for the container method: GNU findutils or busybox, no stat(1) needed.
# "$1" is the target inside the container; each found path is printed before it is changed.
SCRIPT_CHOWN = r"""
set -u
t=$1; owner=$2; shift 2
ok=0
for uid in "$@"; do
  find -P "$t" -xdev \( -type f -o -type d \) -user "$uid" -print -exec chown -h "$owner" {} + || ok=1
done
exit $ok
"""
SCRIPT_CHOWN_DRY = r"""
set -u
t=$1; owner=$2; shift 2
for uid in "$@"; do find -P "$t" -xdev \( -type f -o -type d \) -user "$uid" -print || exit 1; done
"""
SCRIPT_SETID = r"""
set -u
find -P "$1" -xdev -type f \( -perm -4000 -o -perm -2000 \) -print -exec chmod ug-s {} +
"""
SCRIPT_SETID_DRY = r"""
set -u
find -P "$1" -xdev -type f \( -perm -4000 -o -perm -2000 \) -print
"""
# find cannot read xattrs: re-chown each regular file to its own uid and gid, which makes
# the kernel drop security.capability (capabilities(7)); owners are read once (ls -n, no
# stat(1) needed), then one walk per owner. No awk: busybox awk crashes in this container.
SCRIPT_CAPS = r"""
set -u
t=$1
find -P "$t" -xdev -type f -exec ls -nd {} + > /tmp/owners || { echo "listing owners under $t failed"; exit 1; }
owners=$(while read -r _ _ u g _; do
  case "$u:$g" in *[!0-9:]*|:*|*:) ;; *) echo "$u:$g" ;; esac
done < /tmp/owners | sort -u)
n=0; ok=0
for o in $owners; do
  n=$((n + 1)); u=${o%%:*}; g=${o#*:}
  find -P "$t" -xdev -type f -user "$u" -group "$g" -exec chown -h "$u:$g" {} + || ok=1
done
echo "re-chowned the regular files of $n owner(s)"
exit $ok
"""


def path_owner(path):
    """(uid, gid) of a directory, not following a final symlink (touches the system)."""
    st = os.lstat(path)
    return st.st_uid, st.st_gid


def sandbox_owner(target_root):
    """The owner ownership return gives files back to: the owner of ``<sandbox>``.

    ``target_root`` is the realpath of ``<sandbox>/docker``; Hermes creates ``<sandbox>``
    as the agent's user, while the engine may create the task directories as root.
    """
    return path_owner(posixpath.dirname(target_root.rstrip("/")))


def _step_result(name, budget):
    return {"step": name, "budget": budget, "complete": True, "changed": False, "ran": True,
            "error": None, "report": None}


_NO_OWNERSHIP = "no ownership to return (owner %s, from %s)"


def _returns_ownership(owner, chown_from):
    """Ownership return runs only with uids to take from and an owner that is not one of them
    (an agent running as root gets nothing back, as in the seeds)."""
    return bool(chown_from) and owner is not None and owner[0] not in chown_from


def sweep_native(target, owner, chown_from, budget, dry_run=False, max_listed=stripmod.DEFAULT_MAX_LISTED,
                 steps=STEPS):
    """The three steps on the host, each its own walk with its own budget."""
    results = []
    for name in steps:
        result = _step_result(name, budget)
        if name == "chown" and not _returns_ownership(owner, chown_from):
            result.update(ran=False, skipped=_NO_OWNERSHIP % (owner[0] if owner else None, list(chown_from)))
            results.append(result)
            continue
        ownership = {"chown_to": owner, "chown_from": chown_from} if name == "chown" else {}
        try:
            report = stripmod.run([target], actions=[name], dry_run=dry_run, budget=budget, max_listed=max_listed,
                                  **ownership)
        except Exception as exc:  # a refused root, a vanished target: reported, the next step still runs
            result.update(ran=False, complete=False, error="%s: %s" % (type(exc).__name__, exc))
            results.append(result)
            continue
        result.update(report=report, complete=report["complete"], changed=report["changed"])
        if report["errors"]:
            result["error"] = "%d per-file error(s), first: %s: %s" % (
                report["counts"]["errors"], report["errors"][0]["path"], report["errors"][0]["error"])
        results.append(result)
    return results


def sweep_container(client, target, owner, chown_from, budget, image, dry_run=False, steps=STEPS,
                    run=docker_engine.run_disposable):
    """The three steps in disposable hardened containers (see docker_engine.run_disposable)."""
    binds = {target: CONTAINER_TARGET}
    results = []
    for name in steps:
        result = _step_result(name, budget)
        if name == "chown":
            if not _returns_ownership(owner, chown_from):
                result.update(ran=False, skipped=_NO_OWNERSHIP % (owner[0] if owner else None, list(chown_from)))
                results.append(result)
                continue
            script = SCRIPT_CHOWN_DRY if dry_run else SCRIPT_CHOWN
            args = [CONTAINER_TARGET, "%d:%d" % owner] + [str(u) for u in chown_from]
        elif name == "setid":
            script, args = (SCRIPT_SETID_DRY if dry_run else SCRIPT_SETID), [CONTAINER_TARGET]
        else:
            if dry_run:
                result.update(ran=False, skipped="find cannot see capabilities: the container method has no dry run "
                                                 "for this step (use method native to list them)")
                results.append(result)
                continue
            script, args = SCRIPT_CAPS, [CONTAINER_TARGET]
        started = time.monotonic()
        try:
            out = run(client, image, script, args, binds, timeout=budget or None)
        except Exception as exc:
            result.update(ran=False, complete=False, error="could not run the strip container: %s" % exc)
            results.append(result)
            continue
        lines = [ln for ln in out["output"].splitlines() if ln]
        found = [target + ln[len(CONTAINER_TARGET):] for ln in lines if ln.startswith(CONTAINER_TARGET)]
        result["report"] = {"files": found, "exit_code": out["exit_code"], "output": out["output"][-4000:],
                            "elapsed": round(time.monotonic() - started, 3)}
        if out["timed_out"]:
            result.update(complete=False, error="step %s did not finish within %ss and was killed" % (name, budget))
        elif out["exit_code"] != 0:
            result.update(complete=False, error="step %s exited %s: %s" % (
                name, out["exit_code"], (lines[-1] if lines else "no output")))
        # The caps step re-chowns every file and cannot see which ones carried a capability,
        # so it reports the step as run, not as a change (method native reports exactly).
        result["changed"] = bool(found) and not dry_run and name != "caps"
        if dry_run:
            result["would_change"] = bool(found)
        results.append(result)
    return results


def derive_roots(hermes_homes=(), sandbox_dir=None, extra_roots=()):
    """Host-derived roots, resolved on this host (touches the system: lists profiles)."""
    profiles = {home: sandboxes.list_profile_names(home) for home in hermes_homes}
    derived = sandboxes.derive_sandbox_roots(hermes_homes, sandbox_dir, extra_roots, profiles)
    return sandboxes.resolve_roots(derived, os.path.realpath)


def mounts_info(client, hermes_homes=(), sandbox_dir=None, extra_roots=(), names=None, include_stopped=True):
    """What sandbox_mounts_info returns: engine facts, roots, containers and targets."""
    facts = sandboxes.engine_facts(docker_engine.engine_info(client))
    usable, refused = derive_roots(hermes_homes, sandbox_dir, extra_roots)
    inspects = docker_engine.inspect_containers(client, names, include_stopped)
    # Without a container filter, persistent sandbox directories no container mounts any
    # more (a --rm container that died unseen) are swept too: their scope is host-derived.
    task_dirs = sandboxes.list_task_dirs(usable) if not names else ()
    containers, targets = sandboxes.scope_containers(inspects, usable, os.path.realpath, sandboxes.path_kind,
                                                     task_dirs)
    return {"engine": facts, "roots": usable, "refused_roots": refused, "containers": containers,
            "targets": targets}


def sweep(client, hermes_homes=(), sandbox_dir=None, extra_roots=(), names=None, include_stopped=True,
          method="native", image=None, owner=None, budget_per_step=DEFAULT_BUDGET_PER_STEP_S, dry_run=False,
          chown=True, info=None):
    """Find the targets and sweep each one; return the sandbox_sweep result.

    ``owner``: (uid, gid) for ownership return; None means each sandbox's owner.
    ``info``: a mounts_info() result to reuse (the watcher passes one per event).
    Returns dict: engine, targets, sandboxes (one per target: path, owner, method,
    steps[]), warnings (one per sandbox that could not be swept completely), changed.
    """
    if method not in METHODS:
        raise ValueError("method must be one of %s, not %r" % (", ".join(METHODS), method))
    if method == "container" and not image:
        raise ValueError("the container method needs an image with find, chown, chmod, ls, awk and sort "
                         "(busybox or a Debian slim image): set image")
    if info is None:
        info = mounts_info(client, hermes_homes, sandbox_dir, extra_roots, names, include_stopped)
    facts = info["engine"]
    result = {"engine": facts, "targets": info["targets"], "sandboxes": [], "warnings": [], "changed": False,
              "containers": info["containers"], "roots": info["roots"], "refused_roots": info["refused_roots"]}
    if not facts["sweepable"]:
        result["warnings"].append("not sweeping: %s" % facts["reason"])
        return result
    chown_from = sandboxes.chown_from_uids(facts) if chown else ()
    for target in info["targets"]:
        path = target["realpath"]
        entry = {"path": path, "root": target["root"], "containers": target["containers"], "method": method,
                 "owner": None, "steps": []}
        try:
            entry["owner"] = list(owner) if owner is not None else list(sandbox_owner(target["root"]))
        except OSError as exc:
            result["warnings"].append("sandbox %s: cannot read the owner of its sandbox directory (%s); "
                                      "ownership is not returned" % (path, exc.strerror))
        own = tuple(entry["owner"]) if entry["owner"] else None
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode):
                raise OSError(0, "not a directory any more")
        except OSError as exc:
            result["warnings"].append("sandbox %s: skipped, %s" % (path, exc.strerror or exc))
            entry["skipped"] = str(exc.strerror or exc)
            result["sandboxes"].append(entry)
            continue
        if method == "native":
            entry["steps"] = sweep_native(path, own, chown_from, budget_per_step, dry_run)
        else:
            entry["steps"] = sweep_container(client, path, own, chown_from, budget_per_step, image, dry_run)
        problems = ["%s: %s" % (s["step"], s["error"] or "did not complete within its budget")
                    for s in entry["steps"] if s["error"] or not s["complete"]]
        if problems:
            result["warnings"].append("sandbox %s was not swept completely (%s): %s" % (
                path, method, "; ".join(problems)))
        entry["changed"] = any(s["changed"] for s in entry["steps"])
        result["changed"] = result["changed"] or entry["changed"]
        result["sandboxes"].append(entry)
    return result
