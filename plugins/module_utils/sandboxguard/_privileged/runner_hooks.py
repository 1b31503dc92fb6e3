# GENERATED from python/src/sandboxguard/_privileged/runner_hooks.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection: the ``runner_hooks`` module and the
``runner_cleanup`` role use this; it is not part of the library's public API (python/README.md).

A GitHub runner's job hooks: our root-owned hook scripts named in the runner's ``.env``.

What one runner gets (:func:`ensure_hooks`, ``state="present"``), in this order, so that a job
never runs a hook that is not there yet:

1. ``<hook_dir>/<name>/job-completed.sh`` (and ``job-started.sh`` with ``job_started``), root's,
   0755 (:func:`hook_script`): the root helper through ``sudo -n`` with exactly the runner
   directory, then the operator's own hook (the one ``.env`` named before), as the runner
   would run it; ``chained.json`` beside them remembers the operator's hooks.
2. ``<sudoers_dir>/sandboxguard-runner-<name>`` (0440, checked with ``visudo -cf`` first):
   the runner user may run exactly the helper with exactly the runner directory.
3. ``ACTIONS_RUNNER_HOOK_JOB_COMPLETED`` (and ``_STARTED``) in ``<runner>/.env`` name the
   scripts. Every other line stays as it was, byte for byte.

``state="absent"`` undoes it in the reverse order: ``.env`` names the operator's hooks again
(or no hook, when there was none), then the scripts, ``chained.json``, their directory and
the drop-in go.

