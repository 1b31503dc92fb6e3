#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Run `ansible-test sanity` on this checkout, offline but for PyPI.
#
#   tools/ansible-test-sanity.sh                  # every sanity test, target Pythons 3.9..3.13
#   tools/ansible-test-sanity.sh --test pep8      # extra arguments go to ansible-test sanity
#   SANDBOXGUARD_SANITY_PYTHONS="3.11" tools/ansible-test-sanity.sh   # fewer Pythons, faster
#   SANDBOXGUARD_SANITY_VENV=.cache/controllers/2.21 tools/ansible-test-sanity.sh
#       # another controller: that venv's ansible-test (tools/run-tests.sh makes these venvs)
#
# Three things ansible-test needs that a plain checkout does not give it (docs/testing.md):
# 1. The collection at a REAL path .../ansible_collections/sandboxguard/boundary: it resolves
#    its cwd, so the symlink in .cache/collections does not do. We copy the tracked and the
#    new, not ignored files (`git ls-files -co --exclude-standard`) into
#    .cache/sanity/ansible_collections/sandboxguard/boundary, afresh each run, in a git
#    repository of its own so ansible-test lists exactly the copied set.
# 2. pip for the virtual environments it creates `--without-pip`: it runs a get-pip.py that
#    it downloads from its CI file server (not reachable here) and caches as
#    ~/.ansible/test/cache/get_pip_<version>.py. We put a stand-in there that installs pip
#    with the venv's own ensurepip, then upgrades to the pinned version from PyPI.
# 3. The target Pythons on PATH as pythonX.Y: pyenv's (or SANDBOXGUARD_SANITY_PYTHONS's) bin
#    directories, after the controller venv's bin so the controller Python stays that venv's.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log() { printf '[sanity] %s\n' "$*" >&2; }
venv=$top/.venv
# The controller: the venv whose ansible-test runs (default .venv, ansible-core 2.19).
controller=$(cd "${SANDBOXGUARD_SANITY_VENV:-$venv}" 2>/dev/null && pwd) || controller=${SANDBOXGUARD_SANITY_VENV:-$venv}
pythons=${SANDBOXGUARD_SANITY_PYTHONS:-3.9 3.10 3.11 3.12 3.13}

if [ ! -x "$venv/bin/python" ]; then
  log "no $venv/bin/python; run tools/setup.sh (make setup) first"
  exit 2
fi
if [ ! -x "$controller/bin/ansible-test" ]; then
  log "no $controller/bin/ansible-test; run tools/setup.sh (make setup) first, or make that venv"
  exit 2
fi
core=$("$controller/bin/python" -c 'from ansible.release import __version__; print(".".join(__version__.split(".")[:2]))')
# One copy per controller version, so two controllers can run side by side.
dest=$top/.cache/sanity/$core/ansible_collections/sandboxguard/boundary

# --- 1. the collection at a real ansible_collections path -----------------------------
# ansible-test keeps its delegation venv under tests/output/.tmp: carry it over the fresh copy.
keep=$top/.cache/sanity/$core/output.keep
rm -rf "$keep"
if [ -d "$dest/tests/output" ]; then mv "$dest/tests/output" "$keep"; fi
rm -rf "$dest"
mkdir -p "$dest"
# What ships: the files of the checkout minus galaxy.yml's build_ignore, matched the way
# ansible-galaxy matches them (fnmatch against the path and each parent directory). tools/,
# requirements/, images/ ... are not part of the collection; ruff checks the Python among
# them in its own layer.
git ls-files -z -co --exclude-standard | "$venv/bin/python" -c '
import fnmatch, os, sys, yaml
with open("galaxy.yml") as handle:
    ignore = yaml.safe_load(handle).get("build_ignore") or []
for path in sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\0"):
    if not path or not os.path.lexists(path):  # deleted in the work tree but still tracked
        continue
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    if any(fnmatch.fnmatch(p, pattern) for p in prefixes for pattern in ignore):
        continue
    sys.stdout.buffer.write(path.encode("utf-8", "surrogateescape") + b"\0")
