-- 008: git bindings (seed 001 orch.git.*). Never edit this file once committed; append a new file instead.
-- Portable subset (PostgreSQL, PGlite, CockroachDB): ids made by the application, no SERIAL, no triggers.
--
-- A binding is a clone of `repo_url` (at `ref`, or the remote's default branch when NULL) in its own volume
-- (`volume_id`, a row of `volumes` with owner_kind 'git_binding' and owner_ref = the binding id). `status`:
-- `cloning` (row written before the clone starts), `ready`, `failed` (`error` says why), `deleted`. Deleting is soft:
-- `deleted_at` is set (the row stays for audit) and the volume is removed. `repo_url` is stored as given (refresh
-- and push need it); everything shown to callers or logs has its userinfo redacted.
CREATE TABLE git_bindings (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  owner_subject TEXT NOT NULL,
  repo_url TEXT NOT NULL,
  label TEXT NOT NULL,
  ref TEXT,
  status TEXT NOT NULL,
  volume_id UUID,
  head_commit TEXT,
  error TEXT,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  deleted_at TIMESTAMPTZ
);

CREATE INDEX git_bindings_by_tenant ON git_bindings (tenant_id, created_at);
