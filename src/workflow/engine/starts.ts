// The group-commit writer of workflow starts. A start is one INSERT of the run's row (claimed for this node: owner and
// lease in the row itself, so its actor needs no claim round trip) with its first events; a start from a stimulus also
// takes the delivery's idempotency key and records the stimulus (already `routed`) in the SAME statement, so the key
// claim, the stimulus and the run are committed together or not at all. Starts that arrive while a statement is in
// flight are gathered and written as one multi-row statement (one round trip, one commit), and each caller's promise
// resolves only after that commit: the API still answers after its start is committed. Two starts of one batch with
// the same idempotency key would make the key's ON CONFLICT DO UPDATE touch a row twice, so the second one waits for
// the next batch (where the unique constraint refuses it as usual). A batch that fails is retried start by start, so
// one bad start fails alone.
import type { Db, Queryable } from '../../storage/db.ts';
import type { NewWorkflowEvent } from './events.ts';
import type { NewWorkflowExecution, WorkflowExecutionRow } from './repo.ts';
import { visibleFingerprintSql } from '../registry/repo.ts';

/** The stimulus recorded (and its key taken) with a run it starts. */
export interface StartStimulus {
  id: string;
  source: string;
  idempotencyKey?: string | undefined;
  content: string;
  headers: Record<string, string>;
  routedBy: 'route' | 'router_agent';
  confidence?: number | undefined;
  ttlSeconds: number;
}

export interface StartWrite {
  run: NewWorkflowExecution;
  events: NewWorkflowEvent[];
  stimulus?: StartStimulus | undefined;
  /**
   * The workflow was resolved by name, possibly from memory (registry resolveForRun): the start is written only if
   * the registry rows that name resolves from, for this tenant and viewer, still have this fingerprint — checked in
   * the same statement, before the key claim, so a stale start writes nothing at all.
   */
  guard?: { viewer: string | null; fingerprint: string } | undefined;
}

/** `row`: the run as inserted; `duplicate`: the stimulus's key is held by another delivery (nothing was written);
 * `stale`: the guard's fingerprint no longer matches (nothing was written; resolve again and retry);
 * none of these: a run with this id exists already (an idempotent child start). */
export type StartOutcome = { row: WorkflowExecutionRow } | { duplicate: true } | { stale: true } | { exists: true };

interface Pending {
  w: StartWrite;
  resolve: (o: StartOutcome) => void;
  reject: (err: unknown) => void;
}

interface Inserted {
  id: string;
  /** The guard failed: nothing of this start was written (the other columns are null). */
  stale: boolean;
  lease_expires_at: Date;
  created_at: Date;
  started_at: Date;
  last_transition_at: Date | null;
  updated_at: Date;
}

function keyOf(w: StartWrite): string | undefined {
  const s = w.stimulus;
  return s?.idempotencyKey === undefined ? undefined : JSON.stringify([w.run.tenantId, s.source, s.idempotencyKey]);
}

