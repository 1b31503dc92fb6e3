#!/usr/bin/env bash
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
#   molecule     molecule test, one step per molecule/<scenario>/
#
# Controllers: ansible-core 2.19 is .venv (requirements/dev.txt); each
# requirements/controller-X.Y.txt names another core and its Python (`# controller:` line)
# and gets a cached venv in .cache/controllers/X.Y. SANDBOXGUARD_CONTROLLERS narrows them.
#
#   SANDBOXGUARD_LAYERS="unit pythons" tools/run-tests.sh       # a subset, in the order above
#   SANDBOXGUARD_LAYERS="molecule:default" tools/run-tests.sh   # one scenario (or pythons:3.12)
#   SANDBOXGUARD_LAYERS="sanity:2.21 integration:2.21" ...      # one controller's steps
#   SANDBOXGUARD_VERBOSE=1 ...                                   # stream output, not just logs
#   SANDBOXGUARD_MOLECULE_JOBS=1 ...                             # scenarios one after another
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

all_layers=(sync ruff unit pythons integration sanity lint importer molecule)
read -r -a wanted <<<"$(printf '%s' "${SANDBOXGUARD_LAYERS:-${all_layers[*]}}" | tr ',' ' ')"
for w in "${wanted[@]}"; do
  case " ${all_layers[*]} " in
    *" ${w%%:*} "*) ;;
    *) echo "SANDBOXGUARD_LAYERS: unknown layer '$w' (known: ${all_layers[*]}; molecule:NAME, pythons:X.Y, sanity:X.Y and integration:X.Y select one step)" >&2; exit 2 ;;
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

# fail_step LAYER NAME MESSAGE: a step that could not even start.
fail_step() {
  printf '==> %-28s\n' "$2"
  printf '%s\n' "$3" | tee "$logs/$2.log"
  rows+=("$(printf '%-4s  %-28s %-6s %8ss  %s' FAIL "$2" "$(core_of "$1" "$2")" 0.0 "$3")")
  case " ${layer_order[*]} " in *" $1 "*) ;; *) layer_order+=("$1") ;; esac
  layer_state[$1]=FAIL
}

