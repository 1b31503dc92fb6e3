#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
#
# Fetch the upstream bubblewrap release tarball that Debian's trixie source package
# carries, and build it into a cache directory keyed by the tarball's sha256.
#
#   tools/build-bwrap.sh tarball   print the path of the tarball (fetch it if needed)
#   tools/build-bwrap.sh build     print the path of the built bwrap (build it if needed)
#
# Debian 12 ships bwrap 0.8.0 and no backport; the backend needs >= 0.9.0 (FACTS.md).
# apt runs with its own sources list and state directories under the cache, so the
# host's apt configuration is never changed. Nothing here is committed: tarballs and
# binaries stay under .cache/bwrap/.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${SANDBOXGUARD_BWRAP_CACHE:-$TOP/.cache/bwrap}
SUITE=${SANDBOXGUARD_BWRAP_SUITE:-trixie}
MIRROR=${SANDBOXGUARD_BWRAP_MIRROR:-http://deb.debian.org/debian}
SRC_DIR=$CACHE/src

log() { echo "build-bwrap: $*" >&2; }

fetch_tarball() {
    local found
    found=$(find "$SRC_DIR" -maxdepth 1 -name 'bubblewrap_*.orig.tar.*' ! -name '*.asc' 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$found" ]; then
        echo "$found"
        return
    fi
    mkdir -p "$SRC_DIR" "$CACHE/apt/lists/partial" "$CACHE/apt/archives/partial" "$CACHE/apt/parts"
    # A private deb-src line for the suite; the host's sources are not read or changed.
    echo "deb-src $MIRROR $SUITE main" > "$CACHE/apt/sources.list"
    local opts=(
        -o "Dir::Etc::SourceList=$CACHE/apt/sources.list"
        -o "Dir::Etc::SourceParts=$CACHE/apt/parts"
        -o "Dir::State::Lists=$CACHE/apt/lists"
        -o "Dir::Cache::Archives=$CACHE/apt/archives"
        -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
        -o "APT::Get::List-Cleanup=false"
    )
    log "apt-get update ($SUITE deb-src only)"
    apt-get "${opts[@]}" update >&2
    log "apt-get source --download-only bubblewrap/$SUITE"
    # Seen once: the .dsc fetch failed with 404 while both tarballs arrived (FACTS.md).
    (cd "$SRC_DIR" && apt-get "${opts[@]}" source --download-only "bubblewrap/$SUITE" >&2) || true
    found=$(find "$SRC_DIR" -maxdepth 1 -name 'bubblewrap_*.orig.tar.*' ! -name '*.asc' | sort -V | tail -n 1 || true)
    if [ -z "$found" ]; then
        log "no bubblewrap_*.orig.tar.* arrived in $SRC_DIR; check that $MIRROR serves $SUITE sources"
        exit 1
    fi
    echo "$found"
}

build() {
    local tarball sum out work
    tarball=${SANDBOXGUARD_BWRAP_TARBALL:-$(fetch_tarball)}
    sum=$(sha256sum "$tarball" | cut -c1-16)
    out=$CACHE/build-$sum
    if [ -x "$out/prefix/bin/bwrap" ]; then
        echo "$out/prefix/bin/bwrap"
        return
    fi
    for tool in meson ninja pkg-config; do
        command -v "$tool" >/dev/null || { log "$tool is missing: apt-get install meson ninja-build pkg-config libcap-dev"; exit 1; }
    done
    rm -rf "$out"
    work=$out/work
    mkdir -p "$work"
    tar -C "$work" -xf "$tarball"
    local srcdir
    srcdir=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    log "building $(basename "$srcdir") into $out/prefix"
    meson setup "$work/build" "$srcdir" --prefix="$out/prefix" -Dman=disabled -Dtests=false \
        -Dbash_completion=disabled -Dzsh_completion=disabled -Dselinux=disabled >&2
    ninja -C "$work/build" >&2
    meson install -C "$work/build" >&2
    # Other users (the agent user of the integration tests) must reach the binary.
    chmod -R a+rX "$out/prefix"
    echo "$out/prefix/bin/bwrap"
}

case "${1:-build}" in
    tarball) fetch_tarball ;;
    build) build ;;
    *) echo "usage: $0 [tarball|build]" >&2; exit 2 ;;
esac
