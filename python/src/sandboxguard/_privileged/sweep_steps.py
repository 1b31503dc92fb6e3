# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The sweep's three steps on one target (sweep.py decides the targets and the owner):
``sweep_native`` walks on the host with strip.run, one walk per step with its own budget;
``sweep_container`` runs each step's POSIX sh in a disposable hardened container that mounts
a root-owned staging bind of the proven directory (staging.staged), never the agent's path.
"""
import os
import time

from .. import docker_engine
from .. import report as envelope
from .. import strip as stripmod
from .._core.text import escape
from .._walk import fileops
from ..roots import OpenRoot
from . import staging

STEPS = ("chown", "setid", "caps")
# The walk actions of each step: the setid step also makes device nodes harmless (root-owned,
# mode 0000: strip's ``device`` action), since ownership return never gives one away.
STEP_ACTIONS = {"chown": ("chown",), "setid": ("setid", "device"), "caps": ("caps",)}
CONTAINER_TARGET = "/sweep/target"

# POSIX sh for the container method: GNU findutils or busybox, no stat(1) needed.
# Every script starts with PROLOGUE: its first argument is the inode of the directory the host
# proved, and nothing runs unless the target the engine mounted is that directory (an engine in
# another mount namespace than the sweep would mount whatever its own path names).
# Then "$1" is the target inside the container; each found path is printed before it is changed.
PROLOGUE = r"""
set -u
ino=$1; shift
seen=$(ls -di "$1" 2>/dev/null | { read -r i _; echo "$i"; })
if [ "$seen" != "$ino" ]; then
  echo "sandboxguard: $1 is not the directory the host proved (inode ${seen:-none}, expected $ino): nothing done" >&2
  exit 97
fi
"""
# Found paths go to stdout as a hex dump of find's -print0 (od -An -tx1): a name may hold a
# newline or any byte but NUL, and the engine's log driver stores stdout as UTF-8 text, so a
# byte that is not UTF-8 would come back replaced. Every message goes to stderr; find's own
# status is kept in /tmp/rc (a pipeline's status is od's). The hard-link rule of every walk
# (fileops.LINKED_UNCHANGED): a regular file with more than one link is never chowned, and
# where fs.protected_hardlinks is 0 ("$links" = one) neither its setid bits nor its
# capabilities are touched (any user may have linked a system binary into the tree).
SCRIPT_CHOWN = r"""
set -u
t=$1; owner=$2; links=$3; shift 3
ok=0
for uid in "$@"; do
  { find -P "$t" -xdev \( \( -type f -links 1 \) -o -type d \) -user "$uid" -print0 -exec chown -h "$owner" {} +
    echo $? > /tmp/rc; } | od -An -v -tx1
  [ "$(cat /tmp/rc)" = 0 ] || ok=1
done
exit $ok
"""
SCRIPT_CHOWN_DRY = r"""
set -u
t=$1; owner=$2; links=$3; shift 3
for uid in "$@"; do
  { find -P "$t" -xdev \( \( -type f -links 1 \) -o -type d \) -user "$uid" -print0; echo $? > /tmp/rc; } |
    od -An -v -tx1
  [ "$(cat /tmp/rc)" = 0 ] || exit 1
done
"""
# The setid step also makes block and character device nodes harmless (fileops.fix_device):
# root-owned first (their owner can no longer chmod them back), then mode 0000.
SCRIPT_SETID = r"""
set -u
t=$1; links=$2
if [ "$links" = one ]; then lf="-links 1"; else lf=""; fi
# shellcheck disable=SC2086
{ find -P "$t" -xdev -type f $lf \( -perm -4000 -o -perm -2000 \) -print0 -exec chmod ug-s {} +; echo $? > /tmp/rc; } |
  od -An -v -tx1
rc=$(cat /tmp/rc)
# shellcheck disable=SC2086
{ find -P "$t" -xdev \( -type b -o -type c \) $lf ! \( -user 0 -group 0 -perm 0000 \) -print0 \
    -exec chown -h 0:0 {} +; echo $? > /tmp/rc; } | od -An -v -tx1
[ "$(cat /tmp/rc)" = 0 ] || rc=1
# shellcheck disable=SC2086
find -P "$t" -xdev \( -type b -o -type c \) $lf -user 0 ! -perm 0000 -exec chmod 0000 {} + || rc=1
exit "$rc"
"""
SCRIPT_SETID_DRY = r"""
set -u
t=$1; links=$2
if [ "$links" = one ]; then lf="-links 1"; else lf=""; fi
# shellcheck disable=SC2086
{ find -P "$t" -xdev \( \( -type f \( -perm -4000 -o -perm -2000 \) \) -o \( \( -type b -o -type c \) \
    ! \( -user 0 -group 0 -perm 0000 \) \) \) $lf -print0; echo $? > /tmp/rc; } | od -An -v -tx1
