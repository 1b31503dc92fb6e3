# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection (``sandboxguard.crontab`` is its public face).
A crontab that behaves like Debian's and writes into the eval run directory.

Seed 002: an eval run that calls ``crontab -`` schedules jobs in the operator's real
table, and they fire every night long after the run is gone. Refusing the command
changes what the agent sees; substituting it does not. This shim takes the same
options, prints the same words on the same streams and exits with the same codes as
``crontab`` from Debian's ``cron`` package (3.0pl1-162 in bookworm, checked against the
installed binary by tests/integration/test_crontab_conformance.py), but keeps the table
in one file (``EVAL_CRONTAB_FILE``, else ``{HERMES_HOME}/crontab``). It never opens
``/var/spool/cron``.

The syntax check is a character-level re-implementation of cron's own parser
(load_env/load_entry/get_list), because the real one reports the line number where its
reader stopped, not where the bad line starts (``bad\\n`` on line 1 is reported as line 1,
``bad line\\n`` as line 0); only the same reader gives the same messages.

The table file has the format of ``/var/spool/cron/crontabs/USER``: three header
comment lines, then the table as given. ``crontab -l`` hides the header the same way.

Deliberate differences, all where the real one would hang or touch the host:
- ``-i`` and the retry prompt of ``-e`` stop at end of input (the real one loops forever
  printing "Please enter Y or N: "); the table is kept and the exit status is 1.
- ``-e`` puts its temporary file under TMPDIR and runs the editor there. The real one
  is setgid, so glibc drops TMPDIR and it always uses /tmp; an eval run must not.
- /etc/cron.allow and /etc/cron.deny are not consulted; the daemon is not poked.
- ``-u OTHER`` (root only, as in the real one) uses the table ``<table>.<OTHER>``.

This file is self-contained (standard library, no imports from its package: not even a
lazy one, since its text is the shim) so that ``crontab.install_shim`` can write it out as a
``crontab`` executable for any user. The package imports it (``eval_tools``, ``crontab``); it
imports nothing back, so no cycle hides here.
"""
import contextlib
import inspect
import os
import stat
import sys
import tempfile
import time

PROGRAM = "crontab"
TABLE_ENV = "EVAL_CRONTAB_FILE"
HERMES_HOME_ENV = "HERMES_HOME"
DEFAULT_EDITOR = "/usr/bin/sensible-editor"
SHIM_PYTHON = "/usr/bin/python3"

OK_EXIT = 0
ERROR_EXIT = 1

# cron.h
NHEADER_LINES = 3
MAX_COMMAND = 1000
MAX_ENVSTR = 1000
MAX_TEMPSTR = 1000
MAX_TAB_LINES = 10000
EOF = -1
RCSID = "$Id: crontab.c,v 2.13 1994/01/17 03:20:37 vixie Exp $"

MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
DOW_NAMES = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
SPECIALS = ("reboot", "yearly", "annually", "monthly", "weekly", "daily", "midnight", "hourly")

ERR_MINUTE = "bad minute"
ERR_HOUR = "bad hour"
ERR_DOM = "bad day-of-month"
ERR_MONTH = "bad month"
ERR_DOW = "bad day-of-week"
ERR_CMD = "bad command"
ERR_TIMESPEC = "bad time specifier"
ERR_CMD_LEN = "command too long"

USAGE_TEXT = (
    "usage:\t%(p)s [-u user] [-n] file\n"
    "\t%(p)s [ -u user ] [ -i ] { -e | -l | -r }\n\n"
    "\t-h\t(displays this help message)\n\n"
    "\tfile\t(default operation is replace, per 1003.2)\n"
    "\t-n\t(dry run: checks the syntax, then bails out)\n"
    "\t-u user\t(choose the user whose crontab is touched)\n\n"
    "\t-e\t(edit user's crontab)\n"
    "\t-l\t(list user's crontab)\n"
    "\t-r\t(delete user's crontab)\n\n"
    "\t-i\t(prompt before deleting user's crontab)\n"
)

HELP_TEXT = (
    "# Edit this file to introduce tasks to be run by cron.\n"
    "# \n"
    "# Each task to run has to be defined through a single line\n"
    "# indicating with different fields when the task will be run\n"
    "# and what command to run for the task\n"
    "# \n"
    "# To define the time you can provide concrete values for\n"
    "# minute (m), hour (h), day of month (dom), month (mon),\n"
    "# and day of week (dow) or use '*' in these fields (for 'any').\n"
    "# \n"
    "# Notice that tasks will be started based on the cron's system\n"
    "# daemon's notion of time and timezones.\n"
    "# \n"
    "# Output of the crontab jobs (including errors) is sent through\n"
    "# email to the user the crontab file belongs to (unless redirected).\n"
    "# \n"
    "# For example, you can run a backup of all your user accounts\n"
    "# at 5 a.m every week with:\n"
    "# 0 5 * * 1 tar -zcf /var/backups/home.tgz /home/\n"
    "# \n"
    "# For more information see the manual pages of crontab(5) and cron(8)\n"
    "# \n"
    "# m h  dom mon dow   command\n"
)

_SPACE = frozenset(b" \t\n\v\f\r")
_DIGITS = frozenset(b"0123456789")
_ALNUM = frozenset(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _run_editor(command, cwd):
    """Run ``/bin/sh -c command`` in ``cwd`` and wait: 0..255 its exit code, -N killed by signal N.

    As cron's crontab.c does for -e (fork, chdir, execl of the shell). A plain fork and exec
    rather than ``subprocess``: this file is written out as a self-contained executable, and
    every other child process of the library goes through sandboxguard._core.proc (see there).
    """
    pid = os.fork()
    if pid == 0:  # the child: never return into the parent's code
        try:
            os.chdir(cwd)
            os.execv("/bin/sh", ["/bin/sh", "-c", command])  # noqa: S606 (the shell is the program)
        finally:
            os._exit(127)
    while True:
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except InterruptedError:
            continue


class CrontabExit(Exception):
    """Ends a shim run with an exit status (the real crontab calls exit() from deep inside)."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


