// The ExecutionEvent stream: one row per event in execution_events, announced on the bus after commit, served as
// gRPC (ts-proto oneof), SSE and WebSocket JSON (`{"<variant>": {...}}`). One shape in storage, three renderings.
import type { BusEvent, HistorySource } from '../../bus/bus.ts';
import type { ExecutionEvent as ProtoEvent } from '../../gen/orch/runtime/v1/runtime.js';
import type { Queryable } from '../../storage/db.ts';
import { SerializationConflict } from '../../storage/retry.ts';
import type { Db } from '../../storage/db.ts';
import { fencedUpdate, type RowFence } from '../../storage/row-lease.ts';

export type ExecutionEventType =
  | 'execution_started'
  | 'iteration_started'
  | 'iteration_output'
  | 'iteration_completed'
  | 'iteration_failed'
  | 'refinement_applied'
  | 'execution_completed'
  | 'execution_failed';

export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(['execution_completed', 'execution_failed']);

export function executionStream(executionId: string): string {
  return `execution:${executionId}`;
}

/** The bus stream every execution's events are also announced on, for list views and dashboards. */
export const ALL_EXECUTIONS_STREAM = 'executions';

interface EventRow {
  execution_id: string;
  seq: number;
  type: string;
  payload: Record<string, unknown>;
  recorded_at: Date;
}

function toBusEvent(row: EventRow): BusEvent<Record<string, unknown>> {
  return {
    stream: executionStream(row.execution_id),
    seq: row.seq,
    type: row.type,
    payload: row.payload,
    at: row.recorded_at.toISOString(),
  };
}

function isUniqueViolation(err: unknown, name: string): boolean {
  const e = err as { code?: unknown; constraint?: unknown; message?: unknown };
  return e?.code === '23505' && (e.constraint === name || String(e.message).includes(name));
}

/**
 * Records an event inside `tx` with the next seq; answers it, or null when an event with the same `key` exists
 * (a resumed execution repeating a step it had already announced). Publish after the commit.
 */
export async function appendExecutionEvent(
  tx: Queryable,
  executionId: string,
  type: ExecutionEventType,
  key: string,
  payload: Record<string, unknown>,
): Promise<BusEvent<Record<string, unknown>> | null> {
  const seen = await tx.query('SELECT 1 FROM execution_events WHERE execution_id = $1 AND event_key = $2', [executionId, key]);
  if (seen.rows.length > 0) return null;
  try {
    const res = await tx.query<EventRow>(
      `INSERT INTO execution_events (execution_id, seq, type, event_key, payload, recorded_at)
       SELECT $1::UUID, COALESCE(MAX(seq), 0) + 1, $2::TEXT, $3::TEXT, $4::JSONB, now()
       FROM execution_events WHERE execution_id = $1::UUID
       RETURNING execution_id, seq, type, payload, recorded_at`,
      [executionId, type, key, JSON.stringify(payload)],
    );
    return toBusEvent(res.rows[0]!);
  } catch (err) {
    if (isUniqueViolation(err, 'execution_events_pkey') || isUniqueViolation(err, 'execution_events_execution_id_event_key_key')) {
      throw new SerializationConflict(`concurrent append to execution ${executionId}`, { cause: err });
    }
    throw err;
  }
}

/**
 * What the execution's owner writes for one event: the event and its row's changes, in one transaction fenced by the
 * claim (a node that lost the execution writes nothing). Answers the event to publish after the commit, or null when
 * it was recorded already.
 *
 * READ COMMITTED, not the database's SERIALIZABLE: the fenced UPDATE locks the execution's row first, so every
 * writer of this execution's events (this, giveUp, a cancel — each updates the row first) waits for the one before
 * it, and the statements after the lock read what it committed; a duplicate seq or key still fails on the unique
 * constraints (SerializationConflict, retried). Under SERIALIZABLE the `MAX(seq)` and key reads took page-level
 * predicate locks on the index all executions share, and a hundred executions announcing at once failed each other
 * until the retry loop gave up (issue 24; test/agents/execution-events-concurrency.test.ts).
 */
export function recordExecutionEvent(
  db: Db,
  fence: RowFence,
  type: ExecutionEventType,
  key: string,
  payload: Record<string, unknown>,
  set?: { sql: string; params: unknown[] },
): Promise<BusEvent<Record<string, unknown>> | null> {
  return db.tx(async (tx: Queryable) => {
    await tx.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
    if (set) await fencedUpdate(tx, fence, `${set.sql}, updated_at = now()`, set.params);
    else await fencedUpdate(tx, fence, 'updated_at = now()');
    return appendExecutionEvent(tx, fence.key, type, key, { execution_id: fence.key, ...payload });
  });
}

export async function readExecutionEvents(db: Queryable, executionId: string, fromSeq = 1, limit = 10_000): Promise<BusEvent<Record<string, unknown>>[]> {
  const res = await db.query<EventRow>(
    `SELECT execution_id, seq, type, payload, recorded_at FROM execution_events
     WHERE execution_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`,
    [executionId, fromSeq, limit],
  );
  return res.rows.map(toBusEvent);
}

/** History for late bus subscribers of `execution:<id>` streams. */
export class ExecutionHistory implements HistorySource {
  constructor(private readonly db: Queryable) {}

  read(stream: string, fromSeq: number, limit: number): Promise<BusEvent[]> {
    const id = stream.startsWith('execution:') ? stream.slice('execution:'.length) : '';
    return readExecutionEvents(this.db, id, fromSeq, limit);
  }
}

/** The JSON form of SSE and WebSocket: `{"<variant>": {...fields}}`, as the seed's HTTP stream example shows. */
export function toJsonEvent(event: BusEvent): Record<string, unknown> {
  return { [event.type]: event.payload };
}

/** The gRPC form (ts-proto oneof). */
export function toProtoEvent(event: BusEvent): ProtoEvent {
  const value = event.payload as never;
  return { event: { $case: event.type as ExecutionEventType, value } as ProtoEvent['event'] };
}
