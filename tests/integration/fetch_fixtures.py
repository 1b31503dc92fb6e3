# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Real sandboxes for the fetch integration tests: an sshd on 127.0.0.1 and a container.

sshd: Debian's openssh-server (tools/apt-packages.txt), started by the test as root with its
own config, host key and authorized_keys in a temp dir, listening on a free 127.0.0.1 port,
for the test user ``sgfetch`` (created once, password '*' so sshd does not see it as
locked). The user's ~/.bashrc is deliberately hostile: it prints noise on every command,
and, when the read step of a file called ``swapme`` runs, swaps that file for a symlink to
~/.ssh/id_rsa first (bash -c from sshd sources ~/.bashrc on Debian; BASH_EXECUTION_STRING
is the command). That is a name swapped after pass 2, made by the sandbox itself.

Container: sandboxguard/debian:12 (tools/build-images.sh), ``--network none``, user ``agent``.
"""
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

SSH_USER = "sgfetch"
SECRET = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key, a marker the tests look for\n"

HOSTILE_BASHRC = r"""# sandboxguard fetch tests: a noisy, hostile sandbox shell
echo "noise from .bashrc: welcome to the sandbox"
case "${BASH_EXECUTION_STRING:-}" in
  *"/swapme"*"max="*)
    d=$(dirname "$(ls -d "$HOME"/t-*/swapme 2>/dev/null | head -n1)")
    if [ -f "$d/swapme" ] && [ ! -L "$d/swapme" ]; then
      mv "$d/swapme" "$d/swapme.orig" && ln -s "$HOME/.ssh/id_rsa" "$d/swapme"
      echo swapped >> "$HOME/.swap-log"
    fi ;;
esac
"""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _replace_with_dir(path, mode, owner):
    """Make ``path`` a real directory of ``owner`` with ``mode``, whatever was there (a file, a symlink)."""
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        os.unlink(path)
    os.makedirs(path, exist_ok=True)
    os.chown(path, owner.pw_uid, owner.pw_gid)
    os.chmod(path, mode)


def _replace_with_file(path, data, mode, owner):
    """Write ``path`` afresh as a regular file of ``owner`` (never through a leftover symlink)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chown(path, owner.pw_uid, owner.pw_gid)
    os.chmod(path, mode)


