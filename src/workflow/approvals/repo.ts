// SQL for approvals: one row per visit of a Human state. The deadline is fixed when the row is written, so the
// timeout fires at the original time even after a restart. Resolution is a guarded UPDATE (status = 'pending'),
// so approve, reject, signal and expiry race safely: exactly one wins.
import type { Queryable } from '../../storage/db.ts';

import { holderFrom, holderJson, type HolderColumns } from '../../actors/holder.ts';
import type { Holder } from '../../actors/tell.ts';

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'responded' | 'expired';

export interface ApprovalRow {
  id: string;
  tenant_id: string;
  workflow_execution_id: string;
  state_name: string;
  visit: number;
  prompt: string;
  timeout_seconds: number | null;
  deadline: Date | null;
  default_response: string | null;
  status: ApprovalStatus;
  response: string | null;
  feedback: string | null;
  resolved_by: string | null;
  created_at: Date;
  resolved_at: Date | null;
}

/** What a run needs of its approval to move on. */
export type ApprovalAnswer = Pick<ApprovalRow, 'id' | 'status' | 'response' | 'feedback'>;

export interface NewApproval {
  id: string;
  tenantId: string;
  workflowExecutionId: string;
  stateName: string;
  visit: number;
  prompt: string;
  timeoutSeconds?: number | undefined;
  defaultResponse?: string | undefined;
}

/** Writes the approval unless this visit's approval exists already (a re-run visit keeps the first deadline). */
export async function insertApproval(tx: Queryable, a: NewApproval): Promise<void> {
  await tx.query(
    `INSERT INTO approvals (id, tenant_id, workflow_execution_id, state_name, visit, prompt, timeout_seconds, deadline,
       default_response, status, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7::INT4,
       CASE WHEN $7::INT4 IS NULL THEN NULL ELSE now() + ($7::INT4 * INTERVAL '1 second') END, $8, 'pending', now())
     ON CONFLICT DO NOTHING`,
    [a.id, a.tenantId, a.workflowExecutionId, a.stateName, a.visit, a.prompt, a.timeoutSeconds ?? null, a.defaultResponse ?? null],
  );
}

export async function getApproval(db: Queryable, id: string): Promise<ApprovalRow | undefined> {
  return (await db.query<ApprovalRow>('SELECT * FROM approvals WHERE id = $1', [id])).rows[0];
}

export async function getTenantApproval(db: Queryable, tenantId: string, id: string): Promise<ApprovalRow | undefined> {
  return (await db.query<ApprovalRow>('SELECT * FROM approvals WHERE id = $1 AND tenant_id = $2', [id, tenantId])).rows[0];
}

export async function listPendingApprovals(db: Queryable, tenantId: string): Promise<ApprovalRow[]> {
  const res = await db.query<ApprovalRow>(
    `SELECT * FROM approvals WHERE tenant_id = $1 AND status = 'pending' ORDER BY created_at, id`,
    [tenantId],
  );
  return res.rows;
}

export async function pendingApprovalOf(db: Queryable, workflowExecutionId: string): Promise<ApprovalRow | undefined> {
  const res = await db.query<ApprovalRow>(
    `SELECT * FROM approvals WHERE workflow_execution_id = $1 AND status = 'pending' ORDER BY created_at DESC LIMIT 1`,
    [workflowExecutionId],
  );
  return res.rows[0];
}

export interface Resolution {
  status: Exclude<ApprovalStatus, 'pending'>;
  response: string | null;
  feedback: string | null;
  resolvedBy?: string | undefined;
}

/** Resolves a pending approval; undefined when it was not pending any more (someone else resolved it first). */
export async function resolveApproval(
  db: Queryable,
  id: string,
  r: Resolution,
  guard: { tenantId?: string; deadlinePassed?: boolean; withHolder?: boolean } = {},
): Promise<(ApprovalRow & { holder?: Holder }) | undefined> {
  const params: unknown[] = [id, r.status, r.response, r.feedback, r.resolvedBy ?? null];
  let where = `id = $1 AND status = 'pending'`;
  if (guard.tenantId !== undefined) {
    params.push(guard.tenantId);
    where += ` AND tenant_id = $${params.length}`;
  }
  // Judged by the database clock, so a node with a fast clock cannot expire an approval early.
  if (guard.deadlinePassed) where += ' AND deadline <= now()';
  const update = `UPDATE approvals SET status = $2, response = $3, feedback = $4, resolved_by = $5, resolved_at = now()
     WHERE ${where} RETURNING *`;
  if (!guard.withHolder) return (await db.query<ApprovalRow>(update, params)).rows[0];
  // The run's holder read in the same statement (its snapshot: as a read just before), for the wake-up to follow.
  const res = await db.query<ApprovalRow & { holder: HolderColumns | null }>(
    `WITH a AS (${update}) SELECT a.*, ${holderJson('workflow', 'a.workflow_execution_id')} AS holder FROM a`,
    params,
  );
  const got = res.rows[0];
  if (!got) return undefined;
  const { holder, ...row } = got;
  return Object.assign(row, { holder: holderFrom(holder) });
}

/** An approval's timer runs only this long before its deadline; further off, the sweep starts it later. */
export const APPROVAL_TIMER_HORIZON_MS = 60_000;

/**
 * Pending approvals whose deadline comes within `horizonMs` and whose run this node drives: a live run that is its
 * own, unowned or with an expired claim, or a run parked on this node. Approvals further off need no timer yet: the
 * sweep asks again (a due-time scan, not a timer per waiting run).
 */
export async function recoverableApprovalIds(db: Queryable, nodeId: string, horizonMs: number = APPROVAL_TIMER_HORIZON_MS): Promise<string[]> {
  const res = await db.query<{ id: string }>(RECOVERABLE_APPROVALS_SQL, [nodeId, Math.round(horizonMs)]);
  return res.rows.map((r) => r.id);
}

/**
 * recoverableApprovalIds' statement ($1: this node, $2: the horizon in ms), also a part of the engine's
 * one-statement sweep (engine/sweep.ts). The pending approvals come from their partial index; each one's run is
 * looked up by id in a scalar subquery (never flattened into a join), so no plan reads the whole history of runs to
 * find a few (issue 23).
 */
export const RECOVERABLE_APPROVALS_SQL = `SELECT a.id::TEXT AS id FROM approvals a
     WHERE a.status = 'pending' AND a.deadline IS NOT NULL AND a.deadline < now() + ($2::INT * INTERVAL '1 millisecond')
       AND (SELECT CASE WHEN w.parked THEN w.owner_node = $1
                   ELSE w.owner_node IS NULL OR w.owner_node = $1 OR w.lease_expires_at IS NULL OR w.lease_expires_at < now() END
            FROM workflow_executions w WHERE w.id = a.workflow_execution_id)
     ORDER BY a.deadline`;
