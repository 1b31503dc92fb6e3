#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Build the local test images without a registry: debootstrap a Debian minbase rootfs,
# then `tar | docker import` it. Each image carries the sha256 of its recipe in the label
# org.sandboxguard.recipe-sha256; an image whose label matches the current recipe is
# reused, anything else is rebuilt.
#
#   tools/build-images.sh                       # the default set (below)
#   tools/build-images.sh debian-systemd:13     # just these (sandboxguard/ prefix optional)
#
# Default set: sandboxguard/debian:12 and sandboxguard/debian:13, plus every
# sandboxguard/<flavour>:<version> image named in molecule/*/molecule.yml or tests/ (so a
# scenario that needs the systemd image gets it by naming it), plus SANDBOXGUARD_IMAGES
# (space- or comma-separated). `make demo` needs none of them (tools/demo-image.sh).
#
# Recipe = images/<flavour>.recipe + images/build-image.sh (the build steps) + the Debian
# suite; this script only chooses and schedules, so editing it rebuilds nothing. Versions:
# 12 = bookworm, 13 = trixie. Mirror: SANDBOXGUARD_DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Images are built two at a time (SANDBOXGUARD_IMAGE_JOBS); logs in .cache/images/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log() { printf '[images] %s\n' "$*" >&2; }
mirror=${SANDBOXGUARD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
jobs=${SANDBOXGUARD_IMAGE_JOBS:-2}
label=org.sandboxguard.recipe-sha256  # written by images/build-image.sh
work=$top/.cache/images
mkdir -p "$work"

suite_of() {
  case "$1" in
    12) echo bookworm ;;
    13) echo trixie ;;
    *) return 1 ;;
  esac
}

# Normalise "debian:12", "sandboxguard/debian:12" -> "sandboxguard/debian:12"; reject others.
normalise() {
  local ref=${1#sandboxguard/} flavour version
  flavour=${ref%%:*}
  version=${ref#*:}
  if [ "$flavour" = "$ref" ] || [ ! -f "images/$flavour.recipe" ] || ! suite_of "$version" >/dev/null; then
    log "unknown image '$1': expected sandboxguard/<flavour>:<12|13> with a recipe images/<flavour>.recipe (have: $(for r in images/*.recipe; do r=${r#images/}; printf '%s ' "${r%.recipe}"; done))"
    return 1
  fi
  echo "sandboxguard/$flavour:$version"
}

recipe_hash() { # image -> sha256 of what defines it: the suite, the recipe, the build steps
  local ref=${1#sandboxguard/}
  { echo "suite=$(suite_of "${ref#*:}")"; cat "images/${ref%%:*}.recipe" images/build-image.sh; } | sha256sum | cut -d' ' -f1
}

current_label() {
  docker image inspect -f "{{ index .Config.Labels \"$label\" }}" "$1" 2>/dev/null || true
}

# Which images: arguments, or the default set.
requested=()
if [ $# -gt 0 ]; then
  requested=("$@")
else
  requested=(sandboxguard/debian:12 sandboxguard/debian:13)
  # Images named by scenarios and tests; a name without a recipe is someone else's string.
  while read -r ref; do
    if [ -f "images/$(r=${ref#sandboxguard/}; echo "${r%%:*}").recipe" ]; then requested+=("$ref"); fi
  done < <(grep -rhoE 'sandboxguard/[a-z][a-z0-9-]*:[0-9]+' molecule/*/molecule.yml tests 2>/dev/null | sort -u)
  extra=${SANDBOXGUARD_IMAGES:-}
  for ref in ${extra//,/ }; do requested+=("$ref"); done
fi
images=()
for ref in "${requested[@]}"; do
  image=$(normalise "$ref") || exit 2
  case " ${images[*]} " in *" $image "*) ;; *) images+=("$image") ;; esac
done

if ! docker info >/dev/null 2>&1; then
  log "no Docker engine answers; run tools/docker-engine.sh first (make images does)"
  exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  log "debootstrap is missing; install it: apt-get install debootstrap (tools/setup.sh does)"
  exit 1
fi

todo=()
for image in "${images[@]}"; do
  want=$(recipe_hash "$image")
  if [ "$(current_label "$image")" = "$want" ]; then
    log "reusing cached $image (recipe sha256 ${want:0:12} unchanged)"
  else
    todo+=("$image")
  fi
done
[ ${#todo[@]} -eq 0 ] && exit 0

log "building ${todo[*]} (${jobs} at a time; about a minute each; logs in ${work#"$top"/}/)"
start=$SECONDS
declare -A pids=()
failed=()
wait_one() {
  local done_pid image rc
  wait -n -p done_pid "${!pids[@]}" && rc=0 || rc=$?
  image=${pids[$done_pid]}
  unset "pids[$done_pid]"
  if [ "$rc" -eq 0 ]; then
    log "$(tail -n 1 "$work/$(basename "${image//:/-}").log")"
  else
    failed+=("$image")
    log "FAILED to build $image; last lines of ${work#"$top"/}/$(basename "${image//:/-}").log:"
    tail -n 25 "$work/$(basename "${image//:/-}").log" >&2
  fi
}
for image in "${todo[@]}"; do
  while [ ${#pids[@]} -ge "$jobs" ]; do wait_one; done
  (
    # One builder per image at a time, even across concurrent make runs.
    exec 9>"$work/$(basename "${image//:/-}").lock"
    flock 9
    if [ "$(current_label "$image")" = "$(recipe_hash "$image")" ]; then
      echo "built $image meanwhile by another run; reusing it"
      exit 0
    fi
    ref=${image#sandboxguard/}
    bash images/build-image.sh "${ref%%:*}" "${ref#*:}" "$(suite_of "${ref#*:}")" "$image" \
      "$(recipe_hash "$image")" "$work" "$mirror"
  ) >"$work/$(basename "${image//:/-}").log" 2>&1 &
  pids[$!]=$image
done
while [ ${#pids[@]} -gt 0 ]; do wait_one; done
if [ ${#failed[@]} -gt 0 ]; then
  log "failed: ${failed[*]}"
  exit 1
fi
log "images ready in $((SECONDS - start))s"
