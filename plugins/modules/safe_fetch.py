#!/usr/bin/python
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# This is a virtual module: it is entirely implemented by the action plugin of the same
# name (plugins/action/safe_fetch.py), which runs on the controller. This file carries
# its documentation for ansible-doc, like ansible.builtin.fetch.

DOCUMENTATION = r"""
module: safe_fetch
short_description: Fetch a file from a sandbox host with denylist, realpath and size checks
version_added: 1.0.0
description:
  - Works like M(ansible.builtin.fetch) for one file, but treats the target as an untrusted
    sandbox (an agent's SSH box or container) whose files should reach the operator without
    becoming a way to read its credentials or flood the controller.
  - Before any byte moves, O(src) must be absolute and normalised and must not lie under the
    denylist - system prefixes C(/etc), C(/proc), C(/sys), C(/dev), C(/root), C(/boot),
    C(/var/log), C(/var/lib), C(/var/run) and C(/run) (except inside O(remote_home)), and the
    credential stores of the library's one list (C(sandboxguard.credentials)), a superset of the
    Hermes agent's own denylists - home stores such as C(.ssh), C(.aws), C(.gnupg), C(.kube),
    C(.docker), C(.config), C(.azure), C(.gcloud), C(.password-store), C(.local/share/keyrings),
    C(.cargo/credentials.toml), C(.netrc), C(.pgpass), C(.npmrc), C(.pypirc), C(.git-credentials),
    C(.env), C(Library/Keychains) and the browser profiles, and the Hermes home's own stores
    (C(.env), C(auth.json), C(auth.lock), C(auth/google_oauth.json), C(config.yaml), C(credentials),
    C(mcp-tokens), C(pairing), C(sessions), C(browser-profile), C(state.db) and C(kanban.db) with
    their C(-wal), C(-shm) and C(-journal) files, C(cache/bws_cache.json) and the others Hermes
    denies) below any C(.hermes), below O(remote_hermes_home) and below each profile of either.
  - The path is then resolved inside the sandbox with C(readlink -f) and the resolved path is
    checked again; a path that cannot be resolved is refused. A symlink to C(~/.ssh/id_rsa) is
    therefore refused without transferring a byte.
  - Inside the sandbox only a regular file with one link is read (FIFOs, devices, directories
    and hard-link aliases are refused before they are opened), from the one descriptor whose
    path and type were checked, so a name swapped after the check cannot change what is read.
    At most O(max_bytes)+1 bytes are read, so C(/dev/zero) or a huge file cannot flood the
    controller. The payload travels base64-encoded on lines tagged with a random marker, so
    login-shell noise cannot corrupt it, and is decoded strictly.
  - The file lands atomically in O(dest) (temporary file, fsync, rename) with mode C(0644),
    or C(0600) with O(private=true); it is never setuid or setgid and never executable unless
    O(executable=true); no extended attributes are carried. A refused fetch writes nothing.
  - The transfer uses the task's connection (C(ansible.builtin.ssh), C(community.docker.docker),
    C(ansible.builtin.local), ...) and needs only a POSIX C(sh) with C(readlink), C(stat),
    C(head), C(base64), C(od), C(sed) and C(/proc) on the target (GNU coreutils or busybox).
    Python is not needed on the target.
  - The same checks are available outside Ansible as C(sandboxguard fetch) (paramiko, or the
    Engine API's exec for a container) and as the library function C(sandboxguard.fetch.fetch).
extends_documentation_fragment:
  - sandboxguard.boundary.names
author:
  - sandboxguard contributors (@sandboxguard)
options:
  src:
    description:
      - The file inside the sandbox, as an absolute, normalised path (no C(.), C(..), C(//) or
        trailing C(/)), or C(~/...) when O(remote_home) is given (read against it, as the Hermes
        agent does). Relative paths are refused, and so is C(~/...) when O(remote_home) is unset.
    type: str
    required: true
  dest:
    description:
      - Directory on the controller the file lands in; created (mode C(0755)) when missing, and
        only when a file is about to land - a refused fetch, strict mode and check mode create
        nothing. Relative paths are relative to the playbook.
      - It is opened component by component and the file is written below that descriptor; a symbolic link on
        the way is followed only where only root (or the controller's user) could have made it, and one another
        user could have planted refuses the fetch, naming the real path.
      - Put C({{ inventory_hostname }}) in it to keep one directory per host; unlike
        M(ansible.builtin.fetch), no host or path tree is added.
    type: path
    required: true
  name:
    description:
      - File name inside O(dest). Defaults to the basename of O(src).
      - Control characters and format characters become C(_), and a leading C(.) becomes C(_)
        so nothing lands hidden.
    type: str
  max_bytes:
    description:
      - Refuse files larger than this many bytes. At most O(max_bytes)+1 bytes are ever read
        inside the sandbox.
    type: int
    default: 52428800
  remote_home:
    description:
      - Home directory of the sandbox user. When given, credential names are matched below it,
        and a home of C(/root) or below C(/var/lib) is exempt from its system prefix.
      - When unset (the default), the home is unknown; credential names are refused at any depth
        of the path and C(/root) stays denylisted. This is the conservative setting for
        sandboxes that cannot confirm their home.
    type: str
  remote_hermes_home:
    description:
      - The sandbox's C(HERMES_HOME) when it is not C(~/.hermes) (for example C(/opt/data)). The
        Hermes credential stores are then refused below it (and below its C(profiles/<name>)) as
        they are below every C(.hermes) directory. It is resolved inside the sandbox too, and the
        resolved path is checked against both spellings.
    type: str
    version_added: 1.0.0
  strict:
    description:
      - Strict mode. Nothing is ever fetched; the task reports the refusal (and fails unless
        O(fail_on_refused=false)). Use it where a fetched copy could bypass a later review gate.
    type: bool
    default: false
  private:
    description: Land the file with mode C(0600) instead of C(0644).
    type: bool
    default: false
  executable:
    description:
      - Add execute bits matching the read bits (C(0755), or C(0700) with O(private=true)).
        Setuid and setgid are never carried.
    type: bool
    default: false
  fail_on_refused:
    description:
      - Fail the task when the fetch is refused. With V(false) the task succeeds, reports
        RV(refused), and writes nothing.
    type: bool
    default: true
  open_timeout:
    description:
      - Seconds the sandbox program waits for the open of the file. Opening a FIFO swapped in
        between the type check and the open would block; after this time the program is killed
        and the fetch is refused.
    type: int
    default: 5
attributes:
  action:
    description: Runs on the controller as an action plugin; the target only runs C(sh).
    support: full
  async:
    description: Cannot run asynchronously.
    support: none
  bypass_host_loop:
    description: Runs once per host.
    support: none
  check_mode:
    description:
      - Runs every check and the transfer, reports whether the file in O(dest) would change,
        and writes nothing.
    support: full
  diff_mode:
    description: Fetched files are usually binary; no diff is shown.
    support: none
  platform:
    description: Targets with a POSIX C(sh) and C(/proc) (Linux; GNU coreutils or busybox).
    platforms: posix
    support: full
notes:
  - The checks inside the sandbox rely on the sandbox's own C(sh), C(readlink), C(stat) and
    C(head). A sandbox that replaces those tools can lie to them; the controller-side checks
    (names before any transfer, strict decoding, size of what arrived, sanitised landing)
    hold regardless.
  - With C(become), the program runs as the become user; the denylist still applies.
seealso:
  - module: ansible.builtin.fetch
"""