# --- cron's reader: one byte at a time, counting lines the way get_char() does ----------

class _Reader:
    """A byte stream with cron's LineNumber bookkeeping (misc.c get_char/unget_char)."""

    def __init__(self, data, line=1):
        self.data = data
        self.pos = 0
        self.line = line

    def get_char(self):
        if self.pos >= len(self.data):
            return EOF
        ch = self.data[self.pos]
        self.pos += 1
        if ch == 0x0A:
            self.line += 1
        return ch

    def unget_char(self, ch):
        if ch == EOF:
            return
        self.pos -= 1
        if ch == 0x0A:
            self.line -= 1

    def get_string(self, size, terms):
        """Read up to a byte in *terms*, a NUL or EOF; keep at most size-1 bytes; return (ch, bytes).

        A NUL always ends the string: misc.c tests ``strchr(terms, ch)``, which finds the
        terminator of *terms* itself for ch == 0. The rest of that line is then read as the
        next entry, so ``* * * * * a\0b`` is refused with "bad minute" (the "b").
        """
        out = bytearray()
        while True:
            ch = self.get_char()
            if ch in (EOF, 0) or ch in terms:
                return ch, bytes(out)
            if len(out) < size - 1:
                out.append(ch)

    def skip_comments(self):
        while True:
            ch = self.get_char()
            if ch == EOF:
                break
            while ch in (0x20, 0x09):
                ch = self.get_char()
            if ch == EOF:
                break
            if ch not in (0x0A, 0x23):
                break
            while ch not in (0x0A, EOF):
                ch = self.get_char()
        if ch != EOF:
            self.unget_char(ch)

    def skip_blanks(self, ch):
        while ch in (0x20, 0x09):
            ch = self.get_char()
        return ch

    def skip_nonblanks(self, ch):
        while ch not in (0x20, 0x09, 0x0A, EOF):
            ch = self.get_char()
        return ch


