# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""`sandboxguard home-env`: run a command isolated for an eval run, or under a home mode.

    sandboxguard home-env --hermes-home DIR -- CMD ...      eval isolation (the default)
    sandboxguard home-env --mode auto|real|profile -- CMD   what a terminal child gets
    sandboxguard home-env --hermes-home DIR --json          print the environment, run nothing

Eval isolation: HOME={DIR}/home, TERMINAL_HOME_MODE=profile, the crontab shim first on
PATH with its table at {DIR}/crontab, no DBUS_SESSION_BUS_ADDRESS or XDG_RUNTIME_DIR,
TMPDIR/TMP/TEMP at {DIR}/cache/scratch (made 0700 if it exists), XDG_CONFIG_HOME,
XDG_DATA_HOME, XDG_STATE_HOME and XDG_CACHE_HOME under {DIR}/home. With --mode, the
agent's own contract is applied instead (HOME per the mode, HERMES_REAL_HOME, scratch
TMPDIR unless already set; the XDG base directories follow HOME into the profile home),
with no shim and the user bus left alone. The command's exit status is passed through
(like env(1): 127 when it is not found, 126 when it cannot be run); --json prints the
report envelope (sandboxguard.report) through the CLI's one adapter, output.emit.
"""
import os
import subprocess

from sandboxguard import home_mode
from sandboxguard import report as envelope
from sandboxguard._core.text import escape
from sandboxguard._terminal import eval_tools as shim
from sandboxguard._terminal.modes import XDG_BASE_ENV_VARS, norm_path
from sandboxguard.errors import InputError

from .. import flags, output
from ..main import UsageError

TRACKED = ("HOME", "HERMES_HOME", "HERMES_REAL_HOME", "TERMINAL_HOME_MODE", "TMPDIR", "TMP", "TEMP",
           "EVAL_CRONTAB_FILE", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", *XDG_BASE_ENV_VARS)


def register(subparsers):
    parser = subparsers.add_parser(
        "home-env",
        help="run a command with an isolated HOME, crontab shim, no user bus and scratch TMPDIR",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--hermes-home", metavar="DIR",
                        help="the run's Hermes home (default: $HERMES_HOME); created if missing")
    parser.add_argument("--mode", metavar="MODE",
                        help="apply TERMINAL_HOME_MODE MODE (auto, real, profile or an alias) instead of "
                             "full eval isolation")
    flags.add_json(parser, "print the resulting environment as JSON; run nothing")
    parser.add_argument("command", nargs="*", metavar="CMD", help="the command to run (after --)")
    parser.set_defaults(func=run)


def build_env(args, environ):
    """Return (env, report) for the options; raise UsageError for bad input.

    The report is the envelope for the Hermes home (``roots``, none without one) plus
    ``isolation``, ``mode``, ``env`` (the tracked variables), ``path_first`` and ``shim``.
    """
    hermes_home = args.hermes_home or environ.get("HERMES_HOME", "").strip()
    if args.mode is not None:
        try:
            mode = home_mode.normalize_mode(args.mode)
        except home_mode.HomeModeError as exc:
            raise UsageError("--mode: %s" % exc) from None
        env = dict(environ)
        if hermes_home:
            env["HERMES_HOME"] = norm_path(hermes_home)
        env["TERMINAL_HOME_MODE"] = mode
        try:
            home_mode.apply_subprocess_home_env(env)
        except home_mode.HomeModeError as exc:
            raise UsageError(str(exc)) from None
        report = envelope.new_report([env["HERMES_HOME"]] if hermes_home else [], isolation=False, mode=mode)
    else:
        if not hermes_home:
            raise UsageError("no run directory: pass --hermes-home DIR (or set HERMES_HOME)")
        if os.path.realpath(norm_path(hermes_home)) == "/":
            raise UsageError("--hermes-home /: refusing the root directory; use a run directory")
        try:
            layout = home_mode.ensure_isolation_dirs(hermes_home)
            shim.install_shim(layout["bin"])
        except InputError as exc:  # HomeModeError, safefs.PathRefused from the shim's directory
            raise UsageError("--hermes-home: %s" % exc) from None
        except OSError as exc:
            raise UsageError("--hermes-home: %s: %s" % (exc.filename or layout["bin"], exc.strerror or exc)) from None
        env = home_mode.isolated_env(environ, hermes_home)
        report = envelope.new_report([norm_path(hermes_home)], isolation=True, mode="profile",
                                     shim=os.path.join(layout["bin"], "crontab"))
    report["env"] = {key: env.get(key) for key in TRACKED}
    report["path_first"] = env.get("PATH", "").split(os.pathsep)[0]
    return env, report


def run(args):
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    env, report = build_env(args, os.environ)
    if args.json:
        return output.emit(report, True, None)
    if not command:
        raise UsageError("no command: sandboxguard home-env [--hermes-home DIR] -- CMD ...")
    try:
        status = subprocess.call(command, env=env)
    except FileNotFoundError:
        output.error_line("sandboxguard home-env", "%s: command not found" % escape(command[0]))
        return 127
    except PermissionError:
        output.error_line("sandboxguard home-env", "%s: permission denied" % escape(command[0]))
        return 126
    return 128 - status if status < 0 else status
