-- 002: the agent registry. Never edit this file once committed; append a new file instead.
-- Portable subset (PostgreSQL, PGlite, CockroachDB): ids made by the application, no SERIAL, no triggers.
--
-- An agent is a name within a tenant with an `id` (the agent_id of the API) that stays the same across its
-- versions; every deployed version is a row of agent_versions and is kept until the agent (or that version) is
-- deleted. `current_version` is the most recently deployed one: what runs when no version is asked for.
-- scope: user (only owner_subject sees it), tenant (everyone in the tenant), global (every tenant sees it; only an
-- operator deploys it). Global agents live in the tenant `orch-system`, so a global name is unique.
CREATE TABLE agents (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  name TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('user', 'tenant', 'global')),
  owner_subject TEXT NOT NULL,
  current_version TEXT NOT NULL,
  description TEXT,
  labels JSONB,
  status TEXT NOT NULL DEFAULT 'deployed',
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, name)
);
CREATE INDEX agents_scope ON agents (scope);

-- One row per deployed version. `manifest` is the parsed and defaulted manifest (what executions run),
-- `manifest_yaml` the text as deployed (what export returns).
CREATE TABLE agent_versions (
  agent_id UUID NOT NULL,
  tenant_id TEXT NOT NULL,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  manifest_yaml TEXT NOT NULL,
  manifest JSONB NOT NULL,
  deployed_by TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (agent_id, version),
  UNIQUE (tenant_id, name, version)
);