exit "$(cat /tmp/rc)"
"""
# find cannot read xattrs: re-chown each regular file to its own uid and gid, which makes
# the kernel drop security.capability (capabilities(7)); owners are read once (ls -n, no
# stat(1) needed), then one walk per owner. No awk: busybox awk crashes in this container.
SCRIPT_CAPS = r"""
set -u
t=$1; links=$2
if [ "$links" = one ]; then lf="-links 1"; else lf=""; fi
# shellcheck disable=SC2086
find -P "$t" -xdev -type f $lf -exec ls -nd {} + > /tmp/owners || { echo "listing owners under $t failed" >&2; exit 1; }
owners=$(while read -r _ _ u g _; do
  case "$u:$g" in *[!0-9:]*|:*|*:) ;; *) echo "$u:$g" ;; esac
done < /tmp/owners | sort -u)
n=0; ok=0
for o in $owners; do
  n=$((n + 1)); u=${o%%:*}; g=${o#*:}
  # shellcheck disable=SC2086
  find -P "$t" -xdev -type f $lf -user "$u" -group "$g" -exec chown -h "$u:$g" {} + || ok=1
done
echo "re-chowned the regular files of $n owner(s)" >&2
exit $ok
"""


def found_paths(stdout, target):
    """The host paths of what a step's find printed, as str (pure): ``stdout`` is the hex dump
    of find's ``-print0`` (od -An -tx1, bytes); anything that is not hex is ignored."""
    digits = b"".join(word for word in stdout.split() if len(word) == 2 and all(c in b"0123456789abcdef" for c in word))
    prefix = os.fsencode(CONTAINER_TARGET)
    base = os.fsencode(target)
    return [os.fsdecode(base + chunk[len(prefix):]) for chunk in bytes.fromhex(digits.decode("ascii")).split(b"\0")
            if chunk == prefix or chunk.startswith(prefix + b"/")]


# The keys of a step's file entries: what strip.run lists for method native. Method
# container sees only paths (find prints them), so the rest is None there.
_FILE_KEYS = ("path", "type", "mode_before", "mode_after", "caps_before", "uid", "gid", "nlink")


def _step_result(name, budget):
    """One step's result: the envelope's changed/complete/errors, plus the step's report."""
    return {"step": name, "budget": budget, "ran": True, "skipped": None, "complete": True, "changed": False,
            "errors": [], "error": None, "report": None}


def _step_failed(result, path, text):
    """A step that did not finish: one {path, op, error}; ``error`` keeps the first line."""
    result["complete"] = False
    result["errors"].append(envelope.error_entry(path, result["step"], text))
    if result["error"] is None:
        result["error"] = text


_NO_OWNERSHIP = "no ownership to return (owner %s, from %s)"


def _returns_ownership(owner, chown_from):
    """Ownership return runs only with uids to take from and an owner that is not one of them
    (an agent running as root gets nothing back, as in the seeds). ``chown_from`` may be
    fileops.CHOWN_FROM_OTHERS (a runner's work folder: every uid and gid but the owner's)."""
    if chown_from == fileops.CHOWN_FROM_OTHERS:
        return owner is not None and owner[0] != 0
    return bool(chown_from) and owner is not None and owner[0] not in chown_from


def sweep_native(target, owner, chown_from, budget, dry_run=False, max_listed=stripmod.DEFAULT_MAX_LISTED,
                 steps=STEPS):
    """The three steps on the host, each its own walk with its own budget, every walk from
    the descriptor ``target`` holds (a roots.OpenRoot the scope proved: scope.Target.held;
    the caller closes it). A path is still accepted (proven once, by strip.run, per step).

    Three walks, not the one walk strip.run could do with all three actions: each step
    gets its own budget (INTERFACES.md, ``budget_per_step``), so a tree that exhausts the
    ownership return still has its setid bits stripped; and the order is the seeds' (the
    chown clears what it can before the strip looks). One walk would share one budget and
    let a huge tree starve the later steps. The cost is re-reading the directories twice,
    which the page cache makes cheap next to the per-file syscalls.
    """
    shown = target.path if isinstance(target, OpenRoot) else target
    results = []
    for name in steps:
        result = _step_result(name, budget)
        if name == "chown" and not _returns_ownership(owner, chown_from):
            shown = chown_from if chown_from == fileops.CHOWN_FROM_OTHERS else list(chown_from)
            result.update(ran=False, skipped=_NO_OWNERSHIP % (owner[0] if owner else None, shown))
            results.append(result)
            continue
        ownership = {"chown_to": owner, "chown_from": chown_from} if name == "chown" else {}
        options = dict(actions=STEP_ACTIONS[name], dry_run=dry_run, budget=budget, max_listed=max_listed, **ownership)
        try:
            if isinstance(target, OpenRoot):
                report = stripmod.run_opened([target], **options)
            else:
                report = stripmod.run([target], **options)
        except Exception as exc:  # a refused root, a vanished target: reported, the next step still runs
            result["ran"] = False
            _step_failed(result, shown, envelope.error_text(exc))
            results.append(result)
            continue
        result.update(report=report, complete=report["complete"], changed=report["changed"],
                      errors=list(report["errors"]))
        if report["errors"]:
            result["error"] = "%d per-file error(s), first: %s: %s" % (
                report["counts"]["errors"], escape(report["errors"][0]["path"]), report["errors"][0]["error"])
        results.append(result)
    return results


def _container_entry(path, action):
    entry = dict.fromkeys(_FILE_KEYS)
    entry.update(path=path, actions=[action])
    return entry


def sweep_container(client, target, owner, chown_from, budget, image, dry_run=False, steps=STEPS,
                    run=docker_engine.run_disposable, stage=None):
    """The three steps in disposable hardened containers (see docker_engine.run_disposable).

    The containers mount a root-owned staging bind of the proven ``target`` (a roots.OpenRoot
    the scope holds, or a path) (``stage(target)``, a context manager yielding the path the
    engine gets: staging.staged),
    never ``target``'s own path, which the engine would resolve through whatever the agent
    swapped in. Each step's ``report`` is the same envelope as method native's, its
    ``files`` the same dicts; find prints only paths, so modes, owners and caps are None and
    the setid step's action is ``setid`` (find cannot tell which bit it cleared without a
    second walk).
    """
    stage = stage or staging.staged
    shown = target.path if isinstance(target, OpenRoot) else target
    results = None
    try:
        with stage(target) as (source, st):
            results = _container_steps(client, shown, source, st.st_ino, owner, chown_from, budget, image, dry_run,
                                       steps, run)
    except ValueError as exc:  # RootRefused, StagingError: no step ran, or the staging was not undone
        text = "could not hand %s to the strip container: %s" % (shown, envelope.error_text(exc))
        if results:
            _step_failed(results[-1], shown, text)
            return results
        results = []
        for name in steps:
            result = _step_result(name, budget)
            result["ran"] = False
            _step_failed(result, shown, text)
            results.append(result)
    return results


def _container_steps(client, target, source, ino, owner, chown_from, budget, image, dry_run, steps, run):
    binds = {source: CONTAINER_TARGET}
    links = "any" if fileops.hardlinks_protected() else "one"
    results = []
    for name in steps:
        result = _step_result(name, budget)
        if name == "chown":
            if not _returns_ownership(owner, chown_from):
                result.update(ran=False, skipped=_NO_OWNERSHIP % (owner[0] if owner else None, list(chown_from)))
                results.append(result)
                continue
            script = SCRIPT_CHOWN_DRY if dry_run else SCRIPT_CHOWN
            args = [CONTAINER_TARGET, "%d:%d" % owner, links] + [str(u) for u in chown_from]
        elif name == "setid":
            script, args = (SCRIPT_SETID_DRY if dry_run else SCRIPT_SETID), [CONTAINER_TARGET, links]
        else:
            if dry_run:
                result.update(ran=False, skipped="find cannot see capabilities: the container method has no dry run "
                                                 "for this step (use method native to list them)")
                results.append(result)
                continue
            script, args = SCRIPT_CAPS, [CONTAINER_TARGET, links]
        started = time.monotonic()
        try:
            out = run(client, image, PROLOGUE + script, [str(ino), *args], binds, timeout=budget or None)
        except Exception as exc:
            result["ran"] = False
            _step_failed(result, target, "could not run the strip container: %s" % exc)
            results.append(result)
            continue
        lines = [ln for ln in out["output"].splitlines() if ln]
        messages = [ln for ln in out.get("stderr", out["output"]).splitlines() if ln]
        found = found_paths(out["stdout"], target)
        report = envelope.new_report([target], dry_run=bool(dry_run), files=[_container_entry(p, name) for p in found],
                                     counts={"files": len(found), name: len(found)}, exit_code=out["exit_code"],
                                     output=out.get("stderr", out["output"])[-4000:])
        if links == "one":  # find cannot tell whether it passed one over: said for every step
            envelope.add_warning(report, fileops.LINKED_UNCHANGED_WARNING)
        if out["timed_out"]:
            envelope.add_error(report, target, name, "step %s did not finish within %ss and was killed" % (
                name, budget))
        elif out["exit_code"] != 0:
            envelope.add_error(report, target, name, "step %s exited %s: %s" % (
                name, out["exit_code"], (messages[-1] if messages else lines[-1] if lines else "no output")))
        report["complete"] = not report["errors"]
        # The caps step re-chowns every file and cannot see which ones carried a capability,
        # so it reports the step as run, not as a change (method native reports exactly).
        # In a dry run, changed means "would change" (as in Ansible's check mode).
        report["changed"] = bool(found) and name != "caps"
        envelope.finish(report, started)
        result.update(report=report, complete=report["complete"], changed=report["changed"],
                      errors=list(report["errors"]))
        result["error"] = report["errors"][0]["error"] if report["errors"] else None
        if dry_run:
            result["would_change"] = result["changed"]  # deprecated: read changed (same value)
        results.append(result)
    return results
