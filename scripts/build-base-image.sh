#!/usr/bin/env bash
# Builds, on a machine that cannot pull from a container registry, the base image the Dockerfile starts from
# (`ARG BASE_IMAGE=node:20-bookworm-slim`): Debian bookworm from Debian's own packages (mmdebstrap, minbase) plus
# this machine's Node 20 (Debian's nodejs is 18) and npm, laid out as the official image has them (/usr/local/bin/node,
# a `node` user with uid/gid 1000). The runtime packages the Dockerfile installs (bubblewrap, git, ca-certificates,
# tini) are already in, so its `apt-get` step finds nothing to do and needs no network.
#
# The machine's extra CA certificates (/usr/local/share/ca-certificates, e.g. an egress proxy's) are trusted in the
# image too, so `npm ci` during `podman build` reaches the registry the way the host does. They are public
# certificates, never keys.
#
# Cached by tag: when the image exists and carries this script's hash and the node version, nothing is rebuilt.
# Usage: scripts/build-base-image.sh [TAG]   (default localhost/node:20-bookworm-slim); prints the tag on stdout.
set -euo pipefail

TAG=${1:-localhost/node:20-bookworm-slim}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE_BIN=$(readlink -f "$(command -v node)")
NODE_VERSION=$("$NODE_BIN" --version)
NPM_DIR=$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)
KEY="$(sha256sum "$0" | cut -c1-16)-$NODE_VERSION"
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { printf '[build-base-image] %s\n' "$*" >&2; }

case "$NODE_VERSION" in v20.*) ;; *) log "node on this machine is $NODE_VERSION, not 20"; exit 1 ;; esac

if [ "$(podman image inspect --format '{{ index .Labels "orch.base-key" }}' "$TAG" 2>/dev/null || true)" = "$KEY" ]; then
  log "$TAG is up to date ($KEY)"
  echo "$TAG"
  exit 0
fi
command -v mmdebstrap >/dev/null || { log "mmdebstrap is missing: apt-get install mmdebstrap"; exit 1; }

WORK=$(mktemp -d /tmp/orch-base-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/ctx/usr/local/bin" "$WORK/ctx/usr/local/lib/node_modules" "$WORK/ctx/usr/local/share/ca-certificates"
log "debootstrapping bookworm (minbase) from $MIRROR"
started=$(date +%s)
mmdebstrap --quiet --variant=minbase --mode=root \
  --include=ca-certificates,libstdc++6,bubblewrap,git,tini \
  --aptopt='APT::Install-Recommends "false"' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/usr/share/doc/* "$1"/usr/share/man/*' \
  bookworm "$WORK/ctx/rootfs.tar" "$MIRROR"
log "rootfs in $(( $(date +%s) - started )) s"

cp "$NODE_BIN" "$WORK/ctx/usr/local/bin/node"
cp -a "$NPM_DIR" "$WORK/ctx/usr/local/lib/node_modules/npm"
cp /usr/local/share/ca-certificates/*.crt "$WORK/ctx/usr/local/share/ca-certificates/" 2>/dev/null || true

cat >"$WORK/ctx/Containerfile" <<CF
FROM scratch
ADD rootfs.tar /
COPY usr /usr
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && update-ca-certificates >/dev/null \\
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \\
 && node --version && npm --version
# Node's own CA list does not include the system's additions; the official image sets nothing here either, this
# only makes the machine's extra CAs (copied above) count for node and npm.
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
LABEL orch.base-key="$KEY" org.opencontainers.image.description="Debian bookworm (mmdebstrap) + Node $NODE_VERSION, built by orch/scripts/build-base-image.sh"
CMD ["node"]
CF
podman build --quiet -t "$TAG" "$WORK/ctx" >&2
log "built $TAG in $(( $(date +%s) - started )) s"
echo "$TAG"
