# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

``docker run`` arguments as Hermes Agent passes them, read as data (pure).

Hermes' docker backend (tools/environments/docker.py) starts every sandbox with its own security
arguments and then ``terminal.docker_extra_args`` ("docker_extra_args go last so they can
override defaults"). The prevention role adds to those; the probe starts a container the same
way; the audit's ``runtime`` check reads them for what widens the sandbox. One reader for the
three.
"""

# What Hermes passes before the extra arguments (its _BASE_SECURITY_ARGS, no-new-privileges,
# the /run tmpfs and, unless it runs as the host user, SETUID and SETGID for a privilege drop).
HERMES_SECURITY_ARGS = (
    "--cap-drop", "ALL", "--cap-add", "DAC_OVERRIDE", "--cap-add", "CHOWN", "--cap-add", "FOWNER",
    "--tmpfs", "/tmp:rw,nosuid,size=512m", "--tmpfs", "/var/tmp:rw,noexec,nosuid,size=256m",
    "--security-opt", "no-new-privileges", "--tmpfs", "/run:rw,noexec,nosuid,size=64m",
    "--cap-add", "SETUID", "--cap-add", "SETGID",
)

# options with a value: ours to read, and the others (skipped with their value)
_VALUED = {"--cap-add": "cap_add", "--cap-drop": "cap_drop", "--security-opt": "security_opt", "--tmpfs": "tmpfs",
           "-v": "volumes", "--volume": "volumes", "--mount": "mounts", "--device": "devices", "--pid": "pid",
           "--userns": "userns", "--network": "network", "--net": "network", "--ipc": "ipc", "--uts": "uts",
           "--cgroupns": "cgroupns", "-u": "user", "--user": "user", "--runtime": "runtime"}
_SINGLE = ("pid", "userns", "network", "ipc", "uts", "cgroupns", "user", "runtime")
_OTHER_VALUED = ("-e", "--env", "--label", "-l", "--name", "-w", "--workdir", "--shm-size", "--memory", "-m", "--cpus",
                 "--pids-limit", "--ulimit", "--add-host", "--dns", "--hostname", "-h", "--entrypoint", "--env-file",
                 "--storage-opt", "--log-opt", "--log-driver", "--restart", "--stop-signal", "--platform", "--gpus",
                 "--group-add", "--sysctl", "--cpu-shares", "--memory-swap", "--init-path", "--label-file")
_FLAGS = {"--privileged": "privileged", "--read-only": "read_only", "--init": "init"}


def parse_run_args(args):
    """What a list of ``docker run`` options asks for: a dict of lists (cap_add, cap_drop,
    security_opt, tmpfs, volumes, mounts, devices), the last value of each single option
    (pid, userns, network, ipc, uts, cgroupns, user, runtime; None when not given), the flags
    (privileged, read_only, init) and ``unknown`` (what this reader does not know, kept in
    order). Both ``--opt value`` and ``--opt=value``; a non-string entry is unknown."""
    parsed = {key: [] for key in ("cap_add", "cap_drop", "security_opt", "tmpfs", "volumes", "mounts", "devices")}
    parsed.update(dict.fromkeys(_SINGLE))
    parsed.update(dict.fromkeys(_FLAGS.values(), False))
    parsed["unknown"] = []
    items = list(args or ())
    index = 0
    while index < len(items):
        arg = items[index]
        index += 1
        if not isinstance(arg, str):
            parsed["unknown"].append(repr(arg))
            continue
        name, eq, value = arg.partition("=")
        if name in _FLAGS:
            parsed[_FLAGS[name]] = value.lower() not in ("false", "0") if eq else True
            continue
        if name in _VALUED or name in _OTHER_VALUED:
            if not eq:
                if index >= len(items):
                    parsed["unknown"].append(arg)
                    continue
                value = items[index]
                index += 1
            if name in _VALUED:
                key = _VALUED[name]
                if key in _SINGLE:
                    parsed[key] = str(value)
                else:
                    parsed[key].append(str(value))
            continue
        parsed["unknown"].append(arg)
    return parsed


def capabilities(names):
    """Capability names as the engine spells them in inspect (``CAP_`` prefix, upper case)."""
    out = []
    for name in names:
        text = str(name).strip().upper()
        out.append(text if text.startswith("CAP_") or text == "ALL" else "CAP_" + text)
    return out


def seccomp_option(security_opts):
    """The value of the last ``seccomp=``/``seccomp:`` option, or None."""
    found = None
    for option in security_opts:
        key, _sep, value = str(option).replace(":", "=", 1).partition("=")
        if key == "seccomp":
            found = value
    return found


def has_no_new_privileges(security_opts):
    """Whether the options set no-new-privileges (``no-new-privileges``, ``...:true``, ``...=true``)."""
    for option in security_opts:
        key, _sep, value = str(option).replace(":", "=", 1).partition("=")
        if key == "no-new-privileges" and value.lower() in ("", "true"):
            return True
    return False


def volume_parts(spec):
    """(source, destination, read_only) of a ``-v`` spec (a named volume's source has no slash)."""
    parts = str(spec).split(":")
    source = parts[0]
    destination = parts[1] if len(parts) > 1 else ""
    options = parts[2].split(",") if len(parts) > 2 else []
    return source, destination, "ro" in options or "readonly" in options


def mount_parts(spec):
    """(type, source, destination, read_only) of a ``--mount`` spec."""
    fields = {}
    flags = set()
    for part in str(spec).split(","):
        key, eq, value = part.partition("=")
        if eq:
            fields[key.strip()] = value.strip()
        else:
            flags.add(key.strip())
    read_only = "readonly" in flags or "ro" in flags or fields.get("readonly", "").lower() in ("true", "1") \
        or fields.get("ro", "").lower() in ("true", "1")
    return (fields.get("type", "volume"), fields.get("source", fields.get("src", "")),
            fields.get("destination", fields.get("dst", fields.get("target", ""))), read_only)
