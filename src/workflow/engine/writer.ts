// The group-commit writer of workflow steps. Every step of every run (a transition, a suspension on a Human state,
// the terminal status) is one fenced UPDATE of the run's row plus its event rows, and the step must be committed
// before the run goes on. Committing each step in its own transaction caps a node at PostgreSQL's commit rate;
// instead, steps that arrive while a commit is in flight are gathered and committed together in the next
// transaction (one UPDATE ... FROM unnest(arrays) for all rows, one INSERT for all events), and each run's promise resolves
// only after that COMMIT. A step whose fence no longer holds (another node claimed the row) changes nothing, its
// events are not written, and its promise rejects with LEASE_LOST; the other steps of the batch commit as usual.
import type { BusEvent, EventBus } from '../../bus/bus.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db, Queryable } from '../../storage/db.ts';
import { rowLost, type RowFence } from '../../storage/row-lease.ts';
import { insertWorkflowEvents, type NewWorkflowEvent } from './events.ts';
import { isTerminalStatus, type WorkflowExecutionRow } from './repo.ts';
import { isoNow } from '../../util/iso-now.ts';

/** The mutable part of a run, written with every step (the actor holds it in memory); the blackboard as the keys the
 * step changed when it only added or replaced keys (StepWrite.blackboardPatch), else whole. */
export type RunSnapshot = Pick<
  WorkflowExecutionRow,
  'status' | 'current_state' | 'blackboard' | 'context' | 'visits' | 'total_transitions' | 'feedback' | 'human_feedback' | 'final_output' | 'error'
>;

export interface StepWrite {
  fence: RowFence;
  snapshot: RunSnapshot;
  /** seq of the first event (the row's last_seq + 1). */
  firstSeq: number;
  /**
   * The blackboard keys this step changed since the run's previous step (or since the row was read), when it only
   * added or replaced keys: the row's blackboard is then updated as `blackboard || patch` instead of rewritten whole
   * (a step of a run whose blackboard holds n keys sent and parsed all n: O(n^2) bytes over the run). Left out, the
   * snapshot's whole blackboard is written.
   */
  blackboardPatch?: Record<string, unknown>;
  events: NewWorkflowEvent[];
  /** A state transition: sets last_transition_at. */
  transition: boolean;
  /** More statements of the same transaction (e.g. the approval row of a Human state); must be retry-safe. */
  after?: (tx: Queryable) => Promise<void>;
  /**
   * The run's previous step, written but not yet known committed when this one was (WorkflowRun's pipelined built-in
   * steps): this step may go out while that one is in flight, and carries that step's events too, so that whichever
   * of the two the database applies last leaves the row and its events whole. Its own events are announced, and its
   * promise settled, only after the previous step's.
   */
  previous?: WrittenStep;
}

/** A step handed to the writer (StepWriter.writeStep): what a pipelined successor names as its `previous`. */
export interface WrittenStep {
  /** Resolves with the step's events once committed (announced); rejects if it was not. */
  readonly settled: Promise<BusEvent<Record<string, unknown>>[]>;
  readonly firstSeq: number;
  readonly events: NewWorkflowEvent[];
  /** The step's blackboard patch (StepWrite.blackboardPatch); undefined when it writes the whole blackboard. */
  readonly blackboardPatch: Record<string, unknown> | undefined;
  /** Joined to the run's previous step (StepWriter.writeStep): both settle with the one statement that writes them. */
  readonly joined: boolean;
}

/** The writer's own WrittenStep, which knows its queue entry (so a successor can be linked to it). Its firstSeq, events
 * and patch are its entry's: those of every step joined into it (StepWriter.writeStep), which a successor carries. */
class Written implements WrittenStep {
  constructor(
    readonly settled: Promise<BusEvent<Record<string, unknown>>[]>,
    readonly pending: Pending,
    /** Joined to the run's previous step, which was still waiting in the queue: one entry, one statement for both. */
    readonly joined: boolean,
  ) {}
  get firstSeq(): number {
    return this.pending.w.firstSeq;
  }
  get events(): NewWorkflowEvent[] {
    return this.pending.w.events;
  }
  get blackboardPatch(): Record<string, unknown> | undefined {
    return this.pending.w.blackboardPatch;
  }
}

