#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Run every test layer in order, keep going after a failing one, time each, print a
# summary table and one closing line `layers: N passed, M failed`; exit 1 if any failed.
# `make test` runs this after setup, the engine and the images (docs/testing.md).
#
# Layers (names for SANDBOXGUARD_LAYERS):
#   sync         python3 tools/sync_module_utils.py --check (library copy has no drift)
#   ruff         ruff check .
#   unit         .venv/bin/pytest tests/unit
#   pythons      tests/unit under each target Python (SANDBOXGUARD_PYTHONS, default 3.9..3.13)
#   integration  .venv/bin/pytest tests/integration (root, real Docker); then, on each newer
#                controller, the module-level tests (pytest -m controller)
#   sanity       tools/ansible-test-sanity.sh on each controller, and shellcheck on tools/ images/ .ci/run
#   lint         ansible-lint (production profile, .ansible-lint)
#   importer     galaxy-importer on the built tarball (tools/galaxy-importer.sh)
#   extra        the community's extra checks: antsibull-nox sessions, the tarball's contents, line ends
#                (tools/extra-checks.sh)
#   docs         antsibull-docs lint-collection-docs (docs-lint); the docs site built and opened in
#                headless Chromium (docs-site) (tools/docs.sh)
#   installed    the built tarball installed into an empty collections path and the audit and
#                remediate playbooks run from it, one step per controller (tests/installed)
#   molecule     molecule test, one step per molecule/<scenario>/
#
# After sync, ruff and unit, the steps run in two lanes side by side (see "Two lanes" below):
# the machine lane (integration on each controller, the molecule scenarios that mount
# docker.sock) one step at a time in the foreground, the isolated lane (venvs, pythons,
# sanity, shellcheck, lint, importer, extra, docs, installed, the other molecule scenarios) one at a
# time beside it.
#
# Controllers: ansible-core 2.19 is .venv (requirements/dev.txt); each
# requirements/controller-X.Y.txt names another core and its Python (`# controller:` line)
# and gets a cached venv in .cache/controllers/X.Y. SANDBOXGUARD_CONTROLLERS narrows them.
#
#   SANDBOXGUARD_LAYERS="unit pythons" tools/run-tests.sh       # a subset, in the order above
#   SANDBOXGUARD_LAYERS="molecule:default" tools/run-tests.sh   # one scenario (or pythons:3.12)
#   SANDBOXGUARD_LAYERS="sanity:2.21 integration:2.21" ...      # one controller's steps
#   SANDBOXGUARD_VERBOSE=1 ...                                   # stream output, not just logs
#   SANDBOXGUARD_SERIAL=1 ...                                    # the two lanes one after the other
# Each step's full output is in .cache/test-logs/<step>.log; a failing step's tail is printed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
venv=$top/.venv
logs=$top/.cache/test-logs
mkdir -p "$logs"

