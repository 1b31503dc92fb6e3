#!/usr/bin/env bash
# Build the collection tarball and run galaxy-importer on it, as Galaxy / Automation Hub would
# on upload: offline, ansible-test off (the importer's default), ansible-lint and ansible-doc
# on, and flake8 on (Galaxy's importer runs it; the package default is off). Fails on a
# failed import AND on any WARNING or ERROR line: "accepted with warnings" is not clean.
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
run_flake8 = True
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
if grep -qE '^(WARNING|ERROR)' "$work/import.log"; then
  log "galaxy-importer accepted the tarball with $(grep -cE '^(WARNING|ERROR)' "$work/import.log") warning(s)/error(s) (above): fix them"
  exit 1
fi
log "clean: no warnings"