def _as_char(ch):
    # get_list/get_range/get_number return C `char`: the byte 0xff reads back as EOF.
    return EOF if ch == 0xFF else ch


def _cstr(data):
    return data.split(b"\0", 1)[0]


def _c_atoi(digits):
    value = min(int(digits), 2**63 - 1)  # strtol clamps to long, atoi truncates to int
    return ((value + 2**31) % 2**32) - 2**31


def _get_number(reader, low, names, ch):
    """Return (ch, number); ch is EOF on error (entry.c get_number)."""
    temp = bytearray()
    all_digits = True
    while ch in _ALNUM:
        if len(temp) + 1 >= MAX_TEMPSTR:
            return EOF, 0
        temp.append(ch)
        if ch not in _DIGITS:
            all_digits = False
        ch = reader.get_char()
    if not temp:
        return EOF, 0
    if names:
        word = temp.decode("ascii").lower()
        for index, name in enumerate(names):
            if name.lower() == word:
                return _as_char(ch), index + low
    if all_digits:
        return _as_char(ch), _c_atoi(temp)
    return EOF, 0


def _get_range(reader, low, high, names, ch):
    """entry.c get_range: one ``N``, ``N-M``, ``*`` with optional ``/step``; EOF on error."""
    if ch == 0x2A:  # '*'
        num1, num2 = low, high
        ch = reader.get_char()
        if ch == EOF:
            return EOF
    else:
        ch, num1 = _get_number(reader, low, names, ch)
        if ch == EOF:
            return EOF
        if ch != 0x2D:  # not '-': a single number
            if ch == 0x2F:  # a step without a range
                return EOF
            if num1 < low or num1 > high:
                return EOF
            return _as_char(ch)
        ch = reader.get_char()
        if ch == EOF:
            return EOF
        ch, num2 = _get_number(reader, low, names, ch)
        if ch == EOF:
            return EOF
    if ch == 0x2F:  # '/'
        ch = reader.get_char()
        if ch == EOF:
            return EOF
        ch, step = _get_number(reader, 0, None, ch)
        if ch == EOF or step <= 0:
            return EOF
    if num1 < low or num1 > high or num2 < low or num2 > high:
        return EOF
    return _as_char(ch)


def _get_list(reader, low, high, names, ch):
    """entry.c get_list: ranges separated by commas, then skip to the next field."""
    while True:
        ch = _get_range(reader, low, high, names, ch)
        if ch == 0x2C:  # ','
            ch = reader.get_char()
        else:
            break
    ch = reader.skip_nonblanks(ch)
    ch = reader.skip_blanks(ch)
    return _as_char(ch)


def _load_entry(reader, errors):
    """entry.c load_entry for a user crontab: check one job line; append an error message."""
    reader.skip_comments()
    ch = reader.get_char()
    if ch == EOF:
        return
    error = None
    if ch == 0x40:  # '@'
        ch, word = reader.get_string(MAX_COMMAND, b" \t\n")
        if _cstr(word).decode("latin-1") not in SPECIALS:
            error = ERR_TIMESPEC
    else:
        fields = (
            (0, 59, None, ERR_MINUTE),
            (0, 23, None, ERR_HOUR),
            (1, 31, None, ERR_DOM),
            (1, 12, MONTH_NAMES, ERR_MONTH),
            (0, 7, DOW_NAMES, ERR_DOW),
        )
        for low, high, names, message in fields:
            ch = _get_list(reader, low, high, names, ch)
            if ch == EOF:
                error = message
                break
    if error is None:
        ch = reader.skip_blanks(ch)
        reader.unget_char(ch)
        if ch == 0x2A:  # a command cannot start with '*' (a sixth time field)
            error = ERR_CMD
    if error is None:
        ch, command = reader.get_string(MAX_COMMAND, b"\n")
        if len(_cstr(command)) == MAX_COMMAND - 1:
            error = ERR_CMD_LEN
        elif ch == EOF:
            error = ERR_CMD
    if error is None:
        return
    errors.append((reader.line - 1, error))
    while ch not in (EOF, 0x0A):
        ch = reader.get_char()


