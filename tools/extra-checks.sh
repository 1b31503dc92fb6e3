#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The extra checks the community collections run (the extra-checks step of make test;
# docs/testing.md "Extra checks"), with the tools of the docs venv (requirements/docs.txt):
#   1. nox -e extra-checks license-check: antsibull-nox's sessions (antsibull-nox.toml): no
#      unwanted files in plugins/, action groups, trailing whitespace, tabs / BOMs / non-ASCII,
#      reuse lint and antsibull-nox's license check. What a session installs into its venv
#      (.nox/) is pinned by requirements/docs.txt (PIP_CONSTRAINT).
#   2. tools/extra_checks.py tarball: the collection as built from this checkout carries nothing
#      it should not (caches, venvs, the test harness, benchmarks, editor leftovers, ignored files).
#   3. tools/extra_checks.py crlf: no carriage return in any text file.
# Every part runs; the script fails when any did.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
venv=$(bash tools/docs.sh venv) || exit 1
rc=0
part() { # NAME CMD...
  echo "==> $1"
  shift
  if "$@"; then echo "    ok"; else echo "    FAILED (exit $?)"; rc=1; fi
}
part "antsibull-nox: extra-checks, license-check" env PATH="$venv/bin:$PATH" PIP_CONSTRAINT="$top/requirements/docs.txt" \
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/nox" --no-color --reuse-existing-virtualenvs -e extra-checks license-check
part "tarball: what the built collection carries" "$venv/bin/python" tools/extra_checks.py tarball
part "crlf: line ends" "$venv/bin/python" tools/extra_checks.py crlf
exit "$rc"
