// Resuming a running execution whose worker was lost (issue 7; docs/ROUTING.md "Worker loss"). The journal and the
// events are rows of the shared database, so another worker can continue the execution the way a restarted lone
// node does (docs/EXECUTIONS.md "Resume, don't re-spend"): its ExecutionActor claims the row and replays the
// deterministic loop, taking every model answer and tool result the lost worker had journaled, and asks the model
// only from the first step that was not recorded. The controller's part is here: decide whether a resume is
// possible, take the row back from the lost worker (a new epoch: the lost worker is fenced), and record, in the
// execution's own event stream, the loss and then the hand-over to the survivor.
import type { BusEvent } from '../bus/bus.ts';
import { appendExecutionEvent } from '../agents/execution/events.ts';
import type { ExecutionRow } from '../agents/execution/repo.ts';
import type { Queryable } from '../storage/db.ts';

/**
 * How many times one execution is resumed after losing its worker. An execution that kills every worker it lands on
 * (a poison input) must not take the cluster down one worker at a time: past this it ends `worker_lost`.
 */
export const MAX_RESUMES = 3;

/** Event keys: one per loss and one per hand-over, so the count of resumes is read from the stream itself. */
const LOSS_KEY = 'lost:';
const RESUME_KEY = 'resumed:';

export interface ResumePolicy {
  /** Whether an ACTIVE worker other than `lost` meets the execution's requirements now. */
  survivorFor(row: ExecutionRow, lost: string): Promise<boolean>;
  maxResumes: number;
}

/** What the journal says about an execution: iterations that ended (completed or failed) and steps recorded. */
export async function journalSummary(db: Queryable, id: string): Promise<{ completedIterations: number; journalSteps: number; resumes: number }> {
  const res = await db.query<{ ended: number; steps: number; resumes: number }>(
    `SELECT
       (SELECT count(*)::INT4 FROM execution_events WHERE execution_id = $1 AND type IN ('iteration_completed', 'iteration_failed')) AS ended,
       (SELECT count(*)::INT4 FROM execution_journal WHERE execution_id = $1) AS steps,
       (SELECT count(*)::INT4 FROM execution_events WHERE execution_id = $1 AND event_key LIKE '${LOSS_KEY}%') AS resumes`,
    [id],
  );
  const r = res.rows[0];
  return { completedIterations: r?.ended ?? 0, journalSteps: r?.steps ?? 0, resumes: r?.resumes ?? 0 };
}

/**
 * Takes the running execution `id` back from the lost worker for `controller`, keeping it `running`, and records the
 * loss in its stream. Inside the caller's transaction; null when the row is no longer the lost worker's (another
 * controller acted first) or a cancel was asked (the caller ends it instead).
 */
export async function takeBackForResume(
  tx: Queryable,
  id: string,
  lost: string,
  controller: string,
  leaseMs: number,
): Promise<BusEvent<Record<string, unknown>> | null> {
  const summary = await journalSummary(tx, id);
  const res = await tx.query<{ iteration: number; epoch: number }>(
    `UPDATE executions SET owner_node = $3, epoch = epoch + 1, lease_expires_at = now() + ($4::INT * INTERVAL '1 millisecond'), updated_at = now()
     WHERE id = $1 AND owner_node = $2 AND status = 'running' AND NOT cancel_requested
     RETURNING iteration, epoch`,
    [id, lost, controller, Math.round(leaseMs)],
  );
  const row = res.rows[0];
  if (!row) return null;
  const event = await appendExecutionEvent(tx, id, 'iteration_output', `${LOSS_KEY}${row.epoch}`, {
    execution_id: id,
    iteration_number: row.iteration,
    output:
      `[orch] worker ${lost} was lost during iteration ${row.iteration}; resuming from the journal ` +
      `(${summary.completedIterations} iteration(s) ended, ${summary.journalSteps} step(s) journaled)`,
    emitted_at: new Date().toISOString(),
    resume: { lost_worker: lost, iteration: row.iteration, completed_iterations: summary.completedIterations, journal_steps: summary.journalSteps, attempt: summary.resumes + 1 },
  });
  return event;
}

/**
 * Volumes the execution uses (spec.volumes made for it, or granted to it) whose files are on `node`'s disk. A volume's
 * files live in one node's data dir (docs/VOLUMES.md), so with the lost worker they are out of reach: such an
 * execution cannot be resumed elsewhere (its volumes would answer `volume … is stored on node …`).
 */
export async function volumesStoredOn(db: Queryable, executionId: string, node: string): Promise<number> {
  const res = await db.query<{ n: number }>(
    `SELECT count(*)::INT4 AS n FROM volumes v
     WHERE v.node_id = $2 AND v.status = 'active'
       AND ((v.owner_kind = 'execution' AND v.owner_ref = $1)
            OR v.id IN (SELECT g.volume_id FROM volume_grants g WHERE g.execution_id = $3::UUID))`,
    [executionId, node, executionId],
  );
  return res.rows[0]?.n ?? 0;
}

/** The worker named by the last loss recorded in the stream (not to be routed to again for this resume). */
export async function lastLostWorker(db: Queryable, id: string): Promise<string | undefined> {
  const res = await db.query<{ payload: { resume?: { lost_worker?: string } } }>(
    `SELECT payload FROM execution_events WHERE execution_id = $1 AND event_key LIKE '${LOSS_KEY}%' ORDER BY seq DESC LIMIT 1`,
    [id],
  );
  return res.rows[0]?.payload.resume?.lost_worker;
}

/**
 * Hands a running execution this controller holds to `target` (a new epoch, a fresh claim) and records the hand-over
 * in its stream; inside the caller's transaction. Null when the controller no longer holds the row.
 */
export async function handOverForResume(
  tx: Queryable,
  id: string,
  controller: string,
  target: string,
  leaseMs: number,
): Promise<BusEvent<Record<string, unknown>> | null | undefined> {
  const res = await tx.query<{ iteration: number; epoch: number }>(
    `UPDATE executions SET owner_node = $3, epoch = epoch + 1, lease_expires_at = now() + ($4::INT * INTERVAL '1 millisecond'), updated_at = now()
     WHERE id = $1 AND owner_node = $2 AND status = 'running'
     RETURNING iteration, epoch`,
    [id, controller, target, Math.round(leaseMs)],
  );
  const row = res.rows[0];
  if (!row) return undefined;
  return appendExecutionEvent(tx, id, 'iteration_output', `${RESUME_KEY}${row.epoch}`, {
    execution_id: id,
    iteration_number: row.iteration,
    output: `[orch] resumed on worker ${target}: recorded model answers and tool results are replayed, the workspace is fresh`,
    emitted_at: new Date().toISOString(),
    resume: { worker: target, iteration: row.iteration },
  });
}