# env.c load_env states
_NAMEI, _NAME, _EQ1, _EQ2, _VALUEI, _VALUE, _FINI, _ERROR = range(8)
_ENV_ERR = "eof"


def _load_env(reader):
    """env.c load_env: return (result, line) with result True (an environment line),
    False (not one: reader rewound) or "eof" (end of input; *line* is what was read)."""
    filepos, fileline = reader.pos, reader.line
    reader.skip_comments()
    ch, line = reader.get_string(MAX_ENVSTR - 1, b"\n")
    if ch == EOF:
        return _ENV_ERR, line
    text = _cstr(line)
    name = bytearray()
    value = bytearray()
    target = name
    state = _NAMEI
    quote = None
    i = 0
    while state != _ERROR and i < len(text):
        c = text[i]
        if state in (_NAMEI, _VALUEI):
            if c in (0x27, 0x22):
                quote = c
                i += 1
            state += 1
            if i >= len(text):
                break
            c = text[i]
        if state in (_NAME, _VALUE):
            if quote is not None:
                if c == quote:
                    state += 1
                    i += 1
                    continue
                if state == _NAME and c == 0x3D:
                    state = _ERROR
                    continue
            elif state == _NAME:
                if c in _SPACE:
                    i += 1
                    state += 1
                    continue
                if c == 0x3D:
                    state += 1
                    continue
            target.append(c)
            i += 1
        elif state == _EQ1:
            if c == 0x3D:
                state += 1
                target = value
                quote = None
            elif c not in _SPACE:
                state = _ERROR
            i += 1
        elif state in (_EQ2, _FINI):
            if c in _SPACE:
                i += 1
            else:
                state += 1
    if state != _FINI and not (state == _VALUE and quote is None):
        reader.pos, reader.line = filepos, fileline
        return False, line
    val = bytes(value).rstrip(b" \t\n\v\f\r")
    if len(val) >= 2 and val[:1] in (b"'", b'"') and val[-1:] == val[:1]:
        val = val[1:-1]
    if len(name) + 1 + len(val) >= MAX_ENVSTR - 1:
        reader.pos, reader.line = filepos, fileline
        return False, line
    return True, line


def header_lines(filename, now=None):
    """The three comment lines the real crontab writes at the top of an installed table."""
    return b"".join((
        b"# DO NOT EDIT THIS FILE - edit the master and reinstall.\n",
        b"# (" + os.fsencode(filename) + b" installed on " + time.ctime(now)[:24].encode("ascii") + b")\n",
        b"# (Cron version -- " + RCSID.encode("ascii") + b")\n",
    ))


def check_table(data, filename="-"):
    """Check *data* (bytes) the way the real crontab checks a table before installing it.

    Returns a list of the messages the real one prints on stderr (empty when the table
    would be installed) and never raises for bad input.
    """
    reader = _Reader(header_lines(filename) + data, line=1 - NHEADER_LINES)
    errors = []
    eof = False
    newline_at_end = False
    while not errors and not eof and reader.line < MAX_TAB_LINES + 2:
        result, line = _load_env(reader)
        if result == _ENV_ERR:
            eof = True
            if not line or line[0] == 0:
                newline_at_end = True
        elif result is False:
            _load_entry(reader, errors)
    name = os.fsdecode(filename)
    if reader.line >= MAX_TAB_LINES + 2:
        return ["crontab is too long; maximum number of lines is %d." % MAX_TAB_LINES]
    if errors:
        return ['"%s":%d: %s' % (name, line_no, message) for line_no, message in errors] + [
            "errors in crontab file, can't install."
        ]
    if not newline_at_end:
        return ["new crontab file is missing newline before EOF, can't install."]
    return []


def is_header_line(skipped, line):
    """The header rule; its twin for the library is _core/crontab_header.py (this file imports nothing)."""
    return skipped < NHEADER_LINES and line[:1] in (b"#", "#")


