# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""One base class for bad input: every refusal of the library is an errors.InputError, and the
adapters (the modules' input_errors_fail, the CLI's main) catch that one class.

The library's exception classes are found by importing every module of the package, so a new
class fails here until it is decided: bad input (derive from InputError) or one of the few
that are something else (NOT_INPUT, each with the reason).
"""
import importlib
import inspect
import os
import sys

import pytest
import repo_scan as scan
from sandboxguard import errors

# Exceptions of the library that are not bad input, and why.
NOT_INPUT = {
    "engine_http.EngineError": "an engine did not answer, or answered garbage (a RuntimeError; docker_engine's)",
    "engine_http.APIError": "an engine answered with an HTTP error (an EngineError)",
    "engine_http.NotFound": "an engine knows no such container (an APIError)",
    "engine_http.SocketRefused": "an engine socket that fails the ownership rule, not asked (an EngineError)",
    "docker_engine.SDKMissing": "kept importable for compatibility, never raised (an EngineError)",
    "fanotify.FanotifyUnavailable": "the kernel cannot do it (an OSError)",
    "fileops.ChangedUnderUs": "a race: the file changed while it was being fixed",
    "forked.Stopped": "control flow of a forked worker (a BaseException)",
    "fetch._Refused": "internal: becomes the fetch report's refusal, never leaves fetch",
    "crontab_shim.CrontabExit": "crontab_shim.py runs standalone and imports nothing from the package",
    "fdmount.Refused": "fdmount.py runs standalone (the boot program) and imports nothing from the package",
}

# The public classes keep their names and stay what callers catch today.
STILL_VALUE_ERRORS = ("roots.RootRefused", "roots.RootMissing", "safefs.PathRefused", "hermes_config.ConfigError",
                      "yamlconf.YamlEditError", "home_mode.HomeModeError", "nosuid.NosuidError",
                      "leaks.LeakAuditError", "install.InstallError", "staging.StagingError",
                      "caps.CapabilityDecodeError", "audit_report.ReportError", "inputs.InputError")


def _library_exceptions():
    """{module.Class: class} of every module, the private packages' too, named by its last
    component (safefs.PathRefused, not _core.safefs.PathRefused)."""
    found = {}
    for dotted in scan.library_files():
        module = importlib.import_module("sandboxguard." + dotted)
        found.update({"%s.%s" % (dotted.rsplit(".", 1)[-1], name): obj for name, obj in vars(module).items()
                      if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__})
    return found


def _by_name(dotted):
    """A class by the module it is read from: public (home_mode.HomeModeError, re-exported from
    _terminal) or private (safefs.PathRefused)."""
    module, name = dotted.split(".")
    return getattr(importlib.import_module("sandboxguard." + scan.library_modules()[module][0]), name)


def test_every_exception_class_of_the_library_is_bad_input_or_says_why_not():
    undecided = sorted(name for name, cls in _library_exceptions().items()
                       if not issubclass(cls, errors.InputError) and name not in NOT_INPUT)
    assert undecided == [], "derive these from errors.InputError, or add them to NOT_INPUT with the reason"
    wrongly = sorted(name for name in NOT_INPUT if issubclass(_by_name(name), errors.InputError))
    assert wrongly == []


def test_the_public_refusals_keep_their_names_and_stay_value_errors():
    for dotted in STILL_VALUE_ERRORS:
        cls = _by_name(dotted)
        assert issubclass(cls, errors.InputError) and issubclass(cls, ValueError), dotted
    from sandboxguard import fetch
    from sandboxguard._core import inputs

    assert inputs.InputError is errors.InputError
    # FetchError was an Exception; it is an InputError now (so also a ValueError)
    assert issubclass(fetch.FetchError, errors.InputError) and issubclass(fetch.TransportUnavailable, fetch.FetchError)


@pytest.mark.parametrize("call", [
    lambda: __import__("sandboxguard.owners").owners.resolve_owner("", None),
    lambda: __import__("sandboxguard.owners").owners.resolve_owner("sgvoc-no-such-user-x", None),
    lambda: __import__("sandboxguard.strip").strip.StripOptions(actions=["paint"]),
    lambda: __import__("sandboxguard.strip").strip.StripOptions(budget=-1),
    lambda: __import__("sandboxguard._walk.fileops")._walk.fileops.check_owner(("a", "b")),
    lambda: __import__("sandboxguard.sweep").sweep.sweep(None, ["/nonexistent"], method="chisel"),
    lambda: __import__("sandboxguard._fleet.audit")._fleet.audit.audit_host(checks=["everything"]),
    lambda: __import__("sandboxguard._fleet.audit")._fleet.audit.check_privileged_files(["/nonexistent"], docker="sometimes"),  # noqa: E501
    lambda: __import__("sandboxguard._bwrap.diagnosis")._bwrap.diagnosis.version_at_least("bubblewrap 0.9.0", "latest"),
    lambda: __import__("sandboxguard._bwrap.argv")._bwrap.argv.sandbox_argv("/usr/bin/bwrap", profile="wide open"),
    lambda: __import__("sandboxguard.bwrap").bwrap.apparmor_profile("relative/bwrap"),
    lambda: __import__("sandboxguard.bwrap").bwrap.check_request(timeout=0),
    lambda: __import__("sandboxguard.bwrap").bwrap.check_request(limits={"memory_mb": -1}),
    lambda: __import__("sandboxguard.bwrap").bwrap.check_request(bwrap="/nonexistent/sgvoc/bwrap"),
    lambda: __import__("sandboxguard.bwrap").bwrap.check_request(checks=["everything"]),
    lambda: __import__("sandboxguard.bwrap").bwrap.probe("nobody", timeout=-1),
    lambda: __import__("sandboxguard._fleet.audit_report")._fleet.audit_report.write_reports({}, "/nonexistent", formats=["pdf"]),  # noqa: E501
    lambda: __import__("sandboxguard.yamlconf").yamlconf.set_path("a: 1\n", [], 2),
    lambda: __import__("sandboxguard.yamlconf").yamlconf.set_path("a: 1\n", ["a"], object()),
    lambda: __import__("sandboxguard._core.atomicfile")._core.atomicfile.write_at(-1, "a/b", b""),
    lambda: __import__("sandboxguard.home_mode").home_mode.normalize_mode("sometimes"),
    lambda: __import__("sandboxguard._core.inputs")._core.inputs.as_mode("rw-r--r--"),
    lambda: __import__("sandboxguard.roots").roots.check_root("/"),
])
def test_bad_input_raises_an_input_error(call):
    with pytest.raises(errors.InputError):
        call()


def test_the_cli_prints_any_input_error_as_one_line_and_exits_2(monkeypatch, capsys):
    from sandboxguard_cli import main

    def refuses(_args):
        raise errors.InputError("thing %s: refused\nforged line" % "x")

    parser = main.build_parser(["scan", "/x"])
    args = parser.parse_args(["scan", "/x"])
    monkeypatch.setattr(main, "build_parser", lambda _argv: parser)
    monkeypatch.setattr(parser, "parse_args", lambda _argv: args)
    args.func = refuses
    assert main.main(["scan", "/x"]) == main.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == "sandboxguard scan: thing x: refused\\nforged line\n"


def test_the_cli_turns_a_refused_root_into_exit_2_without_a_traceback():
    import subprocess

    env = dict(os.environ, PYTHONPATH=scan.path("python/src"))
    done = subprocess.run([sys.executable, "-m", "sandboxguard_cli", "scan", "/"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr


class _Failed(Exception):
    pass


class _Module:
    def __init__(self):
        self.failed = None

    def fail_json(self, **result):
        self.failed = result
        raise _Failed()


def _report_module():
    sys.path.insert(0, scan.path(".cache/collections"))
    try:
        return pytest.importorskip("ansible_collections.sandboxguard.boundary.plugins.module_utils.report_module")
    finally:
        sys.path.pop(0)


def test_a_module_fails_its_task_with_the_line_of_any_input_error():
    report_module = _report_module()
    from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import roots

    module = _Module()
    with pytest.raises(_Failed), report_module.input_errors_fail(module, path="/x"):
        roots.check_root("/")
    assert module.failed["path"] == "/x" and module.failed["msg"].startswith("/: ")


def test_a_module_lets_other_errors_through():
    report_module = _report_module()
    module = _Module()
    with pytest.raises(ZeroDivisionError), report_module.input_errors_fail(module):
        _ = 1 / 0
    assert module.failed is None
