#!/usr/bin/env bash
# Brings up docker-compose.cluster.yml with docker-compose.postgres.yml (2 controllers, 2 workers, PostgreSQL, Redis)
# with Debian's podman-compose and checks it (scripts/smoke/compose.ts): both controllers healthy; an agent execution
# routed to a worker container and completed; a Human approval through the other controller; a controller container
# killed and the work going on; down then up keeping the data. Exit 0 when all hold. Takes minutes: not part of
# `npm test` (run it by hand or in a nightly CI job; docs/DEPLOY.md, figures in docs/BENCHMARKS.md).
#
# Images: the orch image (scripts/image-smoke.sh builds it; ORCH_IMAGE, default localhost/orch:latest) and
# PostgreSQL/Redis from Debian's packages (scripts/build-service-images.sh, cached by tag).
# ORCH_COMPOSE_KEEP=1 leaves the cluster up afterwards (project `orchsmoke`; `podman-compose -p orchsmoke -f
# .orch/compose-smoke/compose.yml down -v` removes it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
log() { printf '[compose-smoke] %s\n' "$*" >&2; }

command -v podman >/dev/null || { log "podman is not installed"; exit 2; }
command -v podman-compose >/dev/null || { log "podman-compose is missing: apt-get install podman-compose"; exit 2; }
if [ -z "${CONTAINERS_CONF:-}" ]; then
  ORCH_SETUP_QUIET=1 scripts/setup-podman.sh >/dev/null
  export CONTAINERS_CONF="$ROOT/.orch/podman/containers.conf"
fi
# Container-to-container names on the compose network need CNI's dnsname plugin (podman 4.3 on CNI).
if [ "$(podman info --format '{{.Host.NetworkBackend}}')" = cni ] && [ ! -x /usr/lib/cni/dnsname ]; then
  log "the CNI dnsname plugin is missing: apt-get install golang-github-containernetworking-plugin-dnsname"; exit 2
fi
started=$(date +%s)
IMAGE=${ORCH_IMAGE:-localhost/orch:latest}
if ! podman image exists "$IMAGE"; then
  log "$IMAGE is missing; building it (scripts/image-smoke.sh builds and checks it)"
  BASE=${ORCH_BASE_IMAGE:-$(scripts/build-base-image.sh)}
  podman build --format docker --build-arg "BASE_IMAGE=$BASE" -t "$IMAGE" . >&2
fi
scripts/build-service-images.sh
log "images ready in $(( $(date +%s) - started )) s"
ORCH_IMAGE=$IMAGE node --import tsx scripts/smoke/compose.ts
log "total $(( $(date +%s) - started )) s"
