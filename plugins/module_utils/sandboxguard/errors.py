# GENERATED from python/src/sandboxguard/errors.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The one base class for a request the library refuses: :class:`InputError`.

Every exception the library raises for bad input derives from it: a value of the wrong
kind, an option out of its choices, a path it will not act on (a symlink another user
could have planted, a system path, a missing directory it was asked to use), a file that
is not what it was asked to read. ``str()`` is one line naming what, why and the fix.
The adapters catch this one class: a module fails its task with that line
(``module_utils/report_module.input_errors_fail``), the CLI prints it and exits 2
(``sandboxguard_cli.main``). Each subclass keeps its own name, so a caller may still tell
them apart (``except RootRefused``), and each is a ``ValueError`` as it always was.

What is not bad input stays outside it: an engine that does not answer
(``docker_engine.EngineError``, a RuntimeError), a kernel without fanotify
(``fanotify.FanotifyUnavailable``, an OSError), a file changed while it was being fixed
(``fileops.ChangedUnderUs``). The two files that run standalone and import nothing from
the package keep their own (``crontab.CrontabExit``, ``fdmount.Refused``).

Standard library only; imports nothing.
"""

__all__ = ["InputError"]


class InputError(ValueError):
    """A request the library refuses; str() is one line naming what, why and the fix.

    ``path``: the path the refusal is about, when there is one (subclasses set it), else None.
    """

    path = None
