# GENERATED from python/src/sandboxguard/_prevent/seccomp.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection: the CLI (``sandboxguard seccomp-profile``), the
``sandbox_prevent`` and ``seccomp_probe`` modules and the audit's ``runtime`` check use it.

A seccomp profile that stops setuid/setgid files being made, from the engine's own default (pure).

What was measured (Docker 20.10, Podman 4.3.1, libseccomp 2.5.4, kernel 6.18; FACTS.md):

- an ERRNO rule *beside* the default profile's unconditional ALLOW of ``chmod`` denies
  nothing: the unconditional allow wins. So every syscall that takes a mode
  (:data:`MODE_ARGUMENT`) leaves the unconditional allow, and comes back as an ALLOW when
  ``mode & 06000 == 0`` (``SCMP_CMP_MASKED_EQ``, value 3072, valueTwo 0, on the mode's
  argument index) plus ERRNO(EPERM) rules matching 04000 and 02000 (the base's default
  errno may be ENOSYS: Podman's is);
- ``openat2`` carries its mode in a struct seccomp cannot read: ERRNO(ENOSYS), so libc and
  programs fall back to ``openat``;
- ``io_uring_*`` opens files with a mode seccomp cannot see (Docker 20.10's default allows it):
  ERRNO(EPERM);
- the base must be the running engine's own default: Podman's ``seccomp.json`` under Docker
  re-opens ``unshare``, ``mount``, ``setns``, ``keyctl``, ``pivot_root`` and ``clone3``.
  :func:`check_profile` finds that (every syscall the base denies must stay denied).

Everything else of the base is kept as it is (its denials, its conditional rules, its
architectures). The result names its base in the ``x-sandboxguard`` key (engines ignore
unknown keys): engine, version, where it came from and the base's SHA-256, so a changed base
(a new engine version) is seen and the profile regenerated.
"""
import copy
import hashlib
import json

from ..errors import InputError

META_KEY = "x-sandboxguard"

# The syscalls that take a mode, and the index of the mode argument (the same on every
# architecture, 32-bit entry included). systemd's RestrictSUIDSGID= filters the same set.
MODE_ARGUMENT = {
    "chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2,
    "open": 2, "openat": 3, "creat": 1,
    "mkdir": 1, "mkdirat": 2,
    "mknod": 1, "mknodat": 2,
}
SETID_MASK = 0o6000  # 3072: S_ISUID | S_ISGID
SETID_BITS = (0o4000, 0o2000)
# devices=True (a daemon-wide default, where no --cap-drop MKNOD can be set): mknod and
# mknodat allowed only for the file types below, without setid bits, one mask for both (a
# conditional ALLOW wins over an ERRNO rule on the same argument: measured, so the device
# types must be left out of the ALLOW, not denied beside it).
DEVICE_SYSCALLS = ("mknod", "mknodat")
TYPE_MASK = 0o170000  # S_IFMT
NODE_TYPES = (0, 0o100000, 0o010000, 0o140000)  # none (regular), S_IFREG, S_IFIFO, S_IFSOCK
DEVICE_TYPES = (0o020000, 0o060000)  # S_IFCHR, S_IFBLK
ENOSYS_SYSCALLS = ("openat2",)  # its mode is in a struct (open_how): refused as unknown, libc falls back
DENIED_SYSCALLS = ("io_uring_setup", "io_uring_enter", "io_uring_register")
TAKEN = (*MODE_ARGUMENT, *ENOSYS_SYSCALLS, *DENIED_SYSCALLS)
EPERM, ENOSYS = 1, 38
MASKED_EQ = "SCMP_CMP_MASKED_EQ"
ALLOW = "SCMP_ACT_ALLOW"
ERRNO = "SCMP_ACT_ERRNO"
# Actions that let the call through (LOG allows and logs; TRACE and NOTIFY hand the decision
# to another process): for both building and checking, each counts as allowing.
ALLOWING = (ALLOW, "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_NOTIFY")
DENYING = (ERRNO, "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP")

# The capabilities each engine gives a container by default (Docker: oci/caps/defaults.go;
# Podman: containers.conf default_capabilities): the rules a profile keeps for these apply.
DEFAULT_CAPS = {
    "docker": ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
               "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
               "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"),
    "podman": ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE",
               "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT"),
}
ENGINES = tuple(DEFAULT_CAPS)
NATIVE_ARCH = "SCMP_ARCH_X86_64"


class SeccompError(InputError):
    """A profile or base this module refuses; str() names what and the fix."""


def base_sha256(base):
    """The SHA-256 of a profile's JSON in one canonical form (sorted keys, no spaces), without
    our ``x-sandboxguard`` key: the same base gives the same sum whatever its file's layout."""
    doc = {k: v for k, v in base.items() if k != META_KEY} if isinstance(base, dict) else base
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def _names(rule):
    """A rule's syscall names (``names``, or the old singular ``name``)."""
    names = rule.get("names")
    if names is None and isinstance(rule.get("name"), str):
        names = [rule["name"]]
    return [n for n in (names or ()) if isinstance(n, str)]


def _mode_arg(index, value, mask=SETID_MASK):
    return {"index": index, "value": mask, "valueTwo": value, "op": MASKED_EQ}


def base_problem(base, where="the base"):
    """Why ``base`` cannot be a base (one line), or None: it must be a seccomp profile (a
    mapping with ``syscalls``) whose default action denies; not one of ours already."""
    if not isinstance(base, dict):
        return "%s is not a seccomp profile (a JSON object with defaultAction and syscalls)" % where
    if META_KEY in base or has_setid_rules(base):
        return ("%s is already a sandboxguard profile (it holds our setid rules): give the engine's own default "
                "profile" % where)
    action = base.get("defaultAction")
    if action not in DENYING:
        return ("%s is not a default-deny profile (defaultAction %s): give the engine's own default, whose "
                "defaultAction is SCMP_ACT_ERRNO" % (where, action if action else "missing"))
    syscalls = base.get("syscalls")
    if not isinstance(syscalls, list) or not all(isinstance(r, dict) for r in syscalls):
        return "%s has no list of syscall rules (syscalls)" % where
    return None


def has_setid_rules(profile):
    """True when ``profile`` holds our EPERM rule for setuid modes on some syscall."""
    for rule in (profile.get("syscalls") or ()) if isinstance(profile, dict) else ():
        if isinstance(rule, dict) and rule.get("action") == ERRNO:
            for arg in rule.get("args") or ():
                if _is_masked(arg, SETID_BITS[0], SETID_BITS[0]):
                    return True
    return False


def _is_masked(arg, mask, value, index=None):
    """Whether an argument condition is ``SCMP_CMP_MASKED_EQ`` of ``mask`` and ``value`` (on ``index``)."""
    if not isinstance(arg, dict) or arg.get("op") != MASKED_EQ:
        return False
    if index is not None and arg.get("index") != index:
        return False
    return arg.get("value") == mask and arg.get("valueTwo", 0) == value


def build_profile(base, source, devices=False):
    """The prevention profile made from ``base`` (the engine's own default; not changed).

    ``source``: {engine, engine_version, origin} for the ``x-sandboxguard`` key. Raises
    SeccompError (one line) when ``base`` is not a default-deny profile. Every rule of the
    base is kept but the allowing ones, which lose the :data:`TAKEN` syscalls: each mode
    syscall the base allowed comes back allowed only without setid bits (its rule copied with
    the mode condition added, so a base's own conditions and includes still hold), with
    ERRNO(EPERM) rules for 04000 and 02000; ``openat2`` is ERRNO(ENOSYS) and ``io_uring_*``
    ERRNO(EPERM). A mode syscall the base denies stays denied. ``devices``: ``mknod`` and
    ``mknodat`` make no character or block device either (EPERM; see :data:`DEVICE_TYPES`).
    """
    problem = base_problem(base)
    if problem:
        raise SeccompError(problem)
    profile = copy.deepcopy({k: v for k, v in base.items() if k != META_KEY})
    rules, allowed = [], []
    for rule in profile["syscalls"]:
        names = _names(rule)
        if rule.get("action") not in ALLOWING or not any(n in TAKEN for n in names):
            rules.append(rule)
            continue
        kept = dict(rule, names=[n for n in names if n not in TAKEN])
        kept.pop("name", None)
        if kept["names"]:
            rules.append(kept)
        by_index = {}  # (mode index, a device syscall) -> names: one rule set per group
        for name in names:
            if name in MODE_ARGUMENT:
                by_index.setdefault((MODE_ARGUMENT[name], name in DEVICE_SYSCALLS), []).append(name)
                if name not in allowed:
                    allowed.append(name)
        for (index, _device), group in sorted(by_index.items()):
            if any(isinstance(a, dict) and a.get("index") == index for a in rule.get("args") or ()):
                raise SeccompError("the base already has a condition on the mode argument of %s: it cannot be "
                                   "combined with ours; give the engine's own default" % ", ".join(group))
            rules += _conditional_allows(kept, rule.get("args") or (), group, index, devices)
    for name in sorted(allowed, key=list(MODE_ARGUMENT).index):
        for bit in SETID_BITS:
            which = "setuid" if bit == 0o4000 else "setgid"
            rules.append({"names": [name], "action": ERRNO, "errnoRet": EPERM,
                          "args": [_mode_arg(MODE_ARGUMENT[name], bit, bit)],
                          "comment": "sandboxguard: no %s bit (0%o) in a mode" % (which, bit)})
    for name in (n for n in DEVICE_SYSCALLS if devices and n in allowed):
        for kind in DEVICE_TYPES:
            rules.append({"names": [name], "action": ERRNO, "errnoRet": EPERM,
                          "args": [_mode_arg(MODE_ARGUMENT[name], kind, TYPE_MASK)],
                          "comment": "sandboxguard: no %s device node" % ("character" if kind == 0o020000
                                                                          else "block")})
    rules.append({"names": list(ENOSYS_SYSCALLS), "action": ERRNO, "errnoRet": ENOSYS,
                  "comment": "sandboxguard: its mode is out of seccomp's sight; ENOSYS makes libc fall back to openat"})
    rules.append({"names": list(DENIED_SYSCALLS), "action": ERRNO, "errnoRet": EPERM,
                  "comment": "sandboxguard: io_uring opens files with a mode seccomp cannot see"})
    profile["syscalls"] = rules
    meta = {"comment": "Made by sandboxguard seccomp-profile from the engine's own default profile (base): "
                       "the mode syscalls are allowed only without setuid/setgid bits (EPERM otherwise), openat2 "
                       "fails with ENOSYS, io_uring_* with EPERM. Make it again when the engine changes.",
            "version": _version(), "base": {"engine": source.get("engine"),
                                            "engine_version": source.get("engine_version"),
                                            "origin": source.get("origin"), "sha256": base_sha256(base)},
            "filtered": [n for n in MODE_ARGUMENT if n in allowed], "devices": bool(devices)}
    return {META_KEY: meta, **profile}


def _conditional_allows(kept, args, group, index, devices):
    """The allowing rules that replace an unconditional one for the mode syscalls ``group``
    (all with the mode at ``index``): the base rule's own conditions plus ours on the mode."""
    def rule(value, mask, what):
        return dict(kept, names=list(group), args=[*args, _mode_arg(index, value, mask)],
                    comment="sandboxguard: %s %s" % (", ".join(group), what))

    if devices and all(n in DEVICE_SYSCALLS for n in group):
        return [rule(kind, TYPE_MASK | SETID_MASK, "of type 0%o without setuid/setgid bits" % kind)
                for kind in NODE_TYPES]
    return [rule(0, SETID_MASK, "without setuid/setgid bits in the mode")]


def _version():
    from .. import __version__  # noqa: PLC0415 - the package's one version

    return __version__


def profile_text(profile):
    """The profile as the file holds it: indented JSON, one trailing newline (stable bytes)."""
    return json.dumps(profile, indent=2) + "\n"


def load_profile(text, where):
    """A profile from JSON text; SeccompError naming ``where`` when it is not JSON or not a mapping."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise SeccompError("%s is not JSON (%s): give a seccomp profile file" % (where, exc)) from None
    if not isinstance(doc, dict):
        raise SeccompError("%s is not a seccomp profile (a JSON object with defaultAction and syscalls)" % where)
    return doc


# --- what a profile lets through, and the check of a profile in effect -----------------------

GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x",
          "i686": "386", "riscv64": "riscv64"}


def _applies(rule, caps, arch):
    """Whether a rule applies to a container with ``caps`` on ``arch`` (a Go GOARCH name, as the
    engines match ``includes``/``excludes``). A ``minKernel`` is taken as met (a new kernel)."""
    include, exclude = rule.get("includes") or {}, rule.get("excludes") or {}
    if arch in (exclude.get("arches") or ()) or any(c in caps for c in exclude.get("caps") or ()):
        return False
    if exclude.get("minKernel"):
        return False
    if include.get("arches") and arch not in include["arches"]:
        return False
    return all(c in caps for c in include.get("caps") or ())


def resolve(profile, caps=DEFAULT_CAPS["docker"], arch="amd64"):
    """{syscall: "allow" | "conditional"} for every syscall some applying rule lets through
    (unconditionally, or only under argument conditions); a syscall not named is denied (the
    default action, when it denies). Pure."""
    states = {}
    for rule in profile.get("syscalls") or ():
        if not isinstance(rule, dict) or rule.get("action") not in ALLOWING or not _applies(rule, caps, arch):
            continue
        state = "conditional" if rule.get("args") else "allow"
        for name in _names(rule):
            if states.get(name) != "allow":
                states[name] = state
    return states


def _allowing_rules(profile, name, caps, arch):
    rules = [r for r in profile.get("syscalls") or () if isinstance(r, dict) and r.get("action") in ALLOWING]
    return [r for r in rules if name in _names(r) and _applies(r, caps, arch)]


def _has_mode_condition(rule, index, mask, value):
    return any(_is_masked(a, mask, value, index) for a in rule.get("args") or ())


def _mode_args(rule, index):
    found = []
    for arg in rule.get("args") or ():
        if isinstance(arg, dict) and arg.get("index") == index and arg.get("op") == MASKED_EQ:
            mask, value = arg.get("value"), arg.get("valueTwo", 0)
            if isinstance(mask, int) and isinstance(value, int):
                found.append((mask, value))
    return found


def _excludes_setid(rule, index):
    """The rule matches only modes without setuid/setgid bits (a MASKED_EQ on the mode whose
    mask covers 06000 and whose value has neither)."""
    return any(mask & SETID_MASK == SETID_MASK and not value & SETID_MASK for mask, value in _mode_args(rule, index))


def _excludes_devices(rule, index):
    return any(mask & TYPE_MASK == TYPE_MASK and value & TYPE_MASK not in DEVICE_TYPES
               for mask, value in _mode_args(rule, index))


def devices_denied(profile, caps=DEFAULT_CAPS["docker"], arch="amd64"):
    """True when ``profile`` lets no character or block device node be made (pure)."""
    states = resolve(profile, caps, arch)
    for name in DEVICE_SYSCALLS:
        if name not in states:
            continue
        if states[name] != "conditional":
            return False
        if not all(_excludes_devices(r, MODE_ARGUMENT[name]) for r in _allowing_rules(profile, name, caps, arch)):
            return False
    return True


def _errno_rule(profile, name, index, bit):
    rules = [r for r in profile.get("syscalls") or () if isinstance(r, dict) and r.get("action") in DENYING]
    return any(name in _names(r) and _has_mode_condition(r, index, bit, bit) for r in rules)


def _problem(rule, detail, syscalls=()):
    return {"rule": rule, "syscalls": sorted(syscalls), "detail": detail}


def setid_problems(profile, caps=DEFAULT_CAPS["docker"], arch="amd64"):
    """What lets a setuid/setgid file, openat2 or io_uring through ``profile`` (pure): [problem]."""
    problems = []
    if profile.get("defaultAction") not in DENYING:
        problems.append(_problem("default-allow", "defaultAction is %s: every syscall no rule names is allowed"
                                 % profile.get("defaultAction")))
    states = resolve(profile, caps, arch)
    loose, unconditional, no_errno = [], [], []
    for name, index in MODE_ARGUMENT.items():
        if name not in states:
            continue
        if states[name] == "allow":
            unconditional.append(name)
            continue
        if not all(_excludes_setid(r, index) for r in _allowing_rules(profile, name, caps, arch)):
            loose.append(name)
        if not all(_errno_rule(profile, name, index, bit) for bit in SETID_BITS):
            no_errno.append(name)
    if unconditional:
        problems.append(_problem("setid-unconditional", "allowed whatever the mode: a setuid or setgid file can be "
                                 "made (an ERRNO rule beside an unconditional allow denies nothing)", unconditional))
    if loose:
        problems.append(_problem("setid-condition-missing", "allowed by a rule without the mode condition "
                                 "(mode & 06000 == 0 on argument %s)" % ", ".join(
                                     "%s:%d" % (n, MODE_ARGUMENT[n]) for n in loose), loose))
    if no_errno:
        problems.append(_problem("setid-errno-missing", "no ERRNO(EPERM) rule for a mode with 04000 or 02000: such a "
                                 "call gets the default action's errno instead of EPERM", no_errno))
    opened = [n for n in (*ENOSYS_SYSCALLS, *DENIED_SYSCALLS) if n in states]
    if opened:
        problems.append(_problem("mode-unseen-allowed", "allowed, and its mode is out of seccomp's sight "
                                 "(openat2's struct, io_uring's submissions)", opened))
    return problems


def preservation_problems(profile, base, caps=DEFAULT_CAPS["docker"], arch="amd64"):
    """What ``profile`` lets through that ``base`` (the running engine's default) denies (pure)."""
    before, after = resolve(base, caps, arch), resolve(profile, caps, arch)
    reopened = sorted(n for n in after if n not in before)
    widened = sorted(n for n, s in after.items() if s == "allow" and before.get(n) == "conditional")
    problems = []
    if reopened:
        problems.append(_problem("base-denial-lost", "denied by the engine's default, allowed by this profile "
                                 "(a profile made from another engine's default re-opens them)", reopened))
    if widened:
        problems.append(_problem("base-condition-lost", "allowed under conditions by the engine's default, "
                                 "unconditionally by this profile", widened))
    return problems


def check_profile(profile, base=None, engine=None, arch="amd64"):
    """Check a profile in effect (pure): the setid rules present, and (given the running
    engine's default ``base``) every syscall the base denies still denied.

    ``engine``: the running engine's kind (docker or podman): its default capabilities decide
    which conditional rules apply, and a profile whose ``x-sandboxguard`` names another
    engine's base is a problem (``other-engine-base``). Returns {ok, problems [{rule,
    syscalls, detail}], notes, made_by (the profile's x-sandboxguard or None), engine}.
    """
    caps = DEFAULT_CAPS.get(engine or "docker", DEFAULT_CAPS["docker"])
    meta = profile.get(META_KEY) if isinstance(profile.get(META_KEY), dict) else None
    problems, notes = setid_problems(profile, caps, arch), []
    made_from = (meta.get("base") or {}) if meta else {}
    if meta is None:
        notes.append("not made by sandboxguard seccomp-profile (no %s key): its base is unknown" % META_KEY)
    if engine and made_from.get("engine") and made_from["engine"] != engine:
        problems.append(_problem("other-engine-base", "made from %s's default profile, but the engine is %s: make "
                                 "it from the running engine's own default" % (made_from["engine"], engine)))
    if base is not None:
        problems += preservation_problems(profile, base, caps, arch)
        if made_from.get("sha256") and made_from["sha256"] != base_sha256(base):
            problems.append(_problem("base-changed", "made from another base (sha256 %s, the engine's default is now "
                                     "%s): make it again from the running engine's default"
                                     % (made_from["sha256"][:12], base_sha256(base)[:12])))
    else:
        notes.append("no base to compare with: the engine's own denials were not checked")
    return {"ok": not problems, "problems": problems, "notes": notes, "made_by": meta, "engine": engine,
            "devices_denied": devices_denied(profile, caps, arch)}
