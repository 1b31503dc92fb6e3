# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Human output and log lines with names an agent picks (issue 19 item 5): one line per thing.

Every printer of the CLI, the guard's line and log, the leak lines and the library's
messages: a name holding a newline, an escape sequence, BEL or bytes that are not UTF-8
shows through text.escape, never raw; --json and the event lines are strict UTF-8 with
the names lossless (text.for_result).
"""
import base64
import io
import json
import os

from sandboxguard import leaks
from sandboxguard._core.text import escape, from_result
from sandboxguard._guard import guard as guardmod
from sandboxguard.roots import open_root
from sandboxguard_cli import output
from sandboxguard_cli.commands import bwrap_probe as bwrap_cli
from sandboxguard_cli.commands import fetch as fetch_cli
from sandboxguard_cli.commands import leaks as leaks_cli
from sandboxguard_cli.commands import sweep as sweep_cli

BAD = os.fsdecode(b"/srv/h/sandboxes/docker/t\xff/w/bad\xff\xfe")
FORGED = "/srv/h/two\nWARNING: forged line\x1b[2J\x07"
NAMES = [BAD, FORGED, "/srv/h/<script>]]>&amp;"]


def _clean(text):
    """No raw control character, no lone surrogate: what a terminal or a journal can take."""
    assert "\x1b" not in text and "\x07" not in text, text
    text.encode("utf-8")


def _printed(printer, report):
    out = io.StringIO()
    printer(report, out)
    text = out.getvalue()
    _clean(text)
    return text


def test_guard_line_and_log_are_one_line_each():
    for path in NAMES:
        record = guardmod.file_record({"path": path, "actions": ["setuid"], "mode_before": "04755",
                                       "mode_after": "0755", "caps_before": "cap\n\x1b", "error": "E\nX"}, 3.0,
                                      "event")
        line = guardmod.human_line(record)
        assert "\n" not in line and escape(path) in line
        _clean(line)
    logged = []
    guard = guardmod.Guard(lambda: ([], []), lambda record: None, logged.append)
    guard.log("root %s gone" % FORGED)
    assert logged == ["root /srv/h/two\\nWARNING: forged line\\x1b[2J\\x07 gone"]


def test_json_output_is_strict_utf8_with_every_name_lossless():
    out = io.StringIO()
    output.emit({"roots": [BAD], "files": [{"path": p} for p in NAMES], "warnings": []}, True, None, out=out)
    text = out.getvalue()
    text.encode("ascii")
    assert "\\udc" not in text.lower()
    doc = json.loads(text)
    assert [f["path"] for f in from_result(doc)["files"]] == NAMES
    assert base64.b64decode(doc["roots_b64"][0]) == os.fsencode(BAD)
    line = io.StringIO()
    output.json_line({"event": "die", "swept": NAMES}, out=line)
    assert line.getvalue().count("\n") == 1 and from_result(json.loads(line.getvalue()))["swept"] == NAMES


def test_warning_lines_are_one_line_each():
    err = io.StringIO()
    output.emit({"warnings": ["sandbox %s: skipped" % FORGED, "x %s" % BAD], "complete": True}, False,
                lambda report, out: None, err=err)
    lines = err.getvalue().splitlines()
    assert len(lines) == 2 and all(line.startswith("WARNING: ") for line in lines)
    _clean(err.getvalue())


def test_sweep_printer_escapes_every_name():
    result = {"engine": {"reason": "engine\nsays"}, "changed": False, "warnings": [],
              "root_sources": [{"realpath": BAD, "source": "profile p\n of x"}],
              "refused_roots": [{"path": FORGED, "reason": "goes through a symlink (a -> b\n)"}],
              "containers": [{"name": "c1", "id": "0123", "mounts": [
                  {"in_scope": True, "source": FORGED, "destination": "/w\n", "reason": "bind below %s" % BAD}]}],
              "sandboxes": [{"path": BAD, "method": "native", "steps": [
                  {"step": "chown", "ran": False, "skipped": "no\nowner", "error": None}]}]}
    text = _printed(sweep_cli.print_human, result)
    assert len(text.splitlines()) == 6
    assert escape(BAD) in text and escape(FORGED) in text


def test_leak_lines_and_printer_escape_paths_entries_and_errors():
    report = {"leaks": 2, "complete": False, "baseline": None,
              "findings": [{"kind": "cron_job", "path": BAD, "reason": "job: %s" % escape(FORGED)},
                           {"kind": "hermes_script", "path": FORGED, "reason": "script"}],
              "errors": [{"path": FORGED, "op": "read", "error": "EIO\nx"}]}
    lines = leaks.finding_lines(report)
    assert lines == ["cron_job %s: job: %s" % (escape(BAD), escape(FORGED)),
                     "hermes_script %s: script" % escape(FORGED)]
    text = _printed(leaks_cli.print_human, report)
    assert len(text.splitlines()) == 4


def test_fetch_printer_escapes_the_names_from_the_sandbox():
    fetched = {"fetched": True, "src": FORGED, "dest": BAD, "size": 1, "sha256": "00", "mode": "0644",
               "changed": True, "remote_mode": "04755", "bytes_received": 1, "elapsed": 0.1}
    assert len(_printed(fetch_cli._print_human, fetched).splitlines()) == 3
    refused = {"fetched": False, "src": FORGED, "stage": "pass2", "refused_code": "denylisted",
               "refused": "resolved to %s: no" % BAD, "bytes_received": 0, "elapsed": 0.1}
    assert len(_printed(fetch_cli._print_human, refused).splitlines()) == 2


def test_bwrap_printer_escapes_paths_and_messages():
    report = {"ok": False, "reason": "version", "message": "too\nold", "remediation": "install",
              "remediation_text": "apt\x1b", "min_version": "0.9.0", "user": None,
              "bwrap": {"path": FORGED, "version": "0.8\n", "setuid": False}, "prlimit": {"path": BAD},
              "userns": {"max_user_namespaces": 1, "unprivileged_userns_clone": None, "apparmor_restrict": None},
              "isolation": [{"name": "user_namespace", "status": "fail", "detail": "no\nway"}],
              "errors": [{"path": BAD, "error": "E\nX"}]}
    text = _printed(bwrap_cli._print_human, report)
    assert len(text.splitlines()) == 8 and escape(FORGED) in text


def test_scope_reasons_and_root_sources_escape_agent_names(tmp_path):
    from sandboxguard._fleet import audit
    from sandboxguard._privileged import sandboxes, scope

    home = os.path.join(os.fsencode(str(tmp_path)), b"h\nforged\xff")
    os.makedirs(os.path.join(home, b"profiles", b"work"))
    _names, sources = audit.agent_accounts([os.fsdecode(home)])
    whys = [why for found in sources.values() for why in found]
    assert all("\n" not in why for why in whys) and [why for why in whys if "h\\nforged\\xff" in why], whys
    found = scope.derive(scope.Request([os.fsdecode(home)]))
    assert [r["source"] for r in found["roots"]][-1] == "profile work of %s" % escape(os.fsdecode(home))
    assert all("\n" not in r["source"] for r in found["roots"])
    roots = [{"path": "/srv/h/sandboxes/docker", "realpath": "/srv/h/sandboxes/docker", "source": "x"}]
    for real, kind in ((FORGED, "missing"), ("/srv/h/sandboxes/docker/" + BAD, "dir"), (BAD, "dir")):
        decision = sandboxes.mount_scope({"Type": "bind", "Source": real, "Destination": "/w"}, roots,
                                         lambda path: path, lambda path, kind=kind: kind)
        assert "\n" not in decision["reason"] and decision["source"] == real, decision
        decision["reason"].encode("utf-8")


def test_every_line_the_guard_logs_escapes_the_names_in_it(tmp_path):
    """The guard's own log lines (a refused root, a root it cannot watch, a root gone, a sweep
    and its per-file errors, nothing to guard), built by its real code from roots whose names
    hold a newline, an escape sequence and a backslash: each line is one printable line with
    the name as text.escape shows it, never raw and never merely squashed by one_line."""
    hostile = tmp_path / "t\nWARNING: forged\x1b[2J\\n"
    hostile.mkdir()
    missing = str(tmp_path / "later\nFORGED")
    logged = []
    wanted = [[(str(hostile), "hermes"), (missing, "hermes")]]

    def held_roots():  # what guard_scope.roots_source gives: the descriptors proven, the absent paths
        held = [(open_root(path), source) for path, source in wanted[0] if os.path.isdir(path)]
        absent = [path for path, _source in wanted[0] if not os.path.isdir(path)]
        return held, [{"path": FORGED, "reason": "goes through a symlink"}], absent

    guard = guardmod.Guard(held_roots, lambda record: None, logged.append)
    guard.rootset.refresh(-1)  # no fanotify fd: the mark fails and the guard says so
    [root] = guard.rootset.roots.values()
    guard.pool._finish({"kind": "sweep", "paths": [root.path], "reason": "start", "read_at": None,
                        "started": 0.0, "chunks": [json.dumps({
                            "counts": {"files": 1, "setid": 0, "caps": 0, "errors": 1}, "complete": True,
                            "files": [], "errors": [{"path": root.path + "/x\ny", "error": "EPERM"}]}).encode()]})
    hostile.rmdir()
    guard.rootset.refresh(-1)
    wanted[0] = [(missing, "hermes")]
    guard.start_sweep([], "nothing")
    guard.log("nothing to guard yet (%s)" % guardmod.names(p for p, _s in wanted[0]))
    guard.close()
    assert len(logged) >= 6, logged
    for line in logged:
        _clean(line)
        assert "\n" not in line and "\x1b" not in line, line
    text = "\n".join(logged)
    for name in (str(hostile), FORGED, root.path + "/x\ny", missing):
        assert escape(name) in text, (name, logged)
    assert str(hostile).replace("\n", "\\n").replace("\x1b", "\\x1b") not in text  # the backslash is escaped too
