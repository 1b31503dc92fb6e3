# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Race tests of the root side: an unprivileged attacker swaps components of its own tree
while root runs one library operation in a loop; no victim outside the tree may change.

How a new attacker would test it (issue 19): a throwaway user owns the agent tree and, in
a loop, swaps a component for a symlink (rename + symlink, ``renameat2(RENAME_EXCHANGE)``)
or a regular file for a FIFO, while the root-side function runs again and again for a
bounded time; root-owned victims outside the tree (owner, mode, content, mount table) are
compared after every call.

    with RaceWorld("sgrace") as world:                 # throwaway user, agent tree, victims
        home = world.agent_dir("hermes")                # owned by the user
        world.attack(swap(home + "/profiles", world.victim))
        result = world.race(lambda: operation(home))    # loop until the bound or a change
        assert result.clean, result.describe()

``SANDBOXGUARD_RACE_SECONDS`` sets the bound (default 4 s per test; the issue's own
measurements used up to 25 s). The attacker is Debian's /usr/bin/python3 run through
setpriv as the user, so it needs nothing of root's.
"""
import hashlib
import json
import os
import pwd
import shutil
import stat
import subprocess
import time
import uuid

from sandboxguard._core import mountinfo

DEFAULT_SECONDS = float(os.environ.get("SANDBOXGUARD_RACE_SECONDS", "4"))
RACE_FAILSAFE_S = 120  # race() waits this long at most for its min_calls and until(): then the test fails
ATTACKER_FAILSAFE_S = 900  # an attacker runs until race() (or the world's exit) stops it; this only ends a stray one
VICTIM_SECRET = b"root:$y$j9T$victim-hash:19000:0:99999:7:::\n"
VICTIM_PROGRAM = b"#!/bin/sh\necho victim program\n"

# The attacker: one JSON spec on argv, a list of moves, done round-robin until killed.
#   {"kind": "exchange", "path": P, "link_to": T}  P swaps atomically between itself and a symlink to T
#   {"kind": "relink", "path": P, "link_to": T}    P renamed away, a symlink put there, then put back
#   {"kind": "fifo", "path": P}                     P swaps atomically between itself and a FIFO
#   {"kind": "hardlink", "path": P, "link_to": T}   P swaps between itself and a hard link to T
#   {"kind": "shell", "path": P, "argv": [...]}     run argv in a loop (anything else)
#   {"kind": "python", "path": P, "code": C}        exec C once a round, in the attacker, with
#                                                   os, stat, exchange and move (this dict) in scope
ATTACKER = r'''
import ctypes, json, os, signal, stat, subprocess, sys, time
stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
libc = ctypes.CDLL(None, use_errno=True)
RENAME_EXCHANGE = 2
def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), a)
def prepare(move):
    path = move["path"]
    kind = move["kind"]
    if move.get("alt"):
        return
    if kind in ("exchange", "relink", "hardlink"):
        alt = path + ".sgalt%d" % move["index"]
        try:
            os.unlink(alt)
        except FileNotFoundError:
            pass
        if kind == "hardlink":
            os.link(move["link_to"], alt)
        else:
            os.symlink(move["link_to"], alt)
        move["alt"] = alt
    elif kind == "fifo":
        alt = path + ".sgalt%d" % move["index"]
        try:
            os.unlink(alt)
        except FileNotFoundError:
            pass
        os.mkfifo(alt)
        move["alt"] = alt
    elif kind == "python":
        move["compiled"] = compile(move["code"], "<move %d>" % move["index"], "exec")
def step(move):
    kind, path = move["kind"], move["path"]
    if kind in ("exchange", "fifo", "hardlink"):
        exchange(path, move["alt"])
        exchange(path, move["alt"])
    elif kind == "relink":
        away = path + ".sgaway"
        os.rename(path, away)
        os.symlink(move["link_to"], path)
        os.unlink(path)
        os.rename(away, path)
    elif kind == "shell":
        subprocess.run(move["argv"], check=False)
    elif kind == "python":
        exec(move["compiled"], {"os": os, "stat": stat, "exchange": exchange, "move": move})
moves = json.loads(sys.argv[1])
for index, move in enumerate(moves):
    move["index"] = index
deadline = time.monotonic() + float(sys.argv[2])
for move in moves:
    try:
        prepare(move)
    except OSError as exc:
        print("cannot prepare %s: %s" % (move["path"], exc), flush=True)
        sys.exit(1)
print("ready", flush=True)
rounds = 0
while time.monotonic() < deadline and not stopping:
    for move in moves:
        try:
            step(move)
        except OSError:
            pass  # root moved or removed something: carry on
    rounds += 1
print("rounds %d" % rounds, flush=True)
'''


def exchange(path, link_to):
    """Move: ``path`` swaps atomically (RENAME_EXCHANGE) between itself and a symlink to ``link_to``."""
    return {"kind": "exchange", "path": path, "link_to": link_to}


def relink(path, link_to):
    """Move: ``path`` is renamed away, a symlink to ``link_to`` takes its place, then it comes back."""
    return {"kind": "relink", "path": path, "link_to": link_to}


def fifo(path):
    """Move: ``path`` swaps atomically between itself and a FIFO."""
    return {"kind": "fifo", "path": path}


def hardlink(path, link_to):
    """Move: ``path`` swaps atomically between itself and a hard link to ``link_to``.

    With fs.protected_hardlinks=1 a user cannot link a file it may not read, so root makes
    the link (``<path>.sgalt``) beforehand, as the user could where the sysctl is 0."""
    alt = path + ".sglink"
    if os.path.lexists(alt):
        os.unlink(alt)
    os.link(link_to, alt)
    return {"kind": "hardlink", "path": path, "link_to": link_to, "alt": alt}


def shell(argv):
    """Move: run ``argv`` (as the attacker) over and over."""
    return {"kind": "shell", "path": argv[0], "argv": list(argv)}


def python(code, path="", **params):
    """Move: exec ``code`` once a round in the attacker (as the user), with ``os``, ``stat``,
    ``exchange(a, b)`` (renameat2 RENAME_EXCHANGE) and ``move`` (this move's dict, holding
    ``params``; keep state in it) in scope. For attacks the fixed kinds cannot express: many
    paths at once, or waiting for root to create something and swapping it then."""
    return dict(params, kind="python", path=path, code=code)


def _snapshot_tree(top):
    """{relative path: (uid, gid, mode, content sha256 or link target)} of a tree, lstat only."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in ["", *dirnames, *filenames]:
            path = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as handle:
                    what = hashlib.sha256(handle.read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                what = "-> " + os.readlink(path)
            else:
                what = stat.S_IFMT(st.st_mode)
            found[os.path.relpath(path, top)] = (st.st_uid, st.st_gid, oct(st.st_mode), what)
        if not dirnames and not filenames and dirpath != top:
            continue
    return found


def _below(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def _mount_table(inside, outside):
    """(mount point, root, options) of every mount at or below one of ``inside`` and not
    below ``outside`` (the agent's tree), from /proc/self/mountinfo (escapes undone).

    Only the world's own victims count: other tests (containers, other engineers' mounts)
    change the rest of the table at any moment, so a race test can run beside them.
    """
    lines = []
    for mount in mountinfo.read_mountinfo():
        point = os.fsdecode(mount["mount_point"])
        if any(_below(point, top) for top in inside) and not _below(point, outside):
            lines.append((point, mount["root"], tuple(mount["options"])))
    return sorted(lines)


class RaceResult:
    """What a race found: ``calls`` made, ``errors`` (exception type names -> count),
    ``changed`` ([(call number, what changed)]), ``attacker_rounds``."""

    def __init__(self):
        self.calls = 0
        self.errors = {}
        self.changed = []
        self.attacker_rounds = None
        self.attacker_err = ""
        self.gave_up = False  # the failsafe ended the race before what the test waited for

    @property
    def clean(self):
        """No victim changed, and the attacker really swapped all along (it reports its rounds)."""
        return not self.changed and bool(self.attacker_rounds)

    def describe(self):
        return "calls=%d attacker_rounds=%s errors=%s changed=%s%s attacker_stderr=%r" % (
            self.calls, self.attacker_rounds, self.errors, self.changed[:3],
            " gave_up=True (what the test waited for never came)" if self.gave_up else "", self.attacker_err[-500:])


class RaceWorld:
    """A throwaway unprivileged user, a tree it owns and root-owned victims beside it.

    ``base``: a root-owned 0755 directory under /var/tmp holding ``agent/`` (the user's,
    0755) and ``victim/`` (root's: ``secret`` 0600, ``program`` 0755, ``bin/`` 0755 with
    ``tool`` 0755, ``etc/cron.d/`` 0755, ``ro/``). ``victims`` are compared after every
    call, and so are the mounts at or below ``base`` outside ``agent/`` (a mount over a
    victim, a victim mount unmounted or remounted); tests may add their own with
    :meth:`add_victim` and :meth:`add_mount_victim`.
    """

    def __init__(self, prefix="sgrace"):
        self.prefix = prefix
        self.user = "%s%s" % (prefix, uuid.uuid4().hex[:6])
        self.base = "/var/tmp/%s-%s" % (prefix, uuid.uuid4().hex[:8])
        self.uid = self.gid = None
        self.victims = []
        self.checks = []
        self.procs = []

    # --- set up and tear down ---
    def __enter__(self):
        subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                        "--home-dir", "/nonexistent", self.user], check=True, capture_output=True)
        entry = pwd.getpwnam(self.user)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        os.makedirs(self.base)
        os.chmod(self.base, 0o755)
        self.agent = self.base + "/agent"
        os.mkdir(self.agent)
        os.chmod(self.agent, 0o755)
        os.chown(self.agent, self.uid, self.gid)
        self.victim = self.base + "/victim"
        for sub in ("", "/bin", "/etc", "/etc/cron.d", "/ro"):
            os.mkdir(self.victim + sub)
            os.chmod(self.victim + sub, 0o755)
        self._write(self.victim + "/secret", VICTIM_SECRET, 0o600)
        self._write(self.victim + "/program", VICTIM_PROGRAM, 0o755)
        self._write(self.victim + "/bin/tool", VICTIM_PROGRAM, 0o755)
        self._write(self.victim + "/etc/cron.d/job", b"* * * * * root true\n", 0o644)
        self.add_victim(self.victim)
        self.mount_victims = [self.base]
        self._mounts_before = _mount_table(self.mount_victims, self.agent)
        return self

    def __exit__(self, *exc):
        self.stop()
        subprocess.run(["pkill", "-KILL", "-u", self.user], check=False, capture_output=True)
        with open("/proc/self/mountinfo", "rb") as handle:
            points = [line.split(b" ")[4].decode("utf-8", "surrogateescape") for line in handle]
        for point in reversed(points):
            if point == self.base or point.startswith(self.base + "/"):
                subprocess.run(["umount", "-l", point], check=False, capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)
        subprocess.run(["userdel", self.user], check=False, capture_output=True)

    @staticmethod
    def _write(path, data, mode, owner=None):
        with open(path, "wb") as handle:
            handle.write(data)
        os.chmod(path, mode)
        if owner:
            os.chown(path, *owner)

    # --- the agent's tree ---
    def agent_dir(self, relative, mode=0o755):
        """Make ``agent/<relative>`` (and parents) owned by the user; return its path."""
        path = self.agent
        for part in relative.strip("/").split("/"):
            path = os.path.join(path, part)
            if not os.path.isdir(path):
                os.mkdir(path)
            os.chmod(path, mode)
            os.chown(path, self.uid, self.gid)
        return path

    def agent_file(self, relative, data=b"", mode=0o644):
        """Write ``agent/<relative>`` owned by the user; return its path."""
        path = os.path.join(self.agent, relative.strip("/"))
        self.agent_dir(os.path.dirname(relative.strip("/"))) if "/" in relative.strip("/") else None
        self._write(path, data, mode, (self.uid, self.gid))
        return path

    def add_mount_victim(self, path):
        """Also compare the mounts at or below ``path`` (e.g. /etc, when a test mounts a
        victim elsewhere); the world's own base directory is always compared."""
        self.mount_victims.append(path)
        self._mounts_before = _mount_table(self.mount_victims, self.agent)
        return path

    def add_victim(self, path):
        """Compare ``path`` (a file or a tree, outside the agent's tree) after every call."""
        self.victims.append((path, _snapshot_tree(path) if os.path.isdir(path) else self._snap_file(path)))
        return path

    def add_check(self, check):
        """Also run ``check()`` after every call: it returns a list of lines naming what it
        found wrong (e.g. a root-owned setuid file appearing inside the agent's tree, which
        the victim comparison cannot see); an empty list means nothing."""
        self.checks.append(check)
        return check

    def victim_path(self, relative, data=None, mode=None):
        """Make ``<base>/more/<relative>`` root-owned (a directory when ``data`` is None, else a
        file holding ``data``; ``mode`` default 0755 / 0600; missing directories on the way
        0755) and compare its top directory (``more/<first component>``) after every call;
        return its path. For victims the default set lacks (a setuid program, a directory
        holding ``scratch``) without changing ``victim/``, which is compared from the start."""
        parts = relative.strip("/").split("/")
        where = os.path.join(self.base, "more")
        for part in ["", *parts[:-1]]:
            where = os.path.join(where, part) if part else where
            if not os.path.isdir(where):
                os.mkdir(where)
                os.chmod(where, 0o755)
        path = os.path.join(where, parts[-1])
        if data is None:
            os.makedirs(path, exist_ok=True)
            os.chmod(path, 0o755 if mode is None else mode)
        else:
            self._write(path, data, 0o600 if mode is None else mode)
        top = os.path.join(self.base, "more", parts[0])
        self.victims = [entry for entry in self.victims if entry[0] != top]
        self.add_victim(top)
        return path

    @staticmethod
    def _snap_file(path):
        st = os.lstat(path)
        with open(path, "rb") as handle:
            return (st.st_uid, st.st_gid, oct(st.st_mode), hashlib.sha256(handle.read()).hexdigest())

    def rebase_mounts(self):
        """Take the mount table of the mount victims again as the one to compare with (after
        a test made its own victim mounts in the base, a read-only bind for instance)."""
        self._mounts_before = _mount_table(self.mount_victims, self.agent)

    def what_changed(self):
        """[lines] naming every victim (and mount outside the agent tree) that changed."""
        changes = []
        for path, before in self.victims:
            try:
                now = _snapshot_tree(path) if os.path.isdir(path) else self._snap_file(path)
            except OSError as exc:
                changes.append("%s: %s" % (path, exc))
                continue
            if now != before:
                if isinstance(before, dict):
                    diff = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
                    changes.append("%s: %s" % (path, ", ".join("%s %s -> %s" % (k, before.get(k), now.get(k))
                                                              for k in diff[:4])))
                else:
                    changes.append("%s: %s -> %s" % (path, before, now))
        mounts = _mount_table(self.mount_victims, self.agent)
        if mounts != self._mounts_before:
            added = sorted(set(mounts) - set(self._mounts_before))
            gone = sorted(set(self._mounts_before) - set(mounts))
            changes.append("mount table outside the agent tree: added %s, gone %s" % (added[:3], gone[:3]))
        for check in self.checks:
            changes.extend(check())
        return changes

    # --- the attacker ---
    def as_user(self, argv, **kwargs):
        """Run argv as the throwaway user (setpriv), waiting for it; CompletedProcess."""
        return subprocess.run(["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.gid, "--clear-groups",
                               *argv], capture_output=True, **kwargs)

    def attack(self, *moves, seconds=None):
        """Start the attacker with ``moves`` (see ATTACKER); returns once it is swapping. It
        swaps until race() or the world's exit stops it (``seconds``: at most, a failsafe)."""
        seconds = max(ATTACKER_FAILSAFE_S, DEFAULT_SECONDS + 5) if seconds is None else seconds
        proc = subprocess.Popen(["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.gid, "--clear-groups",
                                 "/usr/bin/python3", "-c", ATTACKER, json.dumps(list(moves)), str(seconds)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")
        line = proc.stdout.readline()
        if line.strip() != b"ready":
            proc.kill()
            raise AssertionError("the attacker did not start: %r %r" % (line, proc.stderr.read()))
        self.procs.append(proc)
        return proc

    def stop(self):
        """Stop the attackers; return (rounds, stderr) of the last one."""
        rounds, err = None, ""
        for proc in self.procs:
            proc.terminate()
            try:
                out, errb = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, errb = proc.communicate()
            err = errb.decode("utf-8", "replace")
            for line in out.decode("utf-8", "replace").splitlines():
                if line.startswith("rounds "):
                    rounds = int(line.split()[1])
        self.procs = []
        return rounds, err

    def race(self, operation, seconds=None, after_call=None, max_calls=None, check=None, min_calls=None,
             until=None):
        """Call ``operation()`` for ``seconds`` (or up to ``max_calls``), comparing the victims
        after each call; stop at the first change. Exceptions from the operation are counted
        by type (a refusal is the expected answer to an attack).

        What a test counts on is waited for, not hoped for in the window: the calls go on
        past ``seconds`` until ``min_calls`` were made and ``until(result)`` holds (e.g. the
        attack was met: a refusal counted), whatever the load; ``result.gave_up`` says the
        failsafe (RACE_FAILSAFE_S) ended it first, and the test's own assertion then fails.
        ``after_call(result_or_exc)``: a hook run after each call (e.g. to undo what a
        legitimate call changed inside the agent's tree). ``check(result_or_exc)``: more
        victims, for an operation whose harm is in what it returns (an owner it would give
        files to): a list of lines naming what went wrong, counted like a changed victim."""
        seconds = DEFAULT_SECONDS if seconds is None else seconds
        result = RaceResult()
        started = time.monotonic()
        deadline, failsafe = started + seconds, started + max(seconds, RACE_FAILSAFE_S)
        while max_calls is None or result.calls < max_calls:
            now = time.monotonic()
            wanted = result.calls < (min_calls or 0) or (until is not None and not until(result))
            if now >= deadline and not wanted:
                break
            if now >= failsafe:
                result.gave_up = True
                break
            result.calls += 1
            try:
                outcome = operation()
            except Exception as exc:  # a refusal is what an attack should get
                name = type(exc).__name__
                result.errors[name] = result.errors.get(name, 0) + 1
                outcome = exc
            changes = self.what_changed()
            if check is not None:
                changes += check(outcome)
            if changes:
                result.changed.append((result.calls, changes))
                break
            if after_call is not None:
                after_call(outcome)
        result.attacker_rounds, result.attacker_err = self.stop()
        return result
