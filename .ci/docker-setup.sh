#!/usr/bin/env bash
# Make Docker usable for the container test backend on a Debian/Ubuntu host or CI runner
# where no image registry is reachable. Idempotent: every step is skipped when already done.
# Usage: sudo .ci/docker-setup.sh   then   export DQ_BASE_IMAGE=local/debian:bookworm
set -euo pipefail

BASE_IMAGE="${DQ_BASE_IMAGE:-local/debian:bookworm}"
SUITE="${DQ_DEBIAN_SUITE:-bookworm}"
DOCKERD_LOG="${DOCKERD_LOG:-/var/log/dockerd.log}"

log() { echo "docker-setup: $*" >&2; }

# 1. Packages: the daemon (docker.io) and debootstrap to make a base image without a registry.
missing=""
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
if [ -n "$missing" ]; then
  log "installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086 # word-split on purpose
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# 2. Daemon: start it ourselves when no init system manages it (containers, CI sandboxes).
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd (log: $DOCKERD_LOG)"
  nohup dockerd >"$DOCKERD_LOG" 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    log "dockerd did not come up within 60 s; last lines of $DOCKERD_LOG:"
    tail -n 30 "$DOCKERD_LOG" >&2 || true
    exit 1
  fi
fi

# 3. Base image: debootstrap a minimal Debian and import it (nothing can be pulled).
if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  rootfs="$(mktemp -d)"
  trap 'rm -rf "$rootfs"' EXIT
  log "debootstrapping $SUITE into $rootfs (about 30 s)"
  debootstrap --variant=minbase "$SUITE" "$rootfs" http://deb.debian.org/debian >/dev/null
  tar -C "$rootfs" -c . | docker import - "$BASE_IMAGE" >/dev/null
  log "imported $BASE_IMAGE"
fi

echo "export DQ_BASE_IMAGE=$BASE_IMAGE"
echo "export TESTCONTAINERS_RYUK_DISABLED=true"
