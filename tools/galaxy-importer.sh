#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Build the collection tarball and run galaxy-importer on it, as Galaxy / Automation Hub would
# on upload: offline, with the importer's defaults (ansible-test off, ansible-lint and
# ansible-doc on). Then flake8 with the importer's own settings on the tarball's Python files:
# the importer's run_flake8 (off by default) would also feed the sidecar filter docs
# (plugins/filter/*.yml) to flake8 as Python and report E999 for them. Fails on a failed
# import AND on any WARNING or ERROR line: "accepted with warnings" is not clean.
#
#   tools/galaxy-importer.sh                 # build from this checkout, then import
#   tools/galaxy-importer.sh PATH.tar.gz     # import a tarball you built
#
# The importer lives in its own venv (.cache/importer/venv, from requirements/importer.txt),
# made once; its log is .cache/importer/import.log.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log() { printf '[importer] %s\n' "$*" >&2; }
work=$top/.cache/importer
venv=$work/venv
mkdir -p "$work"
bash tools/cached-venv.sh "$venv" "${SANDBOXGUARD_IMPORTER_PYTHON:-$top/.venv/bin/python}" requirements/importer.txt >&2

if [ $# -gt 0 ]; then
  tarball=$1
else
  rm -rf "$work/build"
  mkdir -p "$work/build"
  "$venv/bin/ansible-galaxy" collection build --output-path "$work/build" "$top" >&2
  tarball=$(ls "$work/build"/*.tar.gz)
fi
log "importing ${tarball#"$top"/} ($(tar -tzf "$tarball" | wc -l) entries)"

cat >"$work/galaxy-importer.cfg" <<'CFG'
[galaxy-importer]
run_ansible_test = False
run_ansible_lint = True
offline_ansible_lint = True
run_ansible_doc = True
run_flake8 = False
check_changelog = True
CFG
# The importer's ansible-lint and ansible-doc must see only the tarball: no checkout, no
# collections path of ours, no ansible.cfg.
tmp=$(mktemp -d "$work/run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rc=0
(
  cd "$tmp"
  env -u ANSIBLE_COLLECTIONS_PATH -u ANSIBLE_CONFIG ANSIBLE_HOME="$tmp/ansible-home" \
    GALAXY_IMPORTER_CONFIG="$work/galaxy-importer.cfg" GALAXY_IMPORTER_TMP_ROOT_DIR="$tmp" \
    PATH="$venv/bin:$PATH" "$venv/bin/python" -m galaxy_importer.main "$tarball"
) >"$work/import.log" 2>&1 || rc=$?
cat "$work/import.log"
if [ "$rc" -ne 0 ]; then
  log "galaxy-importer failed (exit $rc)"
  exit 1
fi
# flake8 as the importer runs it (galaxy_importer/constants.py FLAKE8_*), on the Python files only
mkdir -p "$tmp/unpacked"
tar -xzf "$tarball" -C "$tmp/unpacked"
flake8_args=$("$venv/bin/python" -c 'from galaxy_importer import constants as c; print(c.FLAKE8_IGNORE_ERRORS, c.FLAKE8_SELECT_ERRORS, c.FLAKE8_MAX_LINE_LENGTH)')
read -r ignore select length <<<"$flake8_args"
(cd "$tmp/unpacked" && find plugins -name '*.py' -print0 | sort -z | xargs -0 -r "$venv/bin/flake8" --exit-zero --isolated \
  --extend-ignore "$ignore" --select "$select" --max-line-length "$length" --) | sed 's/^/WARNING: /' | tee -a "$work/import.log"
if grep -qE '^(WARNING|ERROR)' "$work/import.log"; then
  log "galaxy-importer accepted the tarball with $(grep -cE '^(WARNING|ERROR)' "$work/import.log") warning(s)/error(s) (above): fix them"
  exit 1
fi
log "clean: no warnings"
