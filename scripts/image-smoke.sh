#!/usr/bin/env bash
# Builds the orch image with podman from the Dockerfile users use, and checks it (scripts/smoke/image.ts): non-root,
# compiled JS + ui/dist and no sources, /health/ready, /ui, an agent and a shell command in bubblewrap inside the
# container with the security options of docs/DEPLOY.md, and a clean failure without them. Exit 0 when all hold.
#
# No registry is reachable here, so the base image (the Dockerfile's BASE_IMAGE, public default
# node:20-bookworm-slim) is made from Debian's packages by scripts/build-base-image.sh and cached by tag; podman's
# layer cache keeps a rebuild with unchanged sources to seconds. Elsewhere set ORCH_BASE_IMAGE=node:20-bookworm-slim
# to build on the public image.
#
# Environment: ORCH_IMAGE (tag to build, default localhost/orch:latest), ORCH_BASE_IMAGE (default: the local one),
# ORCH_IMAGE_SMOKE_SKIP_BUILD=1 (check an image already built), ORCH_IMAGE_BUILD_FLAGS (the Dockerfile's BUILD_FLAGS,
# default empty: a type-checked build; the test passes --no-check after `npm test`'s own typecheck).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
IMAGE=${ORCH_IMAGE:-localhost/orch:latest}
log() { printf '[image-smoke] %s\n' "$*" >&2; }

command -v podman >/dev/null || { log "podman is not installed"; exit 2; }
# runc, cgroupfs and the events file logger on this host (scripts/setup-podman.sh writes the file).
if [ -z "${CONTAINERS_CONF:-}" ]; then
  ORCH_SETUP_QUIET=1 scripts/setup-podman.sh >/dev/null
  export CONTAINERS_CONF="$ROOT/.orch/podman/containers.conf"
fi

started=$(date +%s)
if [ -z "${ORCH_IMAGE_SMOKE_SKIP_BUILD:-}" ]; then
  BASE=${ORCH_BASE_IMAGE:-$(scripts/build-base-image.sh)}
  base_done=$(date +%s)
  log "building $IMAGE on $BASE"
  # docker format: OCI images cannot carry the HEALTHCHECK.
  podman build --format docker --build-arg "BASE_IMAGE=$BASE" --build-arg "BUILD_FLAGS=${ORCH_IMAGE_BUILD_FLAGS:-}" -t "$IMAGE" . >&2
  build_done=$(date +%s)
  log "base image $((base_done - started)) s, image build $((build_done - base_done)) s"
fi
node --import tsx scripts/smoke/image.ts "$IMAGE"
log "total $(( $(date +%s) - started )) s"
