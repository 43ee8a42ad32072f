// SQL for workflow_executions. Reads from the API are scoped by tenant; the owning actor reads its row by id and
// writes it only through the fenced writer (writer.ts).
import type { Queryable } from '../../storage/db.ts';
import { listTenantRuns, type RunPage } from '../../storage/run-list.ts';
import type { LeasedTable } from '../../actors/leased-row/table.ts';
import type { WorkflowManifest } from '../manifest/types.ts';
import type { NewWorkflowEvent } from './events.ts';

export type WorkflowStatus = 'running' | 'waiting_for_human_input' | 'completed' | 'failed' | 'cancelled';
export const NON_TERMINAL_STATUSES: readonly WorkflowStatus[] = ['running', 'waiting_for_human_input'];
/** The rows a WorkflowActor drives, for the leased-row claim and recovery queries. */
export const WORKFLOW_EXECUTIONS_TABLE: LeasedTable = { table: 'workflow_executions', keyColumn: 'id', activeStatuses: NON_TERMINAL_STATUSES };

export function isTerminalStatus(status: string): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

import type { ApprovalAnswer } from '../approvals/repo.ts';

export interface WorkflowExecutionRow {
  id: string;
  tenant_id: string;
  workflow_id: string;
  workflow_name: string;
  workflow_version: string;
  manifest: WorkflowManifest;
  input: unknown;
  intent: string | null;
  status: WorkflowStatus;
  current_state: string | null;
  blackboard: Record<string, unknown>;
  context: Record<string, unknown>;
  visits: Record<string, number>;
  total_transitions: number;
  feedback: string | null;
  human_feedback: string | null;
  final_output: unknown;
  error: string | null;
  parent_execution_id: string | null;
  depth: number;
  ancestry: string[];
  cancel_requested: boolean;
  /** Parked (passivated) on owner_node: no actor in memory (parking.ts). */
  parked: boolean;
  /** While parked in a visit with a deadline (a Subworkflow state's timeout): when that visit times out. Cleared by
   * every step write, so a run claimed from its row reads the deadline of the visit it resumes (migration 105). */
  wake_at?: Date | null;
  /** Only on a row brought back from parking by a message: the approval of the visit it is parked in (if any). */
  answer?: ApprovalAnswer | null;
  last_seq: number;
  owner_node: string | null;
  lease_expires_at: Date | null;
  epoch: number;
  created_at: Date;
  started_at: Date;
  last_transition_at: Date | null;
  completed_at: Date | null;
  updated_at: Date;
}

export interface NewWorkflowExecution {
  id: string;
  tenantId: string;
  workflowId: string;
  workflowName: string;
  workflowVersion: string;
  manifest: WorkflowManifest;
  input: unknown;
  intent?: string | undefined;
  blackboard: Record<string, unknown>;
  context: Record<string, unknown>;
  parentExecutionId?: string | undefined;
  depth: number;
  ancestry: string[];
  /** The node that will run it; the row is claimed for it at once so no other node's recovery takes it. */
  ownerNode: string;
  leaseMs: number;
}

/**
 * Inserts the row with its initial state entered (visit 1) together with its first events (seq 1..n, `last_seq` = n),
 * as ONE statement (an implicit transaction, one round trip); undefined when a row with this id exists already.
 */
