# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The `sandboxguard` command line (not copied into module_utils)."""
