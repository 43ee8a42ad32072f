-- 105: the parked-run safety net reads what changed, not every parked row (issue 18). Each pass of a node's scan
-- (src/workflow/engine/parking.ts) asks only: approvals answered since its last pass, child runs that ended since
-- then, its parked runs asked to cancel, and its parked runs whose deadline came. Each has an index holding only
-- those rows, so a pass costs what happened since the last one, not the 100,000 runs waiting. The full check of
-- every parked row (in keyset pages by id) runs only when a node starts or adopts a dead node's runs.
-- Never edit once committed; append a new file instead.
CREATE INDEX approvals_resolved_at ON approvals (resolved_at) WHERE resolved_at IS NOT NULL;
CREATE INDEX workflow_executions_parked_cancel ON workflow_executions (owner_node) WHERE parked AND cancel_requested;
-- A parked run that must come back at a time of its own whatever happens (a Subworkflow state's timeout): the step
-- writer clears it with every step, so it names the deadline of the visit the run was parked in.
ALTER TABLE workflow_executions ADD COLUMN wake_at TIMESTAMPTZ;
CREATE INDEX workflow_executions_parked_wake_at ON workflow_executions (wake_at) WHERE parked AND wake_at IS NOT NULL;
-- A node's parked runs in id order: the keyset pages of the full check and of adoption.
CREATE INDEX workflow_executions_parked_by_node ON workflow_executions (owner_node, id) WHERE parked;
DROP INDEX IF EXISTS workflow_executions_parked;