/** One step handed to the writer: announced and answered on its own, though it may share its entry with others. */
interface Part {
  w: StepWrite;
  resolve: (events: BusEvent<Record<string, unknown>>[]) => void;
  reject: (err: unknown) => void;
}

interface Pending {
  /** What the statement writes: the step, or the run's steps joined into this entry (their events in order, the last snapshot). */
  w: StepWrite;
  /** The steps of this entry, oldest first, each answered (and its events announced) in order once it commits. */
  parts: Part[];
  /** Still in the queue: a later step of the same run may join it. */
  queued: boolean;
  /** Whether the database applied this step's statement, once its transaction has ended. */
  applied?: boolean;
  /** Waiting for `applied` (a predecessor that the database found overtaken by this step). */
  onApplied?: ((applied: boolean) => void)[];
  /** The run's next step, written while this one was in flight; it carries this step's events. */
  successor?: Pending;
}

/** `b`, the run's next step, joined to `a`, its step still waiting in the queue: one row update to b's snapshot, the
 * events of both in order, and a's predecessor (if a was pipelined) still carried. */
function joinSteps(a: StepWrite, b: StepWrite): StepWrite {
  if (b.firstSeq !== a.firstSeq + a.events.length) throw new Error(`step of run ${a.fence.key} joined out of order (seq ${b.firstSeq} after ${a.firstSeq}+${a.events.length})`);
  const patch = a.blackboardPatch && b.blackboardPatch ? { ...a.blackboardPatch, ...b.blackboardPatch } : undefined;
  return {
    fence: b.fence,
    snapshot: b.snapshot,
    firstSeq: a.firstSeq,
    events: [...a.events, ...b.events],
    transition: a.transition || b.transition,
    ...(patch ? { blackboardPatch: patch } : {}),
    ...(a.previous ? { previous: a.previous } : {}),
  };
}

function resolveParts(p: Pending, announce: (w: StepWrite) => BusEvent<Record<string, unknown>>[]): void {
  for (const part of p.parts) part.resolve(announce(part.w));
}

function rejectParts(p: Pending, err: unknown): void {
  for (const part of p.parts) part.reject(err);
}

/** Whether the database applied `p`, once its transaction has ended. */
function appliedOf(p: Pending): Promise<boolean> {
  if (p.applied !== undefined) return Promise.resolve(p.applied);
  return new Promise((resolve) => (p.onApplied ??= []).push(resolve));
}

export interface WriterOptions {
  /** Transactions in flight at once (each on its own pooled connection). */
  maxInFlight?: number;
  /** Steps per transaction at most. */
  maxBatch?: number;
  /**
   * Steps a batch needs to go out while another transaction is in flight (default 32); a smaller one waits for a
   * commit to come back and leaves with the steps of the runs that commit resumes. Runs started over many requests
   * (HTTP/1.1: one connection each, bodies arriving a few at a time) otherwise keep moving in small cohorts of their
   * own, each paying a statement, a round trip and a commit per step: 9.5 steps per statement at c=64 over HTTP
   * against 62 over gRPC, whose requests share one connection (bench/workflow-race-api.ts, issue 16). Nothing waits
   * when no transaction is in flight, so a lone run (c=1) sends each step at once.
   */
  minParallelBatch?: number;
  /**
   * Steps of one run one queue entry may hold (default 64; 1: none join). A run's step written while the run's
   * previous step still waits in the queue, as the writer's only entry with nothing in flight (a lone run), joins that
   * step (WorkflowRun.commitPipelined; see joinable): a lone run's chain of
   * built-ins is computed in microtasks before the writer's flush, and goes as one row update and one commit instead of
   * one commit per step, each still committed before it is announced (issue 16: at c = 1 the 10 commits of the race,
   * ~2 ms of WAL fsync each, were most of a workflow's wall time).
   */
  maxJoin?: number;
}

// A step sends either the whole blackboard or only the keys it changed (bb_patch, merged into the row's with ||).
const UPDATE_SET = `status = v.status, current_state = v.current_state, blackboard = COALESCE(v.blackboard, w.blackboard || v.bb_patch),
       context = v.context,
       visits = v.visits, total_transitions = v.total_transitions, feedback = v.feedback, human_feedback = v.human_feedback,
       final_output = v.final_output, error = v.error, last_seq = v.last_seq,
       last_transition_at = CASE WHEN v.transition THEN now() ELSE w.last_transition_at END,
       completed_at = CASE WHEN v.status IN ('completed', 'failed', 'cancelled') THEN now() ELSE NULL END,
       wake_at = NULL, updated_at = now()`;
