#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Cut a release: tools/release.sh VERSION [--no-commit] [--skip-import]
#
#   1. checks VERSION is semantic (X.Y.Z) and newer than galaxy.yml's, the tree is clean and
#      the changelog fragments lint clean (antsibull-changelog lint);
#   2. writes changelogs/fragments/VERSION.yml with a release_summary unless one exists
#      (edit it first for a better summary: SANDBOXGUARD_RELEASE_SUMMARY="..." sets it);
#   3. bumps the version in galaxy.yml, python/pyproject.toml and the library's __version__
#      (and its module_utils copy, tools/sync_module_utils.py), the man page and completions (tools/cli_docs.py),
#      and the pinned examples in README.md and docs/awx.md;
#   4. antsibull-changelog release: changelogs/changelog.yaml gets the release with every
#      fragment, CHANGELOG.rst is regenerated, the fragments are removed (keep_fragments: false);
#   5. builds sandboxguard-boundary-VERSION.tar.gz into .cache/release/ and runs
#      tools/galaxy-importer.sh on it (no warnings allowed; --skip-import leaves that out);
#   6. commits "Release VERSION" and tags VERSION (annotated), unless --no-commit.
# Pushing the tag and uploading the tarball stay manual (docs/releasing.md).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log() { printf '[release] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

version=${1:-}
shift || true
commit=yes
import=yes
for arg in "$@"; do
  case $arg in
    --no-commit) commit=no ;;
    --skip-import) import=no ;;
    *) die "unknown option $arg (known: --no-commit, --skip-import)" ;;
  esac
done
[[ $version =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]] ||
  die "usage: tools/release.sh X.Y.Z [--no-commit] [--skip-import] (got '${version}': a semantic version, no 'v')"
# the dev tools: this checkout's .venv if it has one, else whatever is on PATH
venv=${SANDBOXGUARD_VENV:-$top/.venv}
[ -x "$venv/bin/antsibull-changelog" ] && export PATH=$venv/bin:$PATH
command -v antsibull-changelog >/dev/null || die "antsibull-changelog not found: make setup (requirements/dev.txt)"
python=$(command -v python3)
[ -x "$venv/bin/python" ] && python=$venv/bin/python

current=$(sed -n 's/^version: *//p' galaxy.yml)
newer=$("$python" -c 'import sys; a, b = (tuple(map(int, v.split("."))) for v in sys.argv[1:]); print(int(b > a))' "$current" "$version")
[ "$newer" = 1 ] || die "VERSION $version is not newer than galaxy.yml's $current"
if git rev-parse --git-dir >/dev/null 2>&1 && [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  die "the work tree has uncommitted changes: commit or stash them first"
fi
git rev-parse -q --verify "refs/tags/$version" >/dev/null && die "tag $version exists already"
compgen -G 'changelogs/fragments/*.yml' >/dev/null || compgen -G 'changelogs/fragments/*.yaml' >/dev/null ||
  die "no changelog fragments in changelogs/fragments/: nothing to release"

log "linting changelog fragments"
antsibull-changelog lint

summary_file=changelogs/fragments/$version.yml
if [ ! -e "$summary_file" ]; then
  summary=${SANDBOXGUARD_RELEASE_SUMMARY:-"Release $version of sandboxguard.boundary. From this release on, versions follow semantic versioning: renames go through meta/runtime.yml redirects and deprecations."}
  "$python" - "$summary_file" "$summary" <<'PY'
import sys, yaml
with open(sys.argv[1], "w") as handle:
    handle.write("---\n" + yaml.safe_dump({"release_summary": sys.argv[2]}, width=1000, sort_keys=False))
PY
  log "wrote $summary_file"
fi

log "version $current -> $version (galaxy.yml, python/pyproject.toml, sandboxguard.__version__, README pins)"
sed -i "s/^version: .*/version: $version/" galaxy.yml
sed -i "s/^version = \".*\"/version = \"$version\"/" python/pyproject.toml
sed -i "s/^__version__ = \".*\"/__version__ = \"$version\"/" python/src/sandboxguard/__init__.py
python3 tools/sync_module_utils.py >/dev/null
# The man page and the completions name the version: generated again from the parser
"$venv/bin/python" tools/cli_docs.py >/dev/null 2>&1 || python3 tools/cli_docs.py >/dev/null
# The install examples pin the release (requirements.yml `version:` lines, the tarball name)
pinned=(README.md docs/awx.md)
sed -i -E "s/^( *version: )[0-9]+\.[0-9]+\.[0-9]+\$/\1$version/; s/sandboxguard-boundary-[0-9]+\.[0-9]+\.[0-9]+\.tar\.gz/sandboxguard-boundary-$version.tar.gz/g" "${pinned[@]}"

# antsibull-changelog lists new modules, roles and playbooks from ansible-doc, which must find
# this checkout as sandboxguard.boundary: a collections path of our own pointing here.
collections=$(mktemp -d)
trap 'rm -rf "$collections"' EXIT
mkdir -p "$collections/ansible_collections/sandboxguard"
ln -s "$top" "$collections/ansible_collections/sandboxguard/boundary"
log "antsibull-changelog release --version $version"
ANSIBLE_COLLECTIONS_PATH=$collections antsibull-changelog release --reload-plugins --version "$version"
grep -q "^$version\$" CHANGELOG.rst || grep -q "^v$version\$" CHANGELOG.rst || die "CHANGELOG.rst does not show $version"

out=$top/.cache/release
rm -rf "$out"
mkdir -p "$out"
ansible-galaxy collection build --output-path "$out" . >&2
tarball=$out/sandboxguard-boundary-$version.tar.gz
[ -e "$tarball" ] || die "the build did not give $tarball"
if [ "$import" = yes ]; then
  bash tools/galaxy-importer.sh "$tarball"
fi

if [ "$commit" = yes ]; then
  git add -A galaxy.yml "${pinned[@]}" python/pyproject.toml python/src/sandboxguard/__init__.py \
    plugins/module_utils/sandboxguard/__init__.py changelogs CHANGELOG.rst python/share
  git commit -q -m "Release $version"
  git tag -a "$version" -m "sandboxguard.boundary $version"
  log "committed and tagged $version; push with: git push origin HEAD $version"
fi
log "done: $tarball"
