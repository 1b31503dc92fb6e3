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
#   integration  .venv/bin/pytest tests/integration (root, real Docker)
#   sanity       tools/ansible-test-sanity.sh, and shellcheck on tools/ images/ .ci/run
#   lint         ansible-lint (production profile, .ansible-lint)
#   molecule     molecule test, one step per molecule/<scenario>/
#
#   SANDBOXGUARD_LAYERS="unit pythons" tools/run-tests.sh       # a subset, in the order above
#   SANDBOXGUARD_LAYERS="molecule:default" tools/run-tests.sh   # one scenario (or pythons:3.12)
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

all_layers=(sync ruff unit pythons integration sanity lint molecule)
read -r -a wanted <<<"$(printf '%s' "${SANDBOXGUARD_LAYERS:-${all_layers[*]}}" | tr ',' ' ')"
for w in "${wanted[@]}"; do
  case " ${all_layers[*]} " in
    *" ${w%%:*} "*) ;;
    *) echo "SANDBOXGUARD_LAYERS: unknown layer '$w' (known: ${all_layers[*]}; molecule:NAME and pythons:X.Y select one step)" >&2; exit 2 ;;
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

# Results: one row per step; a layer fails when any of its steps fails.
rows=()
declare -A layer_state=()
layer_order=()

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
  rows+=("$(printf '%-4s  %-28s %8ss  %s' "$status" "$name" "$secs" "${detail:-exit $rc}")")
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
  rows+=("$(printf '%-4s  %-28s %8ss  %s' FAIL "$2" 0.0 "$3")")
  case " ${layer_order[*]} " in *" $1 "*) ;; *) layer_order+=("$1") ;; esac
  layer_state[$1]=FAIL
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
  local v=$1 python=$2 venv_dir=$top/.cache/py/$1 req=requirements/unit-pythons.txt want
  want=$( { cat "$req"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$venv_dir/.sandboxguard-stamp" 2>/dev/null)" != "$want" ]; then
    echo "creating $venv_dir with $("$python" --version) and $req"
    rm -rf "$venv_dir"
    "$python" -m venv "$venv_dir" && "$venv_dir/bin/python" -m pip install -q -r "$req" || return 1
    echo "$want" >"$venv_dir/.sandboxguard-stamp"
  fi
  # -p no:cacheprovider: the five Pythons would fight over .pytest_cache
  "$venv_dir/bin/python" -m pytest -p no:cacheprovider tests/unit
}

# --- integration: pytest exit 5 (nothing collected) passes only when there is nothing to collect
integration() {
  local rc
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

wants integration && step integration integration integration
if wants sanity; then
  step sanity sanity bash tools/ansible-test-sanity.sh
  # The shell scripts that do not ship (build_ignore), so ansible-test's shellcheck skips them.
  step sanity shellcheck shellcheck -S warning tools/*.sh images/*.sh .ci/run
fi
wants lint && step lint ansible-lint .venv/bin/ansible-lint

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
    declare -A running=()
    reap() { # wait until fewer than $1 scenarios run
      while [ ${#running[@]} -ge "$1" ] && [ ${#running[@]} -gt 0 ]; do
        wait -n -p done_pid "${!running[@]}"
        printf '    (done: molecule-%s)\n' "${running[$done_pid]}"
        unset "running[$done_pid]"
      done
    }
    for scenario in "${scenarios[@]}"; do
      if grep -q 'docker\.sock' "molecule/$scenario/molecule.yml"; then
        # It talks to the host's engine and sees every container there: run it alone, so
        # other scenarios' containers starting and dying cannot disturb what it verifies.
        reap 1
        printf '==> %-28s %s\n' "molecule-$scenario" ".venv/bin/molecule test -s $scenario (alone: it mounts the host's docker.sock)"
        run_step "molecule-$scenario" .venv/bin/molecule test -s "$scenario"
      else
        reap "$jobs"
        printf '==> %-28s %s\n' "molecule-$scenario" ".venv/bin/molecule test -s $scenario"
        run_step "molecule-$scenario" .venv/bin/molecule test -s "$scenario" &
        running[$!]=$scenario
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