# The environment `make` gives; set here too so the script runs on its own.
export PATH=$venv/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=${ANSIBLE_COLLECTIONS_PATH:-$top/.cache/collections}
export ANSIBLE_CONFIG=${ANSIBLE_CONFIG:-$top/ansible.cfg}
# molecule >= 25.9 warns that a collection's scenarios belong in extensions/molecule/; the
# design keeps them at molecule/ (ARCHITECTURE.md). Naming the glob ourselves is molecule's
# own switch for that (molecule/util.py get_effective_molecule_glob) and silences the warning.
export MOLECULE_GLOB=${MOLECULE_GLOB:-molecule/*/molecule.yml}
# Logs are read as files: no colour codes.
export NO_COLOR=1 PY_COLORS=0 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0

all_layers=(sync ruff unit pythons integration sanity lint importer extra docs installed molecule)
read -r -a wanted <<<"$(printf '%s' "${SANDBOXGUARD_LAYERS:-${all_layers[*]}}" | tr ',' ' ')"
for w in "${wanted[@]}"; do
  case " ${all_layers[*]} " in
    *" ${w%%:*} "*) ;;
    *) echo "SANDBOXGUARD_LAYERS: unknown layer '$w' (known: ${all_layers[*]}; molecule:NAME, pythons:X.Y, sanity:X.Y, integration:X.Y and installed:X.Y select one step)" >&2; exit 2 ;;
  esac
done
# wants LAYER [STEP] -> whether this layer (or this step of it) was asked for
wants() {
  local w
  for w in "${wanted[@]}"; do
    if [ "$w" = "$1" ] || { [ -n "${2:-}" ] && [ "$w" = "$1:$2" ]; }; then return 0; fi
  done
  return 1
}
wants_any() { # LAYER -> asked for whole or in part
  local w
  for w in "${wanted[@]}"; do [ "${w%%:*}" = "$1" ] && return 0; done
  return 1
}

# Results: one row per step; a layer fails when any of its steps fails. Each row names the
# ansible-core controller its step used ("-" for steps that use none): set step_core[NAME]
# before the step, or leave the layer's default from layer_core.
rows=()
declare -A layer_state=()
layer_order=()
declare -A step_core=()

now() { date +%s.%N; }

# run_step NAME CMD... : run CMD with its output in the step's log; leave rc and seconds
# beside it. record_step LAYER NAME : print the result and add the summary row.
run_step() {
  local name=$1 log start rc
  shift
  log=$logs/$name.log
  start=$(now)
  if [ "${SANDBOXGUARD_VERBOSE:-0}" = 1 ]; then
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  else
    "$@" >"$log" 2>&1 </dev/null
    rc=$?
  fi
  awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f\n", b - a }' >"$log.time"
  echo "$rc" >"$log.rc"
}

record_step() {
  local layer=$1 name=$2 log rc secs status detail
  log=$logs/$name.log
  rc=$(cat "$log.rc" 2>/dev/null || echo 127)
  secs=$(cat "$log.time" 2>/dev/null || echo 0.0)
  if [ "$rc" -eq 0 ]; then status=PASS; else status=FAIL; fi
  # pytest's own closing line, where there is one, says how many tests ran.
  detail=$(grep -E '^=+ .*(passed|failed|error|no tests ran).* =+$' "$log" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//')
  [ -e "$log.msg" ] && detail=$(head -n 1 "$log.msg")
  rows+=("$(printf '%-4s  %-28s %-6s %8ss  %s' "$status" "$name" "$(core_of "$layer" "$name")" "$secs" "${detail:-exit $rc}")")
  printf '    %s %s in %ss%s\n' "$status" "$name" "$secs" "${detail:+ ($detail)}"
  if [ "$status" = FAIL ]; then
    echo "    ---- last 60 lines of ${log#"$top"/} ----"
    tail -n 60 "$log" | sed 's/^/    | /'
    echo "    ----"
  fi
  case " ${layer_order[*]} " in *" $layer "*) ;; *) layer_order+=("$layer") ;; esac
  if [ "$status" = FAIL ]; then
    layer_state[$layer]=FAIL
  elif [ -z "${layer_state[$layer]:-}" ]; then
    layer_state[$layer]=PASS
  fi
}

# step LAYER NAME CMD... : one step, in the foreground.
step() {
  local layer=$1 name=$2
  shift 2
  printf '==> %-28s %s\n' "$name" "$*"
  run_step "$name" "$@"
  record_step "$layer" "$name"
}

# --- controllers: ansible-core versions, each with its venv --------------------------------
# base_core is .venv's (requirements/dev.txt); the others come from requirements/controller-X.Y.txt.
controller_line() { sed -n 's/^# controller: ansible-core \([0-9.]*\) on Python \([0-9.]*\).*/\1 \2/p' "$1" | head -n 1; }
read -r base_core _ <<<"$(controller_line requirements/dev.txt)"
known_cores=("$base_core")
for req in requirements/controller-*.txt; do
  [ -e "$req" ] || continue
  read -r c _ <<<"$(controller_line "$req")"
  [ -n "$c" ] && known_cores+=("$c")
done
read -r -a cores <<<"$(printf '%s' "${SANDBOXGUARD_CONTROLLERS:-${known_cores[*]}}" | tr ',' ' ')"
for c in "${cores[@]}"; do
  case " ${known_cores[*]} " in
    *" $c "*) ;;
    *) echo "SANDBOXGUARD_CONTROLLERS: no requirements/controller-$c.txt (known: ${known_cores[*]})" >&2; exit 2 ;;
  esac
done
# Layers whose steps run Ansible from .venv unless a step says otherwise.
declare -A layer_core=([integration]=$base_core [sanity]=$base_core [lint]=$base_core [importer]=$base_core
  [extra]=$base_core [docs]=$base_core [installed]=$base_core [molecule]=$base_core)