The runner directory is the runner user's (and every job's) to change. Root opens it once
(runners.open_runner_directory: no symlink another user could plant, not root's) and never
acts in it by path: ``.env`` is read and replaced by a forked child that has dropped to the
runner user's uid and gid (:func:`as_user`), through the directory's descriptor, so whatever
that user swaps in is its own file, edited with its own rights. Between the look and the
write the child checks the hook lines are still what the scripts were written for; if they
changed it writes nothing and says to run again. The hook directory and the sudoers
directory must be root's alone (safefs: trusted).

The runner reads ``.env`` when it starts, one ``NAME=value`` per line, split at the first
``=``, nothing trimmed or unquoted, the last line of a name winning (actions/runner,
Program.LoadAndSetEnv): :func:`env_value` reads it that way and :func:`plan_env` edits the
line that wins.

Standard library only; touches the system where a function says so.
"""
import base64
import errno
import json
import os
import posixpath
import pwd
import re
import stat
import tempfile
import time

from .. import report as envelope
from .._core import atomicfile, defaults, forked, proc, safefs
from .._core.text import escape
from . import runners
from .runner_texts import (
    DEFAULT_SUDO,
    ENV_VARS,
    PHASES,
    HooksRefused,
    check_path_text,
    hook_script,
    runner_name,
    sudoers_text,
)

STATES = ("present", "absent")
ENV_FILE = ".env"
ENV_MODE = 0o644  # a new .env, as the runner's config.sh makes it
ENV_LIMIT = 1 << 20
SCRIPT_NAMES = {"started": "job-started.sh", "completed": "job-completed.sh"}
CHAINED_FILE = "chained.json"
CHAINED_LIMIT = 64 << 10
SCRIPT_MODE = 0o755
CHAINED_MODE = 0o644
SCRIPT_DIR_MODE = 0o755
DROPIN_MODE = 0o440
DEFAULT_HOOK_DIR = "/usr/local/lib/sandboxguard-runner"
DEFAULT_SUDOERS_DIR = "/etc/sudoers.d"
DEFAULT_VISUDO = "/usr/sbin/visudo"
# sudo skips files in sudoers.d whose name holds a dot or ends in ~ (sudoers(5), #includedir):
# the drop-in's name is the runner directory with every other character made _.
DROPIN_PREFIX = "sandboxguard-runner-"
# Runner user names go into a sudoers entry as they are.
USER_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9._-]*$")
VISUDO_TIMEOUT_S = 30
AS_USER_TIMEOUT_S = 30


# -- pure: .env ----------------------------------------------------------------------------
def _split_lines(data):
    """``data`` (bytes) as a list of lines, each with its own line end (pure)."""
    return data.splitlines(True)


def _line_name(line):
    """The variable a .env line sets (bytes, as the runner splits it: at the first =), or None."""
    body = line.rstrip(b"\r\n")
    index = body.find(b"=")
    return body[:index] if index > 0 else None


def env_value(data, name):
    """The value the runner takes for ``name`` (str) from .env ``data`` (bytes): the last
    ``name=`` line's rest (surrogate-escaped str), or None when no line sets it (pure)."""
    key = name.encode("ascii")
    found = None
    for line in _split_lines(data):
        if _line_name(line) == key:
            found = line.rstrip(b"\r\n").split(b"=", 1)[1]
    return None if found is None else found.decode("utf-8", "surrogateescape")


def plan_env(data, changes):
    """.env ``data`` (bytes) with ``changes`` ({name: value str, or None}) made (pure).

    A value replaces the line that wins for that name (the last one) in place, or is appended
    (after a line end added to an unterminated last line); None removes the line that wins.
    Every other line stays, byte for byte, earlier lines of the same name included.
    """
    lines = _split_lines(data)
    for name, value in changes.items():
        key = name.encode("ascii")
        last = max((i for i, line in enumerate(lines) if _line_name(line) == key), default=None)
        if value is None:
            if last is not None:
                del lines[last]
            continue
        new = key + b"=" + value.encode("utf-8", "surrogateescape")
        if last is not None:
            old = lines[last]
            lines[last] = new + old[len(old.rstrip(b"\r\n")):]
        else:
            if lines and not lines[-1].endswith(b"\n"):
                lines[-1] += b"\n"
            lines.append(new + b"\n")
    return b"".join(lines)


def env_plan(data, state, ours, recorded, job_started):
    """What .env should say: (changes for plan_env, chained {phase: operator's hook}) (pure).

    ``ours``: {phase: our script's path}; ``recorded``: what chained.json remembered. The
    operator's hook of a phase is what .env names now, unless that is ours (then the one
    remembered). Present: ours named for completed (and started with ``job_started``); a
    started hook of ours that is no longer wanted gives way to the operator's. Absent: every
    phase that names ours gives way to the operator's (or to no line when there was none).
    A line naming something else is the operator's and stays.
    """
    changes, chained = {}, {}
    for phase in PHASES:
        current = env_value(data, ENV_VARS[phase])
        theirs = (recorded.get(phase) or "") if current == ours[phase] else (current or "")
        chained[phase] = theirs
        wanted = state == "present" and (phase == "completed" or job_started)
        if wanted and current != ours[phase]:
            changes[ENV_VARS[phase]] = ours[phase]
        elif not wanted and current == ours[phase]:
            changes[ENV_VARS[phase]] = theirs or None
    return changes, chained


# -- the runner user's side: .env, edited by a child that is that user -------------------------
def as_user(uid, gid, run, timeout=AS_USER_TIMEOUT_S):
    """``run()`` (returning a JSON-able dict) in a forked child that has dropped every
    privilege to ``uid``/``gid`` (no supplementary groups) before it runs; its dict, or
    HooksRefused when it failed or did not answer within ``timeout`` seconds. Descriptors
    the caller holds are the child's too: that is how it reaches what root opened."""
    def dropped():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        if os.geteuid() != uid or os.getegid() != gid:
            raise OSError(errno.EPERM, "could not drop to uid %d gid %d" % (uid, gid))
        return run()
    pid, read_fd = forked.fork_json(dropped)
    answer = forked.read_json(pid, read_fd, time.monotonic() + timeout)
    if answer is None:
        raise HooksRefused("the child running as uid %d did not answer within %ds" % (uid, timeout))
    if "worker_error" in answer:
        raise HooksRefused("as uid %d: %s" % (uid, answer["worker_error"]))
    return answer


def _read_env_at(dir_fd, shown):
    """(bytes, mode) of .env in the held runner directory, (None, None) when absent.

    Runs as the runner user, whose process is not dumpable after setuid (prctl(2)): its own
    /proc/self/fd is root's, so the file is opened directly (O_NOFOLLOW, O_NONBLOCK: a link
    is refused, a FIFO never blocks) and fstat decides before anything is read.
    """
    fix = "make it the runner's own .env file (KEY=value lines), then run again"
    try:
        fd = os.open(ENV_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise HooksRefused("%s is a symbolic link (never followed); %s" % (escape(shown), fix)) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise HooksRefused("%s is not a regular file; %s" % (escape(shown), fix))
        if st.st_nlink > 1:
            raise HooksRefused("%s has %d hard links (a link to another file is never edited); %s"
                               % (escape(shown), st.st_nlink, fix))
        data = handle.read(ENV_LIMIT + 1)
    if len(data) > ENV_LIMIT:
        raise HooksRefused("%s is larger than %d bytes: not a runner's .env; %s" % (escape(shown), ENV_LIMIT, fix))
    return data, stat.S_IMODE(st.st_mode)


def _look_env(dir_fd, shown):
    data, mode = _read_env_at(dir_fd, shown)
    return {"data": None if data is None else base64.b64encode(data).decode("ascii"), "mode": mode}


def _edit_env(dir_fd, shown, expected, changes, dry_run):
    """As the runner user: .env with ``changes``, if it still holds ``expected`` (base64 or None)."""
    data, mode = _read_env_at(dir_fd, shown)
    seen = None if data is None else base64.b64encode(data).decode("ascii")
    if seen != expected:
        raise HooksRefused("%s changed while it was being edited (the runner or a job wrote it); nothing was "
                           "written: run again" % escape(shown))
    after = plan_env(data or b"", changes)
    if not dry_run and after != (data or b""):
        atomicfile.write_at(dir_fd, ENV_FILE, after, mode=ENV_MODE if mode is None else mode)
    return {"after": base64.b64encode(after).decode("ascii")}


# -- root's side: the hook directory and the sudoers directory --------------------------------
def _trusted_dir(path, what, create, dry_run):
    """A root-only directory held open, or None when it is missing in a dry run."""
    try:
        held = safefs.open_dir(path, create=create and not dry_run, mode=SCRIPT_DIR_MODE)
    except FileNotFoundError:
        if dry_run or not create:
            return None
        raise
    except safefs.PathRefused as exc:
        raise HooksRefused(exc.with_fix("choose a %s only root can change" % what)) from None
    if not held.trusted:
        held.close()
        raise HooksRefused("%s: the %s must be a directory only root can change, on a path only root can change "
                           "(the scripts there run as root through sudo or are named in sudoers); fix its owner "
                           "and mode, or choose another" % (escape(path), what))
    return held


class _RootFiles:
    """Root-owned files in trusted directories: planned, then written or removed together."""

    def __init__(self, dry_run):
        self.dry_run, self.written, self.removed, self.diff = dry_run, [], [], []

    @staticmethod
    def current(held, name, size):
        """(bytes or None, fstat or None) of root's file ``name``; what is not a regular file
        with one link, or is larger than ``size`` bytes, reads as b"" (it differs: replaced)."""
        if held is None:
            return None, None
        try:
            return safefs.read_at(held.fd, name, limit=size, single_link=True)
        except safefs.PathRefused:
            return b"", None

    def differs(self, held, name, data, mode):
        before, st = self.current(held, name, len(data) + 1)
        same = before == data and st is not None and stat.S_IMODE(st.st_mode) == mode
        return not (same and (st.st_uid, st.st_gid) == (0, 0))

    def put(self, held, name, text, mode, shown, show_diff=True):
        data = text.encode("utf-8", "surrogateescape")
        if not self.differs(held, name, data, mode):
            return False
        before = self.current(held, name, 1 << 20)[0]
        if not self.dry_run:
            atomicfile.write_at(held.fd, name, data, mode=mode, owner=(0, 0))
        self.written.append(shown)
        if show_diff:
            self.diff.append(_diff(shown, before, data))
        return True

    def drop(self, held, name, shown):
        if held is None:
            return False
        st = safefs.lstat_at(held.fd, name)
        if st is None:
            return False
        if not self.dry_run:
            safefs.unlink_at(held.fd, name, expected=(st.st_dev, st.st_ino), path_for_errors=shown)
        self.removed.append(shown)
        return True


def _hook_lines(data):
    """The lines of .env ``data`` that set a hook variable (bytes, or None when there is no file)."""
    if data is None:
        return None
    keys = {name.encode("ascii") for name in ENV_VARS.values()}
    return b"".join(line for line in _split_lines(data) if _line_name(line) in keys)


def _diff(shown, before, after):
    def text(data):
        return "" if data is None else data.decode("utf-8", "backslashreplace")
    return {"before_header": shown, "after_header": shown, "before": text(before), "after": text(after)}


def _read_recorded(held, shown):
    """chained.json's {phase: hook} (the operator's hooks remembered), {} when absent or unreadable."""
    if held is None:
        return {}
    try:
        data, _st = safefs.read_at(held.fd, CHAINED_FILE, limit=CHAINED_LIMIT, single_link=True,
                                   path_for_errors=shown)
        recorded = json.loads(data.decode("utf-8", "surrogateescape")) if data else {}
    except (ValueError, safefs.PathRefused):
        return {}
    if not isinstance(recorded, dict):
        return {}
    return {key: recorded[key] for key in (*PHASES, "runner") if isinstance(recorded.get(key), str)}


def _script_dir(hook_dir, name, create, dry_run):
    """(hook_dir held, its runner subdirectory held or None)."""
    top = _trusted_dir(hook_dir, "hook directory", create, dry_run)
    if top is None:
        return None, None
    shown = posixpath.join(top.path, name)
    try:
        if create and not dry_run:
            fd, _created = safefs.make_dir_at(top.fd, name, SCRIPT_DIR_MODE, owner=(0, 0), path_for_errors=shown)
        else:
            fd = safefs.open_dir_at(top.fd, name, path_for_errors=shown)
    except FileNotFoundError:
        return top, None
    except safefs.PathRefused as exc:
        top.close()
        raise HooksRefused(exc.with_fix("remove it; the module makes the directory")) from None
    st = os.fstat(fd)
    if st.st_uid != 0 or st.st_mode & 0o022:
        if create and not dry_run:
            os.fchown(fd, 0, 0)
            os.fchmod(fd, SCRIPT_DIR_MODE)
        st = os.fstat(fd)
    return top, safefs.Dir(fd, shown, st, top.trusted)


def validate_sudoers(text, visudo=DEFAULT_VISUDO, run=None):
    """None when ``visudo -cf`` accepts ``text`` as a sudoers file, else its complaint (one
    line). ``run(argv) -> (rc, stdout, stderr)``; default: proc.run. The file checked is
    written 0600 in a new root-only temporary directory."""
    with tempfile.TemporaryDirectory(prefix="sandboxguard-sudoers-") as scratch:
        path = os.path.join(scratch, "dropin")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        if run is None:
            done = proc.run([visudo, "-cf", path], capture_output=True, text=True, timeout=VISUDO_TIMEOUT_S)
            rc, out, err = done.returncode, done.stdout, done.stderr
        else:
            rc, out, err = run([visudo, "-cf", path])
    if rc == 0:
        return None
    return " ".join((err or out or "exit %s" % rc).replace(path, "(the drop-in)").split())


# -- the operation --------------------------------------------------------------------------
def ensure_hooks(runner_dir, state="present", job_started=False, fail_job=True, hook_dir=DEFAULT_HOOK_DIR,
                 helper=defaults.RUNNER_CLEANUP_HELPER, sudo=DEFAULT_SUDO, sudoers_dir=DEFAULT_SUDOERS_DIR,
                 visudo=DEFAULT_VISUDO, run=None, dry_run=False):
    """Bring the hooks of the GitHub runner in ``runner_dir`` to ``state``; the report envelope.

    Root only. See the module docstring for what is written where and in which order. Keys
    besides the envelope's: ``runner`` (the directory), ``user`` (the runner user: the
    directory's owner), ``env`` (the .env path), ``hooks`` ({phase: what .env names now, in a
    dry run what it would}), ``chained`` ({phase: the operator's hook, "" for none}),
    ``env_changed`` (the runner must be restarted to read it), ``written`` and ``removed``
    (root's files), ``diff`` (a list of {before_header, after_header, before, after}).
    ``run(argv) -> (rc, stdout, stderr)`` runs visudo (default: proc.run). Raises
    HooksRefused / RunnerRefused / PathRefused (InputErrors naming the fix) for a refused
    runner, path or drop-in, OSError when a write fails. Touches the system unless
    ``dry_run``.
    """
    started = time.monotonic()
    if state not in STATES:
        raise HooksRefused("state must be one of %s, not %r" % (", ".join(STATES), state))
    runner_dir = os.fsdecode(runner_dir)
    check_path_text(runner_dir, "runner directory")
    for value, what in ((hook_dir, "hook_dir"), (helper, "helper"), (sudo, "sudo")):
        check_path_text(value, what)
    if os.geteuid() != 0:
        raise HooksRefused("runner_hooks runs as root (the hook scripts and the sudoers drop-in are root's); "
                           "run it with become: true")
    name = runner_name(runner_dir)
    env_path = posixpath.join(runner_dir, ENV_FILE)
    ours = {phase: posixpath.join(hook_dir, name, SCRIPT_NAMES[phase]) for phase in PHASES}
    result = envelope.new_report([runner_dir], runner=runner_dir, user=None, env=env_path,
                                 hooks={}, chained={}, env_changed=False, written=[], removed=[], diff=[])
    try:
        held = runners.open_runner_directory(runner_dir)
    except runners.RunnerRefused as exc:
        if state == "present" or not str(exc.reason).startswith("does not exist"):
            raise
        envelope.add_warning(result, "%s does not exist: its .env cannot be given back; the hook scripts and the "
                             "sudoers drop-in are removed" % escape(runner_dir))
        held = None
    try:
        user = _runner_user(held) if held is not None else None
        result["user"] = user
        files = _RootFiles(dry_run)
        top, scripts = _script_dir(hook_dir, name, state == "present", dry_run)
        try:
            recorded = _read_recorded(scripts, posixpath.join(hook_dir, name, CHAINED_FILE))
            if recorded.get("runner", runner_dir) != runner_dir:
                raise HooksRefused("%s belongs to the runner in %s, whose name in file names (%s) is this one's too; "
                                   "give one of the two runners another directory" % (
                                       escape(posixpath.join(hook_dir, name)), escape(recorded["runner"]), name))
            look = as_user(held.st.st_uid, held.st.st_gid, lambda: _look_env(held.fd, env_path)) if held else None
            before = None if look is None or look["data"] is None else base64.b64decode(look["data"])
            changes, chained = env_plan(before or b"", state, ours, recorded, job_started)
            result["chained"] = chained
            if state == "present":
                _put_scripts(files, scripts, name, hook_dir, runner_dir, user, chained, job_started, fail_job,
                             sudo, helper)
                _put_dropin(files, sudoers_dir, runner_dir, user, hook_dir, helper, visudo, run, dry_run, result)
            after = before
            if held is not None and changes:
                expected = look["data"]
                answer = as_user(held.st.st_uid, held.st.st_gid,
                                 lambda: _edit_env(held.fd, env_path, expected, changes, dry_run))
                after = base64.b64decode(answer["after"])
                result["env_changed"] = after != (before or b"")
                if result["env_changed"]:  # the hook lines only: the rest may hold the operator's secrets
                    result["diff"].insert(0, _diff(env_path, _hook_lines(before), _hook_lines(after)))
            if held is not None:
                result["hooks"] = {phase: env_value(after or b"", ENV_VARS[phase]) or "" for phase in PHASES}
            _drop_unwanted(files, scripts, top, name, hook_dir, state, job_started, sudoers_dir, dry_run)
        finally:
            for each in (scripts, top):
                if each is not None:
                    each.close()
    finally:
        if held is not None:
            held.close()
    result["written"], result["removed"], result["diff"] = files.written, files.removed, result["diff"] + files.diff
    result["changed"] = bool(result["env_changed"] or files.written or files.removed)
    return envelope.finish(result, started)


def _runner_user(held):
    """The runner user's name: the owner of the held runner directory, fit for a sudoers rule."""
    try:
        user = pwd.getpwuid(held.st.st_uid).pw_name
    except KeyError:
        raise HooksRefused("%s belongs to uid %d, which has no user name a sudoers rule can take; give the "
                           "directory to the runner user" % (escape(held.path), held.st.st_uid)) from None
    if not USER_PATTERN.match(user):
        raise HooksRefused("%s belongs to %s, a name that cannot go into a sudoers rule as it is; run the runner "
                           "as a user named with letters, digits and . _ -" % (escape(held.path), escape(user)))
    return user


def _put_scripts(files, scripts, name, hook_dir, runner_dir, user, chained, job_started, fail_job, sudo, helper):
    """The hook scripts and chained.json (written before .env names them)."""
    for phase in PHASES:
        if phase == "completed" or job_started:
            files.put(scripts, SCRIPT_NAMES[phase],
                      hook_script(runner_dir, user, phase, chained[phase], fail_job, sudo, helper),
                      SCRIPT_MODE, posixpath.join(hook_dir, name, SCRIPT_NAMES[phase]))
    remembered = json.dumps({"runner": runner_dir, "started": chained["started"], "completed": chained["completed"]},
                            indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    files.put(scripts, CHAINED_FILE, remembered, CHAINED_MODE, posixpath.join(hook_dir, name, CHAINED_FILE))


def _put_dropin(files, sudoers_dir, runner_dir, user, hook_dir, helper, visudo, run, dry_run, result):
    """The sudoers drop-in, checked with visudo before it goes in place."""
    held = _trusted_dir(sudoers_dir, "sudoers directory", False, dry_run)
    if held is None and not dry_run:
        raise HooksRefused("%s does not exist: install sudo (the hooks need it), then run again" % escape(sudoers_dir))
    text = sudoers_text(runner_dir, user, hook_dir, helper)
    name = DROPIN_PREFIX + runner_name(runner_dir)
    shown = posixpath.join(sudoers_dir, name)
    try:
        if files.differs(held, name, text.encode("utf-8"), DROPIN_MODE):
            if os.access(visudo, os.X_OK):
                complaint = validate_sudoers(text, visudo, run)
                if complaint:
                    raise HooksRefused("%s: visudo refuses the drop-in (%s); nothing was written"
                                       % (escape(shown), complaint))
            elif dry_run:
                envelope.add_warning(result, "%s is not there yet (sudo is not installed): the drop-in %s is "
                                     "checked with it once it is" % (escape(visudo), escape(shown)))
            else:
                raise HooksRefused("%s missing: install sudo (the hooks need it and its visudo checks the drop-in), "
                                   "then run again" % escape(visudo))
        files.put(held, name, text, DROPIN_MODE, shown)
    finally:
        if held is not None:
            held.close()


def _drop_unwanted(files, scripts, top, name, hook_dir, state, job_started, sudoers_dir, dry_run):
    """After .env names them no more: the started script when off; with absent everything."""
    if state == "present":
        if not job_started:
            files.drop(scripts, SCRIPT_NAMES["started"], posixpath.join(hook_dir, name, SCRIPT_NAMES["started"]))
        return
    for entry in (SCRIPT_NAMES["started"], SCRIPT_NAMES["completed"], CHAINED_FILE):
        files.drop(scripts, entry, posixpath.join(hook_dir, name, entry))
    if scripts is not None:
        gone = {os.path.basename(p) for p in files.removed} if dry_run else set()
        if not set(safefs.list_dir_at(scripts.fd)) - gone:
            if not dry_run:
                safefs.rmdir_at(top.fd, name, expected=(scripts.st.st_dev, scripts.st.st_ino),
                                path_for_errors=scripts.path)
            files.removed.append(scripts.path)
    held = _trusted_dir(sudoers_dir, "sudoers directory", False, True)
    if held is not None:
        with held:
            dropin = DROPIN_PREFIX + name
            files.drop(held, dropin, posixpath.join(sudoers_dir, dropin))