def ensure_ssh_user():
    """Put the test user in the state the tests rely on, whatever the machine holds; return its entry.

    A CI machine may carry a ``sgfetch`` from an older run or another tool: made by ``useradd``
    without ``-s`` (shell ``/bin/sh``, so the hostile ``.bashrc`` never runs), locked (``!``),
    expired, without its home, or with a home, ``.ssh`` or key that is a symlink, a file or
    group-writable. Every property the tests use is set here each time, not only on creation:
    login shell ``/bin/bash``, password ``*`` (not locked, no password login), no expiry, a
    home directory of its own (mode 0755), ``~/.ssh`` a real 0700 directory, the marker key
    and the hostile ``~/.bashrc`` written afresh.
    """
    try:
        pwd.getpwnam(SSH_USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", SSH_USER], check=True)
    subprocess.run(["usermod", "--shell", "/bin/bash", "--password", "*", SSH_USER], check=True)
    subprocess.run(["chage", "--expiredate", "-1", "--inactive", "-1", "--maxdays", "-1", SSH_USER], check=True)
    entry = pwd.getpwnam(SSH_USER)
    home = entry.pw_dir
    _replace_with_dir(home, 0o755, entry)
    _replace_with_dir(os.path.join(home, ".ssh"), 0o700, entry)
    _replace_with_file(os.path.join(home, ".ssh", "id_rsa"), SECRET, 0o600, entry)
    _replace_with_file(os.path.join(home, ".bashrc"), HOSTILE_BASHRC.encode(), 0o644, entry)
    return entry


class SSHD:
    """A running sshd; ``stop()`` ends the process this object started, by its pid."""

    def __init__(self):
        self.user = ensure_ssh_user()
        self.home = self.user.pw_dir
        self.dir = tempfile.mkdtemp(prefix="sgfetch-sshd-")
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        self.host_key = os.path.join(self.dir, "host_ed25519")
        self.client_key = os.path.join(self.dir, "client_ed25519")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.host_key], check=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.client_key], check=True)
        keys_dir = os.path.join(self.dir, "authorized_keys")
        os.mkdir(keys_dir)
        os.chmod(keys_dir, 0o755)
        shutil.copy(self.client_key + ".pub", os.path.join(keys_dir, SSH_USER))
        os.chmod(os.path.join(keys_dir, SSH_USER), 0o644)
        with open(self.host_key + ".pub") as handle:
            algo, blob = handle.read().split()[:2]
        self.known_hosts = os.path.join(self.dir, "known_hosts")
        with open(self.known_hosts, "w") as handle:
            handle.write("[127.0.0.1]:%d %s %s\n" % (self.port, algo, blob))
        self.config = os.path.join(self.dir, "sshd_config")
        with open(self.config, "w") as handle:
            handle.write("\n".join([
                "Port %d" % self.port,
                "ListenAddress 127.0.0.1",
                "HostKey %s" % self.host_key,
                "PidFile %s" % os.path.join(self.dir, "sshd.pid"),
                "AuthorizedKeysFile %s/%%u" % keys_dir,
                "StrictModes no",
                "UsePAM no",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                "PermitRootLogin no",
                "AllowUsers %s" % SSH_USER,
                "PrintMotd no",
                "LogLevel ERROR",
                "",
            ]))
        os.makedirs("/run/sshd", exist_ok=True)  # privilege separation directory
        self.log = open(os.path.join(self.dir, "sshd.log"), "wb")
        self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", self.config], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        "sshd did not start on 127.0.0.1:%d; see %s" % (self.port, self.log.name)) from None
                time.sleep(0.1)

    def workdir(self):
        """A fresh directory in the test user's home, owned by the user."""
        path = os.path.join(self.home, "t-" + uuid.uuid4().hex[:10])
        os.mkdir(path)
        os.chown(path, self.user.pw_uid, self.user.pw_gid)
        return path

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def make_file(path, data, mode=0o644, owner=None):
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner.pw_uid, owner.pw_gid)


# ---------------------------------------------------------------- containers

IMAGE = "sandboxguard/debian:12"


def docker(*args, check=True, input_bytes=None):
    return subprocess.run(["docker", *args], check=check, capture_output=True, input=input_bytes)


class Container:
    """A throwaway container with --network none and a user ``agent``; ``remove()`` ends it."""

    def __init__(self, image=IMAGE, extra=()):
        self.name = "sgfetch-test-" + uuid.uuid4().hex[:10]
        docker("run", "-d", "--rm", "--network", "none", "--name", self.name, *extra, image, "sleep", "infinity")
        self.sh("useradd --create-home --shell /bin/sh agent && mkdir -p /home/agent/.ssh /home/agent/out"
                " && printf '%s' '" + SECRET.decode().replace("\n", "\\n") + "' > /home/agent/.ssh/id_rsa"
                " && chown -R agent: /home/agent && chmod 700 /home/agent/.ssh")

    def sh(self, script, user="root"):
        return docker("exec", "-u", user, self.name, "sh", "-c", script).stdout

    def put(self, path, data, mode="0644", user="agent"):
        """Write ``data`` to ``path`` in the container and wait until it is all there.

        Written to a temp name and renamed, then polled until the size is right, so a fetch
        never starts on a half-written file even if ``docker exec -i`` returned early (a
        suspect for one unexplained round-trip failure; not proven).
        """
        docker("exec", "-i", "-u", user, self.name, "sh", "-c",
               'cat > "$1.part" && chmod %s "$1.part" && mv "$1.part" "$1"' % mode, "sh", path, input_bytes=data)
        deadline = time.monotonic() + 20
        while docker("exec", self.name, "stat", "-c", "%s", path, check=False).stdout.strip() != b"%d" % len(data):
            if time.monotonic() > deadline:
                raise RuntimeError("%s did not reach %d bytes in container %s" % (path, len(data), self.name))
            time.sleep(0.1)

    def remove(self):
        docker("rm", "-f", self.name, check=False)
