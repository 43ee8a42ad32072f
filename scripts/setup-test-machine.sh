#!/usr/bin/env bash
# Everything `npm test` needs on a fresh Debian machine of this kind, in one idempotent command (run as root):
# PostgreSQL and Redis (setup-services.sh), libfuse and the FUSE bindings (setup-fuse.sh, then the optional
# @cocalc/fuse-native rebuilt and orch's libfuse 3 binding built when they do not load), podman with the local runtime image and bubblewrap
# (setup-podman.sh), and Debian's chromium for the dashboard test. Each step does nothing when already done.
# `npm test` runs this itself (scripts/preflight.mjs) when something is missing and it runs as root with apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup-test-machine] %s\n' "$*" >&2; }

scripts/setup-services.sh
scripts/setup-fuse.sh
if [ -d node_modules/@cocalc/fuse-native ] || grep -q '"@cocalc/fuse-native"' package.json; then
  if ! node -e "require('@cocalc/fuse-native')" >/dev/null 2>&1; then
    log "building the FUSE binding (@cocalc/fuse-native) against libfuse"
    npm rebuild @cocalc/fuse-native --no-audit --no-fund >/dev/null
  fi
fi
if ! node -e "require('./native/fuse3/build/Release/orch_fuse3.node')" >/dev/null 2>&1; then
  log "building the libfuse 3 binding (native/fuse3)"
  node scripts/build-fuse3.mjs
fi
ORCH_SETUP_QUIET=1 scripts/setup-podman.sh >/dev/null
if ! command -v chromium >/dev/null 2>&1; then
  log "installing chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
log "ready"
