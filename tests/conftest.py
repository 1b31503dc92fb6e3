# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Make the library importable from the checkout, whichever Python runs the tests."""
import os
import sys

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)
# tests/fake_engine.py (a fake Docker Engine API), for the unit and the integration tests
TESTS = os.path.dirname(os.path.abspath(__file__))
if TESTS not in sys.path:
    sys.path.insert(1, TESTS)
