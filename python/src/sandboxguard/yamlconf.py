# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Set one nested key in a YAML file's text without a YAML library, keeping everything else.

Modules run on fleet hosts with the standard library only, and a Hermes ``config.yaml``
is edited by people: comments, key order, quoting and blank lines must survive. A
round-trip parser would need ruamel.yaml on every target; this edits lines instead,
for the one shape we need (``parent:`` a block mapping at the top level, ``key:`` a
plain scalar under it), and refuses what it cannot edit safely rather than guess.

What it handles:
- no file, an empty file, or no ``parent:`` key: the block is appended;
- ``parent:`` with an empty or null value (``parent:``, ``parent: ~``, ``parent: null``,
  ``parent: {}``): the key is written as the first child;
- ``parent:`` as a block mapping: ``key:`` replaced in place (a trailing comment is
  kept), or inserted as the first child with the children's indentation.

What it refuses (:class:`YamlEditError` names the line): a flow mapping with content
(``parent: {a: 1}``), a scalar or sequence value, anchors, aliases and tags on
``parent:`` or ``key:``, a block scalar or multi-line value for ``key:``, tabs in
indentation, several documents, and duplicate ``parent:`` or ``key:`` lines. Files with
a byte-order mark or CRLF line ends keep them.

tests/integration/test_terminal_home_yaml.py parses every result with PyYAML and
ruamel.yaml to prove it is the intended YAML.
"""
import json
import re

from .errors import InputError

__all__ = ["YamlEditError", "read_env_line", "read_nested", "read_path", "set_env_line", "set_nested", "set_path"]

_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_][A-Za-z0-9_.-]*|\"[^\"]*\"|'[^']*')\s*:(?:\s|$)")
_NULLISH = ("", "~", "null", "Null", "NULL", "{}")


class YamlEditError(InputError):
    """The file has a shape this line editor refuses to change; the message says where."""


def _strip_comment(text):
    """Split a plain value from a trailing `` #comment``; returns (value, comment)."""
    in_single = in_double = False
    for i, ch in enumerate(text):
        if ch == "'" and not in_double:
            in_single = not in_single
        elif ch == '"' and not in_single:
            in_double = not in_double
        elif ch == "#" and not in_single and not in_double and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip(), text[i:]
    return text.rstrip(), ""


def _unquote(value):
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _key_name(raw):
    return _unquote(raw)


def _is_content(line):
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def read_nested(text, parent, key):
    """The plain-scalar value of ``parent.key`` in *text*, or None when absent."""
    return read_path(text, (parent, key))


def read_path(text, keys):
    """The plain-scalar value at the key path *keys* in *text*, or None when absent."""
    lines = _split(text or "")[0]
    _check_document(lines)
    found = _walk(lines, keys)
    if found["missing"]:
        return None
    value = _final_value(lines, found, keys, scalar=True)["value"]
    return None if value in ("~", "null", "") else _unquote(value)


def _split(text):
    bom = ""
    if text.startswith("\ufeff"):
        bom, text = "\ufeff", text[1:]
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    trailing = bool(lines) and lines[-1] == ""
    if trailing:
        lines = lines[:-1]
    return lines, bom, newline, trailing


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def _check_document(lines):
    """Refuse what no edit here is safe for: several documents, end markers, tab indents."""
    for number, line in enumerate(lines):
        if line.startswith("---") and any(_is_content(x) for x in lines[:number]):
            raise YamlEditError("line %d: several YAML documents; edit this file by hand" % (number + 1))
        if line.startswith("..."):
            raise YamlEditError("line %d: a document end marker; edit this file by hand" % (number + 1))
        if line.startswith("\t") or (line[:1] == " " and "\t" in line[:_indent(line) + 1]):
            raise YamlEditError("line %d: a tab in indentation is not YAML" % (number + 1))


