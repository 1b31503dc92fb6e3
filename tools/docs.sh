#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The docs site and its checks, with the docs tool chain in its own venv (.cache/docs/venv,
# from requirements/docs.txt, made once by tools/cached-venv.sh; Sphinx 9 and the dev tools
# disagree on docutils). docs/testing.md "The docs site".
#
#   tools/docs.sh            # build the site into build/docs/html (make docs)
#   tools/docs.sh lint       # antsibull-docs lint-collection-docs --plugin-docs (make test: docs-lint)
#   tools/docs.sh test       # build, then open every page in headless Chromium (make test: docs-site)
#   tools/docs.sh venv       # only make (or reuse) the venv; prints its path
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
venv=${SANDBOXGUARD_DOCS_VENV:-$top/.cache/docs/venv}
mkdir -p "$(dirname "$venv")"
bash tools/cached-venv.sh "$venv" "${SANDBOXGUARD_DOCS_PYTHON:-$top/.venv/bin/python}" requirements/docs.txt >&2
case "${1:-build}" in
  build) exec "$venv/bin/python" tools/docsite.py build ;;
  lint) exec "$venv/bin/python" tools/docsite.py lint ;;
  test)
    "$venv/bin/python" tools/docsite.py build
    # -p no:cacheprovider: .pytest_cache belongs to .venv's runs
    exec "$venv/bin/python" -m pytest -p no:cacheprovider tests/docs ;;
  venv) echo "$venv" ;;
  *) echo "usage: tools/docs.sh [build|lint|test|venv]" >&2; exit 2 ;;
esac
