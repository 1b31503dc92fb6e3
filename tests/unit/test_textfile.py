# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`--textfile PATH`: the node_exporter textfile of sweep, watch and guard (its format
checked by the strict parser in tests/promtext.py)."""
import math
import os
import stat

import pytest
from promtext import parse, parse_value, series
from sandboxguard._core.text import escape, one_line
from sandboxguard_cli import textfile
from sandboxguard_cli.main import UsageError

STATE = {"last_success": 1700000000.5, "last_run": 1700000001.25, "findings": {"setid": 2, "caps": 0, "chown": 1},
         "errors": {"engine": 0, "file": 3, "warning": 1}, "engines": {"docker": 1, "podman": 0}, "dry_run": False}


def test_render_parses_back_with_help_and_type_for_every_family():
    families = parse(textfile.render("sweep", STATE))
    assert set(families) == {name for name, _kind, _help in textfile.FAMILIES}
    for name, kind, help_text in textfile.FAMILIES:
        assert families[name]["type"] == kind and families[name]["help"] == help_text
    cmd = ("command", "sweep")
    assert series(families, textfile.LAST_SUCCESS) == {frozenset([cmd]): 1700000000.5}
    assert series(families, textfile.LAST_RUN) == {frozenset([cmd]): 1700000001.25}
    assert series(families, textfile.FINDINGS) == {frozenset([cmd, ("kind", k)]): v for k, v in
                                                    STATE["findings"].items()}
    assert series(families, textfile.ERRORS) == {frozenset([cmd, ("kind", k)]): v for k, v in
                                                  STATE["errors"].items()}
    assert series(families, textfile.ENGINE_UP) == {frozenset([cmd, ("engine", "docker")]): 1,
                                                     frozenset([cmd, ("engine", "podman")]): 0}
    assert series(families, textfile.DRY_RUN) == {frozenset([cmd]): 0}


def test_never_succeeded_is_0_and_nothing_checked_has_no_findings():
    families = parse(textfile.render("sweep", dict(STATE, last_success=None, findings=None, engines={})))
    assert series(families, textfile.LAST_SUCCESS) == {frozenset([("command", "sweep")]): 0}
    assert textfile.FINDINGS not in families and textfile.ENGINE_UP not in families


@pytest.mark.parametrize("name", [
    'eng"ine', "back\\slash", "new\nline", "tab\there", "esc\x1b[31m", b"not-utf8-\xff".decode("utf-8",
                                                                                                "surrogateescape"),
    b"raw-\xfe\xff", "trailing\\", '"', "\\n literal", "unicode-\u00e9", "",
])
def test_label_values_are_escaped_and_parse_back_as_one_line(name):
    text = textfile.render("watch", dict(STATE, engines={name: 1}))
    families = parse(text)
    [(labels, value)] = families[textfile.ENGINE_UP]["samples"].items()
    got = dict(labels)["engine"]
    assert value == 1 and "\n" not in got.replace("\\n", "")
    expected = escape(name) if isinstance(name, bytes) else one_line(name)
    assert got == expected


@pytest.mark.parametrize(("value", "text"), [(0, "0"), (7, "7"), (True, "1"), (False, "0"), (1.5, "1.5"),
                                             (float("nan"), "NaN"), (float("inf"), "+Inf"),
                                             (-float("inf"), "-Inf"), (1796283426.019546, "1796283426.019546")])
def test_numbers_are_written_as_the_format_reads_them(value, text):
    assert textfile.number(value) == text
    parsed = parse_value(text)
    assert parsed == float(value) or (math.isnan(parsed) and math.isnan(value))


def test_the_three_commands_share_help_texts_so_one_directory_holds_them_all():
    texts = [textfile.render(command, STATE) for command in ("sweep", "watch", "guard")]
    helps = [{n: f["help"] for n, f in parse(t).items()} for t in texts]
    assert helps[0] == helps[1] == helps[2]


def test_add_errors_counts_every_error_counted_and_every_warning():
    errors = {"engine": 0, "file": 0, "warning": 0}
    report = {"errors": [{"path": "/a", "op": "chmod", "error": "EPERM"}], "counts": {"errors": 5},
              "warnings": ["sandbox /x was not swept completely"]}
    textfile.add_errors(errors, report)
    textfile.add_errors(errors, {"errors": [], "counts": {}, "warnings": []})
    assert errors == {"engine": 0, "file": 5, "warning": 1}


def test_findings_of_takes_the_kinds_and_device_only_when_counted():
    assert textfile.findings_of({"setid": 2, "caps": 1, "chown": 0, "dirs": 9}) == {"setid": 2, "caps": 1,
                                                                                    "chown": 0}
    assert textfile.findings_of({"setid": 0, "device": 3})["device"] == 3


# -- the file on disk -------------------------------------------------------------------

@pytest.fixture
def textdir(tmp_path):
    d = tmp_path / "node-exporter"
    d.mkdir()
    return d


def test_write_replaces_the_file_atomically_readable_by_node_exporter(textdir):
    path = textdir / "sandboxguard-sweep.prom"
    path.write_text("old\n")
    tf = textfile.Textfile(str(path), "sweep", clock=lambda: 1700000123.0)
    tf.state["findings"] = {"setid": 1, "caps": 0, "chown": 0}
    tf.succeeded()
    assert tf.write() is None
    assert sorted(os.listdir(textdir)) == ["sandboxguard-sweep.prom"]  # no temporary file left
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o644
    families = parse(path.read_text())
    assert series(families, textfile.LAST_SUCCESS) == {frozenset([("command", "sweep")]): 1700000123.0}


def test_a_failed_run_keeps_the_last_success_from_the_file(textdir):
    path = str(textdir / "sandboxguard-sweep.prom")
    first = textfile.Textfile(path, "sweep", clock=lambda: 1700000000.0)
    first.succeeded()
    assert first.write() is None
    second = textfile.Textfile(path, "sweep", clock=lambda: 1700009999.0)
    second.state["errors"]["engine"] = 1
    assert second.write() is None
    families = parse(open(path).read())
    assert series(families, textfile.LAST_SUCCESS) == {frozenset([("command", "sweep")]): 1700000000.0}
    assert series(families, textfile.LAST_RUN) == {frozenset([("command", "sweep")]): 1700009999.0}


def test_the_last_success_is_read_for_the_same_command_only():
    text = textfile.render("watch", dict(STATE, last_success=1234.5))
    assert textfile.previous_success(text, "watch") == 1234.5
    assert textfile.previous_success(text, "sweep") is None
    assert textfile.previous_success("garbage\n%s{command=\"sweep\"} NaN\n" % textfile.LAST_SUCCESS, "sweep") is None


def test_a_symlink_at_the_name_is_replaced_never_written_through(textdir, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    path = textdir / "sandboxguard-sweep.prom"
    os.symlink(victim, path)
    tf = textfile.Textfile(str(path), "sweep")
    assert tf.write() is None
    assert victim.read_text() == "keep\n" and not os.path.islink(path)
    parse(path.read_text())


@pytest.mark.parametrize("trusted", [False, True])
def test_a_symlink_in_the_directory_path_is_refused(textdir, tmp_path, monkeypatch, trusted):
    """Refused even where safefs would follow it (a chain of directories only root can change,
    such as /var/run -> /run): never a link in the textfile's path."""
    from sandboxguard._core import safefs

    if trusted:
        monkeypatch.setattr(safefs, "trusted_dir", lambda st, euid=None: True)
    link = tmp_path / "link"
    os.symlink(textdir, link)
    with pytest.raises(UsageError, match=r"--textfile .*symlink"):
        textfile.Textfile(str(link / "sandboxguard-sweep.prom"), "sweep")
    assert os.listdir(textdir) == []


