# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The fleet audit as JUnit XML (boundary-audit.xml): a testsuite per host, a testcase per check.

A check with findings is a ``failure``; one in error an ``error`` (type ``unreachable`` for a
host that returned nothing); one not checked (selected, it covered nothing) an ``error`` of
type ``not_checked`` - CI shows it red, never passed; one not selected ``skipped`` (a host where
no check was selected gets a testcase ``audit`` in error: it was not audited). Each
suite has the host's ``status`` as a property and its warnings (container engine discovery
off or failed) as ``warning`` properties and in ``system-err``. Names from a host are
text.escape-d, messages text.one_line-d, and XML 1.0 gets no control character.
"""
import re
import xml.etree.ElementTree as ET

from .._core.text import from_result, one_line
from .audit_record import CHECKS, ERROR, FINDINGS, NOT_AUDITED, NOT_CHECKED, SKIPPED, UNREACHABLE
from .audit_text import finding_line, name

TITLE = "sandboxguard boundary audit"
FAILURE_MAX_PATHS = 20
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text):
    """Text XML 1.0 can carry: control characters become \\xNN (the last guard: names are
    text.escape-d and messages text.one_line-d before they get here)."""
    return _XML_BAD.sub(lambda m: "\\x%02x" % ord(m.group()) if ord(m.group()) < 0x100 else "\\u%04x" % ord(m.group()),
                        str(text))


def _checks_of(record):
    """CHECKS first, then any other check the record carries (a report of a newer audit)."""
    return list(CHECKS) + [c for c in record["checks"] if c not in CHECKS]


def _case(suite, host, record, check_name, counts):
    result = record["checks"].get(check_name) or {"status": ERROR, "findings": [], "reason": "no result"}
    case = ET.SubElement(suite, "testcase", name=check_name, classname=_xml_text("boundary_audit.%s" % name(host)),
                         time="%.3f" % float(result.get("elapsed") or 0))
    counts["tests"] += 1
    status = result["status"]
    if status == FINDINGS:
        findings = result.get("findings") or []
        paths = [name(f.get("path", "")) for f in findings[:FAILURE_MAX_PATHS]]
        more = len(findings) - len(paths)
        message = "%d finding(s): %s%s" % (len(findings), ", ".join(paths), " and %d more" % more if more else "")
        failure = ET.SubElement(case, "failure", message=_xml_text(message), type=check_name)
        failure.text = _xml_text("\n".join(finding_line(check_name, f) for f in findings))
        counts["failures"] += 1
    elif status in (ERROR, NOT_CHECKED):
        reason = one_line(result.get("reason") or "the check could not run")
        kind = "unreachable" if record["status"] == UNREACHABLE else status
        if status == NOT_CHECKED:
            reason = "not checked: " + reason
        error = ET.SubElement(case, "error", message=_xml_text(reason), type=kind)
        error.text = _xml_text("\n".join("%s: %s: %s" % (name(e.get("path")), one_line(e.get("op")),
                                                         one_line(e.get("error")))
                                         for e in result.get("errors") or ()) or reason)
        counts["errors"] += 1
    elif status == SKIPPED:
        ET.SubElement(case, "skipped", message=_xml_text(one_line(result.get("reason") or "skipped")))
        counts["skipped"] += 1


def to_junit(report):
    """JUnit XML: a testsuite per host, a testcase per check."""
    report = from_result(report)
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    root = ET.Element("testsuites", name=TITLE)
    for host, record in report["hosts"].items():
        suite = ET.SubElement(root, "testsuite", name=_xml_text(name(host)), timestamp=report["generated"])
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="status", value=record["status"])
        warnings = [one_line(w) for w in record.get("warnings") or ()]
        for line in warnings:
            ET.SubElement(props, "property", name="warning", value=_xml_text(line))
        for check_name in _checks_of(record):
            _case(suite, host, record, check_name, counts)
        if record["status"] == NOT_AUDITED and not any(
                c.get("status") == NOT_CHECKED for c in record["checks"].values()):
            # no check was selected: nothing above fails, so the host's own case says it was not audited
            case = ET.SubElement(suite, "testcase", name="audit", classname=_xml_text("boundary_audit.%s" % name(host)),
                                 time="0.000")
            reason = one_line(record.get("reason") or "no check selected")
            ET.SubElement(case, "error", message=_xml_text("not audited: " + reason), type=NOT_CHECKED).text = \
                _xml_text(reason)
            counts["tests"] += 1
            counts["errors"] += 1
        if warnings:
            ET.SubElement(suite, "system-err").text = _xml_text("\n".join("warning: " + w for w in warnings))
        for key, value in counts.items():
            suite.set(key, str(value))
            total[key] += value
    for key, value in total.items():
        root.set(key, str(value))
    if hasattr(ET, "indent"):  # Python 3.9+
        ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
