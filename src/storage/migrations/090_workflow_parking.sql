-- 090: passivated ("parked") workflow runs (issue 18, docs/WORKFLOWS.md "Idle runs are parked"). A run that waits on
-- a Human state past spec.workflow.park_after_seconds drops its in-memory actor: its row keeps owner_node (the node
-- that parked it) and `parked = TRUE`, and gives up its per-row lease (lease_expires_at NULL), so the node renews no
-- row for it. The node's one row in workflow_parking_leases says it is alive; while that lease holds, its parked runs
-- are its own (a message to one reactivates it there); once it lapses, another controller adopts them in one statement
-- (owner_node and epoch moved, still parked). Never edit once committed; append a new file instead.
ALTER TABLE workflow_executions ADD COLUMN parked BOOLEAN NOT NULL DEFAULT FALSE;
-- A node's parked runs (the safety-net scan, adoption of a dead node's runs): only parked rows are indexed.
CREATE INDEX workflow_executions_parked ON workflow_executions (owner_node) WHERE parked;
CREATE TABLE workflow_parking_leases (
  node_id TEXT PRIMARY KEY,
  expires_at TIMESTAMPTZ NOT NULL
);
-- A run's pending approval by run (the parked-run scan asks "does it still wait?"; a run's end expires its pending
-- approvals by run id): only pending rows are indexed, so the history of answered approvals costs nothing here.
CREATE INDEX approvals_pending_run ON approvals (workflow_execution_id) WHERE status = 'pending';
