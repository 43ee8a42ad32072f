-- 010: workflow executions, their event streams and human approvals (issue 5). Never edit once committed.

-- One row per workflow run; the WorkflowActor of the node that claimed it (owner_node/epoch/lease_expires_at, see
-- row-lease.ts) drives it. `manifest` is the workflow manifest as it was at start, so a resumed run follows the same
-- states even if a new version is deployed meanwhile. `current_state` is the state being run (its entry is already
-- recorded in `visits` and workflow_events); a resumed actor re-runs that visit. `last_seq` is the last
-- workflow_events seq written (the owning actor is the only writer, fenced by epoch).
CREATE TABLE workflow_executions (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  workflow_id TEXT NOT NULL,
  workflow_name TEXT NOT NULL,
  workflow_version TEXT NOT NULL,
  manifest JSONB NOT NULL,
  input JSONB NOT NULL,
  intent TEXT,
  status TEXT NOT NULL CHECK (status IN ('running', 'waiting_for_human_input', 'completed', 'failed', 'cancelled')),
  current_state TEXT,
  blackboard JSONB NOT NULL,
  context JSONB NOT NULL,
  visits JSONB NOT NULL,
  total_transitions INT4 NOT NULL DEFAULT 0,
  feedback TEXT,
  human_feedback TEXT,
  final_output JSONB,
  error TEXT,
  parent_execution_id UUID,
  depth INT4 NOT NULL DEFAULT 0,
  ancestry JSONB NOT NULL,
  cancel_requested BOOLEAN NOT NULL DEFAULT false,
  last_seq INT4 NOT NULL DEFAULT 0,
  owner_node TEXT,
  lease_expires_at TIMESTAMPTZ,
  epoch INT4 NOT NULL DEFAULT 0,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_transition_at TIMESTAMPTZ,
  completed_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX workflow_executions_tenant_created ON workflow_executions (tenant_id, created_at);
CREATE INDEX workflow_executions_status ON workflow_executions (status);
CREATE INDEX workflow_executions_parent ON workflow_executions (parent_execution_id);

-- The workflow event stream. `event_key` (e.g. `entered:build:2`) makes a step repeated by a resumed run a no-op.
CREATE TABLE workflow_events (
  execution_id UUID NOT NULL,
  seq INT4 NOT NULL,
  type TEXT NOT NULL,
  event_key TEXT NOT NULL,
  state_name TEXT,
  iteration_number INT4,
  payload JSONB NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (execution_id, seq),
  UNIQUE (execution_id, event_key)
);

-- One row per visit of a Human state. `deadline` is fixed when the row is written, so a restarted node fires the
-- timeout at the original time. `id` is derived from the visit, so a re-run visit finds its approval.
CREATE TABLE approvals (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  workflow_execution_id UUID NOT NULL,
  state_name TEXT NOT NULL,
  visit INT4 NOT NULL,
  prompt TEXT NOT NULL,
  timeout_seconds INT4,
  deadline TIMESTAMPTZ,
  default_response TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'responded', 'expired')),
  response TEXT,
  feedback TEXT,
  resolved_by TEXT,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  resolved_at TIMESTAMPTZ,
  UNIQUE (workflow_execution_id, state_name, visit)
);
CREATE INDEX approvals_tenant_status ON approvals (tenant_id, status);
