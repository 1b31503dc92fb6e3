# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""A fleet of test hosts for the fleet test and the fleet benchmark.

Each host is a container from our locally built images: most are reached with the docker
connection (``community.docker.docker``, ``--network none``), a few over real SSH
(``ansible.builtin.ssh`` to an sshd in a ``sandboxguard/debian-sshd`` container with host
networking, listening on its own 127.0.0.1 port, with a host key, authorized_keys and
known_hosts made here). Every host gets the same baseline: an agent user (uid 1000, bash),
a Hermes home ``/home/agent/.hermes`` with one persistent Docker sandbox
``sandboxes/docker/task-N/{home,workspace}`` owned by the agent, and things that must NOT
be reported: a setgid directory and a symlink to the setuid ``/usr/bin/passwd`` inside the
sandbox, a capability-carrying file outside it. Seeded hosts then get the seeds' attack,
what a root container leaves in its bind mount: a setuid root shell and a
``cap_net_raw=ep`` file in the workspace, plus a leak (a cron job in the agent's table and
the script it runs under ``~/.hermes/scripts/``).

Containers carry the label ``org.sandboxguard.fleet=<prefix>``; ``Fleet.start`` removes
leftovers with that label first, ``Fleet.stop`` removes what it started.
"""
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

LABEL = "org.sandboxguard.fleet"
# the pid of the run that started a container: a later run removes the containers of dead runs
PID_LABEL = "org.sandboxguard.fleet.pid"
# An operator's own cron job in root's table on every host: not an agent's leak, so the audit
# must not report it and remediate must leave it in place.
ROOT_JOB = "17 3 * * * /usr/local/sbin/sg-backup-etc"
DOCKER_IMAGES = ("sandboxguard/debian:12", "sandboxguard/debian:13")
SSH_IMAGES = ("sandboxguard/debian-sshd:12", "sandboxguard/debian-sshd:13")
AGENT = "agent"
AGENT_UID = 1000
HERMES_HOME = "/home/agent/.hermes"
SANDBOXES = HERMES_HOME + "/sandboxes/docker"
# A second sandbox root that only some hosts have (a path missing on a host is not an error).
EXTRA_ROOT = "/srv/sandboxes"
START_JOBS = 8

# The baseline every host gets, whatever it held before (idempotent).
BASELINE = r"""
set -eu
id -u {agent} >/dev/null 2>&1 || useradd -m -u {uid} -s /bin/bash {agent}
usermod -s /bin/bash {agent}
ws={sandboxes}/task-{n}/workspace
mkdir -p "$ws/src" "$ws/shared" {sandboxes}/task-{n}/home
printf 'print("hello")\n' >"$ws/src/main.py"
chmod 2775 "$ws/shared"
ln -sfn /usr/bin/passwd "$ws/passwd-link"
chown -R {uid}:{uid} {hermes}
chown -h {uid}:{uid} "$ws/passwd-link"
cp /bin/true /usr/local/bin/sg-ping
setcap cap_net_raw=ep /usr/local/bin/sg-ping
if [ {extra} = 1 ]; then mkdir -p {extra_root}/job-{n}/out; printf 'ok\n' >{extra_root}/job-{n}/out/log.txt; fi
mkdir -p /var/spool/cron/crontabs
printf '%s\n' '{root_job}' >/var/spool/cron/crontabs/root
chmod 0600 /var/spool/cron/crontabs/root
"""

# The seeds' attack: what a root container leaves in a bind mount, and what a leaking eval run
# leaves in the real home.
SEED = r"""
set -eu
ws={sandboxes}/task-{n}/workspace
mkdir -p "$ws/.cache"
cp /bin/bash "$ws/.cache/rootsh"
chown 0:0 "$ws/.cache/rootsh"
chmod 4755 "$ws/.cache/rootsh"
cp /bin/true "$ws/ping"
chown 0:0 "$ws/ping"
setcap cap_net_raw=ep "$ws/ping"
if [ {extra} = 1 ]; then cp /bin/true {extra_root}/job-{n}/out/tool; chmod 2755 {extra_root}/job-{n}/out/tool; fi
mkdir -p {hermes}/scripts /var/spool/cron/crontabs
printf '#!/bin/sh\nexec sleep 1\n' >{hermes}/scripts/keepalive.sh
chmod 0755 {hermes}/scripts/keepalive.sh
chown -R {uid}:{uid} {hermes}/scripts
printf '*/5 * * * * {hermes}/scripts/keepalive.sh\n' >/var/spool/cron/crontabs/{agent}
chown {uid} /var/spool/cron/crontabs/{agent}
chmod 0600 /var/spool/cron/crontabs/{agent}
"""

# Prints one JSON object: the state of the seeded files, for assertions after remediate.
INSPECT = r"""
import json, os, subprocess
ws = "{sandboxes}/task-{n}/workspace"
out = {{}}
for rel in (".cache/rootsh", "ping", "passwd-link", "shared"):
    p = os.path.join(ws, rel)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        continue
    caps = None
    try:
        caps = os.getxattr(p, "security.capability", follow_symlinks=False).hex()
    except OSError:
        pass
    out[rel] = {{"mode": oct(st.st_mode & 0o7777), "uid": st.st_uid, "caps": caps}}
