// The ExecutionEvent stream: one row per event in execution_events, announced on the bus after commit, served as
// gRPC (ts-proto oneof), SSE and WebSocket JSON (`{"<variant>": {...}}`). One shape in storage, three renderings.
import type { BusEvent, HistorySource } from '../../bus/bus.ts';
import type { ExecutionEvent as ProtoEvent } from '../../gen/orch/runtime/v1/runtime.js';
import type { Queryable } from '../../storage/db.ts';
import { SerializationConflict } from '../../storage/retry.ts';
import type { Db } from '../../storage/db.ts';
import { rowLost, type RowFence } from '../../storage/row-lease.ts';
import { ident } from '../../storage/sql-ident.ts';

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
 * READ COMMITTED, not the database's SERIALIZABLE: the fenced UPDATE locks the execution's row, so every writer of
 * this execution's events (this, giveUp, a cancel — each updates the row first) waits for the one before it. Under
 * SERIALIZABLE the `MAX(seq)` and key reads took page-level predicate locks on the index all executions share, and a
 * hundred executions announcing at once failed each other until the retry loop gave up (issue 24;
 * test/agents/execution-events-concurrency.test.ts).
 *
 * The fence, the key check and the insert are ONE statement (issue 24: it was four, plus the whole row parsed back
 * for every event — a quarter of the statements a busy node ran). All of it reads the statement's snapshot, taken
 * before the row lock was granted: when another writer of the same execution committed an event in between, the
 * insert collides with it on a unique constraint, which is a SerializationConflict and the transaction runs again
 * (then it sees that event: its key is skipped, its seq counted).
 */
export function recordExecutionEvent(
  db: Db,
  fence: RowFence,
  type: ExecutionEventType,
  key: string,
  payload: Record<string, unknown>,
  set?: { sql: string; params: unknown[] },
): Promise<BusEvent<Record<string, unknown>> | null> {
  const setSql = set ? `${set.sql}, updated_at = now()` : 'updated_at = now()';
  const params = set?.params ?? [];
  const n = params.length;
  const body = JSON.stringify({ execution_id: fence.key, ...payload });
  return db.tx(async (tx: Queryable) => {
    try {
      const res = await tx.query<EventRow & { owned: boolean }>(
        `WITH owner AS (
           UPDATE ${ident(fence.table)} SET ${setSql}
           WHERE ${ident(fence.keyColumn)} = $${n + 1} AND owner_node = $${n + 2} AND epoch = $${n + 3}
           RETURNING 1
         ), appended AS (
           INSERT INTO execution_events (execution_id, seq, type, event_key, payload, recorded_at)
           SELECT $${n + 1}::UUID, COALESCE((SELECT MAX(seq) FROM execution_events WHERE execution_id = $${n + 1}::UUID), 0) + 1,
                  $${n + 4}::TEXT, $${n + 5}::TEXT, $${n + 6}::JSONB, now()
           WHERE EXISTS (SELECT 1 FROM owner)
             AND NOT EXISTS (SELECT 1 FROM execution_events WHERE execution_id = $${n + 1}::UUID AND event_key = $${n + 5}::TEXT)
           RETURNING execution_id, seq, type, payload, recorded_at
         )
         SELECT EXISTS (SELECT 1 FROM owner) AS owned, a.* FROM (SELECT 1) AS one LEFT JOIN appended a ON TRUE`,
        [...params, fence.key, fence.nodeId, fence.epoch, type, key, body],
      );
      const row = res.rows[0]!;
      if (!row.owned) throw rowLost(fence);
      return row.seq === null || row.seq === undefined ? null : toBusEvent(row);
    } catch (err) {
      if (isUniqueViolation(err, 'execution_events_pkey') || isUniqueViolation(err, 'execution_events_execution_id_event_key_key')) {
        throw new SerializationConflict(`concurrent append to execution ${fence.key}`, { cause: err });
      }
      throw err;
    }
    // READ COMMITTED said in its BEGIN (BEGIN then SET TRANSACTION were two round trips), or, where sessions run
    // READ COMMITTED already, the statement alone without BEGIN and COMMIT (issue 24: four round trips per event
    // became one). Not a plain db.query: that would run at the server's default, which may be SERIALIZABLE.
  }, { isolation: 'read committed', oneStatement: true });
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
