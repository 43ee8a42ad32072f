-- 001: the tables the storage layer itself needs. Never edit this file once committed; append 002_..., 003_...
-- Portable subset (PostgreSQL, PGlite, CockroachDB): no SERIAL, no triggers, ids made by the application.
-- Integer columns say INT4: on CockroachDB a bare INT is 64-bit, which the adapters return as a string.

-- Ownership of a named resource across nodes. `epoch` grows every time the resource changes hands (or is taken
-- again after expiry), and every fenced write checks it, so a node that lost the lease cannot write.
CREATE TABLE leases (
  resource TEXT PRIMARY KEY,
  owner_node TEXT NOT NULL,
  epoch INT4 NOT NULL,
  lease_expires_at TIMESTAMPTZ NOT NULL
);

-- Events of streams that have no event table of their own. seq is 1-based and gapless per stream; the primary
-- key turns two concurrent writers of the same seq into a conflict that one of them retries.
CREATE TABLE event_log (
  stream TEXT NOT NULL,
  seq INT4 NOT NULL,
  type TEXT NOT NULL,
  payload JSONB NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (stream, seq)
);

-- One row per cluster member, kept by its NodePeerActor. The row carries its own lease (owner_node, epoch,
-- lease_expires_at): the node that watches it. DEREGISTERED is terminal.
CREATE TABLE cluster_nodes (
  node_id TEXT PRIMARY KEY,
  role TEXT,
  status TEXT NOT NULL CHECK (status IN ('ACTIVE', 'DRAINING', 'UNHEALTHY', 'DEREGISTERED')),
  grpc_address TEXT,
  tags JSONB,
  capabilities JSONB,
  registered_at TIMESTAMPTZ,
  last_heartbeat_at TIMESTAMPTZ,
  heartbeat_count INT4 NOT NULL DEFAULT 0,
  load JSONB,
  owner_node TEXT,
  lease_expires_at TIMESTAMPTZ,
  epoch INT4 NOT NULL DEFAULT 0,
  updated_at TIMESTAMPTZ
);