EXAMPLES = r"""
- name: Fetch each sandbox host's report into a per-host directory
  hosts: agent_sandboxes
  gather_facts: false
  tasks:
    - name: Bring reports/summary.pdf back from every host
      sandboxguard.boundary.safe_fetch:
        src: /home/agent/work/reports/summary.pdf
        dest: "{{ playbook_dir }}/fetched/{{ inventory_hostname }}"
        remote_home: /home/agent
      register: report

    - name: Show where each report landed
      ansible.builtin.debug:
        msg: "{{ inventory_hostname }}: {{ report.dest }} ({{ report.size }} bytes, sha256 {{ report.sha256 }})"

- name: Fetch from containers over the docker connection, keep going when one is refused
  hosts: sandbox_containers
  gather_facts: false
  vars:
    ansible_connection: community.docker.docker
  tasks:
    - name: Fetch the chart, privately, at most 10 MiB
      sandboxguard.boundary.safe_fetch:
        src: /workspace/out/chart.png
        dest: "fetched/{{ inventory_hostname }}"
        max_bytes: 10485760
        private: true
        fail_on_refused: false
      register: chart

    - name: List the refusals
      ansible.builtin.debug:
        msg: "{{ inventory_hostname }} refused: {{ chart.refused }}"
      when: chart.refused is not none

- name: Strict mode, for example in a review pipeline that must never pull files
  hosts: agent_sandboxes
  gather_facts: false
  tasks:
    - name: Check the path and report what would be fetched, fetching nothing
      sandboxguard.boundary.safe_fetch:
        src: /home/agent/out/report.txt
        dest: /srv/reports
        strict: true
        fail_on_refused: false
"""

