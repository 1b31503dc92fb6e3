#!/usr/bin/env python3
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Give every file that can carry one a REUSE/SPDX license header (the extra checks' license-check).

    python3 tools/license_headers.py            # add or complete the headers, name each file changed
    python3 tools/license_headers.py --check    # exit 1 naming each file that would change
    python3 tools/license_headers.py PATH...    # only these files

The header is the project's own, in the form REUSE and antsibull-nox's license-check read (the
lines of HEADERS below): a copyright line naming the sandboxguard contributors and an SPDX license
identifier, Apache-2.0 for Python outside the Ansible plugins and python/, GPL-3.0-or-later (with
the GPL line the Ansible plugins carry) for the plugins, roles, playbooks and everything else,
in the file's own comment syntax (``#``; ``<!-- -->`` in Markdown; ``..`` in RST; a Jinja comment
whose ``-#}`` keeps the rendered file unchanged), after a ``#!`` line or a YAML ``---``. A file
that has a header keeps its license; the colon form of the copyright line becomes the ``(c)`` form
(REUSE does not read the colon form, antsibull-nox refuses it) and a GPL line without its SPDX
identifier gets one.

Files that cannot carry a comment (images, JSON), are written by tools (the changelog, pip
freeze) or must not change (images/: their bytes are the test images' recipe hash) are left
alone here: REUSE.toml and ``.license`` files beside them say their license.
plugins/module_utils/sandboxguard/ is the generated copy of python/src/sandboxguard: fix the
source and run tools/sync_module_utils.py.
"""
import argparse
import fnmatch
import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOLDER = "sandboxguard contributors"
# The tags spelled in parts: this file's own header stays the only license REUSE and
# antsibull-nox's license-check find in it.
COPYRIGHT = "Copy" "right (c) " + HOLDER
COLON_COPYRIGHT = "Copy" "right: " + HOLDER
SPDX = "SPDX-License-" "Identifier: "
GPL_LINE = ("GNU General Public " "License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or "
            "https://www.gnu.org/licenses/gpl-3.0.txt)")
HEADERS = {
    "Apache-2.0": [COPYRIGHT, SPDX + "Apache-2.0"],
    "GPL-3.0-or-later": [COPYRIGHT, GPL_LINE, SPDX + "GPL-3.0-or-later"],
}
# Not touched here (REUSE.toml or a .license file covers them, or they are license texts).
LEFT_ALONE = [
    "LICENSE", "LICENSES/*", "python/LICENSE", "*.png", "*.json", "*.license", "CHANGELOG.rst",
    "changelogs/changelog.yaml", "changelogs/.plugin-cache.yaml", "changelogs/fragments/*",
    "requirements/constraints.txt", "benchmarks/results/*", "images/*", "plugins/module_utils/sandboxguard/*",
]
HASH_COMMENT = (".py", ".sh", ".yml", ".yaml", ".toml", ".cfg", ".ini", ".txt", ".recipe")
HASH_NAMES = ("Makefile", ".gitignore", ".ansible-lint", "run")
SEARCHED_LINES = 12


def license_for(path):
    """The license of a file without a header: README.md's rule (the Python library, its CLI
    and the project's own Python tooling Apache-2.0; the Ansible content GPL-3.0-or-later)."""
    if path.startswith("python/"):
        return "Apache-2.0"
    if path.endswith(".py") and not path.startswith("plugins/"):
        return "Apache-2.0"
    return "GPL-3.0-or-later"


def comment_style(path):
    name = os.path.basename(path)
    if path.endswith(".md"):
        return "markdown"
    if path.endswith(".rst"):
        return "rst"
    if path.endswith(".j2"):
        return "jinja"
    if path.endswith(HASH_COMMENT) or name in HASH_NAMES:
        return "hash"
    return None


def block(style, lines):
    if style == "hash":
        return ["# " + line for line in lines]
    if style == "rst":
        return [".. " + line for line in lines] + [""]
    if style == "markdown":
        return ["<!--", *lines, "-->", ""]
    # A Jinja comment: -#} eats the newline after it, so the rendered file is what it was
    return ["{#- " + lines[0], *("   " + line for line in lines[1:]), "-#}"]


def fixed(path, text):
    """The text with its header completed (or added); None when the file cannot carry one."""
    style = comment_style(path)
    if style is None:
        return None
    lines = text.split("\n")
    head = lines[:SEARCHED_LINES]
    for i, line in enumerate(head):
        if COLON_COPYRIGHT in line:
            lines[i] = line.replace(COLON_COPYRIGHT, COPYRIGHT)
        if line.strip() == "# Apache-2.0 (see python/LICENSE)":
            lines[i] = "# " + SPDX + "Apache-2.0"
    head = lines[:SEARCHED_LINES]
    if any(COPYRIGHT in line for line in head):
        has_spdx = any(SPDX.strip() in line for line in head)
        for i, line in enumerate(head):
            if GPL_LINE in line and not has_spdx:
                prefix = line[:line.index(GPL_LINE)]
                lines.insert(i + 1, prefix + SPDX + "GPL-3.0-or-later")
                break
        return "\n".join(lines)
    header = block(style, HEADERS[license_for(path)])
    at = 0
    # after an interpreter line, a YAML document start, or the `# controller:` line that names a
    # requirements file's ansible-core and Python (docs/testing.md "Controllers")
    # (never in a template: there the comment comes first, and its -#} eats only the newline after it)
    if style != "jinja" and lines and (lines[0].startswith("#!") or (style == "hash" and lines[0] == "---")
                                       or lines[0].startswith("# controller: ")):
        at = 1
    return "\n".join(lines[:at] + header + lines[at:])


def tracked():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=TOP, capture_output=True, text=True,
                         check=True).stdout
    return sorted(set(out.split()))


def left_alone(path):
    return any(fnmatch.fnmatch(path, pattern) for pattern in LEFT_ALONE)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 naming each file that would change")
    parser.add_argument("paths", nargs="*", help="files relative to the repository (default: every file git knows)")
    args = parser.parse_args(argv)
    changed = []
    for path in args.paths or tracked():
        full = os.path.join(TOP, path)
        if left_alone(path) or not os.path.isfile(full) or os.path.islink(full) or os.path.getsize(full) == 0:
            continue
        with open(full, encoding="utf-8") as handle:
            text = handle.read()
        new = fixed(path, text)
        if new is None or new == text:
            continue
        changed.append(path)
        if not args.check:
            with open(full, "w", encoding="utf-8") as handle:
                handle.write(new)
    for path in changed:
        print("%s %s" % ("needs a header:" if args.check else "header:", path))
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())

