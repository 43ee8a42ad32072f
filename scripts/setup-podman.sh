#!/usr/bin/env bash
# Sets up the container engine and sandbox tools the tests (and a worker using `docker` isolation) talk to:
#   - podman + runc (crun fails on this hybrid-cgroup host), busybox-static for the image, bubblewrap for `process`
#     isolation, slirp4netns for the network of process sandboxes that have network — installed with apt-get only
#     when missing;
#   - a containers.conf (runc, cgroupfs, lowered default ulimits) exported as CONTAINERS_CONF;
#   - podman's Docker-compatible API on unix:///run/orch-podman/podman.sock (started in the background when the
#     socket does not answer);
#   - the local image localhost/orch-runtime:latest (busybox + the host's node binary and its libraries), imported
#     with `podman import` because no registry is reachable.
# Idempotent and run as root; when everything is already up it only pings the socket and inspects the image.
# The last line of output is `DOCKER_HOST=unix:///run/orch-podman/podman.sock` (eval-able).
#
# Environment knobs: ORCH_PODMAN_RUN_DIR (default /run/orch-podman), ORCH_RUNTIME_IMAGE (default
# localhost/orch-runtime:latest), ORCH_SETUP_QUIET=1 (only the DOCKER_HOST line on stdout).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUN_DIR=${ORCH_PODMAN_RUN_DIR:-/run/orch-podman}
SOCK="$RUN_DIR/podman.sock"
IMAGE=${ORCH_RUNTIME_IMAGE:-localhost/orch-runtime:latest}
CONF_DIR="$ROOT/.orch/podman"
export CONTAINERS_CONF="$CONF_DIR/containers.conf"

log() { [ -n "${ORCH_SETUP_QUIET:-}" ] || printf '[setup-podman] %s\n' "$*" >&2; }
die() { printf '[setup-podman] ERROR: %s\n' "$*" >&2; exit 1; }

# ---- packages (only the missing ones) -----------------------------------------------------------------------
missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[ -x /bin/busybox ] || missing+=(busybox-static)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# The network of process-isolated sandboxes that have network (src/agents/runtime/sandbox-net.ts).
command -v slirp4netns >/dev/null 2>&1 || missing+=(slirp4netns)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing packages (${missing[*]}) and not root; install them or run as root"
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# busybox-static replaces the dynamic busybox package; check that what we have is static.
if ldd /bin/busybox >/dev/null 2>&1; then
  log "installing busybox-static (the dynamic busybox cannot run in a libc-less image)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null
fi

# ---- containers.conf ----------------------------------------------------------------------------------------
mkdir -p "$CONF_DIR" "$RUN_DIR"
CONF_CONTENT='[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"'
if [ ! -f "$CONTAINERS_CONF" ] || [ "$(cat "$CONTAINERS_CONF")" != "$CONF_CONTENT" ]; then
  printf '%s\n' "$CONF_CONTENT" >"$CONTAINERS_CONF"
  log "wrote $CONTAINERS_CONF"
fi

# ---- API service --------------------------------------------------------------------------------------------
ping() { curl -fsS --max-time 2 --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1; }
if ! ping; then
  if [ -f "$RUN_DIR/service.pid" ] && kill -0 "$(cat "$RUN_DIR/service.pid")" 2>/dev/null; then
    log "podman service (pid $(cat "$RUN_DIR/service.pid")) is running but does not answer; waiting"
  else
    rm -f "$SOCK"
    log "starting podman system service on $SOCK"
    # setsid + nohup: the service outlives this script (and the CI shell that ran it).
    setsid nohup podman system service --time=0 "unix://$SOCK" >"$RUN_DIR/service.log" 2>&1 </dev/null &
    echo $! >"$RUN_DIR/service.pid"
  fi
  for _ in $(seq 1 100); do ping && break; sleep 0.1; done
  ping || { tail -n 20 "$RUN_DIR/service.log" >&2 || true; die "podman service did not answer on $SOCK"; }
  # Socket for root only by default; the orchestrator runs as root in CI. Let the group read it if wanted.
  chmod 0660 "$SOCK" || true
fi

# ---- image --------------------------------------------------------------------------------------------------
# The image embeds the host's node binary, so it is rebuilt when the node version changes (label orch.node).
NODE_BIN=$(readlink -f "$(command -v node)")
NODE_VERSION=$(node --version)
image_node=$(curl -fsS --max-time 5 --unix-socket "$SOCK" "http://d/images/$IMAGE/json" 2>/dev/null \
  | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{const j=JSON.parse(s);process.stdout.write(((j.Config||{}).Labels||{})["orch.node"]||"")}catch{}})' || true)
if [ "$image_node" != "$NODE_VERSION" ]; then
  log "building $IMAGE (busybox + node $NODE_VERSION)"
  work=$(mktemp -d /tmp/orch-rootfs.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  rootfs="$work/rootfs"
  mkdir -p "$rootfs"/{bin,usr/bin,lib64,etc,tmp,orch/run,workspace,root,dev,proc,sys}
  chmod 1777 "$rootfs/tmp"
  cp /bin/busybox "$rootfs/bin/busybox"
  for app in $("$rootfs/bin/busybox" --list); do
    [ "$app" = busybox ] || ln -sf busybox "$rootfs/bin/$app"
  done
  cp "$NODE_BIN" "$rootfs/usr/bin/node"
  # Every library node needs, at the same path, plus the dynamic loader.
  ldd "$NODE_BIN" | awk '/=> \//{print $3} /^[ \t]*\/[^ ]+ \(/{print $1}' | while read -r lib; do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
  [ -d /etc/ssl/certs ] && mkdir -p "$rootfs/etc/ssl" && cp -rL /etc/ssl/certs "$rootfs/etc/ssl/certs" 2>/dev/null || true
  tar -C "$rootfs" -cf "$work/rootfs.tar" .
  podman import \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
    --change 'WORKDIR /workspace' \
    --change "LABEL orch.node=$NODE_VERSION" \
    --change 'CMD ["/bin/sh"]' \
    "$work/rootfs.tar" "$IMAGE" >"$work/import.log" 2>&1 || { cat "$work/import.log" >&2; die "podman import failed"; }
  rm -rf "$work"
  trap - EXIT
  log "built $IMAGE"
fi

echo "DOCKER_HOST=unix://$SOCK"