def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_written_through(textdir, tmp_path):
    tf = textfile.Textfile(str(textdir / "sandboxguard-sweep.prom"), "sweep")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(textdir, tmp_path / "moved")
    os.symlink(elsewhere, textdir)
    error = tf.write()
    assert error is not None and "not written" in error and "symlink" in error
    assert os.listdir(elsewhere) == [] and os.listdir(tmp_path / "moved") == []


@pytest.mark.parametrize(("path", "words"), [
    ("relative/x.prom", "absolute path"), ("/tmp/sandboxguard.txt", "*.prom"), ("/tmp/.hidden.prom", "*.prom"),
    ("/tmp/.prom", "*.prom"), ("/nonexistent-dir-sg/x.prom", "does not exist"),
])
def test_bad_paths_are_usage_errors_naming_the_option(path, words):
    with pytest.raises(UsageError) as info:
        textfile.Textfile(path, "sweep")
    assert str(info.value).startswith("--textfile ") and words in str(info.value)


def test_a_directory_that_cannot_be_written_is_an_error_text_not_an_exception(textdir):
    tf = textfile.Textfile(str(textdir / "sandboxguard-sweep.prom"), "sweep")
    os.mkdir(textdir / "sandboxguard-sweep.prom")  # the name is now a directory: rename fails
    error = tf.write()
    assert error.startswith("--textfile %s: not written: " % (textdir / "sandboxguard-sweep.prom"))
    assert [n for n in os.listdir(textdir) if n != "sandboxguard-sweep.prom"] == []
