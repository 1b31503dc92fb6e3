# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Options and notes shared by the modules that walk a sandbox tree."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  paths:
    description:
      - Absolute paths of the directories (or single regular files) to walk.
      - A path that is itself a symlink, a relative path, a missing path, C(/) and system
        paths such as C(/usr), C(/etc), C(/home) or C(/var/lib) are refused before anything
        is walked.
      - O(paths) or O(paths_b64) (or both) must name at least one path.
    type: list
    elements: path
    default: []
  paths_b64:
    description:
      - More paths to walk, each as the base64 of the path's bytes, as the C(roots_b64) of an audit
        or walk result carries them. A path that is not UTF-8 can only be given this way (a module
        argument is text), and nothing in it is expanded (no C(~), no C($VAR), which O(paths) expands).
      - Refused exactly as O(paths) are.
    type: list
    elements: str
    default: []
    version_added: 1.1.0
  one_file_system:
    description:
      - Stay on the filesystem of each path (like C(find -xdev)); directories on another
        filesystem are not walked and are listed in RV(pruned_mounts).
    type: bool
    default: true
  prune_mounts:
    description:
      - Do not walk into mount points nested below a path, read from C(/proc/self/mountinfo).
        This also catches a bind mount of the same filesystem, which O(one_file_system) alone
        misses. Pruned mount points are listed in RV(pruned_mounts).
    type: bool
    default: true
  budget:
    description:
      - Seconds the walk may take. When it runs out the module returns what it did so far
        with RV(complete=false) and a warning; run it again to continue. V(0) means no limit.
      - A finite number of seconds, V(0) or more (a number or a numeric string); NaN, infinity, negatives and
        words fail the task with the library's one budget message.
    type: raw
    default: 10
  max_listed:
    description:
      - List at most this many findings and errors; the rest are counted in RV(counts).
    type: int
    default: 1000
  fail_on_errors:
    description:
      - Fail the task when a file could not be changed (for example an immutable file or a
        file that vanished mid-walk). The walk still goes on past such a file; with V(false)
        each error becomes a warning naming the path.
    type: bool
    default: true
notes:
  - The walk never follows a symlink, never opens a file for reading, changes only regular
    files, and changes each through a handle proven to be the inode it scanned, so a tree
    rewritten while it is walked cannot redirect a change outside it.
  - Runs on the target as root (C(become=true)) to change root-owned files.
  - Hard links are changed like any other file (the bits live on the inode, so every name
    of it loses them); each finding reports its C(nlink).
requirements:
  - Linux with C(/proc) mounted; Python 3.9 or later on the target.
seealso:
  - name: sandboxguard CLI
    description: The same walk from a shell, C(sandboxguard scan|strip PATH).
    link: https://github.com/sandboxguard/boundary/blob/main/README.md
"""
