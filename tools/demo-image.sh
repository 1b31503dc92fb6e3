#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The image `make demo` runs its containers from, made in a second or two from this host's
# own files (no registry, no debootstrap): Debian's static busybox (sh, cp, chmod, mkdir,
# stat, id) and libcap's setcap with the libraries it links, put in a tar and handed to
# `docker import`. That is all the demo's containers do: copy a shell and make it setuid,
# set a file capability. The test images (tools/build-images.sh) are not used.
#
#   tools/demo-image.sh [IMAGE]     # default sandboxguard/demo:local; prints the image name
#
# The image carries the sha256 of this script and of the host files it holds in the label
# org.sandboxguard.recipe-sha256; an image whose label matches is reused, so a second demo
# starts at once and an upgraded busybox or libcap makes a new one.
set -euo pipefail
image=${1:-sandboxguard/demo:local}
label=org.sandboxguard.recipe-sha256
log() { printf '[demo-image] %s\n' "$*" >&2; }

busybox=/bin/busybox
setcap=$(command -v setcap || echo /usr/sbin/setcap)
for need in "$busybox" "$setcap"; do
  if [ ! -x "$need" ]; then
    log "$need is missing: apt-get install busybox-static libcap2-bin (tools/setup.sh --demo installs both)"
    exit 1
  fi
done
# The applet list whole, then searched: `busybox --list | grep -q` under pipefail fails when
# grep stops reading early and busybox dies of SIGPIPE.
applets=$("$busybox" --list 2>/dev/null || true)
if ! grep -qx sh <<<"$applets" || ldd "$busybox" >/dev/null 2>&1; then
  log "$busybox is not a static busybox with sh (Debian's busybox-static provides one): apt-get install busybox-static"
  exit 1
fi

# The dynamic libraries setcap needs, and the loader, from the host as they are.
mapfile -t libs < <(ldd "$setcap" | awk '/=> \// {print $3} /^[[:space:]]*\/[^ ]*ld-linux/ {print $1}' | sort -u)
want=$(cat "$0" "$busybox" "$setcap" "${libs[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(docker image inspect -f "{{ index .Config.Labels \"$label\" }}" "$image" 2>/dev/null || true)" = "$want" ]; then
  echo "$image"
  exit 0
fi

start=$SECONDS
rootfs=$(mktemp -d "${TMPDIR:-/tmp}/sandboxguard-demo-rootfs.XXXXXX")
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$rootfs/bin" "$rootfs/usr/sbin" "$rootfs/tmp" "$rootfs/etc"
cp "$busybox" "$rootfs/bin/busybox"
for applet in sh cp chmod mkdir stat id ls cat echo true; do
  ln -s busybox "$rootfs/bin/$applet"
done
cp "$setcap" "$rootfs/usr/sbin/setcap"
for lib in "${libs[@]}"; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
printf 'root:x:0:0:root:/:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\n' >"$rootfs/etc/group"
chmod 1777 "$rootfs/tmp"
tar --numeric-owner --owner=0 --group=0 -C "$rootfs" -c . | docker import \
  --change "LABEL $label=$want" \
  --change "LABEL org.sandboxguard.recipe=tools/demo-image.sh" \
  --change 'ENV PATH=/bin:/usr/sbin' \
  --change 'CMD ["sh"]' \
  - "$image" >/dev/null
log "built $image from this host's busybox and setcap in $((SECONDS - start))s"
echo "$image"
