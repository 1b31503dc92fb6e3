# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""A strict parser of Prometheus' text exposition format (version 0.0.4, what node_exporter's
textfile collector reads), for the tests of ``--textfile``: HELP and TYPE once per family
and before its samples, a family's samples together, metric and label names by the
format's grammar, label values with only the three escapes it knows, no duplicate series,
no timestamps (node_exporter refuses them in a textfile), values as Go's ParseFloat reads
them. Standard library only (the unit tests run on every target Python with pytest alone).
"""
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


def _label_value(text, i):
    """(value, index after the closing quote) of a quoted label value starting at text[i] == '"'."""
    assert text[i] == '"', text
    out = []
    i += 1
    while True:
        char = text[i]
        if char == '"':
            return "".join(out), i + 1
        if char == "\\":
            nxt = text[i + 1]
            assert nxt in '\\"n', "bad escape \\%s in %r" % (nxt, text)
            out.append({"\\": "\\", '"': '"', "n": "\n"}[nxt])
            i += 2
            continue
        assert char != "\n"
        out.append(char)
        i += 1


def parse_value(text):
    if text in ("NaN", "+Inf", "-Inf"):
        return float(text.replace("+", ""))
    assert re.fullmatch(r"[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?", text), text
    return float(text)


def parse(text):
    """{family: {"help", "type", "samples": {((label, value), ...): float}}}, strictly."""
    assert text.endswith("\n") and "\r" not in text
    families, current, seen = {}, None, set()
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            word, rest = line[2:6], line[7:]
            name, _, value = rest.partition(" ")
            assert NAME.fullmatch(name), line
            family = families.setdefault(name, {"help": None, "type": None, "samples": {}})
            assert family[word.lower()] is None, "second %s for %s" % (word, name)
            assert not family["samples"], "%s after samples of %s" % (word, name)
            if word == "TYPE":
                assert value in TYPES, line
            else:
                assert "\\" not in value.replace("\\\\", "").replace("\\n", ""), line
            family[word.lower()] = value
            assert name not in seen or current == name, "%s interleaved with another family" % name
            current = name
            seen.add(name)
            continue
        assert not line.startswith("#") and line.strip() == line and line, repr(line)
        match = NAME.match(line)
        name = match.group(0)
        i = match.end()
        labels = []
        if line[i] == "{":
            i += 1
            while line[i] != "}":
                label = LABEL.match(line, i)
                assert label, line
                i = label.end()
                assert line[i] == "=", line
                value, i = _label_value(line, i + 1)
                labels.append((label.group(0), value))
                if line[i] == ",":
                    i += 1
            i += 1
        assert line[i] == " ", line
        fields = line[i + 1:].split(" ")
        assert len(fields) == 1, "no timestamps in a textfile: %r" % line  # node_exporter refuses them
        family = families.get(name)
        assert family is not None and family["type"] is not None, "sample before TYPE: %r" % line
        assert current == name, "samples of %s not together" % name
        key = tuple(labels)
        assert len({k for k, _v in labels}) == len(labels), line
        assert key not in family["samples"], "duplicate series %r" % line
        family["samples"][key] = parse_value(fields[0])
    for name, family in families.items():
        assert family["type"] == "counter" or not name.endswith("_total") or family["type"] == "untyped", name
    return families


def series(families, name):
    """{frozenset of labels: value} of one family."""
    return {frozenset(k): v for k, v in families[name]["samples"].items()}
