# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The installed-collection tests reuse the fleet of tests/integration (fleet_fixtures.py)."""
import os
import sys

INTEGRATION = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration")
if INTEGRATION not in sys.path:
    sys.path.insert(0, INTEGRATION)