// The batch travels as two JSON documents, one element per step and one per event, read back with jsonb_to_recordset:
// the statement's text is the same whatever the batch size, so it runs as a named prepared statement (parsed and
// planned once per connection). Before, each of 22 columns was an array parameter: every JSON value (the whole
// blackboard of every step) was stringified, then escaped character by character into an array literal by pg
// (escapeElement), and PostgreSQL parsed each array literal before parsing the JSON inside it; now the node stringifies
// each batch once and the server parses each document once (issue 16: per-step CPU on both sides sits on the critical
// path of a lone run). jsonb_to_recordset costs the server less than one -> / ->> per column (measured at c = 1:
// +7-10 % against +20-25 % execution time for the statement; the bind it saves is larger). CockroachDB has it since
// 23.1, but reads a JSON string field into a JSONB column as an error (cockroach#117675): every JSONB column here
// holds an object (a blackboard, context, visits, an output_template's output, an event payload) or is left out (SQL
// NULL).
// The ids also go as a UUID[] of their own ($1), for the index-driven lookup below.
const V_ROWS = `SELECT * FROM jsonb_to_recordset($2::JSONB) AS v(id UUID, owner TEXT, epoch INT4, status TEXT, current_state TEXT,
       blackboard JSONB, bb_patch JSONB, context JSONB, visits JSONB, total_transitions INT4, feedback TEXT, human_feedback TEXT, final_output JSONB,
       error TEXT, last_seq INT4, prev_seq INT4, transition BOOLEAN)`;
const E_ROWS = `SELECT * FROM jsonb_to_recordset($3::JSONB) AS e(execution_id UUID, seq INT4, type TEXT, event_key TEXT, state_name TEXT,
       iteration_number INT4, payload JSONB)`;

/** The rows' ids ($1) and the row updates as one JSON document ($2). A key left out (undefined, dropped by
 * JSON.stringify) or holding a JSON null reads back as SQL NULL. */
function rowParams(batch: Pending[]): [string[], string] {
  const ids = new Array<string>(batch.length);
  const rows = batch.map(({ w }, i) => {
    const s = w.snapshot;
    ids[i] = w.fence.key;
    const patch = blackboardPatch(w);
    return {
      id: w.fence.key,
      owner: w.fence.nodeId,
      epoch: w.fence.epoch,
      status: s.status,
      current_state: s.current_state,
      blackboard: patch ? undefined : s.blackboard,
      bb_patch: patch,
      context: s.context,
      visits: s.visits,
      total_transitions: s.total_transitions,
      feedback: s.feedback,
      human_feedback: s.human_feedback,
      final_output: s.final_output ?? undefined,
      error: s.error,
      last_seq: w.firstSeq - 1 + w.events.length,
      prev_seq: w.firstSeq - 1,
      transition: w.transition,
    };
  });
  return [ids, JSON.stringify(rows)];
}

/**
 * The keys a step sends instead of its whole blackboard, or undefined to send it whole. A pipelined step may reach
 * the row before its previous step does (which the fence then skips), so it carries that step's patch too, as it
 * carries its events: applied over the row before either, or after the previous one, the result is the same.
 */
function blackboardPatch(w: StepWrite): Record<string, unknown> | undefined {
  if (!w.blackboardPatch) return undefined;
  if (!w.previous) return w.blackboardPatch;
  const before = w.previous.blackboardPatch;
  return before ? { ...before, ...w.blackboardPatch } : undefined;
}

/** The events as one JSON document ($3): a pipelined step's previous events first, then its own. */
function eventParams(batch: Pending[]): string {
  const events: unknown[] = [];
  for (const { w } of batch) {
    if (w.previous) eventRows(events, w.fence.key, w.previous.firstSeq, w.previous.events);
    eventRows(events, w.fence.key, w.firstSeq, w.events);
  }
  return JSON.stringify(events);
}

function eventRows(out: unknown[], executionId: string, firstSeq: number, events: NewWorkflowEvent[]): void {
  events.forEach((e, i) =>
    out.push({
      execution_id: executionId,
      seq: firstSeq + i,
      type: e.type,
      event_key: e.key,
      state_name: e.state_name ?? null,
      iteration_number: e.iteration_number ?? null,
      payload: e.payload,
    }),
  );
}

