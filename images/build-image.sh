#!/usr/bin/env bash
# Build ONE test image from its recipe: debootstrap a Debian minbase rootfs, shape it for a
# container, `tar | docker import` it with the recipe hash label, and smoke-test it.
# Called by tools/build-images.sh (which decides whether a rebuild is needed); this file and
# images/<flavour>.recipe are what the hash label covers, so editing either rebuilds.
#
#   images/build-image.sh FLAVOUR VERSION SUITE IMAGE HASH WORKDIR MIRROR
set -euo pipefail
flavour=$1 version=$2 suite=$3 image=$4 hash=$5 work=$6 mirror=$7
label=org.sandboxguard.recipe-sha256
here=$(cd "$(dirname "$0")" && pwd)
rootfs=$work/$flavour-$version.rootfs
start=$SECONDS

recipe_packages=() recipe_cmd='' recipe_policy_rc_d=no
# shellcheck source=/dev/null
. "$here/$flavour.recipe"
old=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)

rm -rf "$rootfs"
mkdir -p "$work/debs-$suite"
echo "debootstrap --variant=minbase $suite from $mirror with: ${recipe_packages[*]}"
# --cache-dir keeps the downloaded .debs, so a recipe change re-downloads only what changed.
if ! debootstrap --variant=minbase --components=main --cache-dir="$work/debs-$suite" \
    --include="$(IFS=,; echo "${recipe_packages[*]}")" "$suite" "$rootfs" "$mirror"; then
  echo "debootstrap failed; its own log:"
  tail -n 40 "$rootfs/debootstrap/debootstrap.log" 2>/dev/null || true
  exit 1
fi

# The rootfs as a container wants it: no service starts from dpkg without an init, no
# downloaded package lists or .debs (scenarios that install run apt-get update first), and
# an empty machine-id so systemd makes one per container (machine-id(5)).
if [ "$recipe_policy_rc_d" = yes ]; then
  printf '#!/bin/sh\n# no init in this container: do not start services (invoke-rc.d(8))\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
  chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
fi
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
: >"$rootfs/etc/machine-id"
rm -f "$rootfs/var/lib/dbus/machine-id"

# docker import accepts only CMD, ENTRYPOINT, ENV, EXPOSE, LABEL, ONBUILD, USER, VOLUME and
# WORKDIR changes (no STOPSIGNAL: set stop_signal on the molecule platform instead).
tar --numeric-owner --xattrs -C "$rootfs" -c . | docker import \
  --change "LABEL $label=$hash" \
  --change "LABEL org.sandboxguard.recipe=images/$flavour.recipe" \
  --change "LABEL org.sandboxguard.suite=$suite" \
  --change "ENV LANG=C.UTF-8" \
  --change "ENV container=docker" \
  --change "CMD $recipe_cmd" \
  - "$image"
rm -rf "$rootfs"
if [ -n "$old" ] && [ "$old" != "$(docker image inspect -f '{{.Id}}' "$image")" ]; then
  docker image rm "$old" >/dev/null 2>&1 || echo "old image $old still used by a container; left in place"
fi

# Prove the image is what the recipe says before anyone relies on it.
got=$(docker run --rm --network none --entrypoint python3 "$image" -c \
  'import apt; print(dict(l.strip().split("=", 1) for l in open("/etc/os-release") if "=" in l)["VERSION_ID"].strip("\""))')
if [ "$got" != "$version" ]; then
  echo "smoke test failed: $image reports VERSION_ID '$got', expected '$version'"
  exit 1
fi
echo "built $image in $((SECONDS - start))s ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'), recipe sha256 ${hash:0:12})"
