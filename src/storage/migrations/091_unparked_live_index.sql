-- 091: the workflow recovery sweep (every sixth of the lease, recoverableWorkflowIds) reads the live runs that are
-- not parked; with 100,000 runs parked on Human states, the live-rows index of 021 would make each sweep visit all of
-- them. This index holds only the runs in memory somewhere (issue 18). approvals_pending_run (090) duplicated the
-- UNIQUE (workflow_execution_id, state_name, visit) index's leading column: dropped. Never edit once committed.
CREATE INDEX workflow_executions_unparked ON workflow_executions (created_at)
  WHERE status IN ('running', 'waiting_for_human_input') AND NOT parked;
DROP INDEX IF EXISTS approvals_pending_run;