export async function insertWorkflowExecution(db: Queryable, e: NewWorkflowExecution, events: NewWorkflowEvent[]): Promise<WorkflowExecutionRow | undefined> {
  const initial = e.manifest.spec.initial_state;
  const params: unknown[] = [
    e.id,
    e.tenantId,
    e.workflowId,
    e.workflowName,
    e.workflowVersion,
    JSON.stringify(e.manifest),
    JSON.stringify(e.input ?? {}),
    e.intent ?? null,
    initial,
    JSON.stringify(e.blackboard),
    JSON.stringify(e.context),
    JSON.stringify({ [initial]: 1 }),
    e.parentExecutionId ?? null,
    e.depth,
    JSON.stringify(e.ancestry),
    e.ownerNode,
    e.leaseMs,
    events.length,
  ];
  const values = events.map((ev, i) => {
    const b = params.length;
    params.push(i + 1, ev.type, ev.key, ev.state_name ?? null, ev.iteration_number ?? null, JSON.stringify(ev.payload));
    return `($${b + 1}::INT4, $${b + 2}::TEXT, $${b + 3}::TEXT, $${b + 4}::TEXT, $${b + 5}::INT4, $${b + 6}::JSONB)`;
  });
  const res = await db.query<WorkflowExecutionRow>(
    `WITH ins AS (
       INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, intent,
         status, current_state, blackboard, context, visits, total_transitions, parent_execution_id, depth, ancestry,
         last_seq, owner_node, lease_expires_at, epoch, last_transition_at)
       VALUES ($1, $2, $3, $4, $5, $6::JSONB, $7::JSONB, $8, 'running', $9, $10::JSONB, $11::JSONB, $12::JSONB, 0, $13, $14,
         $15::JSONB, $18::INT4, $16, now() + ($17::INT4 * INTERVAL '1 millisecond'), 0, now())
       ON CONFLICT (id) DO NOTHING
       RETURNING *
     )${
       values.length
         ? `, ev AS (
       INSERT INTO workflow_events (execution_id, seq, type, event_key, state_name, iteration_number, payload, recorded_at)
       SELECT ins.id, e.seq, e.type, e.event_key, e.state_name, e.iteration_number, e.payload, now()
       FROM ins, (VALUES ${values.join(', ')}) AS e(seq, type, event_key, state_name, iteration_number, payload)
       RETURNING 1
     )`
         : ''
     }
     SELECT * FROM ins`,
    params,
  );
  return res.rows[0];
}

export async function getWorkflowExecution(db: Queryable, id: string): Promise<WorkflowExecutionRow | undefined> {
  return (await db.query<WorkflowExecutionRow>('SELECT * FROM workflow_executions WHERE id = $1', [id])).rows[0];
}

/** The few columns a waiter needs (not the manifest). */
export async function getRunEnd(db: Queryable, id: string): Promise<Pick<WorkflowExecutionRow, 'status' | 'final_output' | 'blackboard'> | undefined> {
  return (await db.query<Pick<WorkflowExecutionRow, 'status' | 'final_output' | 'blackboard'>>('SELECT status, final_output, blackboard FROM workflow_executions WHERE id = $1', [id])).rows[0];
}

export async function getTenantWorkflowExecution(db: Queryable, tenantId: string, id: string): Promise<WorkflowExecutionRow | undefined> {
  return (await db.query<WorkflowExecutionRow>('SELECT * FROM workflow_executions WHERE id = $1 AND tenant_id = $2', [id, tenantId])).rows[0];
}

export interface WorkflowListFilter extends RunPage {
  /** A workflow UUID or name. */
  workflow?: string | undefined;
}

export async function listWorkflowExecutions(db: Queryable, tenantId: string, f: WorkflowListFilter): Promise<WorkflowExecutionRow[]> {
  return listTenantRuns<WorkflowExecutionRow>(db, 'workflow_executions', tenantId, f, (bind) => {
    if (!f.workflow) return [];
    const p = bind(f.workflow);
    return [`(workflow_id = ${p} OR workflow_name = ${p})`];
  });
}

/** Non-terminal runs this node should drive after a start: its own, unowned, or with an expired claim. */
/**
 * Runs this node should drive after a start or on a sweep: active, not parked, and its own, unowned or with an
 * expired claim. Parked runs need no actor: their node brings one back on a message; a dead node's are adopted
 * (parking.ts).
 */
export async function recoverableWorkflowIds(db: Queryable, nodeId: string): Promise<string[]> {
  const res = await db.query<{ id: string }>(RECOVERABLE_RUNS_SQL, [nodeId]);
  return res.rows.map((r) => r.id);
}

/** recoverableWorkflowIds' statement ($1: this node), also a part of the engine's one-statement sweep (sweep.ts). */
export const RECOVERABLE_RUNS_SQL = `SELECT id::TEXT AS id FROM workflow_executions
     WHERE status IN ('running', 'waiting_for_human_input') AND NOT parked
       AND (owner_node IS NULL OR owner_node = $1 OR lease_expires_at IS NULL OR lease_expires_at < now())
     ORDER BY created_at`;

export async function deleteWorkflowExecution(tx: Queryable, tenantId: string, id: string): Promise<number> {
  const res = await tx.query('DELETE FROM workflow_executions WHERE id = $1 AND tenant_id = $2', [id, tenantId]);
  if (res.rowCount === 0) return 0;
  await tx.query('DELETE FROM workflow_events WHERE execution_id = $1', [id]);
  await tx.query('DELETE FROM approvals WHERE workflow_execution_id = $1', [id]);
  return res.rowCount;
}