core_of() { echo "${step_core[$2]:-${layer_core[$1]:--}}"; }

# cached_venv DIR PYTHON REQUIREMENTS: (re)made only when the file or the interpreter changed.
cached_venv() { bash "$top/tools/cached-venv.sh" "$@"; }

controller_venv_dir() { # X.Y -> the venv of that controller
  if [ "$1" = "$base_core" ]; then echo "$venv"; else echo "$top/.cache/controllers/$1"; fi
}

controller_venv() { # X.Y -> make (or reuse) that controller's venv
  local req=requirements/controller-$1.txt pyv python
  read -r _ pyv <<<"$(controller_line "$req")"
  if ! python=$(python_for "$pyv"); then
    echo "Python $pyv for ansible-core $1 ($req) not found: pyenv install $pyv, or leave $1 out of SANDBOXGUARD_CONTROLLERS"
    return 1
  fi
  cached_venv "$(controller_venv_dir "$1")" "$python" "$req" || return 1
  # the whole output, then its first line: `| head -n 1` closed the pipe under ansible-core
  # 2.21, which then failed with BrokenPipeError (exit 250)
  local version
  version=$("$(controller_venv_dir "$1")/bin/ansible" --version) || return 1
  printf '%s\n' "${version%%$'\n'*}"
}

# --- pythons: one cached venv with only pytest per target Python -----------------------
python_for() { # X.Y -> path of that Python's interpreter (pyenv, or pythonX.Y on PATH)
  local v=$1 prefix
  prefix=$(pyenv prefix "$v" 2>/dev/null | head -n 1 || true)
  if [ -z "$prefix" ]; then
    prefix=$(printf '%s\n' "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".* | sort -V | tail -n 1)
  fi
  if [ -x "$prefix/bin/python$v" ]; then
    echo "$prefix/bin/python$v"
  elif command -v "python$v" >/dev/null 2>&1 && "python$v" -c '' 2>/dev/null; then
    command -v "python$v"
  else
    return 1
  fi
}

unit_under() { # X.Y PYTHON -> run tests/unit with a venv of that Python (made once, cached)
  local venv_dir=$top/.cache/py/$1
  cached_venv "$venv_dir" "$2" requirements/unit-pythons.txt || return 1
  # -p no:cacheprovider: the five Pythons would fight over .pytest_cache
  "$venv_dir/bin/python" -m pytest -p no:cacheprovider tests/unit
}