// The batch travels as three JSON documents (the runs, their stimuli, their events), read back with
// jsonb_to_recordset, as the step writer's steps do: the statement's text is the same whatever the batch size, so it
// runs as a named prepared statement (parsed and planned once per connection), and each document is stringified once
// by the node and parsed once by the server. Before, each of 40 columns was an array parameter: pg escaped every
// JSON value character by character into an array literal, and PostgreSQL parsed each literal before the JSON in it
// (issue 16: the start is on the critical path of every run-and-wait). A run's `input` may be any JSON value and its
// `ancestry` is an array: they travel as JSON text and are cast, since CockroachDB's jsonb_to_recordset reads only
// objects into JSONB columns (cockroach#117675). Every CTE is always there; empty documents make it a no-op. Runs
// point into one array of the batch's distinct manifests ($4).
const START_SQL = `WITH
     r AS (
       SELECT * FROM jsonb_to_recordset($1::JSONB) AS r(id UUID, stimulus_id UUID, tenant_id TEXT, workflow_id UUID, workflow_name TEXT,
         workflow_version TEXT, manifest_at INT4, input TEXT, intent TEXT, initial_state TEXT, blackboard JSONB, context JSONB, visits JSONB,
         parent_execution_id UUID, depth INT4, ancestry TEXT, last_seq INT4, owner_node TEXT, lease_ms INT4, guarded BOOLEAN, viewer TEXT,
         fingerprint TEXT)
     ),
     k AS (SELECT DISTINCT tenant_id, viewer, workflow_name FROM r WHERE r.guarded),
     fp AS (SELECT k.tenant_id, k.viewer, k.workflow_name, ${visibleFingerprintSql('k.tenant_id', 'k.viewer', 'k.workflow_name')} AS current FROM k),
     stale AS (
       SELECT r.id FROM r JOIN fp ON fp.tenant_id = r.tenant_id AND fp.viewer IS NOT DISTINCT FROM r.viewer AND fp.workflow_name = r.workflow_name
       WHERE r.guarded AND fp.current IS DISTINCT FROM r.fingerprint
     ),
     s AS (
       SELECT * FROM jsonb_to_recordset($2::JSONB) AS s(id UUID, tenant_id TEXT, source TEXT, idempotency_key TEXT, content TEXT, headers JSONB,
         routed_by TEXT, workflow_name TEXT, confidence FLOAT8, workflow_execution_id UUID, ttl FLOAT8)
     ),
     claim AS (
       INSERT INTO stimulus_keys (tenant_id, source, idempotency_key, stimulus_id, expires_at)
       SELECT s.tenant_id, s.source, s.idempotency_key, s.id, now() + s.ttl * INTERVAL '1 second' FROM s
       WHERE s.idempotency_key IS NOT NULL AND s.workflow_execution_id NOT IN (SELECT id FROM stale)
       ON CONFLICT (tenant_id, source, idempotency_key) DO UPDATE
         SET stimulus_id = EXCLUDED.stimulus_id, expires_at = EXCLUDED.expires_at
         WHERE stimulus_keys.expires_at <= now()
       RETURNING stimulus_id
     ),
     sins AS (
       INSERT INTO stimuli (id, tenant_id, source, idempotency_key, content, headers, status, routed_by, workflow_name, confidence, workflow_execution_id)
       SELECT s.id, s.tenant_id, s.source, s.idempotency_key, s.content, s.headers, 'routed', s.routed_by, s.workflow_name, s.confidence, s.workflow_execution_id
       FROM s WHERE (s.idempotency_key IS NULL AND s.workflow_execution_id NOT IN (SELECT id FROM stale)) OR s.id IN (SELECT stimulus_id FROM claim)
       RETURNING id
     ),
     ins AS (
       INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, intent,
         status, current_state, blackboard, context, visits, total_transitions, parent_execution_id, depth, ancestry,
         last_seq, owner_node, lease_expires_at, epoch, last_transition_at)
       SELECT r.id, r.tenant_id, r.workflow_id, r.workflow_name, r.workflow_version, ($4::JSONB[])[r.manifest_at], r.input::JSONB, r.intent,
         'running', r.initial_state, r.blackboard, r.context, r.visits, 0, r.parent_execution_id, r.depth, r.ancestry::JSONB,
         r.last_seq, r.owner_node, now() + r.lease_ms * INTERVAL '1 millisecond', 0, now()
       FROM r WHERE r.id NOT IN (SELECT id FROM stale) AND (r.stimulus_id IS NULL OR r.stimulus_id IN (SELECT id FROM sins))
       ON CONFLICT (id) DO NOTHING
       RETURNING id, lease_expires_at, created_at, started_at, last_transition_at, updated_at
     ),
     ev AS (
       INSERT INTO workflow_events (execution_id, seq, type, event_key, state_name, iteration_number, payload, recorded_at)
       SELECT e.execution_id, e.seq, e.type, e.event_key, e.state_name, e.iteration_number, e.payload, now()
       FROM jsonb_to_recordset($3::JSONB)
         AS e(execution_id UUID, seq INT4, type TEXT, event_key TEXT, state_name TEXT, iteration_number INT4, payload JSONB)
       WHERE e.execution_id IN (SELECT id FROM ins)
       RETURNING 1
     )
     SELECT id, false AS stale, lease_expires_at, created_at, started_at, last_transition_at, updated_at FROM ins
     UNION ALL
     SELECT id, true, NULL::TIMESTAMPTZ, NULL::TIMESTAMPTZ, NULL::TIMESTAMPTZ, NULL::TIMESTAMPTZ, NULL::TIMESTAMPTZ FROM stale`;

