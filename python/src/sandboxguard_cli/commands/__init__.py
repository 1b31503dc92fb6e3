# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""One module per subcommand group; each defines register(subparsers).

register() adds its subparser(s) and sets ``func`` (args -> exit code) on each.
main.py discovers the modules here, so adding a subcommand touches no other file.
"""
