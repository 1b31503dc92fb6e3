# GENERATED from python/src/sandboxguard/_prevent/places.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection (``install`` applies them through descriptors).

Where the prevention is switched on, as edits of text (pure): each returns the new text and words.

- **Hermes** ``terminal.docker_extra_args``: ``--security-opt seccomp=PROFILE``, then
  ``--cap-drop SETFCAP`` and ``--cap-drop MKNOD`` (seccomp cannot read the xattr name of a
  file capability; CAP_MKNOD is what makes a device node) and ``--security-opt
  no-new-privileges`` where missing, appended as one block after the operator's own items
  (Hermes passes extra args last: they override its defaults). Removal takes out the block:
  the seccomp option naming our profile and the items of ours right after it; an item the
  operator had before is never in the block, so it stays.
- **Docker's daemon.json** ``seccomp-profile``: the daemon-wide default (a job can still pass
  its own profile, ``seccomp=unconfined`` or ``--privileged``: docs/prevention.md).
- **Podman's containers.conf** ``[containers] seccomp_profile``.
"""
import json

from .._core.text import escape
from . import dockerargs, seccomp

WANTED_DROPS = ("SETFCAP", "MKNOD")
NNP = "no-new-privileges"
DAEMON_KEY = "seccomp-profile"
PODMAN_TABLE, PODMAN_KEY = "containers", "seccomp_profile"


def _tokens(args):
    """[(kind, value, items)]: ``kind`` is an option name (``--security-opt``, ``--cap-drop``,
    ...) with its value, or None for an item kept as it is; ``items`` the list items it spans."""
    out, index, items = [], 0, list(args)
    while index < len(items):
        item = items[index]
        name, eq, value = str(item).partition("=") if isinstance(item, str) else ("", "", "")
        if name in ("--security-opt", "--cap-drop", "--cap-add"):
            if eq:
                out.append((name, value, [item]))
                index += 1
                continue
            if index + 1 < len(items):
                out.append((name, str(items[index + 1]), [item, items[index + 1]]))
                index += 2
                continue
        out.append((None, None, [item]))
        index += 1
    return out


def _is_seccomp(token):
    return token[0] == "--security-opt" and dockerargs.seccomp_option([token[1]]) is not None


def _is_ours(token, profile):
    """A token the block holds: our seccomp option, a cap-drop of ours, no-new-privileges."""
    kind, value = token[0], token[1]
    if _is_seccomp(token):
        return dockerargs.seccomp_option([value]) == profile
    if kind == "--cap-drop":
        return dockerargs.capabilities([value])[0] in ["CAP_" + c for c in WANTED_DROPS]
    return kind == "--security-opt" and dockerargs.has_no_new_privileges([value])


def _flatten(tokens):
    return [item for token in tokens for item in token[2]]


def hermes_args(args, profile, state="present", no_new_privileges=True):
    """(new docker_extra_args, warnings) for ``state`` (pure)."""
    tokens, warnings = _tokens(args), []
    ours = [i for i, t in enumerate(tokens) if _is_seccomp(t) and dockerargs.seccomp_option([t[1]]) == profile]
    anchor = ours[0] if ours else None
    if state == "absent":
        if anchor is None:
            return list(args), warnings
        end = anchor + 1
        while end < len(tokens) and _is_ours(tokens[end], profile) and not _is_seccomp(tokens[end]):
            end += 1
        return _flatten(tokens[:anchor] + tokens[end:]), warnings
    others = [t for t in tokens if _is_seccomp(t) and dockerargs.seccomp_option([t[1]]) != profile]
    for token in others:
        warnings.append("docker_extra_args had --security-opt %s: replaced by sandboxguard's profile %s"
                        % (escape(token[1]), escape(profile)))
    tokens = [t for t in tokens if t not in others]
    parsed = dockerargs.parse_run_args(_flatten(tokens))
    dropped = dockerargs.capabilities(parsed["cap_drop"])
    added = dockerargs.capabilities(parsed["cap_add"])
    wanted = [("--cap-drop", cap) for cap in WANTED_DROPS if "CAP_" + cap not in dropped and "ALL" not in dropped]
    for cap in WANTED_DROPS:
        if "CAP_" + cap in added or "ALL" in added:
            warnings.append("docker_extra_args adds %s: the --cap-drop %s of the prevention may not hold (remove "
                            "the --cap-add)" % ("ALL" if "ALL" in added else cap, cap))
    if no_new_privileges and not dockerargs.has_no_new_privileges(parsed["security_opt"]):
        wanted.append(("--security-opt", NNP))
    if anchor is None:
        tokens.append(("--security-opt", "seccomp=" + profile, ["--security-opt", "seccomp=" + profile]))
        anchor = len(tokens) - 1
    else:  # ours, where it is now that the others are gone
        anchor = next(i for i, t in enumerate(tokens) if _is_seccomp(t))
    end = anchor + 1
    while end < len(tokens) and _is_ours(tokens[end], profile):
        end += 1
    tokens[end:end] = [(kind, value, [kind, value]) for kind, value in wanted]
    return _flatten(tokens), warnings


def daemon_json(text, profile, state="present"):
    """(new daemon.json text, previous seccomp-profile, warnings) (pure). The document keeps
    its other keys in order; it is written as indented JSON. A profile that is not ours is
    left in place on removal (a warning says so)."""
    warnings = []
    if text is None or not text.strip():
        doc = {}
    else:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise seccomp.SeccompError("daemon.json is not JSON (%s): fix it by hand first" % exc) from None
        if not isinstance(doc, dict):
            raise seccomp.SeccompError("daemon.json is not a JSON object: fix it by hand first")
    previous = doc.get(DAEMON_KEY)
    if state == "absent":
        if previous is None or _foreign(previous, profile, "daemon.json's seccomp-profile", warnings):
            return text, previous, warnings
        doc.pop(DAEMON_KEY)
    else:
        if previous == profile:
            return text, previous, warnings
        if previous is not None:
            warnings.append("daemon.json's seccomp-profile was %s: replaced by sandboxguard's profile %s"
                            % (escape(str(previous)), escape(profile)))
        doc[DAEMON_KEY] = profile
    return json.dumps(doc, indent=2) + "\n", previous, warnings


def _toml_string(value):
    return json.dumps(value)  # a JSON string is a TOML basic string


def _table_of(line):
    stripped = line.strip()
    if stripped.startswith("[") and not stripped.startswith("[["):
        return stripped.split("]", 1)[0][1:].strip()
    if stripped.startswith("[["):
        return stripped.split("]]", 1)[0][2:].strip()
    return None


def _key_of(line):
    stripped = line.strip()
    if not stripped or stripped.startswith("#") or "=" not in stripped:
        return None, None
    key, _eq, value = stripped.partition("=")
    return key.strip().strip('"'), value.split("#", 1)[0].strip() if not value.strip().startswith('"') else value


def _toml_value(raw):
    raw = raw.strip()
    if raw.startswith('"'):
        try:
            return json.JSONDecoder().raw_decode(raw)[0]
        except ValueError:
            return raw
    if raw.startswith("'"):
        return raw[1:].split("'", 1)[0]
    return raw.split("#", 1)[0].strip()


def containers_conf(text, profile, state="present"):
    """(new containers.conf text, previous seccomp_profile, warnings) (pure): the one line
    ``seccomp_profile = "..."`` in ``[containers]`` set or removed; every other line kept."""
    lines = (text or "").split("\n") if text else []
    trailing = bool(text) and text.endswith("\n")
    if trailing:
        lines = lines[:-1]
    table, found, head = None, None, None
    for number, line in enumerate(lines):
        name = _table_of(line)
        if name is not None:
            table = name
            if name == PODMAN_TABLE and head is None:
                head = number
            continue
        key, raw = _key_of(line)
        if table == PODMAN_TABLE and key == PODMAN_KEY:
            found = (number, _toml_value(raw))
    previous = found[1] if found else None
    warnings = []
    if state == "absent":
        if found is None or _foreign(previous, profile, "containers.conf's seccomp_profile", warnings):
            return text, previous, warnings
        del lines[found[0]]
    else:
        line = "%s = %s" % (PODMAN_KEY, _toml_string(profile))
        if found is not None and previous == profile:
            return text, previous, warnings
        if found is not None:
            warnings.append("containers.conf's seccomp_profile was %s: replaced by sandboxguard's profile %s"
                            % (escape(str(previous)), escape(profile)))
            lines[found[0]] = line
        elif head is not None:
            lines.insert(head + 1, line)
        else:
            if lines and lines[-1].strip():
                lines.append("")
            lines += ["[%s]" % PODMAN_TABLE, line]
            trailing = True
    return "\n".join(lines) + ("\n" if trailing else ""), previous, warnings


def _foreign(previous, profile, what, warnings):
    """True, with a warning, when a place names another profile than sandboxguard's: taking
    the prevention out leaves an operator's own setting in place (pure)."""
    if previous == profile:
        return False
    warnings.append("%s is %s, not sandboxguard's %s: left in place" % (what, escape(str(previous)), escape(profile)))
    return True