/** The batch as ONE statement: the guards' fingerprints, key claims, stimuli of the won claims, the runs of those
 * (and of starts without a stimulus), their events. Answers, by run id, the inserted runs' server-set columns and the
 * starts refused by their guard (`stale`). */
export async function insertStarts(db: Queryable, batch: StartWrite[]): Promise<Map<string, Inserted>> {
  const runs: unknown[] = [];
  const stimuli: unknown[] = [];
  const events: unknown[] = [];
  // The starts of a batch mostly run the same few workflows: each distinct manifest travels once ($4, by position).
  const manifests: string[] = [];
  const manifestAt = new Map<string, number>();
  const at = (m: object): number => {
    const text = manifestJson(m);
    let i = manifestAt.get(text);
    if (i === undefined) {
      i = manifests.push(text);
      manifestAt.set(text, i);
    }
    return i;
  };
  for (const w of batch) {
    const run = w.run;
    const initial = run.manifest.spec.initial_state;
    const st = w.stimulus;
    if (st) {
      stimuli.push({
        id: st.id,
        tenant_id: run.tenantId,
        source: st.source,
        idempotency_key: st.idempotencyKey ?? null,
        content: st.content,
        headers: st.headers,
        routed_by: st.routedBy,
        workflow_name: run.workflowName,
        confidence: st.confidence ?? null,
        workflow_execution_id: run.id,
        ttl: st.ttlSeconds,
      });
    }
    runs.push({
      id: run.id,
      stimulus_id: st?.id ?? null,
      tenant_id: run.tenantId,
      workflow_id: run.workflowId,
      workflow_name: run.workflowName,
      workflow_version: run.workflowVersion,
      manifest_at: at(run.manifest),
      input: JSON.stringify(run.input ?? {}),
      intent: run.intent ?? null,
      initial_state: initial,
      blackboard: run.blackboard,
      context: run.context,
      visits: { [initial]: 1 },
      parent_execution_id: run.parentExecutionId ?? null,
      depth: run.depth,
      ancestry: JSON.stringify(run.ancestry),
      last_seq: w.events.length,
      owner_node: run.ownerNode,
      lease_ms: run.leaseMs,
      guarded: w.guard !== undefined,
      viewer: w.guard?.viewer ?? null,
      fingerprint: w.guard?.fingerprint ?? null,
    });
    w.events.forEach((ev, i) =>
      events.push({
        execution_id: run.id,
        seq: i + 1,
        type: ev.type,
        event_key: ev.key,
        state_name: ev.state_name ?? null,
        iteration_number: ev.iteration_number ?? null,
        payload: ev.payload,
      }),
    );
  }
  const res = await db.query<Inserted>(START_SQL, [JSON.stringify(runs), JSON.stringify(stimuli), JSON.stringify(events), manifests], { prepare: 'orch_workflow_starts_json' });
  return new Map(res.rows.map((row) => [row.id, row]));
}

/** The manifest as JSON, once per manifest object (a cached definition hands every start the same object). */
const manifestTexts = new WeakMap<object, string>();
function manifestJson(m: object): string {
  let t = manifestTexts.get(m);
  if (t === undefined) {
    t = JSON.stringify(m);
    manifestTexts.set(m, t);
  }
  return t;
}