def header_end(data):
    """(bytes, lines) of the header at the start of the stored table *data* (bytes)."""
    pos = count = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        if not is_header_line(count, data[pos:] if end < 0 else data[pos:end]):
            break
        count += 1
        pos = len(data) if end < 0 else end + 1
    return pos, count


def strip_header(data, keep_header=False):
    """What ``crontab -l`` prints for a stored table: the header hidden (unless
    *keep_header*), and backspace and carriage return made visible (but in the first
    character after a short header, which cron prints as it read it)."""
    out = bytearray()
    pos = 0
    if not keep_header:
        pos, count = header_end(data)
        if count < NHEADER_LINES and pos < len(data):
            out.append(data[pos])
            pos += 1
    rest = data[pos:]
    out += rest.replace(b"\b", b"\\b").replace(b"\r", b"\\r")
    return bytes(out)


def editable_text(data):
    """What ``crontab -e`` puts in the temporary file for a stored table (header removed)."""
    return data[header_end(data)[0]:]


class _Streams:
    def __init__(self, stdin=None, stdout=None, stderr=None):
        self.stdin = stdin if stdin is not None else sys.stdin.buffer
        self.stdout = stdout if stdout is not None else sys.stdout.buffer
        self.stderr = stderr if stderr is not None else sys.stderr.buffer

    def out(self, text):
        self.stdout.write(text.encode() if isinstance(text, str) else text)
        self.stdout.flush()

    def err(self, text):
        self.stderr.write(text.encode() if isinstance(text, str) else text)
        self.stderr.flush()

    def readline(self):
        return self.stdin.readline(MAX_TEMPSTR - 1)


def _usage(io, message):
    if message:
        io.err("%s: usage error: %s\n" % (PROGRAM, message))
    io.err(USAGE_TEXT % {"p": PROGRAM})
    raise CrontabExit(ERROR_EXIT)


def _getopt(args, optstring="u:hnleri"):
    """GNU getopt(3) as the real crontab sees it: return ([(option, value)], operands).

    Operands are permuted to the end unless POSIXLY_CORRECT is set. A bad option ends
    the list as ("?", message); the caller prints the message when it gets there, after
    acting on the options before it, as the real one does."""
    options = []
    operands = []
    posix = "POSIXLY_CORRECT" in os.environ
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            operands.extend(args[i + 1:])
            break
        if not arg.startswith("-") or arg == "-":
            if posix:
                operands.extend(args[i:])
                break
            operands.append(arg)
            i += 1
            continue
        j = 1
        while j < len(arg):
            letter = arg[j]
            spec = optstring.find(letter)
            if letter == ":" or spec < 0:
                options.append(("?", "%s: invalid option -- '%s'\n" % (PROGRAM, letter)))
                return options, operands
            if spec + 1 < len(optstring) and optstring[spec + 1] == ":":
                if j + 1 < len(arg):
                    options.append((letter, arg[j + 1:]))
                elif i + 1 < len(args):
                    i += 1
                    options.append((letter, args[i]))
                else:
                    options.append(("?", "%s: option requires an argument -- '%s'\n" % (PROGRAM, letter)))
                    return options, operands
                break
            options.append((letter, None))
            j += 1
        i += 1
    return options, operands


def _passwd_by_name(name):
    import pwd  # noqa: PLC0415

    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _passwd_by_uid(uid):
    import pwd  # noqa: PLC0415

    try:
        return pwd.getpwuid(uid)
    except KeyError:
        return None


def default_table(environ=None):
    """The table file: ``EVAL_CRONTAB_FILE``, else ``{HERMES_HOME}/crontab``, else None."""
    env = os.environ if environ is None else environ
    if env.get(TABLE_ENV, "").strip():
        return env[TABLE_ENV]
    if env.get(HERMES_HOME_ENV, "").strip():
        return os.path.join(os.path.expanduser(env[HERMES_HOME_ENV]), "crontab")
    return None


