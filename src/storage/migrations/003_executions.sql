-- 003: agent executions, their event streams and their journals (issue 3). Never edit once committed.

-- One row per agent execution; the ExecutionActor of the node that claimed it (owner_node/epoch/lease_expires_at,
-- see row-lease.ts) runs it. `manifest` is the agent manifest as it was when the execution was created, so a
-- resumed execution runs the same agent even if a new version was deployed meanwhile.
CREATE TABLE executions (
  id UUID PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  agent_id UUID NOT NULL,
  agent_name TEXT NOT NULL,
  agent_version TEXT NOT NULL,
  manifest JSONB NOT NULL,
  input TEXT NOT NULL,
  context_json TEXT,
  workflow_execution_id TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
  iteration INT4 NOT NULL DEFAULT 0,
  final_output TEXT,
  reason TEXT,
  container_id TEXT,
  cancel_requested BOOLEAN NOT NULL DEFAULT false,
  prompt_tokens INT4 NOT NULL DEFAULT 0,
  completion_tokens INT4 NOT NULL DEFAULT 0,
  owner_node TEXT,
  lease_expires_at TIMESTAMPTZ,
  epoch INT4 NOT NULL DEFAULT 0,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  started_at TIMESTAMPTZ,
  completed_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX executions_tenant_created ON executions (tenant_id, created_at);
CREATE INDEX executions_status ON executions (status);

-- The ExecutionEvent stream (seed 000 order). `type` is the oneof variant name; `event_key` makes an event that a
-- resumed execution replays (`iteration_started:2`) a no-op instead of a duplicate.
CREATE TABLE execution_events (
  execution_id UUID NOT NULL,
  seq INT4 NOT NULL,
  type TEXT NOT NULL,
  event_key TEXT NOT NULL,
  payload JSONB NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (execution_id, seq),
  UNIQUE (execution_id, event_key)
);

-- Every LLM answer and tool result, written before it is used. A resumed execution replays from here instead of
-- asking the model or running the tool again ("resume, don't re-spend").
CREATE TABLE execution_journal (
  execution_id UUID NOT NULL,
  step_key TEXT NOT NULL,
  kind TEXT NOT NULL,
  result JSONB NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (execution_id, step_key)
);
