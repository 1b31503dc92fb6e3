# GENERATED from python/src/sandboxguard/transport_local.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""An exec channel into the local machine (subprocess), for tests and local sandboxes.

A ``LocalExec()`` instance has the shape ``fetch.fetch`` expects: argv -> (rc, stdout,
stderr). It reads at most ``max_output`` bytes of stdout and kills the command beyond that, like the
ssh and Docker transports do.
"""
import tempfile

from ._core.proc import DEVNULL, PIPE, TimeoutExpired, popen
from ._fetch.policy import DEFAULT_MAX_BYTES, output_limit

__all__ = ["LocalExec"]


class LocalExec:
    """Run argv locally; optional ``prefix`` (e.g. ``["runuser", "-u", "agent", "--"]``)."""

    def __init__(self, prefix=None, max_output=None, timeout=120):
        self.prefix = list(prefix or [])
        self.max_output = output_limit(DEFAULT_MAX_BYTES) if max_output is None else max_output
        self.timeout = timeout

    def __call__(self, argv):
        # stderr goes to a file: a pipe that fills up while stdout is read would deadlock.
        with tempfile.TemporaryFile() as errfile:
            proc = popen(self.prefix + list(argv), stdin=DEVNULL, stdout=PIPE, stderr=errfile)
            try:
                out = proc.stdout.read(self.max_output + 1)
                if len(out) > self.max_output:
                    proc.kill()
                rc = proc.wait(timeout=self.timeout)
            except TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            finally:
                proc.stdout.close()
            errfile.seek(0)
            err = errfile.read(64 * 1024)
        return rc, out, err