RETURN = r"""
dest:
  description: Path of the landed file on the controller (also set in check mode); null when refused.
  returned: always
  type: str
  sample: /srv/fetched/web-01/summary.pdf
size:
  description: Size in bytes of the fetched file; null when refused.
  returned: always
  type: int
  sample: 48213
sha256:
  description: SHA-256 of the fetched bytes, hex; null when refused.
  returned: always
  type: str
  sample: 5f2b0a4e0c1d1f8a52c2f0a2e6b5c8d54a8f0cde0c1c1f5b5c22a9b2d1d0e3a4
mode:
  description: Mode the file landed with; null when refused.
  returned: always
  type: str
  sample: "0644"
remote_mode:
  description:
    - Permission bits of the file inside the sandbox, setid bits included (which were not carried).
    - Null when the fetch was refused before the file was examined.
  returned: always
  type: str
  sample: "04755"
refused:
  description: Why the fetch was refused, naming the path and the rule; null when it was not.
  returned: always
  type: str
  sample: "resolved to /home/agent/.ssh/id_rsa: /home/agent/.ssh/id_rsa is a credential directory .ssh under the sandbox home /home/agent"
refused_code:
  description:
    - Machine-readable refusal, one of C(strict), C(not_absolute), C(not_normalised), C(control_character),
      C(not_utf8), C(denylisted), C(unresolvable), C(missing), C(swapped), C(fifo), C(not_regular),
      C(unreadable), C(hard_link), C(too_large), C(unverifiable), C(missing_tool), C(changed),
      C(decode), C(protocol). Null when not refused.
  returned: always
  type: str
  sample: denylisted
stage:
  description:
    - Where the fetch ended, one of C(strict), C(pass1) (name check), C(resolve), C(pass2) (check of
      the resolved name), C(read), C(decode), C(done).
  returned: always
  type: str
  sample: pass2
resolved:
  description: The path as resolved inside the sandbox by C(readlink -f); null before resolution.
  returned: always
  type: str
  sample: /home/agent/.ssh/id_rsa
resolved_home:
  description: O(remote_home) as resolved inside the sandbox; the resolved path is checked against both.
  returned: when O(remote_home) is set and the path was resolved
  type: str
  sample: /data/agent
resolved_hermes_home:
  description: O(remote_hermes_home) as resolved inside the sandbox; the resolved path is checked against both.
  returned: when O(remote_hermes_home) is set and the path was resolved
  type: str
  sample: /opt/data
path:
  description: The absolute path asked for, O(src) with C(~) read against O(remote_home); null when O(src) is not absolute.
  returned: always
  type: str
  sample: /home/agent/out/report.pdf
fetched:
  description: Whether a file landed in O(dest) (false in check mode).
  returned: always
  type: bool
  sample: true
bytes_received:
  description: Bytes the connection delivered from the sandbox, protocol and noise included.
  returned: always
  type: int
  sample: 65120
src:
  description: The requested path.
  returned: always
  type: str
  sample: /home/agent/work/reports/summary.pdf
max_bytes:
  description: The size cap that applied.
  returned: always
  type: int
  sample: 52428800
"""
