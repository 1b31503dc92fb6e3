# Copyright: sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
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
    type: list
    elements: path
    required: true
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
    type: float
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

    RETURN = r"""
roots:
  description: The resolved paths that were walked.
  returned: always
  type: list
  elements: str
  sample: ["/srv/hermes/sandboxes/docker/task1/workspace"]
complete:
  description: False when the budget ran out before the walk finished.
  returned: always
  type: bool
dry_run:
  description: True in check mode; RV(files) then says what would change.
  returned: always
  type: bool
files:
  description:
    - One entry per file (or directory, for ownership return) that was, or in check mode
      would be, changed. At most O(max_listed) entries.
  returned: always
  type: list
  elements: dict
  contains:
    path: {description: Path of the file., type: str, returned: always}
    type: {description: C(file) or C(directory)., type: str, returned: always}
    mode_before: {description: Permission bits before, octal., type: str, returned: always, sample: "04755"}
    mode_after: {description: Permission bits after (or that would be after), octal., type: str, returned: always, sample: "0755"}
    caps_before: {description: File capabilities before, as getcap prints them, or null., type: str, returned: always, sample: "cap_net_raw=ep"}
    uid: {description: Owner uid before., type: int, returned: always}
    gid: {description: Group gid before., type: int, returned: always}
    nlink: {description: Number of hard links of the file., type: int, returned: always}
    actions: {description: What was done, from C(chown), C(setuid), C(setgid), C(caps)., type: list, elements: str, returned: always}
    error: {description: Why the change failed, when it did., type: str, returned: when a change failed}
counts:
  description: Totals for the walk.
  returned: always
  type: dict
  sample: {dirs: 12, files: 340, setid: 1, caps: 1, chown: 0, hardlinks: 0, special: 1, symlinks: 3, skipped: 0, errors: 0, unlisted: 0}
pruned_mounts:
  description: Mount points below the roots that were not walked.
  returned: always
  type: list
  elements: str
errors:
  description: Per-file errors (at most O(max_listed)), each with C(path), C(op) and C(error).
  returned: always
  type: list
  elements: dict
elapsed:
  description: Seconds the walk took.
  returned: always
  type: float
"""
