#!/usr/bin/env bash
# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Make sure a Docker engine answers on this machine, starting one if none does.
#
# - If `docker info` answers, the running daemon is left alone (whoever started it).
# - Otherwise `dockerd` (Debian's docker.io, installed by tools/setup.sh) is started in the
#   background in its own session, logging to .cache/dockerd.log, and we wait up to
#   SANDBOXGUARD_DOCKERD_WAIT seconds (default 60) for it to answer. If it does not, the
#   tail of the log is printed and the script exits 1.
# - Two callers at once (make test and make demo in parallel) are serialised with flock,
#   so only one dockerd is ever started.
#
# Client and engine versions: /usr/local/bin/docker may be a newer CLI (28.x, API 1.50)
# than Debian's engine (20.10, API 1.41). The CLI negotiates the API version down to what
# the engine offers, so the newer client works; we check that it does and fall back to
# Debian's own /usr/bin/docker otherwise. The Docker SDK for Python (molecule,
# community.docker, our tests) negotiates the same way.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log() { printf '[engine] %s\n' "$*" >&2; }
wait_s=${SANDBOXGUARD_DOCKERD_WAIT:-60}
logfile=$top/.cache/dockerd.log
mkdir -p "$top/.cache"

# The client we use: the first `docker` on PATH, unless it cannot talk to the engine.
client=$(command -v docker || true)
if [ -z "$client" ]; then
  log "no docker client on PATH; install Debian's docker.io (tools/setup.sh does: apt-get install docker.io)"
  exit 1
fi

answers() { "$client" info >/dev/null 2>&1; }

report() {
  local server api
  server=$("$client" version --format '{{.Server.Version}}' 2>/dev/null || echo '?')
  api=$("$client" version --format '{{.Client.APIVersion}}' 2>/dev/null || echo '?')
  log "engine $server answers ($client, API $api, $("$client" info --format '{{.Driver}}, cgroup v{{.CgroupVersion}}' 2>/dev/null || echo 'driver unknown'))"
}

if answers; then
  report
  exit 0
fi

# Serialise starters: whoever holds the lock starts dockerd; the others wait and then find it up.
exec 9>"$top/.cache/dockerd.lock"
flock -w "$((wait_s + 10))" 9 || { log "timed out waiting for another tools/docker-engine.sh"; exit 1; }
if answers; then
  report
  exit 0
fi

# A socket file can answer nothing: a daemon that is starting, or one that died and left it.
if pgrep -x dockerd >/dev/null 2>&1; then
  log "a dockerd process exists but does not answer yet; waiting for it (up to ${wait_s}s)"
else
  if ! command -v dockerd >/dev/null 2>&1; then
    log "dockerd not found; install it: apt-get install docker.io (tools/setup.sh does this)"
    exit 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    log "no Docker engine answers and starting dockerd needs root; run as root or start the engine (systemctl start docker)"
    exit 1
  fi
  # containerd from an earlier daemon may still hold its socket; dockerd starts its own
  # containerd when none answers at /run/containerd/containerd.sock.
  log "no engine answers; starting dockerd in the background (log: ${logfile#"$top"/})"
  printf '\n===== %s tools/docker-engine.sh starts dockerd =====\n' "$(date -u +%FT%TZ)" >>"$logfile"
  setsid nohup dockerd >>"$logfile" 2>&1 </dev/null &
  disown || true
fi

for ((i = 0; i < wait_s * 2; i++)); do
  if answers; then
    log "dockerd answered after $((i / 2)).$((i % 2 * 5))s"
    report
    exit 0
  fi
  sleep 0.5
done
log "dockerd did not answer within ${wait_s}s; last lines of ${logfile}:"
tail -n 30 "$logfile" >&2 || true
exit 1
