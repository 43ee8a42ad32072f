#!/usr/bin/env bash
# Installs what per-volume FUSE mounts (`orch fuse-daemon`, src/fuse/) need, from Debian's packages only:
#   - fuse3: the fusermount helper (`fusermount` links to `fusermount3`) the binding unmounts with;
#   - libfuse3-dev (libfuse 3 headers): orch's own binding (native/fuse3) is compiled against them by
#     scripts/build-fuse3.mjs at `npm install`/`npm ci` time (`prepare`); the daemon prefers it (1 MiB requests,
#     the page cache kept across a write and the next open, src/fuse/binding.ts);
#   - libfuse-dev (libfuse 2.9 headers and libfuse.so.2): @cocalc/fuse-native, an optional npm dependency and the
#     fallback when the libfuse 3 binding is not built, compiles its addon against them at install time.
#   Both compile at install, so run this script BEFORE installing.
# Then checks that /dev/fuse exists. Idempotent; run as root; apt-get runs only when something is missing.
# Without these packages `npm install` still succeeds (the binding is optional) and the daemon answers
# FAILED_PRECONDITION naming what is missing.
set -euo pipefail

log() { [ -n "${ORCH_SETUP_QUIET:-}" ] || printf '[setup-fuse] %s\n' "$*" >&2; }
die() { printf '[setup-fuse] ERROR: %s\n' "$*" >&2; exit 1; }

missing=()
command -v fusermount3 >/dev/null 2>&1 || missing+=(fuse3)
pkg-config --exists fuse 2>/dev/null || missing+=(libfuse-dev pkg-config)
pkg-config --exists fuse3 2>/dev/null || missing+=(libfuse3-dev pkg-config)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[ -c /dev/fuse ] || die "/dev/fuse is missing: this machine cannot host FUSE mounts"
log "libfuse $(pkg-config --modversion fuse) and $(pkg-config --modversion fuse3), $(fusermount3 -V 2>&1)"
