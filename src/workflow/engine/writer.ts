// The group-commit writer of workflow steps. Every step of every run (a transition, a suspension on a Human state,
// the terminal status) is one fenced UPDATE of the run's row plus its event rows, and the step must be committed
// before the run goes on. Committing each step in its own transaction caps a node at PostgreSQL's commit rate;
// instead, steps that arrive while a commit is in flight are gathered and committed together in the next
// transaction (one UPDATE ... FROM VALUES for all rows, one INSERT for all events), and each run's promise resolves
// only after that COMMIT. A step whose fence no longer holds (another node claimed the row) changes nothing, its
// events are not written, and its promise rejects with LEASE_LOST; the other steps of the batch commit as usual.
import type { BusEvent, EventBus } from '../../bus/bus.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db, Queryable } from '../../storage/db.ts';
import { rowLost, type RowFence } from '../../storage/row-lease.ts';
import { insertWorkflowEvents, type NewWorkflowEvent } from './events.ts';
import { isTerminalStatus, type WorkflowStatus } from './repo.ts';

/** The mutable part of a run, written whole with every step (the actor holds it in memory). */
export interface RunSnapshot {
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
}

export interface StepWrite {
  fence: RowFence;
  snapshot: RunSnapshot;
  /** seq of the first event (the row's last_seq + 1). */
  firstSeq: number;
  events: NewWorkflowEvent[];
  /** A state transition: sets last_transition_at. */
  transition: boolean;
  /** More statements of the same transaction (e.g. the approval row of a Human state); must be retry-safe. */
  after?: (tx: Queryable) => Promise<void>;
}

interface Pending {
  w: StepWrite;
  resolve: (events: BusEvent<Record<string, unknown>>[]) => void;
  reject: (err: unknown) => void;
}

export interface WriterOptions {
  /** Transactions in flight at once (each on its own pooled connection). */
  maxInFlight?: number;
  /** Steps per transaction at most. */
  maxBatch?: number;
}

const UPDATE_SET = `status = v.status, current_state = v.current_state, blackboard = v.blackboard, context = v.context,
       visits = v.visits, total_transitions = v.total_transitions, feedback = v.feedback, human_feedback = v.human_feedback,
       final_output = v.final_output, error = v.error, last_seq = v.last_seq,
       last_transition_at = CASE WHEN v.transition THEN now() ELSE w.last_transition_at END,
       completed_at = CASE WHEN v.status IN ('completed', 'failed', 'cancelled') THEN now() ELSE NULL END,
       updated_at = now()`;
const V_COLUMNS = `v(id, owner, epoch, status, current_state, blackboard, context, visits, total_transitions, feedback, human_feedback,
       final_output, error, last_seq, transition)`;

/** The VALUES rows of the row updates, with their parameters appended to `params`. */
function rowValues(batch: Pending[], params: unknown[]): string {
  const values: string[] = [];
  for (const { w } of batch) {
    const s = w.snapshot;
    const b = params.length;
    values.push(
      `($${b + 1}::UUID, $${b + 2}::TEXT, $${b + 3}::INT4, $${b + 4}::TEXT, $${b + 5}::TEXT, $${b + 6}::JSONB, $${b + 7}::JSONB, ` +
        `$${b + 8}::JSONB, $${b + 9}::INT4, $${b + 10}::TEXT, $${b + 11}::TEXT, $${b + 12}::JSONB, $${b + 13}::TEXT, $${b + 14}::INT4, $${b + 15}::BOOLEAN)`,
    );
    params.push(
      w.fence.key,
      w.fence.nodeId,
      w.fence.epoch,
      s.status,
      s.current_state,
      JSON.stringify(s.blackboard),
      JSON.stringify(s.context),
      JSON.stringify(s.visits),
      s.total_transitions,
      s.feedback,
      s.human_feedback,
      s.final_output === undefined || s.final_output === null ? null : JSON.stringify(s.final_output),
      s.error,
      w.firstSeq - 1 + w.events.length,
      w.transition,
    );
  }
  return values.join(', ');
}

/** The VALUES rows of the events, with their parameters appended to `params`; '' when there are none. */
function eventValues(batch: Pending[], params: unknown[]): string {
  const values: string[] = [];
  for (const { w } of batch) {
    w.events.forEach((e, i) => {
      const b = params.length;
      values.push(`($${b + 1}::UUID, $${b + 2}::INT4, $${b + 3}::TEXT, $${b + 4}::TEXT, $${b + 5}::TEXT, $${b + 6}::INT4, $${b + 7}::JSONB)`);
      params.push(w.fence.key, w.firstSeq + i, e.type, e.key, e.state_name ?? null, e.iteration_number ?? null, JSON.stringify(e.payload));
    });
  }
  return values.join(', ');
}

