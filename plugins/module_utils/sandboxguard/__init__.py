# GENERATED from python/src/sandboxguard/__init__.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""sandboxguard: close the holes an agent sandbox leaves in its host.

Standard library only, relative imports only, Python >= 3.9: this package is also
shipped to fleet hosts as Ansible module_utils (see tools/sync_module_utils.py).

The public API (what harnesses may import, kept stable) is the table in python/README.md;
every other name is internal. Every operation returns the report envelope of
``sandboxguard.report``; docs/architecture.md maps the layers.
"""

__version__ = "1.2.0"

if type(__loader__).__name__ == "zipimporter":  # an AnsiballZ payload: Python compiles every module again at every run
    from ._core import bytecode as _bytecode

    _bytecode.install(__name__, __loader__)
