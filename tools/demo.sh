#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# make demo: the problem and the fix, on this machine, with a real container.
#
# 1. A root container writes into a bind mount of a Hermes-style sandbox directory: one
#    run hardened (--cap-drop ALL, no-new-privileges, read-only root) still leaves a
#    setuid-root binary on the host; one with Docker's default capabilities leaves a
#    cap_net_raw=ep file as well (setcap, CAP_SETFCAP being among those defaults).
# 2. `sandboxguard scan` finds them (exit 1).
# 3. The remediation playbook (sandboxguard.boundary.remediate) strips them.
# 4. `sandboxguard scan` comes back clean (exit 0); owners and contents are unchanged.
#
# Needs only what `tools/setup.sh --demo` installs (Docker, busybox-static, libcap2-bin, a
# .venv with ansible-core) and an engine (tools/docker-engine.sh): the containers run from an
# image made in a second from this host's busybox and setcap (tools/demo-image.sh), never
# from the test images. SANDBOXGUARD_DEMO_IMAGE names another image with sh, cp, chmod,
# mkdir, stat, id and setcap.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export PATH=$top/.venv/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=$top/.cache/collections ANSIBLE_CONFIG=$top/ansible.cfg
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
image=${SANDBOXGUARD_DEMO_IMAGE:-$(bash tools/demo-image.sh)}

demo=$top/.cache/demo
workspace=$demo/hermes/sandboxes/docker/demo-task/workspace
rm -rf "$demo"
mkdir -p "$workspace"

say "1. A hardened root container (--cap-drop ALL, no-new-privileges, read-only) writes into the bind mount $workspace"
docker run --rm --network none --cap-drop ALL --security-opt no-new-privileges --read-only \
  --mount "type=bind,source=$workspace,target=/workspace" "$image" \
  sh -c 'mkdir -p /workspace/dist && cp /bin/sh /workspace/dist/rootshell && chmod 4755 /workspace/dist/rootshell && echo "  container: wrote /workspace/dist/rootshell mode $(stat -c %a /workspace/dist/rootshell) as uid $(id -u)"'

say "   ... and one with Docker's default capabilities (CAP_SETFCAP is among them) sets a file capability"
docker run --rm --network none \
  --mount "type=bind,source=$workspace,target=/workspace" "$image" \
  sh -c 'cp /bin/true /workspace/dist/netprobe && setcap cap_net_raw=ep /workspace/dist/netprobe && echo "  container: setcap cap_net_raw=ep /workspace/dist/netprobe"'

echo "  on the host:"
ls -l "$workspace/dist" | sed 's/^/    /'
if command -v getcap >/dev/null; then getcap -r "$workspace" | sed 's/^/    getcap: /'; fi
before=$(cd "$workspace/dist" && stat -c '%n %U:%G' ./* && sha256sum ./*)

say "2. Audit: sandboxguard scan $workspace"
set +e
sandboxguard scan "$workspace"
rc=$?
set -e
echo "  exit code $rc (1 = findings)"
[ "$rc" -eq 1 ] || { echo "demo: expected the scan to find the files (exit 1), got $rc" >&2; exit 1; }

say "3. Remediate: ansible-playbook sandboxguard.boundary.remediate (ownership, setid and caps under the path given)"
echo "  sandboxguard_paths names the workspace and sandboxguard_docker=never keeps the engine out of it: on a fleet"
echo "  the default (auto) also asks every container engine for the sandboxes' bind mounts."
ansible-playbook -i localhost, -c local -e ansible_python_interpreter=/usr/bin/python3 sandboxguard.boundary.remediate \
  -e "{\"sandboxguard_paths\": [\"$workspace\"], \"sandboxguard_docker\": \"never\"}" --diff

say "4. Audit again"
sandboxguard scan "$workspace"
echo "  exit code 0 (clean)"
ls -l "$workspace/dist" | sed 's/^/    /'
after=$(cd "$workspace/dist" && stat -c '%n %U:%G' ./* && sha256sum ./*)
if [ "$before" != "$after" ]; then
  echo "demo: owners or contents changed:" >&2; diff <(echo "$before") <(echo "$after") >&2; exit 1
fi
echo "  owners and contents unchanged (sha256 and owner compared before and after)"
say "Done. Next, in any shell (these lines work as printed):"
printf '  $ %s\n' \
  ". $(printf '%q' "$top/.venv/bin/activate")" \
  "sandboxguard strip --help" \
  "ANSIBLE_COLLECTIONS_PATH=$(printf '%q' "$top/.cache/collections") ansible-doc sandboxguard.boundary.setid_strip"
