-- 009: the workflow registry (issue 5). Never edit this file once committed; append a new file instead.
-- Portable subset (PostgreSQL, PGlite, CockroachDB): ids made by the application, no SERIAL, no triggers.
--
-- One row per deployed version of a workflow; `id` is the workflow_id of the API for that version (kept when the
-- same name and version is redeployed with force). Scopes: `tenant` (everyone in tenant_id sees it), `user` (only
-- scope_owner, a subject of tenant_id, sees it), `global` (every tenant sees it; stored in tenant `orch-system`).
-- scope_owner is '' except for user scope, so (tenant_id, scope, scope_owner, name, version) is the uniqueness of a
-- name and version per scope owner. `manifest` is the parsed, defaulted manifest (what runs); `manifest_yaml` the
-- text as deployed (what export returns).
CREATE TABLE workflows (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('user', 'tenant', 'global')),
  scope_owner TEXT NOT NULL,
  deployed_by TEXT NOT NULL,
  description TEXT,
  labels JSONB,
  initial_state TEXT NOT NULL,
  manifest JSONB NOT NULL,
  manifest_yaml TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, scope, scope_owner, name, version)
);
CREATE INDEX workflows_tenant_name ON workflows (tenant_id, name);
CREATE INDEX workflows_scope_name ON workflows (scope, name);