function rowOf(w: StartWrite, ins: Inserted): WorkflowExecutionRow {
  const e = w.run;
  const initial = e.manifest.spec.initial_state;
  return {
    id: e.id,
    tenant_id: e.tenantId,
    workflow_id: e.workflowId,
    workflow_name: e.workflowName,
    workflow_version: e.workflowVersion,
    manifest: e.manifest,
    input: e.input ?? {},
    intent: e.intent ?? null,
    status: 'running',
    current_state: initial,
    blackboard: e.blackboard,
    context: e.context,
    visits: { [initial]: 1 },
    total_transitions: 0,
    feedback: null,
    human_feedback: null,
    final_output: null,
    error: null,
    parent_execution_id: e.parentExecutionId ?? null,
    depth: e.depth,
    ancestry: e.ancestry,
    cancel_requested: false,
    parked: false,
    last_seq: w.events.length,
    owner_node: e.ownerNode,
    lease_expires_at: ins.lease_expires_at,
    epoch: 0,
    created_at: ins.created_at,
    started_at: ins.started_at,
    last_transition_at: ins.last_transition_at,
    completed_at: null,
    updated_at: ins.updated_at,
  };
}

export interface StartWriterOptions {
  /** Statements in flight at once (each on its own pooled connection). */
  maxInFlight?: number;
  /** Starts per statement at most. */
  maxBatch?: number;
  /**
   * Starts a statement needs to go out while another is in flight (default 16); fewer wait for that statement's
   * commit and leave together, as the step writer's steps do (WriterOptions.minParallelBatch). Requests over
   * HTTP/1.1 arrive a few per turn of the event loop, one per connection: sent at once while a connection was free,
   * they went ~3 to a statement at c = 64 in the API race (0.34 start statements and commits per run, each parsing
   * the batch's manifest; issue 16). Nothing waits when no statement is in flight, so a lone start goes at once.
   */
  minParallelBatch?: number;
}

export class StartWriter {
  private queue: Pending[] = [];
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private readonly minParallelBatch: number;
  /** Counters for the benchmark and the logs. */
  readonly stats = { statements: 0, starts: 0 };

  constructor(
    private readonly db: Db,
    options: StartWriterOptions = {},
  ) {
    this.maxInFlight = options.maxInFlight ?? 4;
    this.maxBatch = options.maxBatch ?? 128;
    this.minParallelBatch = options.minParallelBatch ?? 16;
  }

  /** Commits the start (with other concurrent starts) and answers once committed. */
  write(w: StartWrite): Promise<StartOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ w, resolve, reject });
      this.schedule();
    });
  }

  private scheduled = false;

  /**
   * Sends at the end of this turn of the event loop, not at once: the requests whose bodies arrived in the same
   * turn then share one statement (as the step writer does), where sending on the first arrival would commit it
   * alone while a free connection remains.
   */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0 && (this.inFlight === 0 || this.queue.length >= this.minParallelBatch)) {
      const batch: Pending[] = [];
      const rest: Pending[] = [];
      const keys = new Set<string>();
      for (const p of this.queue) {
        const k = keyOf(p.w);
        if (batch.length >= this.maxBatch || (k !== undefined && keys.has(k))) {
          rest.push(p);
          continue;
        }
        if (k !== undefined) keys.add(k);
        batch.push(p);
      }
      this.queue = rest;
      this.inFlight++;
      void this.flush(batch)
        // A flush settles every start of its batch; should it throw past that, the starts fail instead of hanging.
        .catch((err: unknown) => {
          for (const p of batch) p.reject(err);
        })
        .finally(() => {
          this.inFlight--;
          this.schedule();
        });
    }
  }

  private async flush(batch: Pending[]): Promise<void> {
    let inserted: Map<string, Inserted>;
    try {
      inserted = await insertStarts(this.db, batch.map((p) => p.w));
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      // One start may be the cause: each again on its own, so the others still start.
      await Promise.all(batch.map((p) => this.flush([p])));
      return;
    }
    this.stats.statements++;
    this.stats.starts += batch.length;
    for (const p of batch) {
      const ins = inserted.get(p.w.run.id);
      if (ins?.stale) p.resolve({ stale: true });
      else if (ins) p.resolve({ row: rowOf(p.w, ins) });
      else if (p.w.stimulus) p.resolve({ duplicate: true });
      else p.resolve({ exists: true });
    }
  }
}
