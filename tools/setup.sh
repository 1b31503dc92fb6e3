#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Set up a checkout on a fresh Debian machine, as root: Debian packages, the .venv from
# pinned requirements, the library installed into it, and the collection made visible
# to Ansible at .cache/collections/ansible_collections/sandboxguard/boundary.
# Idempotent: each step is skipped when its stamp matches.
#
#   tools/setup.sh          everything `make test` needs (requirements/dev.txt, every package)
#   tools/setup.sh --demo   only what `make demo` needs: the packages marked [demo] in
#                           tools/apt-packages.txt and a .venv from requirements/demo.txt
#                           (ansible-core alone); a .venv already made for the tests is a
#                           superset and is kept
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log() { printf '[setup] %s\n' "$*" >&2; }
mode=full
case "${1:-}" in
  "") ;;
  --demo) mode=demo ;;
  *) log "unknown option '$1': tools/setup.sh [--demo]"; exit 2 ;;
esac

# 1. Debian packages (apt-get update once, only when something is missing). A line is a
# package name, followed by [demo] when `make demo` needs it too.
if [ "$mode" = demo ]; then
  mapfile -t pkgs < <(sed -e 's/#.*//' -e '/\[demo\]/!d' -e 's/\[demo\]//' -e 's/[[:space:]]//g' tools/apt-packages.txt)
else
  mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/\[demo\]//' -e 's/[[:space:]]//g' -e '/^$/d' tools/apt-packages.txt)
fi
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

# 2. The virtualenv, rebuilt when requirements change (the stamp is the sha256 of the
# requirements files and the interpreter's version; demo.txt takes its pins from constraints.txt).
python=${SANDBOXGUARD_PYTHON:-python3}
stamp=.venv/.sandboxguard-requirements
stamp_of() { { cat "$@"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1; }
req=requirements/dev.txt
want=$(stamp_of "$req")
have=$(cat "$stamp" 2>/dev/null || true)
if [ "$mode" = demo ] && [ "$have" != "$want" ]; then
  req=requirements/demo.txt  # the test venv (above) is a superset; otherwise ansible-core alone
  want=$(stamp_of "$req" requirements/constraints.txt)
fi
if [ ! -x .venv/bin/python ] || [ "$have" != "$want" ]; then
  log "creating .venv with $("$python" --version) from $req ($([ "$mode" = demo ] && echo "half a minute" || echo "a minute or two") the first time)"
  rm -rf .venv
  "$python" -m venv .venv
  if [ "$mode" = full ]; then
    .venv/bin/pip install -q --upgrade pip
  fi
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