def _find_key(lines, start, end, indent, key, label):
    """The line number of ``key:`` at exactly *indent* within [start, end), or None."""
    found = []
    for number in range(start, end):
        match = _KEY_LINE.match(lines[number])
        if match and len(match.group("indent")) == indent and _key_name(match.group("key")) == key:
            found.append(number)
    if len(found) > 1:
        raise YamlEditError("lines %s: %s is defined more than once" % (", ".join(str(n + 1) for n in found), label))
    return found[0] if found else None


def _value_end(lines, number, end):
    """Where the value block of the key on line *number* ends (deeper lines, or an indentless
    sequence at the key's own indent); trailing blank lines and comments stay outside."""
    indent = _indent(lines[number])
    stop = end
    for other in range(number + 1, end):
        line = lines[other]
        if not _is_content(line):
            continue
        deeper = _indent(line) > indent
        dash = _indent(line) == indent and (line.lstrip(" ").startswith("- ") or line.strip() == "-")
        if not (deeper or dash):
            stop = other
            break
    while stop > number + 1 and not _is_content(lines[stop - 1]):
        stop -= 1
    return stop


def _mapping_head(lines, number, label):
    """The value text on a mapping key's own line ('' or a null); refuse anything else."""
    match = _KEY_LINE.match(lines[number])
    value = _strip_comment(lines[number][match.end():])[0].strip()
    if value and value[0] in "&*!":
        raise YamlEditError("line %d: %r has an anchor, alias or tag; edit this file by hand" % (number + 1, label))
    if value not in _NULLISH:
        if value.startswith("{"):
            raise YamlEditError("line %d: %r is a flow mapping; write it as a block mapping or edit by hand"
                                % (number + 1, label))
        raise YamlEditError("line %d: %r is not a mapping (%s)" % (number + 1, label, value))
    return value


def _walk(lines, keys):
    """Follow *keys* through block mappings; return where the path ends or stops.

    Returns dict: missing (keys not found, from the first absent one), line (the last key
    found, or None), start/end (the region its children live in), indent (their
    indentation; None for an empty mapping), parent_value (the head of the last mapping).
    """
    start, end, indent, line, head = 0, len(lines), 0, None, None
    for depth, key in enumerate(keys):
        label = ".".join(keys[:depth + 1])
        number = _find_key(lines, start, end, indent, key, label) if indent is not None else None
        if number is None:
            return {"missing": list(keys[depth:]), "line": line, "start": start, "end": end, "indent": indent,
                    "parent_value": head}
        if depth == len(keys) - 1:
            return {"missing": [], "line": number, "start": start, "end": end, "indent": indent,
                    "parent_value": head}
        head = _mapping_head(lines, number, label)
        block_end = _value_end(lines, number, end)
        children = [x for x in lines[number + 1:block_end] if _is_content(x)]
        child_indent = _indent(children[0]) if children else None
        if children and head == "{}":
            raise YamlEditError("line %d: %r is {} but has indented lines under it" % (number + 1, label))
        # A sequence starts with a dash; dashes after a key line are that key's (indentless) list.
        if children and (children[0].lstrip(" ").startswith("- ") or children[0].strip() == "-"):
            raise YamlEditError("line %d: %r is a sequence, not a mapping" % (number + 2, label))
        start, end, indent, line = number + 1, block_end, child_indent, number
    raise AssertionError("unreachable")  # pragma: no cover


