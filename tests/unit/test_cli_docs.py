# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The man page and the bash/zsh completions of `sandboxguard` (tools/cli_docs.py): generated
from the CLI's argparse parser, committed, rendered by man without a warning, and the bash
completion completes commands, options and their values in a real bash."""
import argparse
import os
import shutil
import subprocess

import pytest
import repo_scan as scan

TOP = scan.TOP


cli_docs = scan.tool("cli_docs")


def need(program, package):
    path = shutil.which(program)
    if path is None:  # tools/setup.sh installs it: its absence is a broken setup, not a skip
        pytest.fail("%s is missing: apt-get install %s (tools/apt-packages.txt lists it)" % (program, package),
                    pytrace=False)
    return path


def test_the_committed_files_are_what_the_parser_makes():
    for path, text in cli_docs.generated().items():
        with open(path, encoding="utf-8") as handle:
            assert handle.read() == text, "%s is stale: run python3 tools/cli_docs.py" % os.path.relpath(path, TOP)
    assert cli_docs.main(["--check"]) == 0


def test_check_names_a_stale_file(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "sandboxguard.1"
    stale.write_text("old\n")
    texts = cli_docs.generated()
    monkeypatch.setattr(cli_docs, "generated", lambda: {str(stale): texts[cli_docs.MAN]})
    assert cli_docs.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "out of date" in err and os.path.relpath(str(stale), cli_docs.TOP) in err


def _extended_parser():
    """The real parser with one more command and options, as a new release would add."""
    parser = cli_docs.load_parser()
    sub = cli_docs._subparsers(parser)
    extra = sub.add_parser("zz-new", help="a command added later", description="Does the new thing.")
    extra.add_argument("--zz-level", choices=["low", "high"], default="low", help="how much (default %(default)s)")
    extra.add_argument("--zz-dir", metavar="DIR", help="where")
    extra.add_argument("paths", nargs="*", metavar="PATH")
    return parser


def test_every_command_and_option_of_the_parser_appears_in_all_three_one_added_later_too():
    parser = _extended_parser()
    page, bash = cli_docs.man_page(parser, "9.9"), cli_docs.bash_completion(parser, "9.9")
    for words, child, _help in cli_docs.commands(parser):
        assert '.SS "sandboxguard %s"' % cli_docs.roff(" ".join(words)) in page, words
        for strings, _metavar, _choices, _text in cli_docs.options(child):
            for option in strings:
                assert "\\fB%s\\fR" % cli_docs.roff(option) in page and option in bash, (words, option)
    assert "how much (default low)" in page  # %(default)s expanded as --help does
    zsh = cli_docs.zsh_completion(parser, "9.9")
    assert "_sandboxguard_zz_new()" in zsh and "--zz-level" in zsh and "(low high)" in zsh


def _render(path, tmp_path):
    man = need("man", "man-db")
    env = dict(os.environ, MANWIDTH="80", LANG="C.UTF-8", HOME=str(tmp_path))
    proc = subprocess.run([man, "--warnings", "-E", "UTF-8", "-l", path], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    groff = subprocess.run([need("groff", "groff-base"), "-man", "-ww", "-z", path], capture_output=True, text=True,
                           timeout=60, check=False)
    return proc, groff


def test_man_renders_the_page_without_a_warning(tmp_path):
    proc, groff = _render(cli_docs.MAN, tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert groff.returncode == 0 and groff.stderr == "", groff.stderr
    out = proc.stdout
    assert out.startswith("SANDBOXGUARD(1)") and "EXIT STATUS" in out and "sandboxguard sweep" in out
    assert "--textfile PATH" in out and "--github-runner" in out  # options whole, never broken at a hyphen


def test_the_render_check_sees_a_broken_page(tmp_path):
    with open(cli_docs.MAN, encoding="utf-8") as handle:
        broken = handle.read() + ".XX not a macro\n"
    path = tmp_path / "broken.1"
    path.write_text(broken)
    proc, groff = _render(str(path), tmp_path)
    assert proc.stderr or groff.stderr


def bash_complete(*words, script=None):
    """What the bash completion offers for ``words`` (the last one being completed), in bash."""
    bash = need("bash", "bash")
    script = script or cli_docs.BASH
    driver = ('source "$1"; shift; complete -p sandboxguard >&2; COMP_WORDS=("$@"); '
              "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _sandboxguard; printf '%s\\n' \"${COMPREPLY[@]}\"")
    proc = subprocess.run([bash, "--norc", "--noprofile", "-c", driver, "bash", script, "sandboxguard", *words],
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "complete -F _sandboxguard sandboxguard"
    return [line for line in proc.stdout.splitlines() if line]


@pytest.mark.parametrize(("words", "expected"), [
    (("sw",), ["sweep"]),
    (("st",), ["strip"]),
    (("sec",), ["seccomp-probe", "seccomp-profile"]),
    (("r",), ["report", "runner-cleanup"]),
    (("cron",), ["crontab"]),
    (("report", ""), ["merge"]),
    (("sweep", "--dry"), ["--dry-run"]),
    (("sweep", "--method", ""), ["native", "container"]),
    (("strip", "--caps-method", "c"), ["chown"]),
    (("guard", "--text"), ["--textfile", "--textfile-interval"]),
    (("watch", "--text"), ["--textfile", "--textfile-interval"]),
    (("sweep", "--text"), ["--textfile"]),
    (("crontab", "-"), ["--table", "--install-shim", "--python", "--help", "-u", "-n", "-l", "-r", "-e", "-i"]),
    (("--vers",), ["--version"]),
])
def test_bash_completes_commands_options_and_choices(words, expected):
    assert bash_complete(*words) == expected


def test_bash_completes_directories_for_dir_options_and_paths(tmp_path):
    (tmp_path / "sandboxes").mkdir()
    (tmp_path / "sandboxes.txt").write_text("")
    prefix = str(tmp_path / "sand")
    assert bash_complete("sweep", "--hermes-home", prefix) == [str(tmp_path / "sandboxes")]
    assert bash_complete("scan", prefix) == [str(tmp_path / "sandboxes")]
    assert sorted(bash_complete("leaks", "--baseline", prefix)) == [str(tmp_path / "sandboxes"),
                                                                     str(tmp_path / "sandboxes.txt")]
    assert bash_complete("sweep", "--owner", "") == []  # a value with no list: nothing guessed


def test_bash_completion_of_a_parser_with_a_new_command(tmp_path):
    script = tmp_path / "sandboxguard"
    script.write_text(cli_docs.bash_completion(_extended_parser(), "9.9"))
    assert bash_complete("zz", script=str(script)) == ["zz-new"]
    assert bash_complete("zz-new", "--zz-level", "h", script=str(script)) == ["high"]


def test_zsh_completion_parses_and_defines_a_function_per_command():
    zsh = need("zsh", "zsh")
    proc = subprocess.run([zsh, "-n", cli_docs.ZSH], capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    script = ("fpath=(%s $fpath); autoload -Uz compinit; compinit -u -D; autoload +X _sandboxguard; "
              "_sandboxguard_defined() { print -l ${(k)functions[(I)_sandboxguard*]} }; "
              "(( $+functions[_sandboxguard] )) && print ok" % os.path.dirname(cli_docs.ZSH))
    proc = subprocess.run([zsh, "-f", "-c", script], capture_output=True, text=True, timeout=30, check=False,
                          env=dict(os.environ, HOME="/nonexistent"))
    assert proc.stdout.strip().endswith("ok"), proc.stderr
    with open(cli_docs.ZSH, encoding="utf-8") as handle:
        text = handle.read()
    assert text.startswith("#compdef sandboxguard\n")
    for words, _child, _help in cli_docs.commands(cli_docs.load_parser()):
        assert "_sandboxguard_%s()" % "_".join(w.replace("-", "_") for w in words) in text


def test_help_exits_0_for_every_command():
    parser = cli_docs.load_parser()
    from sandboxguard_cli import main

    for words, _child, _help in cli_docs.commands(parser):
        try:
            code = main.main([*words, "--help"])  # crontab's help is the command's own: it returns
        except SystemExit as exc:  # argparse's --help exits
            code = exc.code
        assert code in (0, None), words


def test_the_tool_needs_no_runtime_dependency():
    assert isinstance(cli_docs.load_parser(), argparse.ArgumentParser)
    with open(os.path.join(TOP, "python", "pyproject.toml"), encoding="utf-8") as handle:
        assert "dependencies = []" in handle.read()


@pytest.mark.parametrize(("text", "expected"), [
    (".starts with a dot", "\\&.starts with a dot"), ("'quote first", "\\&'quote first"),
    ("a\\b", "a\\eb"), ("use --dry-run, -n or -", "use \\-\\-dry\\-run, \\-n or \\-"),
    ("sandboxguard-sweep.timer", "sandboxguard-sweep.timer"), ("two\n  lines", "two lines"),
])
def test_roff_escapes_what_roff_would_read_as_markup(text, expected):
    assert cli_docs.roff(text) == expected
