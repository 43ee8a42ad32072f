#!/usr/bin/env bash
# Makes sure PostgreSQL answers on 127.0.0.1:5432 and Redis on 127.0.0.1:6379 (what the tests talk to), installing
# them with apt-get and starting them only when they do not answer. Idempotent; run as root.
set -euo pipefail

log() { [ -n "${ORCH_SETUP_QUIET:-}" ] || printf '[setup-services] %s\n' "$*" >&2; }

ensure_apt() {
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# PostgreSQL on 127.0.0.1:5432.
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  log "PostgreSQL is not answering; starting it"
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then ensure_apt postgresql; fi
  ver=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
  pg_isready -h 127.0.0.1 -p 5432 || { log "PostgreSQL did not start"; exit 1; }
fi

# Redis on 127.0.0.1:6379.
if ! (redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG); then
  log "Redis is not answering; starting it"
  if ! command -v redis-server >/dev/null 2>&1; then ensure_apt redis-server; fi
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG && break; sleep 1; done
fi