async function updateRows(tx: Queryable, batch: Pending[]): Promise<Set<string>> {
  const params: unknown[] = [];
  const values = rowValues(batch, params);
  const res = await tx.query<{ id: string }>(
    `UPDATE workflow_executions AS w SET ${UPDATE_SET}
     FROM (VALUES ${values}) AS ${V_COLUMNS}
     WHERE w.id = v.id AND w.owner_node = v.owner AND w.epoch = v.epoch
     RETURNING w.id`,
    params,
  );
  return new Set(res.rows.map((r) => r.id));
}

/**
 * The whole batch as ONE statement (so one round trip and an implicit transaction): the fenced row updates and the
 * events of exactly the rows that were updated. Used when no step of the batch has more statements (`after`).
 */
async function writeOneStatement(db: Queryable, batch: Pending[]): Promise<Set<string>> {
  const params: unknown[] = [];
  const rows = rowValues(batch, params);
  const events = eventValues(batch, params);
  const sql = events
    ? `WITH ${V_COLUMNS} AS (VALUES ${rows}),
       upd AS (
         UPDATE workflow_executions AS w SET ${UPDATE_SET} FROM v
         WHERE w.id = v.id AND w.owner_node = v.owner AND w.epoch = v.epoch RETURNING w.id
       ),
       e(execution_id, seq, type, event_key, state_name, iteration_number, payload) AS (VALUES ${events}),
       ins AS (
         INSERT INTO workflow_events (execution_id, seq, type, event_key, state_name, iteration_number, payload, recorded_at)
         SELECT e.execution_id, e.seq, e.type, e.event_key, e.state_name, e.iteration_number, e.payload, now()
         FROM e WHERE e.execution_id IN (SELECT id FROM upd)
         ON CONFLICT DO NOTHING RETURNING 1
       )
       SELECT id, (SELECT count(*) FROM ins)::INT4 AS inserted FROM upd`
    : `WITH ${V_COLUMNS} AS (VALUES ${rows})
       UPDATE workflow_executions AS w SET ${UPDATE_SET} FROM v
       WHERE w.id = v.id AND w.owner_node = v.owner AND w.epoch = v.epoch RETURNING w.id`;
  const res = await db.query<{ id: string }>(sql, params);
  return new Set(res.rows.map((r) => r.id));
}

function busEvents(w: StepWrite, at: string): BusEvent<Record<string, unknown>>[] {
  return w.events.map((e, i) => ({
    stream: `workflow:${w.fence.key}`,
    seq: w.firstSeq + i,
    type: e.type,
    payload: { ...e.payload, state_name: e.state_name ?? null, iteration_number: e.iteration_number ?? null },
    at,
  }));
}

export class StepWriter {
  private readonly queue: Pending[] = [];
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  /** Counters for the benchmark and the logs. */
  readonly stats = { transactions: 0, steps: 0 };

  constructor(
    private readonly db: Db,
    private readonly bus: EventBus | undefined,
    private readonly logger: Logger,
    options: WriterOptions = {},
  ) {
    this.maxInFlight = options.maxInFlight ?? 4;
    this.maxBatch = options.maxBatch ?? 256;
  }

  /** Commits the step (with other runs' steps) and answers its events once committed; announces them after. */
  write(w: StepWrite): Promise<BusEvent<Record<string, unknown>>[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ w, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      void this.flush(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async flush(batch: Pending[]): Promise<void> {
    let updated: Set<string>;
    try {
      if (batch.some((p) => p.w.after)) {
        updated = await this.db.tx(async (tx) => {
          const ids = await updateRows(tx, batch);
          const ok = batch.filter((p) => ids.has(p.w.fence.key));
          for (const p of ok) if (p.w.after) await p.w.after(tx);
          await insertWorkflowEvents(
            tx,
            ok.map((p) => ({ executionId: p.w.fence.key, firstSeq: p.w.firstSeq, events: p.w.events })),
          );
          return ids;
        });
      } else {
        updated = await writeOneStatement(this.db, batch);
      }
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    this.stats.transactions++;
    this.stats.steps += batch.length;
    const at = new Date().toISOString();
    for (const p of batch) {
      if (!updated.has(p.w.fence.key)) {
        p.reject(rowLost(p.w.fence));
        continue;
      }
      const events = busEvents(p.w, at);
      // Announce in order; the database already holds them, so a failed announcement only delays live viewers.
      if (this.bus) for (const e of events) this.bus.publish(e).catch((err: unknown) => this.logger.warn({ err }, 'publishing a workflow event failed'));
      p.resolve(events);
    }
  }
}

export function terminal(snapshot: RunSnapshot): boolean {
  return isTerminalStatus(snapshot.status);
}