def _final_value(lines, found, keys, scalar):
    """The value of the last key of a found path: its text, comment and block end.

    With *scalar*, a nested block is refused (a scalar is read or written over it).
    """
    label = ".".join(keys)
    number = found["line"]
    match = _KEY_LINE.match(lines[number])
    value, comment = _strip_comment(lines[number][match.end():])
    raw = value.strip()
    block_end = _value_end(lines, number, found["end"])
    nested = any(_is_content(x) for x in lines[number + 1:block_end])
    refused = raw[:1] in ("&", "*", "!", "|", ">") or (raw[:1] in ("[", "{") and (scalar or raw not in ("[]", "{}")))
    if refused:
        raise YamlEditError("line %d: %s has a value this editor does not change (%s); edit by hand"
                            % (number + 1, label, raw))
    if raw and raw[0] in "'\"" and (len(raw) < 2 or raw[-1] != raw[0]):
        raise YamlEditError("line %d: %s is a multi-line quoted value; edit by hand" % (number + 1, label))
    if nested and (raw or scalar):
        what = "a nested value" if not raw else "a value continued on the next line"
        raise YamlEditError("line %d: %s has %s; edit by hand" % (number + 1, label, what))
    return {"value": raw, "comment": comment, "block_end": block_end}


_RESERVED = ("true", "false", "yes", "no", "on", "off", "null", "~", "y", "n")
_PLAIN = re.compile(r"^[A-Za-z_./][A-Za-z0-9_./-]*$")


