#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# cached-venv.sh DIR PYTHON REQUIREMENTS: make DIR a venv of PYTHON with `pip install -r
# REQUIREMENTS`, or reuse it when neither the file nor the interpreter changed since (a stamp
# in DIR holds their hash). Used by tools/run-tests.sh (pythons, controllers) and
# tools/galaxy-importer.sh.
set -euo pipefail
dir=$1 python=$2 req=$3
want=$( { cat "$req"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dir/.sandboxguard-stamp" 2>/dev/null)" = "$want" ]; then
  echo "reusing $dir ($req and $("$python" --version) unchanged)"
  exit 0
fi
echo "creating $dir with $("$python" --version) and $req"
rm -rf "$dir"
"$python" -m venv "$dir"
"$dir/bin/python" -m pip install -q -r "$req"
echo "$want" >"$dir/.sandboxguard-stamp"