# --- integration: pytest exit 5 (nothing collected) passes only when there is nothing to collect
# The role-level files the newer cores leave out (docs/testing.md "The controller matrix"): each
# runs a role through ansible-playbook several times to prove the role, which the 2.19 step and
# molecule do; the modules those roles call run on every core in the module-level files.
# The fleet playbooks run on every core from the built tarball (the `installed` layer), the fetch
# action plugin in test_fetch_ansible_local.py; the transports' own files run once.
controller_skip_default="tests/integration/test_sweep_role.py tests/integration/test_runner_cleanup_role.py
tests/integration/test_prevent_role.py tests/integration/test_bwrap_role.py tests/integration/test_terminal_home_role.py
tests/integration/test_engine_isolation.py tests/integration/test_audit_playbooks.py tests/integration/test_fetch_ansible.py
tests/integration/test_fetch_ansible_docker.py"
controller_files() { # all|beside|rest: the files a newer controller runs (all of them, or those
  # of the beside list, or the others)
  # Only the files whose tests carry the `controller` marker: collecting the others would
  # import what only .venv has (jsonschema, testinfra, ...).
  # SANDBOXGUARD_CONTROLLER_SKIP: files left out on the newer cores to keep make test inside
  # its budget (docs/testing.md "The controller matrix"); empty runs every marked file.
  local f
  grep -l 'pytest\.mark\.controller' tests/integration/test_*.py |
    grep -v -x -F -f <(printf '%s\n' ${SANDBOXGUARD_CONTROLLER_SKIP-$controller_skip_default} "/dev/null/none") |
    while read -r f; do
      case " ${SANDBOXGUARD_INTEGRATION_BESIDE-$beside_default} " in
        *" $f "*) [ "$1" = rest ] || echo "$f" ;;
        *) [ "$1" = beside ] || echo "$f" ;;
      esac
    done
}
integration() { # [VENV [all|beside|rest]]: the whole directory with .venv, or the module-level tests with another controller
  local rc files
  if [ $# -gt 0 ]; then
    mapfile -t files < <(controller_files "${2:-all}")
    if [ ${#files[@]} -eq 0 ]; then
      # one part may be empty when the other runs every file; none at all is a failure
      if [ "${2:-all}" = all ] || [ -z "$(controller_files all)" ]; then
        echo "no test file in tests/integration carries pytest.mark.controller (none left after SANDBOXGUARD_CONTROLLER_SKIP)"
        return 1
      fi
      echo "no controller file in this part (${2}): the other part runs every one"
      return 0
    fi
    # -p no:cacheprovider: one .pytest_cache per checkout is enough.
    "$1/bin/python" -m pytest -p no:cacheprovider --durations=25 -m controller "${files[@]}"
    return $?
  fi
  # SANDBOXGUARD_INTEGRATION_BESIDE: files the `integration-fleet` step runs beside this one
  local ignore=() f
  for f in ${SANDBOXGUARD_INTEGRATION_BESIDE-$beside_default}; do ignore+=("--ignore=$f"); done
  .venv/bin/pytest --durations=40 tests/integration "${ignore[@]}"
  rc=$?
  if [ "$rc" -eq 5 ]; then
    if compgen -G 'tests/integration/test_*.py' >/dev/null || compgen -G 'tests/integration/*_test.py' >/dev/null; then
      echo "tests/integration has test files but pytest collected no test: failing"
      return 1
    fi
    echo "tests/integration has no test files yet"
    return 0
  fi
  return "$rc"
}

total_start=$(now)
echo "sandboxguard tests: layers ${wanted[*]}; logs in ${logs#"$top"/}/"
# Results of an earlier run must never be read as this run's (the lanes below wait on them).
rm -f "$logs"/*.log.rc "$logs"/*.log.time "$logs"/*.log.msg
rm -rf "$logs"/claim-*

wants sync && step sync sync python3 tools/sync_module_utils.py --check
wants ruff && step ruff ruff .venv/bin/ruff check .
# `unit` is the isolated lane's first step (it touches only temp dirs): the machine lane's
# integration starts at once instead of after it.

# wants_core LAYER X.Y: this controller's step of LAYER was asked for (the whole layer, or LAYER:X.Y)
wants_core() { case " ${cores[*]} " in *" $2 "*) wants "$1" "$2" ;; *) return 1 ;; esac; }

# ---- What runs: every step is planned first ("layer name"), in the order the summary lists it.
planned=()
plan() { planned+=("$1 $2"); }
wants unit && plan unit unit
newer_cores=()   # the controllers whose venv some step needs
for c in "${cores[@]}"; do
  [ "$c" = "$base_core" ] && continue
  if wants_core integration "$c" || wants_core sanity "$c" || wants_core installed "$c"; then
    newer_cores+=("$c")
    step_core[venv-$c]=$c
    plan controllers "venv-$c"
  fi
done
pythons=()
# .venv's own Python (3.11) runs tests/unit in the `unit` step; its bare venv would add only
# "nothing but pytest installed", which every other Python's step checks. So the default list
# leaves it out when `unit` runs; SANDBOXGUARD_PYTHONS or pythons:X.Y asks for it.
venv_pyv=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo none)
if wants_any pythons; then
  for v in ${SANDBOXGUARD_PYTHONS:-3.9 3.10 3.11 3.12 3.13}; do
    if [ -z "${SANDBOXGUARD_PYTHONS:-}" ] && [ "$v" = "$venv_pyv" ] && wants unit && wants pythons; then
      echo "pythons: $v is .venv's own Python, tested by the unit step (SANDBOXGUARD_PYTHONS=\"... $v ...\" adds its bare step)"
      continue
    fi
    wants pythons "$v" && { pythons+=("$v"); plan pythons "unit-py$v"; }
  done
fi
integration_cores=()
# Step `integration-fleet` runs these files on .venv's controller beside `integration`, in the
# machine lane, as a second pytest. The rule: a file goes here only if it shares no user, path,
# port, container, mount, sysctl or daemon state with the files that stay in `integration`
# (unique user names, its own temp dirs, free ports, its own uniquely named containers, no
# engine discovery: `integration` puts fake and Podman engine sockets on /run/user/<uid>/podman
# and /run/podman that every discovering sweep, audit or guard would ask).
# docs/testing.md "Two lanes" gives each group's reason.
# SANDBOXGUARD_INTEGRATION_BESIDE="" runs them all inside `integration`.
beside_files=(
  # their own labelled containers and sshd servers on free ports
  test_fleet.py test_execution_environment.py
  # the fetch tests: the only users of the sgfetch account, its sshd and sgfetch-test-* containers
  test_fetch_fixtures.py test_fetch_ssh.py test_fetch_ansible.py test_fetch_ansible_local.py
  test_fetch_docker.py test_fetch_ansible_docker.py test_fetch_busybox.py
  # the only writers of the real crontab spool (test_crontab_conformance checks it unchanged)
  test_crontab_conformance.py test_terminal_home_module.py test_home_isolation.py
  # racing.RaceWorld: a throwaway user and a /var/tmp base of their own
  test_race_safefs.py test_race_walk.py test_race_writers.py test_race_scope.py test_race_mounts.py
  test_race_quarantine.py test_race_prevent.py
  # temp dirs and a throwaway user only; walks that never meet a multi-link file
  test_strip_cli.py test_strip_descriptors.py test_strip_fix_file_at.py test_strip_getcap.py
  test_strip_handoff.py test_strip_signals.py test_strip_roots.py test_leaks_modules.py
  test_writers_paths.py test_hermes_config_module.py test_terminal_home_role.py
  test_terminal_home_yaml.py test_galaxy_build.py test_release.py test_audit_html_browser.py
)
beside_default=$(printf 'tests/integration/%s ' "${beside_files[@]}")
beside_default=${beside_default% }
# With .venv's `integration` and its beside step both running, a newer core's files of the
# beside list run in the beside step's lane after it (integration-fleet-X.Y), the rest in the
# machine lane (integration-X.Y); alone, a newer core's step runs all of them.
beside_newer=0
if wants_core integration "$base_core" && [ -n "${SANDBOXGUARD_INTEGRATION_BESIDE-$beside_default}" ]; then
  beside_newer=1
fi
for c in "${cores[@]}"; do
  wants_core integration "$c" || continue
  integration_cores+=("$c")
  if [ "$c" = "$base_core" ]; then
    plan integration integration
    [ -n "${SANDBOXGUARD_INTEGRATION_BESIDE-$beside_default}" ] && plan integration integration-fleet
  else
    step_core[integration-$c]=$c
    plan integration "integration-$c"
    if [ "$beside_newer" = 1 ]; then step_core[integration-fleet-$c]=$c; plan integration "integration-fleet-$c"; fi
  fi
done
sanity_cores=()
for c in "${cores[@]}"; do
  wants_core sanity "$c" || continue
  sanity_cores+=("$c")
  name=sanity-$c
  [ "$c" = "$base_core" ] && name=sanity
  step_core[$name]=$c
  plan sanity "$name"
done
if wants sanity; then step_core[shellcheck]=-; plan sanity shellcheck; fi
wants lint && plan lint ansible-lint
wants importer && plan importer galaxy-importer
wants extra && plan extra extra-checks
wants docs && { plan docs docs-lint; plan docs docs-site; }
# installed: one step per controller (installed, installed-2.20, ...), like sanity
installed_cores=()
for c in "${cores[@]}"; do
  wants_core installed "$c" || continue
  installed_cores+=("$c")
  name=installed-$c
  [ "$c" = "$base_core" ] && name=installed
  step_core[$name]=$c
  plan installed "$name"
done
# molecule: one step per scenario. A scenario that mounts the host's docker.sock sees every
# container of the engine and what the engine does: it belongs to the machine lane below.
engine_scenarios=()
own_scenarios=()
if wants_any molecule; then
  if ! compgen -G 'molecule/*/molecule.yml' >/dev/null; then
    fail_file molecule "no molecule/<scenario>/molecule.yml found (molecule/default is the harness scenario)"
    plan molecule molecule
  fi
  for file in molecule/*/molecule.yml; do
    [ -e "$file" ] || continue
    scenario=$(basename "$(dirname "$file")")
    wants molecule "$scenario" || continue
    plan molecule "molecule-$scenario"
    if grep -q 'docker\.sock' "$file"; then engine_scenarios+=("$scenario"); else own_scenarios+=("$scenario"); fi
  done
fi

# ---- Two lanes, side by side (docs/testing.md "Two lanes").
# The machine lane: steps that use this machine's shared state (users, ports, fixed container
# names, the engine's containers and events, mounts): one at a time, in the foreground, the
# integration tests on each controller, then the molecule scenarios that mount docker.sock.
# The isolated lane: steps that only touch their own directories, venvs and uniquely named
# containers: the newer controllers' venvs, the unit tests under each Python, sanity,
# ShellCheck, ansible-lint, galaxy-importer and the other molecule scenarios; one at a time in
# the background. The machine lane waits on containers, sshd and Ansible connections for much
# of its time; on 2 cores the isolated lane fills that. SANDBOXGUARD_SERIAL=1 runs the
# isolated lane after the machine lane instead (for timings of each step alone).
lane_step() { # LANE NAME CMD...: run_step with a start and an end line
  local lane=$1 name=$2
  shift 2
  printf '==> %-28s %s  [%s lane]\n' "$name" "$*" "$lane"
  run_step "$name" "$@"
  printf '    (%s lane: %s exit %s in %ss)\n' "$lane" "$name" "$(cat "$logs/$name.log.rc")" "$(cat "$logs/$name.log.time")"
}
fail_file() { # NAME MESSAGE: a step that could not start; recorded like any other
  printf '%s\n' "$2" | tee "$logs/$1.log" >"$logs/$1.log.msg"
  echo 0.0 >"$logs/$1.log.time"
  echo 1 >"$logs/$1.log.rc"
}
claim() { mkdir "$logs/claim-$1" 2>/dev/null; } # NAME: this lane runs step NAME (first come)
venv_ready() { # X.Y: wait for its venv step (the isolated lane makes it first); 0 if it passed
  [ "$1" = "$base_core" ] && return 0
  # Not started yet (SANDBOXGUARD_SERIAL=1 runs the isolated lane last): this lane makes it.
  if claim "venv-$1"; then lane_step isolated "venv-$1" controller_venv "$1"; fi
  while [ ! -e "$logs/venv-$1.log.rc" ]; do
    if [ -n "${isolated_pid:-}" ] && ! kill -0 "$isolated_pid" 2>/dev/null && [ ! -e "$logs/venv-$1.log.rc" ]; then
      return 1
    fi
    sleep 1
  done
  [ "$(cat "$logs/venv-$1.log.rc")" = 0 ]
}

isolated_lane() {
  local c v python name scenario
  wants unit && lane_step isolated unit .venv/bin/pytest tests/unit
  for c in "${newer_cores[@]}"; do
    claim "venv-$c" && lane_step isolated "venv-$c" controller_venv "$c"
  done
  # The bare Pythons' unit steps, SANDBOXGUARD_UNIT_JOBS (2) at a time: each is its own venv
  # and temp dirs, and spends about half its time waiting (deadlines, fake engines' sleeps).
  local running=()
  for v in "${pythons[@]}"; do
    if python=$(python_for "$v"); then
      lane_step isolated "unit-py$v" unit_under "$v" "$python" &
      running+=("$!")
    else
      fail_file "unit-py$v" "Python $v not found: install it (pyenv install $v) or set SANDBOXGUARD_PYTHONS to the versions to test, e.g. SANDBOXGUARD_PYTHONS=\"3.11 3.12\""
    fi
    if [ "${#running[@]}" -ge "${SANDBOXGUARD_UNIT_JOBS:-2}" ]; then
      wait "${running[0]}"
      running=("${running[@]:1}")
    fi
  done
  [ "${#running[@]}" -eq 0 ] || wait "${running[@]}"
  for c in "${sanity_cores[@]}"; do
    name=sanity-$c
    [ "$c" = "$base_core" ] && name=sanity
    if ! venv_ready "$c"; then fail_file "$name" "no venv for ansible-core $c (see the venv-$c step)"; continue; fi
    lane_step isolated "$name" env SANDBOXGUARD_SANITY_VENV="$(controller_venv_dir "$c")" bash tools/ansible-test-sanity.sh
  done
  # The shell scripts that do not ship (build_ignore), so ansible-test's shellcheck skips them.
  wants sanity && lane_step isolated shellcheck shellcheck -S warning tools/*.sh images/*.sh .ci/run
  wants lint && lane_step isolated ansible-lint .venv/bin/ansible-lint
  wants importer && lane_step isolated galaxy-importer bash tools/galaxy-importer.sh
  wants extra && lane_step isolated extra-checks bash tools/extra-checks.sh
  if wants docs; then
    lane_step isolated docs-lint bash tools/docs.sh lint
    lane_step isolated docs-site bash tools/docs.sh test
  fi
  # Their own containers (uniquely named, labelled; SSH on free ports), so beside the machine lane.
  for c in "${installed_cores[@]}"; do
    name=installed-$c
    [ "$c" = "$base_core" ] && name=installed
    if ! venv_ready "$c"; then fail_file "$name" "no venv for ansible-core $c (see the venv-$c step)"; continue; fi
    lane_step isolated "$name" env SANDBOXGUARD_INSTALLED_CONTROLLERS="$c" .venv/bin/pytest -p no:cacheprovider tests/installed
  done
  for scenario in "${own_scenarios[@]}"; do
    claim "molecule-$scenario" || continue  # the machine lane, done first, took it
    lane_step isolated "molecule-$scenario" .venv/bin/molecule test -s "$scenario"
  done
  return 0
}

beside_lane() { # FILES: the beside step, then each newer core's files of the beside list
  local c
  # shellcheck disable=SC2086 # a list of files
  lane_step machine integration-fleet .venv/bin/pytest -p no:cacheprovider --durations=40 $1
  for c in "${integration_cores[@]}"; do
    [ "$c" = "$base_core" ] && continue
    if venv_ready "$c"; then
      lane_step machine "integration-fleet-$c" integration "$(controller_venv_dir "$c")" beside
    else
      fail_file "integration-fleet-$c" "no venv for ansible-core $c (see the venv-$c step)"
    fi
  done
}

machine_lane() {
  local c scenario beside_pid=
  for c in "${integration_cores[@]}"; do
    if [ "$c" = "$base_core" ]; then
      local beside=${SANDBOXGUARD_INTEGRATION_BESIDE-$beside_default}
      if [ -n "$beside" ]; then
        beside_lane "$beside" &
        beside_pid=$!
      fi
      lane_step machine integration integration
    elif venv_ready "$c"; then
      lane_step machine "integration-$c" integration "$(controller_venv_dir "$c")" \
        "$([ "$beside_newer" = 1 ] && echo rest || echo all)"
    else
      fail_file "integration-$c" "no venv for ansible-core $c (see the venv-$c step)"
    fi
  done
  # the beside lane (and its newer cores) ends before a scenario that sees the whole engine
  [ -n "${beside_pid:-}" ] && wait "$beside_pid"
  for scenario in "${engine_scenarios[@]}"; do
    lane_step machine "molecule-$scenario" .venv/bin/molecule test -s "$scenario"
  done
  # Done first, the machine lane takes the isolated lane's molecule scenarios from the end of
  # its list, those not started yet (each only its own containers: two at once is safe).
  local i
  for ((i = ${#own_scenarios[@]} - 1; i >= 0; i--)); do
    scenario=${own_scenarios[$i]}
    claim "molecule-$scenario" || continue
    lane_step machine "molecule-$scenario" .venv/bin/molecule test -s "$scenario"
  done
}

isolated_pid=
if [ "${SANDBOXGUARD_SERIAL:-0}" = 1 ]; then
  machine_lane
  isolated_lane
else
  isolated_lane &
  isolated_pid=$!
  machine_lane
  wait "$isolated_pid"
fi

echo
echo "==================== results ===================="
for entry in "${planned[@]}"; do
  record_step "${entry%% *}" "${entry#* }"
done

total=$(awk -v a="$total_start" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')
echo
echo "==================== summary ===================="
printf '%-4s  %-28s %-6s %9s  %s\n' "" step core time result
printf '%s\n' "${rows[@]}"
echo "-------------------------------------------------"
passed=0
failed=0
failed_names=()
for layer in "${layer_order[@]}"; do
  if [ "${layer_state[$layer]}" = PASS ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failed_names+=("$layer")
  fi
done
printf 'total %dm%02ds%s\n' $((total / 60)) $((total % 60)) "${failed_names[*]:+; failed layers: ${failed_names[*]}}"
echo "layers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