def scalar_text(value):
    """*value* (str, int, float, bool or None) as one YAML scalar that reads back as itself."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if not isinstance(value, str):
        raise YamlEditError("refusing to write %r as a YAML scalar" % (value,))
    if _PLAIN.match(value) and value.lower() not in _RESERVED:
        return value
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar


def _render(key, value, indent):
    """Block YAML lines for ``key: value`` at *indent* (mappings and sequences nested)."""
    pad = " " * indent
    if isinstance(value, dict) and value:
        lines = ["%s%s:" % (pad, key)]
        for child, item in value.items():
            lines += _render(child, item, indent + 2)
        return lines
    if isinstance(value, (list, tuple)) and value:
        lines = ["%s%s:" % (pad, key)]
        for item in value:
            lines += _render_item(item, indent + 2)
        return lines
    if isinstance(value, dict):
        return ["%s%s: {}" % (pad, key)]
    if isinstance(value, (list, tuple)):
        return ["%s%s: []" % (pad, key)]
    return ["%s%s: %s" % (pad, key, scalar_text(value))]


def _render_item(item, indent):
    pad = " " * indent
    if isinstance(item, dict) and item:
        lines = []
        for child, value in item.items():
            lines += _render(child, value, indent + 2)
        return [pad + "- " + lines[0].lstrip(" "), *lines[1:]]
    if isinstance(item, (list, tuple)) and item:
        raise YamlEditError("refusing to write a list directly inside a list")
    if isinstance(item, (dict, list, tuple)):
        return [pad + "- " + ("{}" if isinstance(item, dict) else "[]")]
    return [pad + "- " + scalar_text(item)]


def _render_path(keys, value, indent):
    if len(keys) == 1:
        return _render(keys[0], value, indent)
    return ["%s%s:" % (" " * indent, keys[0]), *_render_path(keys[1:], value, indent + 2)]


def set_path(text, keys, value):
    """Return *text* with the key path *keys* set to *value*, everything else kept.

    *value* is a scalar (written on the key's line, its trailing comment kept) or a list or
    mapping (written as a block, replacing the key's old value block). Missing mappings on
    the path are created: a missing top-level key is appended after a blank line, a missing
    child becomes the first child with its siblings' indentation. Raises YamlEditError for
    the shapes the module docstring lists.
    """
    keys = list(keys)
    if not keys:
        raise YamlEditError("an empty key path")
    lines, bom, newline, trailing = _split(text or "")
    _check_document(lines)
    found = _walk(lines, keys)
    complex_value = isinstance(value, (dict, list, tuple))
    if found["missing"]:
        _insert(lines, found, _render_path, found["missing"], value)
        return bom + newline.join(lines) + newline
    number = found["line"]
    final = _final_value(lines, found, keys, scalar=not complex_value)
    if complex_value:
        indent = _indent(lines[number])
        lines[number:final["block_end"]] = _render(keys[-1], value, indent)
    else:
        match = _KEY_LINE.match(lines[number])
        head = lines[number][:match.end()].rstrip()
        comment = final["comment"]
        lines[number] = "%s %s%s" % (head, scalar_text(value), (" " + comment) if comment else "")
    return bom + newline.join(lines) + (newline if trailing or lines else "")


def _insert(lines, found, render, keys, value):
    """Write the missing *keys* (and *value*) where :func:`_walk` stopped."""
    parent = found["line"]
    if parent is None:  # a missing top-level key: appended after a blank line
        while lines and not lines[-1].strip():
            lines.pop()
        if lines:
            lines.append("")
        lines += render(keys, value, 0)
        return
    indent = found["indent"] if found["indent"] is not None else _indent(lines[parent]) + 2
    if found["parent_value"] in _NULLISH[1:]:  # "parent: ~  # c" becomes "parent: # c"
        match = _KEY_LINE.match(lines[parent])
        comment = _strip_comment(lines[parent][match.end():])[1]
        lines[parent] = lines[parent][:match.end()].rstrip() + ((" " + comment) if comment else "")
    lines[parent + 1:parent + 1] = render(keys, value, indent)


def set_nested(text, parent, key, value):
    """Return *text* with ``parent.key`` set to the plain scalar *value*.

    Raises :class:`YamlEditError` for shapes it refuses (see the module docstring).
    *value* must be a plain YAML word (letters, digits, ``_``, ``-``, ``.``, ``/``).
    """
    reserved = ("true", "false", "yes", "no", "on", "off", "null", "~")
    if not isinstance(value, str) or not re.match(r"^[A-Za-z0-9_./-]+$", value) or value.lower() in reserved:
        raise YamlEditError("refusing to write %r as a plain YAML scalar" % (value,))
    return set_path(text, (parent, key), value)


def set_env_line(text, name, value):
    """Return ``.env`` *text* with ``NAME=value`` set: the first ``NAME=`` (or
    ``export NAME=``) line replaced, later ones removed, or a line appended."""
    lines, bom, newline, _trailing = _split(text or "")
    pattern = re.compile(r"^\s*(export\s+)?%s\s*=" % re.escape(name))
    out = []
    done = False
    for line in lines:
        if pattern.match(line):
            if not done:
                out.append("%s%s=%s" % (pattern.match(line).group(1) or "", name, value))
                done = True
            continue
        out.append(line)
    if not done:
        out.append("%s=%s" % (name, value))
    return bom + newline.join(out) + newline


def read_env_line(text, name):
    """The value of the first ``NAME=`` line in ``.env`` *text* (quotes removed), or None."""
    pattern = re.compile(r"^\s*(?:export\s+)?%s\s*=\s*(.*)$" % re.escape(name))
    for line in (text or "").splitlines():
        match = pattern.match(line)
        if match:
            value, _comment = _strip_comment(match.group(1))
            return _unquote(value.strip())
    return None


def _scalar_item(raw, label, number):
    """One sequence item's plain or quoted scalar text, as YAML reads it."""
    raw = raw.strip()
    if raw[:1] in ("&", "*", "!", "|", ">", "[", "{") or raw in ("", "-") or raw.startswith("- "):
        raise YamlEditError("line %d: an item of %s is not a plain scalar (%s); edit by hand"
                            % (number + 1, label, raw))
    if raw[0] == '"':
        try:
            return json.loads(raw)
        except ValueError:
            raise YamlEditError("line %d: an item of %s is a quoted value this reader does not take; edit by hand"
                                % (number + 1, label)) from None
    if raw[0] == "'":
        if len(raw) < 2 or raw[-1] != "'":
            raise YamlEditError("line %d: an item of %s is a multi-line quoted value; edit by hand"
                                % (number + 1, label))
        return raw[1:-1].replace("''", "'")
    return raw


def _flow_items(raw, label, number):
    """The scalars of a one-line flow sequence ``[a, "b", 'c']``."""
    inner, items, current, quote = raw[1:-1], [], "", None
    for ch in inner:
        if quote:
            current += ch
            quote = None if ch == quote and not current.endswith("\\" + ch) else quote
        elif ch in "'\"":
            quote, current = ch, current + ch
        elif ch == ",":
            items.append(current)
            current = ""
        elif ch in "[]{}":
            raise YamlEditError("line %d: %s is a nested flow sequence; edit by hand" % (number + 1, label))
        else:
            current += ch
    if current.strip() or items:
        items.append(current)
    return [_scalar_item(item, label, number) for item in items]


def read_list(text, keys):
    """The list of scalars at the key path *keys* in *text* (a block sequence, indentless or
    indented, or a one-line flow sequence), [] for an empty or null value, None when the key
    is absent. Raises YamlEditError for a scalar, a mapping or items this reader refuses."""
    keys = list(keys)
    label = ".".join(keys)
    lines = _split(text or "")[0]
    _check_document(lines)
    found = _walk(lines, keys)
    if found["missing"]:
        return None
    number = found["line"]
    raw = _strip_comment(lines[number][_KEY_LINE.match(lines[number]).end():])[0].strip()
    block_end = _value_end(lines, number, found["end"])
    nested = any(_is_content(x) for x in lines[number + 1:block_end])
    if raw.startswith("[") and raw.endswith("]") and not nested:
        return _flow_items(raw, label, number)
    if raw not in ("", "~", "null"):
        raise YamlEditError("line %d: %s is not a list (%s)" % (number + 1, label, raw))
    items = []
    for other in range(number + 1, block_end):
        line = lines[other]
        if not _is_content(line):
            continue
        stripped = line.lstrip(" ")
        if not (stripped.startswith("- ") or stripped == "-"):
            raise YamlEditError("line %d: %s is not a list of scalars; edit by hand" % (other + 1, label))
        items.append(_scalar_item(_strip_comment(stripped[1:])[0], label, other))
    return items


def set_list(text, keys, items):
    """Return *text* with the list at *keys* made *items*. A block sequence of one line per
    item whose items stay in order is edited in place: the lines of the items no longer there
    are removed, new items appended after the last one with its indentation, so every other
    line (an item's trailing comment included) is kept. Anything else is set_path's."""
    items = list(items)
    old = read_list(text, keys)
    lines, bom, newline, trailing = _split(text or "")
    found = _walk(lines, list(keys)) if old else None
    places = []
    if found is not None:
        number = found["line"]
        places = [n for n in range(number + 1, _value_end(lines, number, found["end"])) if _is_content(lines[n])]
    kept = [value for value in old or () if value in items]
    if old and not places:  # a one-line flow sequence: written again on its line, its comment kept
        number = found["line"]
        match = _KEY_LINE.match(lines[number])
        comment = _strip_comment(lines[number][match.end():])[1]
        lines[number] = "%s [%s]%s" % (lines[number][:match.end()].rstrip(), ", ".join(scalar_text(i) for i in items),
                                       (" " + comment) if comment else "")
        return bom + newline.join(lines) + (newline if trailing or lines else "")
    if not places or len(places) != len(old) or items[:len(kept)] != kept:
        return set_path(text, keys, items)
    drop, wanted = [], list(kept)
    for line_number, value in zip(places, old):
        if wanted and value == wanted[0]:
            wanted.pop(0)
        else:
            drop.append(line_number)
    last = places[-1]
    pad = lines[last][:_indent(lines[last])]
    new_lines = ["%s- %s" % (pad, scalar_text(item)) for item in items[len(kept):]]
    lines[last + 1:last + 1] = new_lines
    for line_number in sorted(drop, reverse=True):
        del lines[line_number]
    if not any(line_number for line_number in places if line_number not in drop) and not new_lines:
        return set_path(bom + newline.join(lines) + newline, keys, [])
    return bom + newline.join(lines) + (newline if trailing or lines else "")