out["leak_script"] = os.path.lexists("{hermes}/scripts/keepalive.sh")
try:
    with open("/var/spool/cron/crontabs/{agent}") as handle:
        out["cron_jobs"] = [l for l in handle.read().splitlines() if l.strip() and not l.startswith("#")]
except FileNotFoundError:
    out["cron_jobs"] = []
try:
    with open("/var/spool/cron/crontabs/root") as handle:
        out["root_cron_jobs"] = [l for l in handle.read().splitlines() if l.strip() and not l.startswith("#")]
except FileNotFoundError:
    out["root_cron_jobs"] = []
st = os.stat("/usr/bin/passwd")
out["/usr/bin/passwd"] = {{"mode": oct(st.st_mode & 0o7777)}}
out["/usr/local/bin/sg-ping"] = {{"caps": os.getxattr("/usr/local/bin/sg-ping", "security.capability").hex()}}
print(json.dumps(out))
"""


def docker(*args, check=True, timeout=120):
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError("docker %s failed (%d): %s" % (" ".join(args[:3]), proc.returncode,
                                                         proc.stderr.strip() or proc.stdout.strip()))
    return proc.stdout


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Host:
    """One fleet member: its inventory name, the container behind it, how Ansible reaches it."""

    def __init__(self, name, index, kind, image, seeded, extra):
        self.name = name
        self.index = index
        self.kind = kind          # "docker" or "ssh"
        self.image = image
        self.seeded = seeded
        self.extra = extra        # has EXTRA_ROOT
        self.port = None

    def fmt(self, script):
        return script.format(agent=AGENT, uid=AGENT_UID, hermes=HERMES_HOME, sandboxes=SANDBOXES, n=self.index,
                             root_job=ROOT_JOB,
                             extra=1 if self.extra else 0, extra_root=EXTRA_ROOT)

    def sh(self, script):
        return docker("exec", self.name, "sh", "-c", self.fmt(script))

    def inspect(self):
        return json.loads(docker("exec", self.name, "python3", "-c", self.fmt(INSPECT)))


class Fleet:
    """``docker_count`` docker-connection hosts and ``ssh_count`` SSH hosts; every
    ``seed_every``-th host seeded (index 0, 2, 4, ... with the default 2)."""

    def __init__(self, docker_count, ssh_count, prefix="sgfleet", seed_every=2, workdir=None):
        # unique per run (the pid): two runs at once never share a container name
        self.prefix = "%s%d" % (prefix, os.getpid())
        self.dir = workdir or tempfile.mkdtemp(prefix=prefix + "-")
        os.makedirs(self.dir, exist_ok=True)
        self.hosts = []
        for i in range(docker_count + ssh_count):
            kind = "docker" if i < docker_count else "ssh"
            images = DOCKER_IMAGES if kind == "docker" else SSH_IMAGES
            name = "%s-%s%02d" % (self.prefix, "d" if kind == "docker" else "s", i)
            seeded = seed_every > 0 and i % seed_every == 0
            self.hosts.append(Host(name, i, kind, images[i % len(images)], seeded=seeded, extra=i % 3 == 0))
        self.key = os.path.join(self.dir, "id_ed25519")
        self.known_hosts = os.path.join(self.dir, "known_hosts")

    @property
    def seeded(self):
        return {h.name for h in self.hosts if h.seeded}

    @property
    def names(self):
        return {h.name for h in self.hosts}

    def remove_leftovers(self):
        """Remove this run's containers, and those of fleet runs that died without stopping theirs."""
        ids = docker("ps", "-aq", "--filter", "label=%s=%s" % (LABEL, self.prefix)).split()
        listing = docker("ps", "-a", "--filter", "label=" + PID_LABEL, "--format",
                         '{{.ID}} {{.Label "%s"}}' % PID_LABEL)
        for line in listing.splitlines():
            cid, _, pid = line.partition(" ")
            if pid.strip().isdigit() and not _alive(int(pid)):
                ids.append(cid)
        if ids:
            docker("rm", "-f", *sorted(set(ids)), timeout=300)

    def _ssh_config(self, host):
        conf = os.path.join(self.dir, host.name)
        os.makedirs(conf, exist_ok=True)
        host_key = os.path.join(conf, "ssh_host_ed25519_key")
        if not os.path.exists(host_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", host_key], check=True)
        shutil.copyfile(self.key + ".pub", os.path.join(conf, "authorized_keys"))
        os.chmod(os.path.join(conf, "authorized_keys"), 0o600)
        with open(os.path.join(conf, "sshd_config"), "w") as handle:
            handle.write("\n".join([
                "ListenAddress 127.0.0.1",
                "Port %d" % host.port,
                "HostKey /etc/sgtest/ssh_host_ed25519_key",
                "AuthorizedKeysFile /etc/sgtest/authorized_keys",
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "PidFile /run/sshd-sgtest.pid",
                "Subsystem sftp /usr/lib/openssh/sftp-server",
                "MaxStartups 100",
                "",
            ]))
        with open(host_key + ".pub") as handle:
            algo, blob = handle.read().split()[:2]
        return conf, "[127.0.0.1]:%d %s %s\n" % (host.port, algo, blob)

    def _start(self, host):
        common = ["run", "-d", "--name", host.name, "--hostname", host.name, "--label", "%s=%s" % (LABEL, self.prefix),
                  "--label", "%s=%d" % (PID_LABEL, os.getpid())]
        if host.kind == "docker":
            docker(*common, "--network", "none", host.image)
        else:
            conf, _ = self._ssh_config(host)
            docker(*common, "--network", "host", "-v", conf + ":/etc/sgtest:ro", host.image, "/bin/sh", "-c",
                   "mkdir -p /run/sshd && exec /usr/sbin/sshd -D -e -f /etc/sgtest/sshd_config")
        host.sh(BASELINE)
        if host.seeded:
            host.sh(SEED)
        if host.kind == "ssh":
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", host.port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("sshd in %s did not listen on 127.0.0.1:%d: %s" % (
                            host.name, host.port, docker("logs", host.name, check=False))) from None
                    time.sleep(0.2)

    def start(self):
        """Remove leftovers, then start every host in parallel and put its state in place."""
        self.remove_leftovers()
        if not os.path.exists(self.key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.key], check=True)
        known = []
        for host in self.hosts:
            if host.kind == "ssh":
                host.port = free_port()
        with concurrent.futures.ThreadPoolExecutor(START_JOBS) as pool:
            list(pool.map(self._start, self.hosts))
        for host in self.hosts:
            if host.kind == "ssh":
                known.append(self._ssh_config(host)[1])
        with open(self.known_hosts, "w") as handle:
            handle.writelines(known)
        return self

    def for_each(self, script, hosts=None):
        with concurrent.futures.ThreadPoolExecutor(START_JOBS) as pool:
            list(pool.map(lambda h: h.sh(script), self.hosts if hosts is None else hosts))

    def reseed(self):
        """Put the seeded state back (after a remediate)."""
        self.for_each(BASELINE)
        self.for_each(SEED, [h for h in self.hosts if h.seeded])

    def inventory(self, path=None, hosts=None, key=None, known_hosts=None):
        """Write an Ansible YAML inventory of the fleet (or of ``hosts``); returns its path.
        ``key`` and ``known_hosts``: the paths where the controller sees those files, when it
        is not this machine (an execution environment with them mounted elsewhere)."""
        hosts = self.hosts if hosts is None else hosts
        docker_hosts = {h.name: {} for h in hosts if h.kind == "docker"}
        ssh_hosts = {h.name: {"ansible_host": "127.0.0.1", "ansible_port": h.port} for h in hosts if h.kind == "ssh"}
        ssh_args = ("-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"
                    " -o ControlMaster=auto -o ControlPersist=60s" % (known_hosts or self.known_hosts))
        inventory = {"all": {
            "vars": {"ansible_python_interpreter": "/usr/bin/python3"},
            "children": {
                "fleet_docker": {"hosts": docker_hosts, "vars": {"ansible_connection": "community.docker.docker"}},
                "fleet_ssh": {"hosts": ssh_hosts, "vars": {
                    "ansible_connection": "ansible.builtin.ssh", "ansible_user": "root",
                    "ansible_ssh_private_key_file": key or self.key, "ansible_ssh_common_args": ssh_args,
                    "ansible_become_method": "sudo"}},
            }}}
        path = path or os.path.join(self.dir, "inventory.yml")
        with open(path, "w") as handle:
            json.dump(inventory, handle, indent=1)  # JSON is YAML: the yaml inventory plugin reads it
        return path

    def stop(self):
        self.remove_leftovers()
        shutil.rmtree(self.dir, ignore_errors=True)