' | rsync -a --from0 --files-from=- ./ "$dest/"
# A git repository of its own (no commit needed: ansible-test lists `git ls-files --cached
# --others --exclude-standard`). Without it git finds /work's checkout above, where .cache/
# is ignored, and ansible-test sees no files at all ("All targets skipped").
git -C "$dest" -c init.defaultBranch=main init -q
# .gitignore is in build_ignore, so say here what ansible-test writes into the tree.
printf '%s\n' '/tests/output/' >"$dest/.git/info/exclude"
log "copied $(find "$dest" -type f -not -path '*/.git/*' | wc -l) files to ${dest#"$top"/}"
if [ -d "$keep" ]; then mkdir -p "$dest/tests" && mv "$keep" "$dest/tests/output"; fi

# --- 2. the get-pip stand-in ----------------------------------------------------------
# The pip version ansible-test bootstraps is a constant in its python_requirements.py
# (get_venv_packages: default_packages = dict(pip='24.2')).
pip_version=$("$controller/bin/python" - <<'EOF'
import re, inspect
from ansible_test._internal import python_requirements as pr
match = re.search(r"pip='([0-9.]+)'", inspect.getsource(pr.get_venv_packages))
print(match.group(1) if match else "")
EOF
)
if [ -z "$pip_version" ]; then
  log "cannot find the pip version ansible-test bootstraps (ansible_test/_internal/python_requirements.py changed?)"
  exit 2
fi
cache=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
marker='# sandboxguard get-pip stand-in'
if [ -e "$cache" ] && ! grep -qF "$marker" "$cache"; then
  log "using the existing (real) get-pip script at $cache"
else
  mkdir -p "$(dirname "$cache")"
  cat >"$cache.tmp.$$" <<EOF
$marker (written by tools/ansible-test-sanity.sh; see docs/testing.md).
"""Offline stand-in for get-pip.py, which ansible-test downloads to bootstrap pip.

ansible-test runs this as __main__ (through its quiet_pip.py) with the venv's Python and
get-pip's arguments: pip options, requirement specifiers such as pip==$pip_version, and
--no-setuptools / --no-wheel. We bootstrap the Python's bundled pip with ensurepip, then
let that pip install what was asked from the package index it is configured for.
"""
import subprocess
import sys

args = sys.argv[1:]
no_setuptools = "--no-setuptools" in args
no_wheel = "--no-wheel" in args
args = [a for a in args if a not in ("--no-setuptools", "--no-wheel")]
python = sys.executable
before = subprocess.run([python, "-c", "import setuptools"], capture_output=True).returncode == 0
subprocess.check_call([python, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
subprocess.check_call([python, "-m", "pip", "install", "--quiet", *args])
if no_setuptools and not before:
    # ensurepip of Python < 3.12 also installs setuptools; get-pip --no-setuptools would not
    subprocess.run([python, "-m", "pip", "uninstall", "--quiet", "--yes", "setuptools"], check=False)
EOF
  mv "$cache.tmp.$$" "$cache"
fi

# --- 3. target Pythons on PATH ----------------------------------------------------------
python_bin() { # VERSION -> directory holding pythonVERSION, from pyenv
  local v=$1 prefix
  prefix=$(pyenv prefix "$v" 2>/dev/null || true)
  if [ -z "$prefix" ]; then
    prefix=$(printf '%s\n' "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".* | sort -V | tail -n 1)
    [ -d "$prefix" ] || prefix=
  fi
  if [ -n "$prefix" ] && [ -x "$prefix/bin/python$v" ]; then
    echo "$prefix/bin"
  elif command -v "python$v" >/dev/null 2>&1 && "python$v" -c '' 2>/dev/null; then
    dirname "$(command -v "python$v")"
  else
    return 1
  fi
}
# pyenv's shims answer for every installed version (3.8 too); leave them out so ansible-test
# sees exactly the Pythons asked for.
path=$controller/bin
clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/.*shims$' | paste -sd:)
for v in $pythons; do
  if ! dir=$(python_bin "$v"); then
    log "Python $v not found (pyenv install $v, or set SANDBOXGUARD_SANITY_PYTHONS to the versions you have)"
    exit 2
  fi
  path=$path:$dir
done

# --- run --------------------------------------------------------------------------------
cd "$dest"
args=(sanity --venv --color no)
# Every configured Python unless the caller narrowed it (--python X.Y).
log "ansible-test sanity ${*:-} with Pythons: $pythons (controller: ansible-core $core on $("$controller/bin/python" --version))"
PATH=$path:$clean_path exec "$controller/bin/ansible-test" "${args[@]}" "$@"
