-- 005: saved scripts (orch.script.*). Never edit this file once committed; append a new file instead.
-- Portable subset (PostgreSQL, PGlite, CockroachDB): ids made by the application, no SERIAL, no triggers.
--
-- A script is a name within a tenant with an `id` that stays the same across its versions; every saved version
-- (its TypeScript code) is a row of script_versions and is kept. `current_version` is the newest one.
-- Soft delete: `deleted_at` is set and the name is rewritten to `~deleted~<id>~<name>` (a name a caller cannot
-- choose, since names may not start with `~`), so UNIQUE (tenant_id, name) lets a deleted name be reused.
CREATE TABLE scripts (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT,
  tags JSONB NOT NULL,
  current_version INT4 NOT NULL,
  owner_subject TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  deleted_at TIMESTAMPTZ,
  UNIQUE (tenant_id, name)
);

-- One row per saved version of a script.
CREATE TABLE script_versions (
  script_id UUID NOT NULL,
  version INT4 NOT NULL,
  code TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  created_by TEXT NOT NULL,
  PRIMARY KEY (script_id, version)
);
