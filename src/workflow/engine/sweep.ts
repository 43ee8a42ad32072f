// The engine's periodic sweep (issue 18, idle cost): runs to take over (unowned, lapsed, or this node's without an
// actor), approval timers coming due, and nodes whose parking lease lapsed — three reads that ran as three statements
// every sweep interval (500 ms with the 3 s lease), read here as one. The parts are the same statements as at
// start-up recovery (their SQL is shared), each an ARRAY subquery, so each keeps its own plan and order.
import type { Queryable } from '../../storage/db.ts';
import { APPROVAL_TIMER_HORIZON_MS, RECOVERABLE_APPROVALS_SQL } from '../approvals/repo.ts';
import { DEAD_PARKERS_SQL } from './parking.ts';
import { RECOVERABLE_RUNS_SQL } from './repo.ts';

export interface SweepFinds {
  /** recoverableWorkflowIds: active, unparked runs this node should drive. */
  runs: string[];
  /** recoverableApprovalIds: pending approvals due within the horizon whose run this node drives. */
  approvals: string[];
  /** Nodes other than this one whose parking lease lapsed. */
  deadParkers: string[];
}

export const SWEEP_SQL = `SELECT ARRAY(${RECOVERABLE_RUNS_SQL}) AS runs,
  ARRAY(${RECOVERABLE_APPROVALS_SQL}) AS approvals,
  ARRAY(${DEAD_PARKERS_SQL}) AS dead_parkers`;

export async function sweepFinds(db: Queryable, nodeId: string, horizonMs: number = APPROVAL_TIMER_HORIZON_MS): Promise<SweepFinds> {
  const res = await db.query<{ runs: string[]; approvals: string[]; dead_parkers: string[] }>(SWEEP_SQL, [nodeId, Math.round(horizonMs)]);
  const r = res.rows[0]!;
  return { runs: r.runs, approvals: r.approvals, deadParkers: r.dead_parkers };
}