class _Options:
    """What the command line asked for (crontab.c parse_args): who, which operation, flags."""

    def __init__(self, user):
        self.user = self.real_user = user
        self.operation = None  # "help", "list", "delete", "edit" or "replace"
        self.prompt_on_delete = False
        self.dry_run = False
        self.filename = ""


_OPERATIONS = {"h": "help", "l": "list", "r": "delete", "e": "edit"}


def _parse_args(io, args):
    """Parse *args* as the real crontab does; print its messages and raise CrontabExit on error."""
    me = _passwd_by_uid(os.getuid())
    if me is None:
        io.err("%s: your UID isn't in the passwd file.\nbailing out.\n" % PROGRAM)
        raise CrontabExit(ERROR_EXIT)
    options = _Options(me.pw_name)
    flags, operands = _getopt(args)
    for letter, value in flags:
        if letter == "?":
            io.err(value)
            _usage(io, "unrecognized option")
        elif letter == "n":
            options.dry_run = True
        elif letter == "i":
            options.prompt_on_delete = True
        elif letter == "u":
            options.user = _other_user(io, value)
        else:
            if options.operation is not None:
                _usage(io, "only one operation permitted")
            options.operation = _OPERATIONS[letter]
    if options.operation is not None:
        if operands:
            _usage(io, "no arguments permitted after this option")
    elif operands:
        options.operation = "replace"
        options.filename = operands[0]
    else:
        _usage(io, "file name must be specified for replace")
    return options


def _other_user(io, name):
    """``-u NAME``: allowed for one's own name, or for anyone as root."""
    entry = _passwd_by_name(name)
    if entry is None:
        io.err("%s:  user `%s' unknown\n" % (PROGRAM, name))
        raise CrontabExit(ERROR_EXIT)
    if os.getuid() not in (0, entry.pw_uid):
        io.err("must be privileged to use -u\n")
        raise CrontabExit(ERROR_EXIT)
    return entry.pw_name


def _read_new_table(io, filename):
    """The table to install: standard input for ``-``, else the regular file *filename*."""
    if filename == "-":
        return io.stdin.read()
    try:
        fd = os.open(filename, os.O_RDONLY)
    except OSError as exc:
        io.err("%s: %s\n" % (filename, os.strerror(exc.errno or 0)))
        raise CrontabExit(ERROR_EXIT) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        io.err("%s: Not a regular file.\n" % filename)
        raise CrontabExit(ERROR_EXIT)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


class _Table:
    """One user's table file, in the format of the spool entry the real crontab writes."""

    def __init__(self, io, path, user):
        self.io = io
        self.path = path
        self.user = user

    def list(self):
        """``-l``: print the table without its header."""
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            self.io.err("no crontab for %s\n" % self.user)
            raise CrontabExit(ERROR_EXIT) from None
        except OSError as exc:
            self.io.err("%s/: fopen: %s\n" % (self.path, os.strerror(exc.errno or 0)))
            raise CrontabExit(ERROR_EXIT) from None
        keep = os.environ.get("CRONTAB_NOHEADER", "")[:1].upper() == "N"
        self.io.out(strip_header(data, keep_header=keep))

    def delete(self, prompt):
        """``-r`` (``-i``: ask first; end of input keeps the table, where the real one loops)."""
        if not os.path.exists(self.path):
            self.io.err("no crontab for %s\n" % self.user)
            raise CrontabExit(ERROR_EXIT)
        if prompt and not self._confirm_delete():
            raise CrontabExit(OK_EXIT)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            self.io.err("no crontab for %s\n" % self.user)
            raise CrontabExit(ERROR_EXIT) from None

    def _confirm_delete(self):
        self.io.out("crontab: really delete %s's crontab? (y/n) " % self.user)
        while True:
            answer = self.io.readline()
            if not answer:
                self.io.err("Please enter Y or N: ")
                raise CrontabExit(ERROR_EXIT)
            first = answer[:1].lower()
            if first in (b"y", b"n"):
                return first == b"y"
            self.io.err("Please enter Y or N: ")

    def install(self, data, filename, dry_run):
        """Check *data* and install it: 0 installed (or checked with -n), -1 syntax error, -2 write error."""
        problems = check_table(data, filename)
        if problems:
            self.io.err("".join(p + "\n" for p in problems))
            return -1
        if dry_run:
            self.io.err("The syntax of the crontab file was successfully checked.\n")
            return 0
        try:
            _write_private(self.path, header_lines(filename) + data)
        except OSError as exc:
            self.io.err("%s: %s: %s\n" % (PROGRAM, self.path, os.strerror(exc.errno or 0)))
            return -2
        return 0

    def editable(self):
        """What ``-e`` hands the editor: the table without its header, or the help text."""
        try:
            with open(self.path, "rb") as handle:
                return editable_text(handle.read())
        except FileNotFoundError:
            self.io.err("no crontab for %s - using an empty one\n" % self.user)
            return HELP_TEXT.encode()
        except OSError as exc:
            self.io.err("%s/: fdopen: %s" % (self.path, os.strerror(exc.errno or 0)))
            raise CrontabExit(ERROR_EXIT) from None


