#!/usr/bin/env bash
# Build the local test images without a registry: debootstrap a Debian minbase rootfs,
# then `tar | docker import` it. Each image carries the sha256 of its recipe in the label
# org.sandboxguard.recipe-sha256; an image whose label matches the current recipe is
# reused, anything else is rebuilt.
#
#   tools/build-images.sh                       # the default set (below)
#   tools/build-images.sh debian-systemd:13     # just these (sandboxguard/ prefix optional)
#
# Default set: sandboxguard/debian:12 and sandboxguard/debian:13, plus every
# sandboxguard/<flavour>:<version> image named in molecule/*/molecule.yml, tests/ or
# tools/demo.sh (so a scenario that needs the systemd image gets it by naming it), plus
# SANDBOXGUARD_IMAGES (space- or comma-separated).
#
# Recipe = images/<flavour>.recipe + this script + the Debian suite. Versions: 12 = bookworm,
# 13 = trixie. Mirror: SANDBOXGUARD_DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Images are built two at a time (SANDBOXGUARD_IMAGE_JOBS); logs in .cache/images/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
self=$top/tools/build-images.sh
cd "$top"
log() { printf '[images] %s\n' "$*" >&2; }
mirror=${SANDBOXGUARD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
jobs=${SANDBOXGUARD_IMAGE_JOBS:-2}
label=org.sandboxguard.recipe-sha256
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

recipe_hash() { # image -> sha256 of what defines it
  local ref=${1#sandboxguard/}
  { echo "suite=$(suite_of "${ref#*:}")"; cat "images/${ref%%:*}.recipe" "$self"; } | sha256sum | cut -d' ' -f1
}

current_label() {
  docker image inspect -f "{{ index .Config.Labels \"$label\" }}" "$1" 2>/dev/null || true
}

build_one() { # image -> builds it, output to the caller's log
  local image=$1 ref flavour version suite want rootfs old start
  ref=${image#sandboxguard/}
  flavour=${ref%%:*}
  version=${ref#*:}
  suite=$(suite_of "$version")
  want=$(recipe_hash "$image")
  rootfs=$work/$flavour-$version.rootfs
  start=$SECONDS
  local recipe_packages=() recipe_cmd='' recipe_policy_rc_d=no recipe_stopsignal=''
  # shellcheck source=/dev/null
  . "images/$flavour.recipe"
  old=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)

  rm -rf "$rootfs"
  mkdir -p "$work/debs-$suite"
  echo "debootstrap --variant=minbase $suite from $mirror with: ${recipe_packages[*]}"
  if ! debootstrap --variant=minbase --components=main --cache-dir="$work/debs-$suite" \
      --include="$(IFS=,; echo "${recipe_packages[*]}")" "$suite" "$rootfs" "$mirror"; then
    echo "debootstrap failed; its own log:"
    tail -n 40 "$rootfs/debootstrap/debootstrap.log" 2>/dev/null || true
    return 1
  fi
  # The rootfs as a container wants it: no service starts from dpkg without an init, no
  # downloaded package lists or .debs (scenarios that install run apt-get update), and an
  # empty machine-id so systemd makes one per container (machine-id(5)).
  if [ "$recipe_policy_rc_d" = yes ]; then
    printf '#!/bin/sh\n# no init in this container: do not start services (invoke-rc.d(8))\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
    chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
  fi
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
  : >"$rootfs/etc/machine-id"
  rm -f "$rootfs/var/lib/dbus/machine-id"

  local changes=(--change "LABEL $label=$want"
    --change "LABEL org.sandboxguard.recipe=images/$flavour.recipe"
    --change "LABEL org.sandboxguard.suite=$suite"
    --change "ENV LANG=C.UTF-8"
    --change "ENV container=docker"
    --change "CMD $recipe_cmd")
  if [ -n "$recipe_stopsignal" ]; then
    changes+=(--change "STOPSIGNAL $recipe_stopsignal")
  fi
  tar --numeric-owner --xattrs -C "$rootfs" -c . | docker import "${changes[@]}" - "$image"
  rm -rf "$rootfs"
  if [ -n "$old" ] && [ "$old" != "$(docker image inspect -f '{{.Id}}' "$image")" ]; then
    docker image rm "$old" >/dev/null 2>&1 || echo "old image $old still used by a container; left in place"
  fi

  # Prove the image is what the recipe says before anyone relies on it.
  local got
  got=$(docker run --rm --network none "$image" python3 -c \
    'import apt, platform; print(dict(l.strip().split("=", 1) for l in open("/etc/os-release") if "=" in l)["VERSION_ID"].strip("\""))')
  if [ "$got" != "$version" ]; then
    echo "smoke test failed: $image reports VERSION_ID '$got', expected '$version'"
    return 1
  fi
  echo "built $image in $((SECONDS - start))s ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'), recipe sha256 ${want:0:12})"
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
  done < <(grep -rhoE 'sandboxguard/[a-z][a-z0-9-]*:[0-9]+' molecule/*/molecule.yml tests tools/demo.sh 2>/dev/null | sort -u)
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
    build_one "$image"
  ) >"$work/$(basename "${image//:/-}").log" 2>&1 &
  pids[$!]=$image
done
while [ ${#pids[@]} -gt 0 ]; do wait_one; done
if [ ${#failed[@]} -gt 0 ]; then
  log "failed: ${failed[*]}"
  exit 1
fi
log "images ready in $((SECONDS - start))s"
