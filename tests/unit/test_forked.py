# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""forked.fork_json: a stop signal that reaches a forked walker at any instant unwinds it
and is reported, never swallowed."""
import os
import signal

from sandboxguard._core import forked

_KILL_IN_CHILD = []


def _hook():
    # Runs in the child among CPython's after-fork hooks, before fork_json's own code:
    # the earliest instant a SIGTERM from the parent (stop_child) can arrive.
    if _KILL_IN_CHILD:
        os.kill(os.getpid(), signal.SIGTERM)


os.register_at_fork(after_in_child=_hook)


def test_sigterm_during_the_childs_after_fork_hooks_stops_the_walker_and_is_reported(capfd):
    # A worker process has Stopped as its SIGTERM handler, and its children inherit it.
    previous = signal.signal(signal.SIGTERM, forked._raise_stopped)
    _KILL_IN_CHILD.append(True)
    try:
        pid, read_fd = forked.fork_json(lambda: {"walked": True})
    finally:
        _KILL_IN_CHILD.clear()
        signal.signal(signal.SIGTERM, previous)
    result = forked.read_json(pid, read_fd, None)
    # Before: the signal ran the inherited handler inside the after-fork hooks, CPython
    # printed "Exception ignored in: ..." and the walk ran to the end as if never stopped.
    assert result == {"worker_error": "Stopped: stopped by signal %d" % signal.SIGTERM}
    assert "Exception ignored" not in capfd.readouterr().err


def test_fork_json_leaves_the_parents_signal_mask_as_it_was():
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    pid, read_fd = forked.fork_json(lambda: {"ok": 1})
    assert forked.read_json(pid, read_fd, None) == {"ok": 1}
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