def _write_private(path, data, mode=0o600):
    """Replace *path* with *data* atomically (temp file in the same directory, fsync, rename),
    *mode* set on the descriptor; a missing directory is created 0700.

    The library's one atomic write is ``sandboxguard._core.atomicfile``; this file keeps its own
    because it also runs standalone as the shim (``/usr/bin/python3 crontab``), where the
    package cannot be imported. Same steps; used for the table only, which the shim writes
    as the user the eval runs as, in that run's own directory. Installing the shim itself
    is _terminal.eval_tools' (through descriptors: root does that).
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="tmp.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class _Edit:
    """``-e``: the table in a temporary file, the editor, then install or retry (crontab.c edit_cmd)."""

    def __init__(self, io, table, dry_run):
        self.io = io
        self.table = table
        self.dry_run = dry_run
        self.directory = None
        self.filename = None
        self.retry_eof = False

    def run(self):
        self._write_temporary(self.table.editable())
        with open(self.filename, "rb") as handle:
            before = int(os.fstat(handle.fileno()).st_mtime)
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or DEFAULT_EDITOR
        while True:
            self._run_editor(editor)
            if int(self._edited_file_info().st_mtime) == before:
                self.io.err("No modification made\n")
                _remove_tree(self.directory)
                return
            self.io.err("%s: installing new crontab\n" % PROGRAM)
            with open(self.filename, "rb") as handle:
                result = self.table.install(handle.read(), self.filename, self.dry_run)
            if result == 0:
                _remove_tree(self.directory)
                return
            if result == -1 and self._ask_retry():
                continue
            self.io.err("%s: edits left in %s\n" % (PROGRAM, self.filename))
            if result == -1 and self.retry_eof:
                raise CrontabExit(ERROR_EXIT)
            return

    def _write_temporary(self, text):
        # under TMPDIR: the real one is setgid, so glibc drops TMPDIR and it uses /tmp
        base = os.environ.get("TMPDIR") or "/tmp"
        try:
            self.directory = _make_edit_dir(base)
        except OSError as exc:
            self.io.err("%s/crontab.XXXXXX: %s\n" % (base, os.strerror(exc.errno or 0)))
            self.io.err("Creation of temporary crontab file failed - aborting\n")
            raise CrontabExit(ERROR_EXIT) from None
        self.filename = os.path.join(self.directory, "crontab")
        fd = os.open(self.filename, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
            handle.flush()

    def _run_editor(self, editor):
        base = os.path.dirname(self.directory)
        status = _run_editor("%s %s" % (editor, self.filename), base)
        if status > 0:
            self.io.err('%s: "%s" exited with status %d\n' % (PROGRAM, editor, status))
            self._fatal()
        if status < 0:
            self.io.err('%s: "%s" killed; signal %d (no core dumped)\n' % (PROGRAM, editor, -status))
            self._fatal()

    def _edited_file_info(self):
        """The temporary file after the editor: still ours and still a regular file, or fatal."""
        try:
            info = os.stat(self.filename)
        except OSError as exc:
            self.io.err("Can't open tempfile after edit: %s\n" % os.strerror(exc.errno or 0))
            self.io.err("Error while editing crontab\n")
            self._fatal()
        if info.st_uid != os.getuid():
            self.io.err("Temporary crontab no longer owned by you.\n")
            self.io.err("Error while editing crontab\n")
            self._fatal()
        if not stat.S_ISREG(info.st_mode):
            self.io.err("The temporary crontab must remain a regular file")
            self.io.err("Error while editing crontab\n")
            self._fatal()
        return info

    def _ask_retry(self):
        """"Do you want to retry the same edit?": True for y; end of input is no (the real one loops)."""
        while True:
            self.io.out("Do you want to retry the same edit? (y/n) ")
            answer = self.io.readline()
            if not answer:
                self.io.err("Enter Y or N\n")
                self.retry_eof = True
                return False
            first = answer[:1].lower()
            if first == b"y":
                return True
            if first == b"n":
                return False
            self.io.err("Enter Y or N\n")

    def _fatal(self):
        _remove_tree(self.directory)
        raise CrontabExit(ERROR_EXIT)


def _run(io, table, args):
    """One shim run: parse *args*, act on the table file *table* (or ``<table>.<user>``)."""
    options = _parse_args(io, args or ["-"])
    new_data = _read_new_table(io, options.filename) if options.operation == "replace" else None
    if options.user != options.real_user:
        table = "%s.%s" % (table, options.user)
    target = _Table(io, table, options.user)
    if options.operation == "help":
        _usage(io, "")
    elif options.operation == "list":
        target.list()
    elif options.operation == "delete":
        target.delete(options.prompt_on_delete)
    elif options.operation == "edit":
        _Edit(io, target, options.dry_run).run()
    elif target.install(new_data, options.filename, options.dry_run) < 0:
        return ERROR_EXIT
    return OK_EXIT


def _make_edit_dir(base):
    """``<base>/crontab.XXXXXX`` (six random letters or digits, as mkdtemp(3) makes), mode 0700."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    for _attempt in range(100):
        suffix = "".join(letters[b % len(letters)] for b in os.urandom(6))
        path = os.path.join(base, "crontab." + suffix)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(17, os.strerror(17), base)


