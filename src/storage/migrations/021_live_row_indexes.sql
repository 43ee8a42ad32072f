-- 021: indexes that keep the hot statements' cost to the rows they touch, however much history the tables hold
-- (issue 23). Never edit once committed; append a new file instead.
--
-- Partial indexes on the non-terminal rows: the recovery sweeps (`status IN (live) AND (unowned or expired)
-- ORDER BY created_at`) and the live feed (`tenant_id = $1 AND status IN (live) ORDER BY created_at DESC`) read only
-- the live rows, not the terminal history. A terminal row leaves the index when it ends, so these stay as small as
-- the work in flight. CockroachDB has partial indexes (20.2 on) with the same syntax.
CREATE INDEX IF NOT EXISTS workflow_executions_live ON workflow_executions (tenant_id, created_at)
  WHERE status IN ('running', 'waiting_for_human_input');
CREATE INDEX IF NOT EXISTS executions_live ON executions (tenant_id, created_at)
  WHERE status IN ('pending', 'running');

-- The retention sweep (src/storage/retention.ts) deletes terminal rows older than the retention in batches, oldest
-- first: each batch is an index range, not a scan of the table. Only terminal rows have completed_at.
CREATE INDEX IF NOT EXISTS workflow_executions_completed ON workflow_executions (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS executions_completed ON executions (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS stimuli_created ON stimuli (created_at);
CREATE INDEX IF NOT EXISTS stimulus_keys_expires ON stimulus_keys (expires_at);

-- Pending approvals with a deadline: the timer recovery reads them after a start and on every sweep.
CREATE INDEX IF NOT EXISTS approvals_pending_deadline ON approvals (deadline) WHERE status = 'pending' AND deadline IS NOT NULL;

-- The controller's watch reads the member rows it owns (claims to renew, overdue peers, deregistered rows to give
-- up) every tick: by owner, not by a scan of every member ever registered. The recovery of members after a
-- controller's start reads the members not DEREGISTERED.
CREATE INDEX IF NOT EXISTS cluster_nodes_owner ON cluster_nodes (owner_node);
CREATE INDEX IF NOT EXISTS cluster_nodes_live ON cluster_nodes (node_id) WHERE status <> 'DEREGISTERED';
