#!/usr/bin/env bash
# Builds, from Debian's packages (mmdebstrap), the PostgreSQL and Redis images the compose smoke test runs in place of
# postgres:/redis: images from a registry (none is reachable here): localhost/orch-postgres:15 and
# localhost/orch-redis:7, one Debian bookworm rootfs with postgresql-15 and redis-server and a small entrypoint.
# For tests and local clusters only: PostgreSQL trusts every connection on the compose network (no password), as
# the test server on 127.0.0.1:5432 does. Production uses CockroachDB (docker-compose.cluster.yml) or a managed
# PostgreSQL. Cached by tag (label orch.services-key = this script's hash).
set -euo pipefail

PG_TAG=localhost/orch-postgres:15
REDIS_TAG=localhost/orch-redis:7
KEY=$(sha256sum "$0" | cut -c1-16)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { printf '[build-service-images] %s\n' "$*" >&2; }

if [ "$(podman image inspect --format '{{ index .Labels "orch.services-key" }}' "$PG_TAG" 2>/dev/null || true)" = "$KEY" ] \
  && podman image exists "$REDIS_TAG"; then
  log "$PG_TAG and $REDIS_TAG are up to date"
  exit 0
fi
command -v mmdebstrap >/dev/null || { log "mmdebstrap is missing: apt-get install mmdebstrap"; exit 1; }

WORK=$(mktemp -d /tmp/orch-services-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
started=$(date +%s)
mmdebstrap --quiet --variant=minbase --mode=root --include=postgresql-15,redis-server \
  --aptopt='APT::Install-Recommends "false"' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/usr/share/doc/* "$1"/usr/share/man/* "$1"/var/lib/postgresql/15/main' \
  bookworm "$WORK/rootfs.tar" "$MIRROR"

cat >"$WORK/entrypoint.sh" <<'SH'
#!/bin/sh
# postgres: initdb on an empty PGDATA (trust auth, listen on all addresses, POSTGRES_DB created), then the server
# in the foreground as the postgres user. redis: redis-server with the arguments given.
set -e
case "$1" in
  postgres)
    PGDATA=${PGDATA:-/var/lib/postgresql/data}
    BIN=/usr/lib/postgresql/15/bin
    mkdir -p "$PGDATA" /run/postgresql && chown -R postgres:postgres "$PGDATA" /run/postgresql && chmod 700 "$PGDATA"
    if [ ! -s "$PGDATA/PG_VERSION" ]; then
      su postgres -c "$BIN/initdb -D $PGDATA -U postgres --auth=trust --encoding=UTF8 >/dev/null"
      echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
      echo "host all all 0.0.0.0/0 trust" >>"$PGDATA/pg_hba.conf"
      if [ -n "${POSTGRES_DB:-}" ]; then
        su postgres -c "$BIN/pg_ctl -D $PGDATA -o '-c listen_addresses=' -w start >/dev/null"
        su postgres -c "psql -q -c 'CREATE DATABASE \"$POSTGRES_DB\"'"
        su postgres -c "$BIN/pg_ctl -D $PGDATA -m fast -w stop >/dev/null"
      fi
    fi
    shift
    # setpriv, not su: the server becomes PID 1 and gets the engine's SIGTERM itself (a fast, clean shutdown).
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$BIN/postgres" -D "$PGDATA" "$@"
    ;;
  redis) shift; exec redis-server "$@" ;;
  *) exec "$@" ;;
esac
SH
cat >"$WORK/Containerfile" <<CF
FROM scratch
ADD rootfs.tar /
COPY entrypoint.sh /usr/local/bin/entrypoint.sh
RUN chmod 755 /usr/local/bin/entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL orch.services-key="$KEY"
ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
CF
podman build --quiet -t "$PG_TAG" -t "$REDIS_TAG" "$WORK" >&2
log "built $PG_TAG and $REDIS_TAG in $(( $(date +%s) - started )) s"