// `w.id = ANY($1)` names the rows by the primary key itself, so the rows are found through the index whatever join
// the planner picks for `v`: joined only through `w.id = v.id`, a plan made while the table was small (or a hash
// join by another optimizer) reads the whole table per statement, and every step costs O(history) (issue 23).
const UPDATE_ROWS = `UPDATE workflow_executions AS w SET ${UPDATE_SET} FROM v
       WHERE w.id = ANY($1::UUID[]) AND w.id = v.id AND w.owner_node = v.owner AND w.epoch = v.epoch AND w.last_seq <= v.prev_seq
       RETURNING w.id`;

const UPDATE_ONLY = `WITH v AS (${V_ROWS}) ${UPDATE_ROWS}`;

async function updateRows(tx: Queryable, batch: Pending[]): Promise<Set<string>> {
  const res = await tx.query<{ id: string }>(UPDATE_ONLY, rowParams(batch), { prepare: 'orch_workflow_step_rows' });
  return new Set(res.rows.map((r) => r.id));
}

/**
 * The whole batch as ONE statement (one round trip, an implicit transaction): the fenced row updates and the events
 * of exactly the rows that were updated. Used when no step of the batch has more statements (`after`).
 *
 * A batch of steps that carry no previous step's events (every batch of a busy node) inserts them plainly, without
 * ON CONFLICT: an INSERT with a conflict arbiter is a speculative insertion (it probes every unique index first,
 * inserts, then confirms), which made the whole statement cost PostgreSQL 5-13 % more CPU per step (bench
 * step-statement, docs/BENCHMARKS.md stop 34); events are most of the statement's rows (~22 a workflow against 10
 * row updates in the race). A step's own events cannot
 * meet an existing row: they are inserted only for a row the statement updated, whose fence held
 * `last_seq <= prev_seq`; a run's events all have seq <= its row's last_seq (every statement that writes events moves
 * last_seq past them in the same transaction) while a step's own start at prev_seq + 1; and their keys
 * (`entered:<state>:<visit>`…) derive from the row's states and visits, which the same statements move on. Should
 * one still conflict, the statement fails whole (nothing of it is written) and the batch goes again as
 * DEDUP_STATEMENT, every event ON CONFLICT DO NOTHING as before (writeOneStatement). A batch with a pipelined step,
 * whose carried events do meet their step's rows whenever that step landed first, goes as DEDUP_STATEMENT at once.
 * (One INSERT per statement, not a plain one and a deduplicating one side by side: CockroachDB refuses two
 * modifications of one table in a statement.)
 */
function oneStatement(onConflict: string): string {
  return `WITH v AS (${V_ROWS}),
       upd AS (${UPDATE_ROWS}),
       e AS (${E_ROWS}),
       ins AS (
         INSERT INTO workflow_events (execution_id, seq, type, event_key, state_name, iteration_number, payload, recorded_at)
         SELECT e.execution_id, e.seq, e.type, e.event_key, e.state_name, e.iteration_number, e.payload, now()
         FROM e WHERE e.execution_id IN (SELECT id FROM upd)${onConflict}
       )
       SELECT id FROM upd`;
}
const ONE_STATEMENT = oneStatement('');
const DEDUP_STATEMENT = oneStatement('\n         ON CONFLICT DO NOTHING');

/** The unique_violation of an event the plain statement inserted (see oneStatement). */
function uniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}

