-- 011: Cortex memory (issue 6): error-to-solution patterns, the search index of agent and workflow descriptions,
-- and the tenant → payment-provider customer mapping of billing. Never edit once committed.

-- One row per learned pattern. `embedding` is the vector of error_signature + error_type + error_message as a
-- JSONB array of numbers (PostgreSQL, PGlite and CockroachDB all store it; similarity is computed in the app,
-- docs/CORTEX.md). `frequency` is the pattern's weight: 1 when stored, +1 each time a matching pattern is stored
-- again. success_score is the share of recorded applications that worked (1.0 until an application fails).
CREATE TABLE cortex_patterns (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  error_signature TEXT NOT NULL,
  error_type TEXT NOT NULL,
  error_message TEXT NOT NULL,
  solution_approach TEXT NOT NULL,
  solution_code TEXT,
  tags JSONB NOT NULL,
  frequency INT8 NOT NULL,
  success_count INT8 NOT NULL,
  failure_count INT8 NOT NULL,
  embedding JSONB NOT NULL,
  embedding_model TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX cortex_patterns_tenant ON cortex_patterns (tenant_id, error_type);

-- Agent and workflow descriptions as orch.agent.search / orch.workflow.search see them, indexed lazily at search
-- time: a row is (re)embedded when its content hash changes. (tenant, kind, ref_id) is the key.
CREATE TABLE cortex_documents (
  tenant_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('agent', 'workflow')),
  ref_id TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  embedding JSONB NOT NULL,
  embedding_model TEXT NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, kind, ref_id)
);

-- Billing: which payment-provider customer belongs to a tenant, created on the tenant's first checkout.
CREATE TABLE billing_customers (
  tenant_id TEXT PRIMARY KEY,
  customer_id TEXT NOT NULL UNIQUE,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
