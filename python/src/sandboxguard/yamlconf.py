# Copyright: sandboxguard contributors
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
import re

_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_][A-Za-z0-9_.-]*|\"[^\"]*\"|'[^']*')\s*:(?:\s|$)")
_NULLISH = ("", "~", "null", "Null", "NULL", "{}")


class YamlEditError(ValueError):
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
    lines = _split(text)[0]
    found = _locate(lines, parent, key)
    if found["key_line"] is None:
        return None
    value = found["value"]
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


def _locate(lines, parent, key):
    """Find the parent line, its block, and the key line; raise on refused shapes."""
    documents = 0
    parent_lines = []
    for number, line in enumerate(lines):
        if line.startswith("---"):
            documents += 1
            if documents > 1 or any(_is_content(x) for x in lines[:number]):
                raise YamlEditError("line %d: several YAML documents; edit this file by hand" % (number + 1))
        if line.startswith("..."):
            raise YamlEditError("line %d: a document end marker; edit this file by hand" % (number + 1))
        if line.startswith("\t"):
            raise YamlEditError("line %d: a tab in indentation is not YAML" % (number + 1))
        match = _KEY_LINE.match(line)
        if match and not match.group("indent") and _key_name(match.group("key")) == parent:
            parent_lines.append(number)
    if len(parent_lines) > 1:
        raise YamlEditError("lines %s: %r is defined more than once" % (
            ", ".join(str(n + 1) for n in parent_lines), parent))
    result = {"parent_line": None, "parent_value": None, "block_end": len(lines), "child_indent": None,
              "key_line": None, "value": None, "comment": "", "value_span": None}
    if not parent_lines:
        return result
    start = parent_lines[0]
    result["parent_line"] = start
    head = lines[start]
    match = _KEY_LINE.match(head)
    value, _comment = _strip_comment(head[match.end():])
    value = value.strip()
    if value and value[0] in "&*!":
        raise YamlEditError("line %d: %r has an anchor, alias or tag; edit this file by hand" % (start + 1, parent))
    if value not in _NULLISH:
        if value.startswith("{"):
            raise YamlEditError("line %d: %r is a flow mapping; write it as a block mapping or edit by hand"
                                % (start + 1, parent))
        raise YamlEditError("line %d: %r is not a mapping (%s)" % (start + 1, parent, value))
    result["parent_value"] = value
    end = len(lines)
    child_indent = None
    for number in range(start + 1, len(lines)):
        line = lines[number]
        if not _is_content(line):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:
            end = number
            break
        if child_indent is None:
            child_indent = indent
            if value == "{}":
                raise YamlEditError("line %d: %r is {} but has indented lines under it" % (start + 1, parent))
    # keep trailing blank lines and comments outside the block
    while end > start + 1 and not _is_content(lines[end - 1]):
        end -= 1
    result["block_end"] = end
    result["child_indent"] = child_indent
    if child_indent is None:
        return result
    if lines[start + 1:end] and any(
        x.lstrip(" ").startswith("- ") or x.strip() == "-"
        for x in lines[start + 1:end]
        if _is_content(x) and len(x) - len(x.lstrip(" ")) == child_indent
    ):
        raise YamlEditError("line %d: %r is a sequence, not a mapping" % (start + 2, parent))
    key_lines = []
    for number in range(start + 1, end):
        line = lines[number]
        match = _KEY_LINE.match(line)
        if match and len(match.group("indent")) == child_indent and _key_name(match.group("key")) == key:
            key_lines.append(number)
    if len(key_lines) > 1:
        raise YamlEditError("lines %s: %s.%s is defined more than once" % (
            ", ".join(str(n + 1) for n in key_lines), parent, key))
    if not key_lines:
        return result
    number = key_lines[0]
    line = lines[number]
    match = _KEY_LINE.match(line)
    rest = line[match.end():]
    value, comment = _strip_comment(rest)
    raw_value = value.strip()
    if raw_value and raw_value[0] in "&*!|>[{":
        raise YamlEditError("line %d: %s.%s has a value this editor does not change (%s); edit by hand"
                            % (number + 1, parent, key, raw_value))
    if raw_value and raw_value[0] in "'\"" and (len(raw_value) < 2 or raw_value[-1] != raw_value[0]):
        raise YamlEditError("line %d: %s.%s is a multi-line quoted value; edit by hand" % (number + 1, parent, key))
    following = next((x for x in lines[number + 1:end] if _is_content(x)), "")
    if following and len(following) - len(following.lstrip(" ")) > child_indent:
        what = "a nested value" if not raw_value else "a value continued on the next line"
        raise YamlEditError("line %d: %s.%s has %s; edit by hand" % (number + 1, parent, key, what))
    result["key_line"] = number
    result["value"] = raw_value
    result["comment"] = comment
    return result


def set_nested(text, parent, key, value):
    """Return *text* with ``parent.key`` set to the plain scalar *value*.

    Raises :class:`YamlEditError` for shapes it refuses (see the module docstring).
    *value* must be a plain YAML word (letters, digits, ``_``, ``-``, ``.``, ``/``).
    """
    reserved = ("true", "false", "yes", "no", "on", "off", "null", "~")
    if not re.match(r"^[A-Za-z0-9_./-]+$", value) or value.lower() in reserved:
        raise ValueError("refusing to write %r as a plain YAML scalar" % value)
    lines, bom, newline, trailing = _split(text or "")
    found = _locate(lines, parent, key)
    if found["parent_line"] is None:
        while lines and not lines[-1].strip():
            lines.pop()
        if lines:
            lines.append("")
        lines += ["%s:" % parent, "  %s: %s" % (key, value)]
        return bom + newline.join(lines) + newline
    if found["key_line"] is not None:
        number = found["key_line"]
        line = lines[number]
        match = _KEY_LINE.match(line)
        head = line[:match.end()].rstrip()
        comment = found["comment"]
        lines[number] = "%s %s%s" % (head, value, (" " + comment) if comment else "")
    else:
        start = found["parent_line"]
        indent = found["child_indent"] or 2
        if found["parent_value"] in ("~", "null", "Null", "NULL", "{}"):
            match = _KEY_LINE.match(lines[start])
            _value, comment = _strip_comment(lines[start][match.end():])
            lines[start] = lines[start][:match.end()].rstrip() + ((" " + comment) if comment else "")
        lines.insert(start + 1, "%s%s: %s" % (" " * indent, key, value))
    return bom + newline.join(lines) + (newline if trailing or lines else "")


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
