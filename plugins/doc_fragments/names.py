# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rule every module's result follows for names (text.for_result), written once."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options: {}
notes:
  - Names in the result are exact whatever bytes they hold. A name that is valid UTF-8 is returned as it
    is (control characters and newlines included; JSON escapes them). A name holding bytes that are not
    UTF-8 (which ansible-core 2.19 and later refuse in a module result) is returned escaped for people,
    as C(\xNN) for each such byte, C(\n), C(\x1b), C(\uNNNN) for other non-printable characters and a
    backslash doubled, and a sibling key C(<key>_b64) holds the base64 of its bytes. For a list of names
    (C(roots), C(absent), ...) C(<key>_b64) is a parallel list with the base64 of every entry. Read a
    name as C(<key>_b64) when it is present, else as C(<key>).
  - Messages and warnings are one line each; a name in them is escaped as above.
"""