# --- steps in the background, at most N at a time -------------------------------------
# spawn_step NAME CMD... starts run_step in the background; reap N waits until fewer than N
# run. Record the rows afterwards (record_step), in the order you want them listed.
declare -A running=()
spawn_step() {
  local name=$1
  printf '==> %-28s %s (in the background)\n' "$name" "${*:2}"
  run_step "$@" &
  running[$!]=$name
}
reap() {
  local done_pid
  while [ ${#running[@]} -ge "$1" ] && [ ${#running[@]} -gt 0 ]; do
    wait -n -p done_pid "${!running[@]}"
    printf '    (done: %s)\n' "${running[$done_pid]}"
    unset "running[$done_pid]"
  done
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
declare -A layer_core=([integration]=$base_core [sanity]=$base_core [lint]=$base_core [importer]=$base_core [molecule]=$base_core)
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

# The newer controllers' venvs, made once before the layers that use them (step "venv-X.Y").
declare -A venv_ok=()
need_controllers() {
  local c
  for c in "${cores[@]}"; do
    [ "$c" = "$base_core" ] && continue
    [ -n "${venv_ok[$c]:-}" ] && continue
    step_core[venv-$c]=$c
    step controllers "venv-$c" controller_venv "$c"
    if [ "$(cat "$logs/venv-$c.log.rc")" = 0 ]; then venv_ok[$c]=yes; else venv_ok[$c]=no; fi
  done
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
integration() { # [VENV]: the whole directory with .venv, or the module-level tests with another controller
  local rc files
  if [ $# -gt 0 ]; then
    # Only the files whose tests carry the `controller` marker: collecting the others would
    # import what only .venv has (jsonschema, testinfra, ...). -p no:cacheprovider: one
    # .pytest_cache per checkout is enough.
    # SANDBOXGUARD_CONTROLLER_SKIP: files left out on the newer cores to keep make test inside
    # its budget (docs/testing.md "The controller matrix"); empty runs every marked file.
    mapfile -t files < <(grep -l 'pytest\.mark\.controller' tests/integration/test_*.py |
      grep -v -x -F -f <(printf '%s\n' ${SANDBOXGUARD_CONTROLLER_SKIP-tests/integration/test_sweep_role.py} "/dev/null/none"))
    [ ${#files[@]} -gt 0 ] || { echo "no test file in tests/integration carries pytest.mark.controller"; return 1; }
    "$1/bin/python" -m pytest -p no:cacheprovider -m controller "${files[@]}"
    return $?
  fi
  .venv/bin/pytest tests/integration
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

wants sync && step sync sync python3 tools/sync_module_utils.py --check
wants ruff && step ruff ruff .venv/bin/ruff check .
wants unit && step unit unit .venv/bin/pytest tests/unit

if wants_any pythons; then
  for v in ${SANDBOXGUARD_PYTHONS:-3.9 3.10 3.11 3.12 3.13}; do
    wants pythons "$v" || continue
    if python=$(python_for "$v"); then
      step pythons "unit-py$v" unit_under "$v" "$python"
    else
      fail_step pythons "unit-py$v" "Python $v not found: install it (pyenv install $v) or set SANDBOXGUARD_PYTHONS to the versions to test, e.g. SANDBOXGUARD_PYTHONS=\"3.11 3.12\""
    fi
  done
fi

# wants_core LAYER X.Y: this controller's step of LAYER was asked for (the whole layer, or LAYER:X.Y)
wants_core() { case " ${cores[*]} " in *" $2 "*) wants "$1" "$2" ;; *) return 1 ;; esac; }
newer_wanted() { # LAYER -> some newer controller's step of LAYER is wanted
  local c
  for c in "${cores[@]}"; do [ "$c" != "$base_core" ] && wants_core "$1" "$c" && return 0; done
  return 1
}
if newer_wanted integration || newer_wanted sanity; then need_controllers; fi

# integration: everything on .venv's controller; then, one controller after another (the tests
# share users, ports and container names), the module-level tests (-m controller) on the others.
if wants_any integration; then
  for c in "${cores[@]}"; do
    wants_core integration "$c" || continue
    if [ "$c" = "$base_core" ]; then
      step integration integration integration
    elif [ "${venv_ok[$c]:-}" = yes ]; then
      step_core[integration-$c]=$c
      step integration "integration-$c" integration "$(controller_venv_dir "$c")"
    else
      step_core[integration-$c]=$c
      fail_step integration "integration-$c" "no venv for ansible-core $c (see the venv-$c step)"
    fi
  done
fi

# sanity: ansible-test on each controller, SANDBOXGUARD_SANITY_JOBS at a time (each has its own
# copy under .cache/sanity/X.Y and its own ansible-test venvs), then shellcheck.
if wants_any sanity; then
  sanity_steps=()
  for c in "${cores[@]}"; do
    wants_core sanity "$c" || continue
    name=sanity-$c
    [ "$c" = "$base_core" ] && name=sanity
    step_core[$name]=$c
    if [ "$c" != "$base_core" ] && [ "${venv_ok[$c]:-}" != yes ]; then
      fail_step sanity "$name" "no venv for ansible-core $c (see the venv-$c step)"
      continue
    fi
    reap "${SANDBOXGUARD_SANITY_JOBS:-2}"
    spawn_step "$name" env SANDBOXGUARD_SANITY_VENV="$(controller_venv_dir "$c")" bash tools/ansible-test-sanity.sh
    sanity_steps+=("$name")
  done
  reap 1
  for name in "${sanity_steps[@]}"; do record_step sanity "$name"; done
  if wants sanity; then
    # The shell scripts that do not ship (build_ignore), so ansible-test's shellcheck skips them.
    step_core[shellcheck]=-
    step sanity shellcheck shellcheck -S warning tools/*.sh images/*.sh .ci/run
  fi
fi
wants lint && step lint ansible-lint .venv/bin/ansible-lint
wants importer && step importer galaxy-importer bash tools/galaxy-importer.sh

# molecule: scenarios run SANDBOXGUARD_MOLECULE_JOBS at a time (default 2: they mostly wait
# on Ansible round trips and containers; container names are per scenario), except those
# that mount the host's docker.sock, which run alone. Each keeps its own log and time; the
# rows are recorded in scenario order.
if wants_any molecule; then
  scenarios=()
  for file in molecule/*/molecule.yml; do
    [ -e "$file" ] || continue
    scenario=$(basename "$(dirname "$file")")
    wants molecule "$scenario" && scenarios+=("$scenario")
  done
  if ! compgen -G 'molecule/*/molecule.yml' >/dev/null; then
    fail_step molecule molecule "no molecule/<scenario>/molecule.yml found (molecule/default is the harness scenario)"
  elif [ ${#scenarios[@]} -gt 0 ]; then
    jobs=${SANDBOXGUARD_MOLECULE_JOBS:-2}
    molecule_start=$(now)
    for scenario in "${scenarios[@]}"; do
      if grep -q 'docker\.sock' "molecule/$scenario/molecule.yml"; then
        # It talks to the host's engine and sees every container there: run it alone, so
        # other scenarios' containers starting and dying cannot disturb what it verifies.
        reap 1
        printf '==> %-28s %s\n' "molecule-$scenario" ".venv/bin/molecule test -s $scenario (alone: it mounts the host's docker.sock)"
        run_step "molecule-$scenario" .venv/bin/molecule test -s "$scenario"
      else
        reap "$jobs"
        spawn_step "molecule-$scenario" .venv/bin/molecule test -s "$scenario"
      fi
    done
    reap 1
    for scenario in "${scenarios[@]}"; do
      record_step molecule "molecule-$scenario"
    done
    printf '    molecule: %d scenario(s), %d at a time, in %ss\n' "${#scenarios[@]}" "$jobs" \
      "$(awk -v a="$molecule_start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
  fi
fi

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
