-- 007: FSAL (seed 000 "gRPC: FsalService") — which executions may use which volumes, and the StorageEvent of every
-- filesystem operation. Never edit this file once committed; append a new file instead.
-- Portable subset (PostgreSQL, PGlite, CockroachDB): ids made by the application, no SERIAL, no triggers.

-- An execution may use a volume it owns (volumes.owner_kind = 'execution', owner_ref = its id) or one granted to it
-- here: the orchestrator writes a grant when it mounts a manifest's volume for an execution. `access_mode` is the
-- mount's (`read-only` refuses every write with PERMISSION_DENIED); `mount_path` is where the agent sees the volume,
-- against which the manifest's spec.security.filesystem globs (sandbox paths) are matched.
CREATE TABLE volume_grants (
  execution_id UUID NOT NULL,
  volume_id UUID NOT NULL,
  tenant_id TEXT NOT NULL,
  access_mode TEXT NOT NULL CHECK (access_mode IN ('read-write', 'read-only')),
  mount_path TEXT NOT NULL,
  granted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (execution_id, volume_id)
);
CREATE INDEX volume_grants_by_volume ON volume_grants (volume_id);

-- One row per FSAL operation, allowed or refused, numbered per volume (`seq`, the bus sequence of the stream
-- `storage:<volume_id>`). `status` is the gRPC status name the caller got (OK, NOT_FOUND, PERMISSION_DENIED, ...);
-- `bytes` is what a Read returned or a Write wrote. `tenant_id` is the calling execution's tenant.
CREATE TABLE storage_events (
  volume_id UUID NOT NULL,
  seq INT4 NOT NULL,
  event_id UUID NOT NULL,
  tenant_id TEXT NOT NULL,
  execution_id UUID NOT NULL,
  operation TEXT NOT NULL,
  path TEXT NOT NULL,
  new_path TEXT,
  offset_bytes INT8,
  bytes INT8 NOT NULL DEFAULT 0,
  status TEXT NOT NULL,
  error TEXT,
  recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (volume_id, seq),
  UNIQUE (event_id)
);
CREATE INDEX storage_events_by_execution ON storage_events (execution_id, recorded_at);
CREATE INDEX storage_events_by_tenant ON storage_events (tenant_id, recorded_at);