// On the generic-plan lane (src/storage/pg.ts): PostgreSQL's own choice plans this statement at every call (its
// generic plan costs each array at 10 elements, above a real batch's custom plans), about as long as running it.
async function writeOneStatement(db: Queryable, batch: Pending[], logger: Logger): Promise<Set<string>> {
  const params = [...rowParams(batch), eventParams(batch)];
  const dedup = (): Promise<{ rows: { id: string }[] }> => db.query<{ id: string }>(DEDUP_STATEMENT, params, { prepare: 'orch_workflow_steps_dedup', genericPlan: true });
  let res: { rows: { id: string }[] };
  if (batch.some((p) => p.w.previous)) {
    res = await dedup();
  } else {
    try {
      res = await db.query<{ id: string }>(ONE_STATEMENT, params, { prepare: 'orch_workflow_steps', genericPlan: true });
    } catch (err) {
      if (!uniqueViolation(err)) throw err;
      logger.warn({ err, runs: batch.map((p) => p.w.fence.key) }, 'a workflow step event was written already; the batch goes again with its events deduplicated');
      res = await dedup();
    }
  }
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
  /** Steps in the transactions in flight. */
  private inFlightSteps = 0;
  private scheduled = false;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private readonly minParallelBatch: number;
  private readonly maxJoin: number;
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
    this.minParallelBatch = options.minParallelBatch ?? 32;
    this.maxJoin = Math.max(1, options.maxJoin ?? 64);
  }

  /** Commits the step (with other runs' steps) and answers its events once committed; announces them after. */
  write(w: StepWrite): Promise<BusEvent<Record<string, unknown>>[]> {
    return this.writeStep(w).settled;
  }

  /**
   * As write, answering the step as a WrittenStep, which a pipelined next step of the run can name as `previous`.
   * A step whose `previous` still waits in the queue (not sent) joins it instead of queueing behind it: one entry, one
   * row update, the events of both (see maxJoin). Neither may have more statements (`after`).
   */
  writeStep(w: StepWrite): WrittenStep {
    let part!: Part;
    const settled = new Promise<BusEvent<Record<string, unknown>>[]>((resolve, reject) => {
      part = { w, resolve, reject };
    });
    const previous = w.previous instanceof Written ? w.previous.pending : undefined;
    if (previous && this.joinable(previous) && !w.after) {
      previous.w = joinSteps(previous.w, w);
      previous.parts.push(part);
      return new Written(settled, previous, true);
    }
    const pending: Pending = { w, parts: [part], queued: true };
    if (previous) previous.successor = pending;
    this.queue.push(pending);
    this.schedule();
    return new Written(settled, pending, false);
  }

  /** Whether the run's next step would join `step` (WorkflowRun: a run computes on while its step waits in the queue). */
  joins(step: WrittenStep): boolean {
    return step instanceof Written && this.joinable(step.pending);
  }

  /**
   * Only a lone run's entry is joined: the only one queued, nothing in flight. When a committed batch resumes a cohort
   * of runs, the first of them finds the writer idle and pipelines; joining its next steps too let it finish its whole
   * chain in that turn while the rest of the cohort stepped once, and the runs it started next fell out of step with
   * the cohort (smaller batches): over gRPC at c = 64 the race read lower than without joins in 7 rounds of 8
   * (docs/BENCHMARKS.md stop 35).
   */
  private joinable(p: Pending): boolean {
    return p.queued && !p.w.after && p.parts.length < this.maxJoin && this.queue.length === 1 && this.inFlight === 0;
  }

  /**
   * Flushes at the end of this turn of the event loop, not at once: a committed batch resolves its runs' promises,
   * and each run computes its next step in microtasks of the same turn; flushing on the first arrival would send
   * that one step alone and leave the rest for the next transaction (small batches, many commits).
   */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /**
   * Nothing is queued and no transaction is in flight but (at most) `mine`, the caller's own: a run may then send its
   * next built-in step while its previous one commits (WorkflowRun). A busy writer batches instead.
   */
  idleExcept(mine: number): boolean {
    return this.queue.length + this.inFlightSteps <= mine;
  }

  private pump(): void {
    while (
      this.inFlight < this.maxInFlight &&
      this.queue.length > 0 &&
      (this.inFlight === 0 || this.queue.length >= this.minParallelBatch || this.aloneAfterPrevious())
    ) {
      const batch = this.take();
      this.inFlight++;
      this.inFlightSteps += batch.length;
      this.flush(batch).catch((err: unknown) => this.logger.error({ err }, 'the workflow step writer failed'));
    }
  }

  /**
   * A lone run's pipelined step: the only step queued, and the only transaction in flight is (at most) its run's
   * previous step. It goes out at once, to wait for that step's row lock in the database rather than in this queue.
   * With other runs about, steps go out in batches as usual (a pipelined step then simply waits for the next one).
   */
  private aloneAfterPrevious(): boolean {
    return this.inFlightSteps <= 1 && this.queue.length === 1 && this.queue[0]!.w.previous !== undefined;
  }

  /**
   * The next batch, in queue order, with at most one step per run: a run's second step waits for the next batch, so
   * its row is updated once per statement and its steps commit in order (the later transaction waits for the
   * earlier one's row lock, then finds the row at the `last_seq` it expects).
   */
  private take(): Pending[] {
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    const runs = new Set<string>();
    for (const p of this.queue) {
      if (batch.length < this.maxBatch && !runs.has(p.w.fence.key)) {
        batch.push(p);
        p.queued = false;
        runs.add(p.w.fence.key);
      } else {
        rest.push(p);
      }
    }
    this.queue.splice(0, this.queue.length, ...rest);
    return batch;
  }

  private async flush(batch: Pending[]): Promise<void> {
    let updated: Set<string> | undefined;
    let failure: unknown;
    try {
      if (batch.some((p) => p.w.after)) {
        updated = await this.db.tx(async (tx) => {
          const ids = await updateRows(tx, batch);
          const ok = batch.filter((p) => ids.has(p.w.fence.key));
          for (const p of ok) if (p.w.after) await p.w.after(tx);
          await insertWorkflowEvents(
            tx,
            ok.flatMap((p) => [
              ...(p.w.previous ? [{ executionId: p.w.fence.key, firstSeq: p.w.previous.firstSeq, events: p.w.previous.events }] : []),
              { executionId: p.w.fence.key, firstSeq: p.w.firstSeq, events: p.w.events },
            ]),
          );
          return ids;
        });
      } else {
        updated = await writeOneStatement(this.db, batch, this.logger);
      }
    } catch (err) {
      failure = err;
    }
    // A full batch waiting in the queue goes out BEFORE this batch's runs go on: those runs compute their next steps
    // while the database writes the next batch, so the node's work and the database's overlap (cohorts of runs
    // take turns) instead of alternating in lockstep rounds. A smaller one waits for this batch's runs to queue their
    // next steps and leaves with them (minParallelBatch): small cohorts merge instead of each paying its own commits.
    this.inFlight--;
    this.inFlightSteps -= batch.length;
    const ahead = this.queue.length >= this.minParallelBatch;
    if (ahead) this.pump();
    if (updated !== undefined) {
      this.stats.transactions++;
      for (const p of batch) this.stats.steps += p.parts.length;
    }
    const at = isoNow();
    for (const p of batch) {
      const applied = updated?.has(p.w.fence.key) === true;
      p.applied = applied;
      if (p.onApplied) for (const f of p.onApplied) f(applied);
      const why = (): unknown => (updated === undefined ? failure : rowLost(p.w.fence));
      // The common case (no pipelining: a batched step) settles here; a pipelined one in order, after its previous.
      if (!p.w.previous && (applied || !p.successor)) {
        if (applied) resolveParts(p, (w) => this.announce(w, at));
        else rejectParts(p, why());
        p.successor = undefined;
      } else {
        this.settle(p, applied, why, at).catch((err: unknown) => this.logger.error({ err }, 'settling a pipelined workflow step failed'));
      }
    }
    if (!ahead) this.schedule();
  }

  /**
   * Answers a step's writer. A pipelined step settles after its run's previous one, so its events are announced
   * after that step's. A step the database did not apply is still committed when its successor (which carries its
   * events) was applied: the two went out on different connections, and the successor may reach the row first —
   * then this one finds the row past it (`last_seq <= prev_seq` fails) and the successor's commit holds both.
   */
  private async settle(p: Pending, applied: boolean, failure: () => unknown, at: string): Promise<void> {
    if (p.w.previous) await p.w.previous.settled.catch(() => undefined);
    if (!applied && p.successor) applied = await appliedOf(p.successor);
    if (applied) resolveParts(p, (w) => this.announce(w, at));
    else rejectParts(p, failure());
    // Settled: let go of the neighbours, or every step of a long run would stay reachable from its latest one.
    p.w.previous = undefined;
    for (const part of p.parts) part.w.previous = undefined;
    p.successor = undefined;
  }

  private announce(w: StepWrite, at: string): BusEvent<Record<string, unknown>>[] {
    const events = busEvents(w, at);
    // Announce in order; the database already holds them, so a failed announcement only delays live viewers.
    if (this.bus) for (const e of events) this.bus.publish(e).catch((err: unknown) => this.logger.warn({ err }, 'publishing a workflow event failed'));
    return events;
  }
}

export function terminal(snapshot: RunSnapshot): boolean {
  return isTerminalStatus(snapshot.status);
}
