-- 012: inbound stimuli (issue 6): POST /v1/stimuli, POST /v1/webhooks/{source}, IngestStimulus. Never edit once committed.

-- One row per accepted delivery, written before it is routed (CONTRACT.md), then updated with the outcome:
-- `received` → `routed` (workflow_execution_id set) or one of the failure statuses with `error`.
CREATE TABLE stimuli (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  source TEXT NOT NULL,
  idempotency_key TEXT,
  content TEXT NOT NULL,
  headers JSONB NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('received', 'routed', 'classification_failed', 'no_router_configured', 'router_error', 'workflow_error')),
  routed_by TEXT CHECK (routed_by IN ('route', 'router_agent')),
  workflow_name TEXT,
  confidence FLOAT8,
  workflow_execution_id UUID,
  error TEXT,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX stimuli_tenant_created ON stimuli (tenant_id, created_at DESC, id);

-- The idempotency keys: the primary key is the unique constraint that lets exactly one of many concurrent
-- deliveries with one (tenant, source, key) take it. A key whose `expires_at` (24 h after it was taken) has passed
-- is taken over by the next delivery in the same statement (INSERT ... ON CONFLICT DO UPDATE ... WHERE expired).
CREATE TABLE stimulus_keys (
  tenant_id TEXT NOT NULL,
  source TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  stimulus_id UUID NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (tenant_id, source, idempotency_key)
);
