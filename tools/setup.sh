#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Set up a checkout on a fresh Debian machine, as root: Debian packages, the .venv from
# pinned requirements, the library installed into it, and the collection made visible
# to Ansible at .cache/collections/ansible_collections/sandboxguard/boundary.
# Idempotent: each step is skipped when its stamp matches.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log() { printf '[setup] %s\n' "$*" >&2; }

# 1. Debian packages (apt-get update once, only when something is missing).
mapfile -t pkgs < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' tools/apt-packages.txt)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    log "missing Debian packages: ${missing[*]}; run as root or install them: apt-get install ${missing[*]}"
    exit 2
  fi
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. The virtualenv, rebuilt when requirements change.
python=${SANDBOXGUARD_PYTHON:-python3}
req=requirements/dev.txt
stamp=.venv/.sandboxguard-requirements
want=$( { cat "$req"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "creating .venv with $("$python" --version) from $req (takes a minute or two the first time)"
  rm -rf .venv
  "$python" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r "$req"
  echo "$want" > "$stamp"
fi
# The library and CLI, editable so the venv always runs this checkout.
if ! .venv/bin/python -c 'import sandboxguard_cli, sandboxguard, sys; sys.exit(0 if sandboxguard.__file__.startswith(sys.argv[1]) else 1)' "$top/python/src" 2>/dev/null; then
  log "installing the sandboxguard library and CLI into .venv (pip install -e ./python)"
  .venv/bin/pip install -q -e ./python
fi

# 3. The collection, visible to Ansible from this checkout.
coll=.cache/collections/ansible_collections/sandboxguard
mkdir -p "$coll"
if [ "$(readlink "$coll/boundary" 2>/dev/null)" != "$top" ]; then
  ln -sfn "$top" "$coll/boundary"
fi
# The whole output, then its first line: `| head -n1` can close the pipe before ansible has
# written the rest, and ansible then dies of BrokenPipeError (seen in a fresh clone's setup).
version=$(.venv/bin/ansible --version)
log "ready: .venv (${version%%$'\n'*}), collection at $coll/boundary"
