#!/usr/bin/env python3
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Write the man page and the bash and zsh completions of `sandboxguard` from its argparse parser.

    python3 tools/cli_docs.py           # (re)write the three files under python/share/
    python3 tools/cli_docs.py --check   # exit 1 naming each file that differs from what the parser makes

The files are generated here, at build time, and committed; the CLI carries no code for
them at run time. Where they go:

- ``python/share/man/man1/sandboxguard.1`` (roff, man-pages style: NAME, SYNOPSIS,
  DESCRIPTION, one subsection per command with its usage and options, EXIT STATUS,
  ENVIRONMENT, SEE ALSO);
- ``python/share/bash-completion/completions/sandboxguard`` (plain bash: ``complete -F``,
  no bash-completion helper needed; bash-completion loads it by the command's name);
- ``python/share/zsh/site-functions/_sandboxguard`` (``#compdef``, ``_arguments``).

``pip install ./python`` puts them under the environment's ``share/`` (the wheel's data
files: man-db finds ``<venv>/share/man`` from PATH); the sandbox_sweep role installs them
beside the CLI it installs (/usr/local/share/...). ``tests/unit/test_cli_docs.py`` runs
``--check``, renders the page with ``man -l`` and drives the bash completion.

Everything comes from the parser: commands, their help and description, options with their
metavars, choices and defaults. Two things the parser cannot say are added here: the
crontab shim's own options (its subparser hands every argument to the shim), and which
metavars name files or directories (completed as such).
"""
import argparse
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARE = os.path.join(TOP, "python", "share")
MAN = os.path.join(SHARE, "man", "man1", "sandboxguard.1")
BASH = os.path.join(SHARE, "bash-completion", "completions", "sandboxguard")
ZSH = os.path.join(SHARE, "zsh", "site-functions", "_sandboxguard")
PROG = "sandboxguard"
WIDTH = 1000  # usage lines on one line each; roff fills them

# metavars that name a directory or a file (completed as such)
DIR_METAVARS = {"DIR", "PATH"}
FILE_METAVARS = {"FILE", "PROFILE", "IN"}
# The crontab subparser hands every argument to the shim (prefix_chars="\0"): its options are
# the shim's own, as Debian's crontab takes them, and the CLI's --table/--install-shim/--help.
CRONTAB_OPTIONS = [("--table", "FILE", "the crontab table (default EVAL_CRONTAB_FILE, else {HERMES_HOME}/crontab)"),
                   ("--install-shim", "DIR", "write the shim as DIR/crontab"),
                   ("--python", "FILE", "with --install-shim: the interpreter the shim runs with"),
                   ("--help", None, "show this help and exit"),
                   ("-u", "USER", "choose the user whose crontab is touched (root only)"),
                   ("-n", None, "check the syntax of FILE only"), ("-l", None, "list the table"),
                   ("-r", None, "delete the table"), ("-e", None, "edit the table"),
                   ("-i", None, "ask before deleting")]
ENVIRONMENT = [
    ("HERMES_HOME", "the Hermes home when no --hermes-home is given (else ~/.hermes of the invoking user)"),
    ("TERMINAL_SANDBOX_DIR", "the agent's sandbox directory, default of --sandbox-dir"),
    ("DOCKER_HOST", "the engine asked first (sweep, watch, guard); every engine present is asked otherwise"),
    ("EVAL_CRONTAB_FILE", "the table of the crontab shim when no --table is given"),
]


def load_parser():
    """The CLI's parser with every command registered (sandboxguard_cli from this checkout)."""
    sys.path.insert(0, os.path.join(TOP, "python", "src"))
    from sandboxguard_cli import main  # noqa: PLC0415 - from the checkout, after the path is set

    return main.build_parser(["--help"])


def _subparsers(parser):
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def commands(parser, prefix=()):
    """[(words, parser, help)] for every command, nested ones (report merge) included, in order."""
    found = []
    sub = _subparsers(parser)
    if sub is None:
        return found
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, child in sub.choices.items():
        words = (*prefix, name)
        found.append((words, child, helps.get(name) or ""))
        found.extend(commands(child, words))
    return found


def options(parser):
    """[(option strings, metavar or None, choices or None, help)] of a parser's optional
    arguments, help with %(default)s expanded; argparse.SUPPRESS-ed ones left out."""
    formatter = parser._get_formatter()
    found = []
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        takes = action.nargs != 0
        metavar = None
        if takes:
            metavar = action.metavar or (None if action.choices else action.dest.upper())
        choices = list(action.choices) if action.choices else None
        text = formatter._expand_help(action) if action.help else ""
        found.append((list(action.option_strings), metavar, choices, text))
    return found


def positionals(parser):
    return [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


def usage(parser):
    """The usage lines without the ``usage: `` prefix, each on one line (a parser with its own
    multi-line usage, as crontab's, gives one line per form)."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        text = parser.format_usage().replace("usage:", "", 1)
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    forms = []
    for line in text.strip().splitlines():
        if line.strip().startswith(PROG + " ") or not forms:
            forms.append(line.strip())
        else:
            forms[-1] += " " + line.strip()
    return [" ".join(form.split()) for form in forms]


def synopsis(forms):
    """Roff for usage forms: the command words bold, the rest as argparse wrote it, filled."""
    lines = []
    for form in forms:
        words = form.split(" ")
        head = [w for w in words[:3] if re.fullmatch(r"[a-z][a-z-]*", w)]
        lines += [".PP", "\\fB%s\\fR %s" % (roff(" ".join(head)), roff(" ".join(words[len(head):])))]
    return lines


# -- roff ------------------------------------------------------------------------------------

def roff(text):
    """Text for a roff line: backslashes escaped, hyphens as minus signs where they start an
    option or stand alone, and a line never starting with a control character."""
    text = " ".join(str(text).split())
    text = text.replace("\\", "\\e")
    # an option or a dash standing alone: every hyphen a minus sign (\-), which groff neither
    # hyphenates nor breaks a line after, so --github-runner stays whole
    text = re.sub(r"(?<![\w-])-[\w-]*", lambda m: m.group(0).replace("-", "\\-"), text)
    if text[:1] in (".", "'"):
        text = "\\&" + text
    return text


def bold_options(text):
    """Options named in running text (already through roff) in bold."""
    return re.sub(r"((?:\\-){1,2}[a-zA-Z](?:[\w]|\\-)*)", r"\\fB\1\\fR", text)


def option_term(strings, metavar, choices):
    names = ", ".join("\\fB%s\\fR" % roff(s) for s in strings)
    if metavar:
        return "%s \\fI%s\\fR" % (names, roff(metavar))
    if choices:
        return "%s \\fI%s\\fR" % (names, roff("{%s}" % ",".join(str(c) for c in choices)))
    return names


def man_page(parser, version):
    cmds = commands(parser)
    lines = [
        '.\\" Copyright (c) sandboxguard contributors',
        '.\\" SPDX-' 'License-Identifier: Apache-2.0',  # split: REUSE reads the file's own header only
        '.\\" Generated by tools/cli_docs.py from the argparse parser of sandboxguard %s; do not edit.' % version,
        '.TH SANDBOXGUARD 1 "" "sandboxguard %s" "User Commands"' % version,
        ".SH NAME",
        "sandboxguard \\- %s" % roff(parser.description.rstrip(".").lower()[:1] + parser.description.rstrip(".")[1:]),
        ".SH SYNOPSIS",
        ".nh",
        ".ad l",
        ".PP",
        "\\fBsandboxguard\\fR [\\fB\\-\\-version\\fR] [\\fB\\-h\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]",
    ]
    for _words, child, _help in cmds:
        if _subparsers(child) is None:
            lines += synopsis(usage(child))
    lines += [".SH DESCRIPTION", roff(parser.description),
              "Each command below closes one of the holes an agent's container, bubblewrap or SSH sandbox leaves "
              "in the host around it. Names from the sandboxes are printed escaped, one line per finding, "
              "whatever bytes they hold; \\fB\\-\\-json\\fR prints one JSON envelope carrying "
              "\\fBschema_version\\fR.",
              ".SH OPTIONS"]
    for strings, metavar, choices, text in options(parser):
        lines += [".TP", option_term(strings, metavar, choices), roff(text)]
    lines.append(".SH COMMANDS")
    for words, child, help_text in cmds:
        lines += [".SS \"%s\"" % roff(" ".join((PROG, *words))), roff(help_text[:1].upper() + help_text[1:])
                  + ("." if help_text and not help_text.endswith(".") else "")]
        if child.description and child.description.strip() != help_text.strip():
            lines += [".PP", bold_options(roff(child.description))]
        if _subparsers(child) is not None:
            continue
        lines += synopsis(usage(child))
        if words == ("crontab",):
            for name, metavar, text in CRONTAB_OPTIONS:
                lines += [".TP", option_term([name], metavar, None), roff(text)]
            if child.epilog:
                lines += [".PP", bold_options(roff(child.epilog))]
            continue
        for action in positionals(child):
            lines += [".TP", "\\fI%s\\fR" % roff(action.metavar or action.dest.upper()),
                      roff(child._get_formatter()._expand_help(action) if action.help else "")]
        for strings, metavar, choices, text in options(child):
            lines += [".TP", option_term(strings, metavar, choices), roff(text)]
        if child.epilog:
            lines += [".PP", bold_options(roff(child.epilog))]
    lines += [
        ".SH EXIT STATUS",
        ".TP", "\\fB0\\fR", "Clean, or everything found was fixed.",
        ".TP", "\\fB1\\fR",
        "Findings remain: a scan or a dry run found something, a strip or sweep stopped early or met per-file "
        "errors or warnings, a probe failed, an engine did not answer.",
        ".TP", "\\fB2\\fR",
        "Usage or bad input: a bad option, a path that does not exist or is refused (\\fB/\\fR, system paths, "
        "symlinks). The error is one line on standard error naming the path or option and the fix.",
        ".PP",
        "\\fBcrontab\\fR answers with Debian crontab's own codes and messages; \\fBhome\\-env\\fR \\fICMD\\fR "
        "with the command's status, as \\fBenv\\fR(1) does.",
        ".SH ENVIRONMENT",
    ]
    for name, text in ENVIRONMENT:
        lines += [".TP", "\\fB%s\\fR" % name, roff(text)]
    lines += [
        ".SH FILES",
        ".TP", "\\fI/var/lib/prometheus/node\\-exporter/sandboxguard\\-*.prom\\fR",
        "The node_exporter textfiles \\fBsweep\\fR, \\fBwatch\\fR and \\fBguard\\fR write with "
        "\\fB\\-\\-textfile\\fR (the sandbox_sweep role's default where that directory exists).",
        ".SH SEE ALSO",
        "\\fBcrontab\\fR(1), \\fBbwrap\\fR(1), \\fBsetcap\\fR(8), \\fBgetcap\\fR(8), \\fBansible\\-doc\\fR(1) "
        "(\\fBansible\\-doc sandboxguard.boundary.setid_strip\\fR and the collection's other modules)",
    ]
    return "\n".join(lines) + "\n"


# -- bash --------------------------------------------------------------------------------------

def _value_kind(metavar, choices):
    if choices:
        return "choices", [str(c) for c in choices]
    base = (metavar or "").split("[")[0].split(":")[0]
    if base in DIR_METAVARS:
        return "dirs", None
    if base in FILE_METAVARS:
        return "files", None
    return "any", None


def completion_table(parser):
    """{command words joined by spaces: (options, {option: (kind, choices)}, positional kind)};
    "" is the top level (its words are the commands)."""
    table = {}
    top_opts = [s for strings, _m, _c, _t in options(parser) for s in strings]
    table[""] = (top_opts, {}, None)
    for words, child, _help in commands(parser):
        key = " ".join(words)
        if words == ("crontab",):
            opts = [name for name, _m, _t in CRONTAB_OPTIONS]
            values = {name: _value_kind(m, None) for name, m, _t in CRONTAB_OPTIONS if m}
            table[key] = (opts, values, "files")
            continue
        opts, values = [], {}
        for strings, metavar, choices, _text in options(child):
            opts.extend(strings)
            if metavar or choices:
                for name in strings:
                    values[name] = _value_kind(metavar, choices)
        pos = positionals(child)
        kind = _value_kind(pos[0].metavar or pos[0].dest.upper(), pos[0].choices)[0] if pos else None
        table[key] = (opts, values, kind)
    return table


def _sh_words(items):
    return " ".join(items)


def bash_completion(parser, version):
    table = completion_table(parser)
    subs = {}
    for words, child, _help in commands(parser):
        sub = _subparsers(child)
        if sub is not None:
            subs[" ".join(words)] = list(sub.choices)
    top_commands = list(_subparsers(parser).choices)
    out = [
        "# bash completion for sandboxguard %s" % version,
        "# Copyright (c) sandboxguard contributors",
        "# SPDX-" "License-Identifier: Apache-2.0",  # split: REUSE reads the file's own header only
        "# Generated by tools/cli_docs.py from the CLI's argparse parser; do not edit.",
        "# Plain bash (no bash-completion helper needed): source it, or let bash-completion load it by name.",
        "_sandboxguard_compgen() {",
        "    # $1: words, dirs or files; $2: the words; $3: the current word",
        '    case "$1" in',
        '        dirs) COMPREPLY=($(compgen -d -- "$3")) ;;',
        '        files) COMPREPLY=($(compgen -f -- "$3")) ;;',
        '        words) COMPREPLY=($(compgen -W "$2" -- "$3")) ;;',
        "        *) COMPREPLY=() ;;",
        "    esac",
        "}",
        "",
        "_sandboxguard() {",
        '    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} key="" i word',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        word=${COMP_WORDS[i]}',
        '        case "$word" in -*) continue ;; esac',
        '        case "$key" in',
        '            "") case " %s " in *" $word "*) key=$word ;; esac ;;' % _sh_words(top_commands),
    ]
    for parent, names in sorted(subs.items()):
        out.append('            %s) case " %s " in *" $word "*) key="$key $word" ;; esac ;;'
                   % (_case_word(parent), _sh_words(names)))
    out += [
        "        esac",
        "    done",
        "    local opts='' more=''",
        '    case "$key" in',
    ]
    for key, (opts, values, _pos) in table.items():
        if key in subs:
            more = subs[key]
        else:
            more = []
        if key == "":
            more = top_commands
        out.append("        %s)" % ('""' if key == "" else _case_word(key)))
        value_cases = {}
        for name, (kind, choices) in values.items():
            value_cases.setdefault((kind, tuple(choices or ())), []).append(name)
        if value_cases:
            out.append('            case "$prev" in')
            for (kind, choices), names in sorted(value_cases.items()):
                action = ('_sandboxguard_compgen words "%s" "$cur"' % _sh_words(choices) if kind == "choices"
                          else '_sandboxguard_compgen %s "" "$cur"' % kind if kind in ("dirs", "files")
                          else "COMPREPLY=()")
                out.append("                %s) %s; return ;;" % ("|".join(names), action))
            out.append("            esac")
        out.append("            opts='%s'" % _sh_words(opts))
        out.append("            more='%s'" % _sh_words(more))
        pos = table[key][2]
        out.append('            if [[ $cur != -* && -z $more ]]; then _sandboxguard_compgen %s "" "$cur"; return; fi'
                   % (pos if pos in ("dirs", "files") else "none"))
        out.append("            ;;")
    out += [
        "    esac",
        '    if [[ $cur == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        "    else",
        '        COMPREPLY=($(compgen -W "$more" -- "$cur"))',
        "    fi",
        "}",
        "complete -F _sandboxguard sandboxguard",
    ]
    return "\n".join(out) + "\n"


def _case_word(key):
    return '"%s"' % key


# -- zsh ---------------------------------------------------------------------------------------

def _zsh_text(text):
    text = " ".join(text.split())
    for char in "\\[]:'":
        text = text.replace(char, "\\" + char if char != "'" else "'\\''")
    return text


def _zsh_spec(strings, metavar, choices, text):
    desc = _zsh_text(text)[:200]
    kind, values = _value_kind(metavar, choices)
    if not metavar and not choices:
        action = ""
    elif kind == "choices":
        action = ":%s:(%s)" % (_zsh_text(metavar or "value").lower(), " ".join(values))
    elif kind == "dirs":
        action = ":%s:_files -/" % _zsh_text(metavar).lower()
    elif kind == "files":
        action = ":%s:_files" % _zsh_text(metavar).lower()
    else:
        action = ":%s: " % _zsh_text(metavar).lower()
    if len(strings) > 1:
        return "'(%s)'{%s}'[%s]%s'" % (" ".join(strings), ",".join(strings), desc, action)
    repeat = "*" if metavar and "repeatable" in text else ""
    return "'%s%s[%s]%s'" % (repeat, strings[0], desc, action)


def zsh_completion(parser, version):
    out = [
        "#compdef sandboxguard",
        "# zsh completion for sandboxguard %s" % version,
        "# Copyright (c) sandboxguard contributors",
        "# SPDX-" "License-Identifier: Apache-2.0",  # split: REUSE reads the file's own header only
        "# Generated by tools/cli_docs.py from the CLI's argparse parser; do not edit.",
        "",
    ]
    cmds = commands(parser)
    funcs = []
    for words, child, _help in cmds:
        name = "_sandboxguard_" + "_".join(w.replace("-", "_") for w in words)
        body = ["%s() {" % name]
        sub = _subparsers(child)
        if sub is not None:
            helps = {a.dest: a.help for a in sub._choices_actions}
            body += ["    local -a cmds",
                     "    cmds=(%s)" % " ".join("'%s:%s'" % (n, _zsh_text(helps.get(n) or "")) for n in sub.choices),
                     "    _arguments -C '1: :->cmd' '*:: :->args' && return",
                     "    case $state in",
                     "        cmd) _describe command cmds ;;",
                     "        args) case $words[1] in"]
            for n in sub.choices:
                body.append("            %s) %s_%s ;;" % (n, name, n.replace("-", "_")))
            body += ["        esac ;;", "    esac", "}"]
            funcs.append("\n".join(body))
            continue
        if words == ("crontab",):
            specs = [_zsh_spec([n], m, None, t) for n, m, t in CRONTAB_OPTIONS] + ["'*:file:_files'"]
        else:
            specs = [_zsh_spec(s, m, c, t) for s, m, c, t in options(child)]
            for action in positionals(child):
                meta = action.metavar or action.dest.upper()
                kind = _value_kind(meta, action.choices)[0]
                what = "_files -/" if kind == "dirs" else "_files" if kind == "files" else " "
                rep = "*" if action.nargs in ("+", "*", argparse.REMAINDER) else ""
                specs.append("'%s:%s:%s'" % (rep, _zsh_text(meta).lower(), what))
        if specs:
            body.append("    _arguments -s \\")
            body += ["        %s \\" % spec for spec in specs[:-1]] + ["        %s" % specs[-1]]
        else:
            body.append("    _message 'no arguments'")
        body.append("}")
        funcs.append("\n".join(body))
    top = _subparsers(parser)
    helps = {a.dest: a.help for a in top._choices_actions}
    out += funcs
    out += [
        "_sandboxguard() {",
        "    local -a cmds",
        "    cmds=(%s)" % " ".join("'%s:%s'" % (n, _zsh_text(helps.get(n) or "")) for n in top.choices),
        "    _arguments -C '(- *)--version[show the version and exit]' '(- *)'{-h,--help}'[show help and exit]' "
        "'1: :->cmd' '*:: :->args' && return",
        "    case $state in",
        "        cmd) _describe command cmds ;;",
        "        args) case $words[1] in",
    ]
    for n in top.choices:
        out.append("            %s) _sandboxguard_%s ;;" % (n, n.replace("-", "_")))
    out += ["        esac ;;", "    esac", "}", "", '_sandboxguard "$@"']
    return "\n".join(out) + "\n"


def generated():
    parser = load_parser()
    from sandboxguard import __version__  # noqa: PLC0415 - after load_parser set the path

    return {MAN: man_page(parser, __version__), BASH: bash_completion(parser, __version__),
            ZSH: zsh_completion(parser, __version__)}


def main(argv=None):
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--check", action="store_true", help="exit 1 when a generated file is missing or differs")
    opts = args.parse_args(argv)
    stale = []
    for path, text in generated().items():
        try:
            with open(path, encoding="utf-8") as handle:
                current = handle.read()
        except FileNotFoundError:
            current = None
        if current == text:
            continue
        if opts.check:
            stale.append(os.path.relpath(path, TOP))
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        print("wrote %s" % os.path.relpath(path, TOP))
    if stale:
        print("tools/cli_docs.py --check: out of date with the CLI's parser: %s; run python3 tools/cli_docs.py"
              % ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
