// The retention sweep (spec.retention, docs/RETENTION.md): terminal history older than the operator's setting is
// deleted in small batches, so the tables hold the work in flight plus a bounded past. Every statement is
// index-driven: the batch's keys come from an index range (oldest first, LIMIT), are gathered once (ARRAY(...)),
// and every DELETE finds its rows by those keys (`= ANY(...)`), never by a scan of the history it is trimming. Each
// batch is one statement (an implicit transaction): a run goes with its events and approvals, or not at all. Any
// number of nodes may sweep at once: a row locked by another sweep is skipped (SKIP LOCKED), deleting twice deletes
// nothing.
import type { RetentionConfig } from '../config/types.ts';
import type { Logger } from '../logging/logger.ts';
import type { Queryable } from './db.ts';

/** Terminal workflow runs ended more than $1 seconds ago, oldest first, $2 at most, with their events and approvals.
 * A child run whose parent has not ended is kept (the parent may still read it). */
export const DELETE_WORKFLOW_RUNS = `WITH doomed AS (
    SELECT w.id FROM workflow_executions w
    WHERE w.completed_at IS NOT NULL AND w.completed_at < now() - ($1::INT8 * INTERVAL '1 second')
      AND w.status IN ('completed', 'failed', 'cancelled')
      AND COALESCE((SELECT p.completed_at IS NOT NULL FROM workflow_executions p WHERE p.id = w.parent_execution_id), true)
    ORDER BY w.completed_at LIMIT $2 FOR UPDATE SKIP LOCKED
  ),
  ev AS (DELETE FROM workflow_events WHERE execution_id = ANY(ARRAY(SELECT id FROM doomed)) RETURNING 1),
  ap AS (DELETE FROM approvals WHERE workflow_execution_id = ANY(ARRAY(SELECT id FROM doomed)) RETURNING 1),
  runs AS (DELETE FROM workflow_executions WHERE id = ANY(ARRAY(SELECT id FROM doomed)) RETURNING 1)
  SELECT (SELECT count(*) FROM runs)::INT4 AS runs, (SELECT count(*) FROM ev)::INT4 AS events`;

/** Agent executions ended more than $1 seconds ago, oldest first, $2 at most, with their events and journal. */
export const DELETE_EXECUTIONS = `WITH doomed AS (
    SELECT x.id FROM executions x
    WHERE x.completed_at IS NOT NULL AND x.completed_at < now() - ($1::INT8 * INTERVAL '1 second')
      AND x.status IN ('completed', 'failed', 'cancelled')
    ORDER BY x.completed_at LIMIT $2 FOR UPDATE SKIP LOCKED
  ),
  ev AS (DELETE FROM execution_events WHERE execution_id = ANY(ARRAY(SELECT id FROM doomed)) RETURNING 1),
  jn AS (DELETE FROM execution_journal WHERE execution_id = ANY(ARRAY(SELECT id FROM doomed)) RETURNING 1),
  runs AS (DELETE FROM executions WHERE id = ANY(ARRAY(SELECT id FROM doomed)) RETURNING 1)
  SELECT (SELECT count(*) FROM runs)::INT4 AS runs, (SELECT count(*) FROM ev)::INT4 AS events`;

/** Stimuli received more than $1 seconds ago, oldest first, $2 at most. */
export const DELETE_STIMULI = `DELETE FROM stimuli WHERE id = ANY(ARRAY(
    SELECT s.id FROM stimuli s WHERE s.created_at < now() - ($1::INT8 * INTERVAL '1 second')
    ORDER BY s.created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`;

/** Idempotency keys that expired (they no longer refuse a duplicate), about $1 at most: up to the $1-th oldest expiry. */
export const DELETE_EXPIRED_KEYS = `DELETE FROM stimulus_keys WHERE expires_at < now() AND expires_at <= COALESCE(
    (SELECT k.expires_at FROM stimulus_keys k WHERE k.expires_at < now() ORDER BY k.expires_at OFFSET $1::INT4 - 1 LIMIT 1), now())`;

export interface RetentionPass {
  workflowRuns: number;
  workflowEvents: number;
  executions: number;
  stimuli: number;
  keys: number;
}

const HOUR = 3600;

/** One batch of each kind; answers what it deleted (a full batch means there is more). */
export async function retentionBatch(db: Queryable, r: RetentionConfig): Promise<RetentionPass> {
  const batch = r.batch_size ?? 1000;
  const out: RetentionPass = { workflowRuns: 0, workflowEvents: 0, executions: 0, stimuli: 0, keys: 0 };
  if (r.terminal_runs_hours !== undefined) {
    const age = Math.round(r.terminal_runs_hours * HOUR);
    const wf = await db.query<{ runs: number; events: number }>(DELETE_WORKFLOW_RUNS, [age, batch]);
    out.workflowRuns = wf.rows[0]?.runs ?? 0;
    out.workflowEvents = wf.rows[0]?.events ?? 0;
    const ex = await db.query<{ runs: number }>(DELETE_EXECUTIONS, [age, batch]);
    out.executions = ex.rows[0]?.runs ?? 0;
  }
  if (r.stimuli_hours !== undefined) {
    out.stimuli = (await db.query(DELETE_STIMULI, [Math.round(r.stimuli_hours * HOUR), batch])).rowCount;
  }
  out.keys = (await db.query(DELETE_EXPIRED_KEYS, [batch])).rowCount;
  return out;
}

/** Batches until every kind is below a full batch (or `maxBatches`): one pass of the sweep. */
export async function retentionPass(db: Queryable, r: RetentionConfig, maxBatches = 100): Promise<RetentionPass> {
  const batch = r.batch_size ?? 1000;
  const total: RetentionPass = { workflowRuns: 0, workflowEvents: 0, executions: 0, stimuli: 0, keys: 0 };
  for (let i = 0; i < maxBatches; i++) {
    const b = await retentionBatch(db, r);
    total.workflowRuns += b.workflowRuns;
    total.workflowEvents += b.workflowEvents;
    total.executions += b.executions;
    total.stimuli += b.stimuli;
    total.keys += b.keys;
    if (b.workflowRuns < batch && b.executions < batch && b.stimuli < batch && b.keys < batch) break;
  }
  return total;
}

export interface RetentionSweeper {
  stop(): Promise<void>;
}

/** Runs a pass every `interval_seconds` (default 60) until stopped; a failed pass is logged and tried again. */
export function startRetention(db: Queryable, r: RetentionConfig, logger: Logger): RetentionSweeper {
  const log = logger.child({ component: 'retention' });
  const intervalMs = Math.round((r.interval_seconds ?? 60) * 1000);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = (): void => {
    running = retentionPass(db, r)
      .then((p) => {
        if (p.workflowRuns + p.executions + p.stimuli + p.keys > 0) log.info(p, 'retention: old history deleted');
      })
      .catch((err: unknown) => log.warn({ err }, 'retention pass failed; the next one tries again'))
      .finally(() => {
        if (!stopped) {
          timer = setTimeout(tick, intervalMs);
          timer.unref();
        }
      });
  };
  timer = setTimeout(tick, Math.min(intervalMs, 5000));
  timer.unref();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
