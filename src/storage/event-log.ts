// The generic event table, for streams that have no event table of their own ("node:<id>", ...), and the
// HistorySource that lets a late bus subscriber read it.
//
// Sequence numbers are allocated as MAX(seq)+1 inside the caller's transaction. Two transactions appending to the
// same stream at once pick the same number; the primary key (stream, seq) then rejects one of them. That loser is
// reported as a serialization conflict (SQLSTATE 40001 from PostgreSQL SERIALIZABLE or CockroachDB, or a duplicate
// key mapped to SerializationConflict here), which db.tx retries by running the whole transaction again. So:
// call appendEvent inside db.tx, and keep everything the transaction does retry-safe (no side effects outside it).
// Publish the returned event on the bus only after db.tx has resolved, i.e. after the commit.
import type { BusEvent, HistorySource } from '../bus/bus.ts';
import type { Queryable } from './db.ts';
import { SerializationConflict } from './retry.ts';

interface EventRow {
  stream: string;
  seq: number;
  type: string;
  payload: unknown;
  recorded_at: Date;
}

function toEvent<P>(row: EventRow): BusEvent<P> {
  return { stream: row.stream, seq: row.seq, type: row.type, payload: row.payload as P, at: row.recorded_at.toISOString() };
}

function isDuplicateSeq(err: unknown): boolean {
  const e = err as { code?: unknown; constraint?: unknown; message?: unknown };
  return e?.code === '23505' && (e.constraint === 'event_log_pkey' || String(e.message).includes('event_log_pkey'));
}

/** Records an event on `stream` with the next sequence number, inside `tx`; answers it, ready to publish. */
export async function appendEvent<P>(tx: Queryable, stream: string, type: string, payload: P): Promise<BusEvent<P>> {
  try {
    const res = await tx.query<EventRow>(
      `INSERT INTO event_log (stream, seq, type, payload, recorded_at)
       SELECT $1::TEXT, COALESCE(MAX(seq), 0) + 1, $2::TEXT, $3::JSONB, now()
       FROM event_log WHERE stream = $1::TEXT
       RETURNING stream, seq, type, payload, recorded_at`,
      [stream, type, JSON.stringify(payload ?? null)],
    );
    return toEvent<P>(res.rows[0]!);
  } catch (err) {
    if (isDuplicateSeq(err)) throw new SerializationConflict(`concurrent append to stream ${stream}`, { cause: err });
    throw err;
  }
}

/** Reads history from event_log for late subscribers and for filling gaps seen in the live feed. */
export class DbHistorySource implements HistorySource {
  constructor(private readonly db: Queryable) {}

  async read(stream: string, fromSeq: number, limit: number): Promise<BusEvent[]> {
    const res = await this.db.query<EventRow>(
      `SELECT stream, seq, type, payload, recorded_at FROM event_log
       WHERE stream = $1 AND seq >= $2 ORDER BY seq LIMIT $3`,
      [stream, fromSeq, limit],
    );
    return res.rows.map((r) => toEvent(r));
  }
}
