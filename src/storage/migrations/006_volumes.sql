-- 006: volumes (seed 000 "volumes" operation group, seed 001 orch.volume.*/orch.file.*, seed 002 spec.storage).
-- Never edit this file once committed; append a new file instead.
-- Portable subset (PostgreSQL, PGlite, CockroachDB): ids made by the application, no SERIAL, no triggers.
--
-- A volume is a directory `<dataDir>/volumes/<id>` on the node named by `node_id`. `used_bytes` is the sum of the
-- sizes of its regular files, kept exact by the VolumeService: every write reserves its byte delta with one
-- conditional UPDATE (`used_bytes + delta <= size_limit_bytes`) before it touches the disk and gives it back if the
-- write fails. `status` is `active`, or `deleting` from the moment a delete starts (no write is accepted after it).
-- Ephemeral volumes have `expires_at`; the node's reaper deletes them once it has passed.
-- `owner_kind`/`owner_ref` name what a volume belongs to besides its user (a workflow execution, a git binding);
-- both are NULL for a volume a user made directly.
CREATE TABLE volumes (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  label TEXT NOT NULL,
  storage_class TEXT NOT NULL,
  size_limit_bytes INT8 NOT NULL,
  used_bytes INT8 NOT NULL DEFAULT 0,
  owner_subject TEXT NOT NULL,
  owner_kind TEXT,
  owner_ref TEXT,
  node_id TEXT NOT NULL,
  status TEXT NOT NULL,
  ttl_hours INT4,
  expires_at TIMESTAMPTZ,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  CHECK (used_bytes >= 0),
  CHECK (size_limit_bytes > 0)
);

CREATE INDEX volumes_by_tenant ON volumes (tenant_id, created_at);
CREATE INDEX volumes_by_owner ON volumes (tenant_id, owner_kind, owner_ref);
CREATE INDEX volumes_by_expiry ON volumes (node_id, expires_at);