def _remove_tree(directory):
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.rmdir(directory)


def main(argv=None, table=None, stdin=None, stdout=None, stderr=None):
    """Run the shim with *argv* (without the program name); return the exit status.

    *table* overrides ``EVAL_CRONTAB_FILE``. Without either (and without HERMES_HOME)
    the shim refuses with exit 1 rather than guess: it must never reach the real spool.
    """
    io = _Streams(stdin, stdout, stderr)
    args = list(sys.argv[1:] if argv is None else argv)
    path = table or default_table()
    if not path:
        io.err(
            "%s: no table for the crontab shim: set %s to a file in the run directory "
            "(or HERMES_HOME)\n" % (PROGRAM, TABLE_ENV)
        )
        return ERROR_EXIT
    try:
        return _run(io, path, args)
    except CrontabExit as done:
        return done.status
    except KeyboardInterrupt:
        return ERROR_EXIT


def shim_python():
    """Debian's /usr/bin/python3 when present (any user can run it), else this interpreter."""
    return SHIM_PYTHON if os.access(SHIM_PYTHON, os.X_OK) else sys.executable


def shim_source(python=SHIM_PYTHON):
    """The text of a standalone ``crontab`` executable: this module with a shebang."""
    source = inspect.getsource(sys.modules[__name__])
    lines = source.splitlines(True)
    if lines and lines[0].startswith("# GENERATED"):
        lines = lines[1:]
    return "#!%s\n" % python + "".join(lines)


if __name__ == "__main__":
    # the installed shim is a standalone program, not an Ansible module
    sys.exit(main())  # pylint: disable=ansible-bad-function
