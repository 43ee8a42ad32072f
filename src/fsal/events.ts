// StorageEvents: one row per FSAL operation in storage_events (migration 007), numbered per volume, announced on the
// bus stream `storage:<volume_id>` after the commit (the database is the truth, the bus only announces), and read
// back by the logs query below (tenant-scoped) or by a late bus subscriber through StorageHistory.
import { randomUUID } from 'node:crypto';
import type { BusEvent, EventBus, HistorySource } from '../bus/bus.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { SerializationConflict } from '../storage/retry.ts';

export type FsalOperation = 'lookup' | 'getattr' | 'readdir' | 'read' | 'write' | 'create' | 'remove' | 'rename' | 'mkdir' | 'rmdir';

export interface NewStorageEvent {
  volume_id: string;
  tenant_id: string;
  execution_id: string;
  operation: FsalOperation;
  path: string;
  new_path?: string;
  offset?: number;
  bytes?: number;
  /** gRPC status name: OK, NOT_FOUND, PERMISSION_DENIED, ... */
  status: string;
  error?: string;
}

export interface StorageEvent {
  event_id: string;
  volume_id: string;
  seq: number;
  tenant_id: string;
  execution_id: string;
  operation: FsalOperation;
  path: string;
  new_path: string | null;
  offset: number | null;
  bytes: number;
  status: string;
  error: string | null;
  recorded_at: string;
}

export function storageStream(volumeId: string): string {
  return `storage:${volumeId}`;
}

interface Row {
  event_id: string;
  volume_id: string;
  seq: number;
  tenant_id: string;
  execution_id: string;
  operation: FsalOperation;
  path: string;
  new_path: string | null;
  offset_bytes: string | number | null;
  bytes: string | number;
  status: string;
  error: string | null;
  recorded_at: Date;
}

const COLUMNS = 'event_id, volume_id, seq, tenant_id, execution_id, operation, path, new_path, offset_bytes, bytes, status, error, recorded_at';

function toEvent(r: Row): StorageEvent {
  return {
    event_id: r.event_id,
    volume_id: r.volume_id,
    seq: r.seq,
    tenant_id: r.tenant_id,
    execution_id: r.execution_id,
    operation: r.operation,
    path: r.path,
    new_path: r.new_path,
    offset: r.offset_bytes === null ? null : Number(r.offset_bytes),
    bytes: Number(r.bytes),
    status: r.status,
    error: r.error,
    recorded_at: r.recorded_at.toISOString(),
  };
}

function toBusEvent(e: StorageEvent): BusEvent<StorageEvent> {
  return { stream: storageStream(e.volume_id), seq: e.seq, type: 'storage_event', payload: e, at: e.recorded_at };
}

function isDuplicateSeq(err: unknown): boolean {
  const e = err as { code?: unknown; constraint?: unknown; message?: unknown };
  return e?.code === '23505' && (e.constraint === 'storage_events_pkey' || String(e.message).includes('storage_events_pkey'));
}

/** Inserts the event with the volume's next seq inside `tx` (call inside db.tx: a concurrent append is retried). */
export async function appendStorageEvent(tx: Queryable, ev: NewStorageEvent): Promise<StorageEvent> {
  try {
    const res = await tx.query<Row>(
      `INSERT INTO storage_events (volume_id, seq, event_id, tenant_id, execution_id, operation, path, new_path, offset_bytes, bytes, status, error, recorded_at)
       SELECT $1::UUID, COALESCE(MAX(seq), 0) + 1, $2::UUID, $3::TEXT, $4::UUID, $5::TEXT, $6::TEXT, $7::TEXT, $8::INT8, $9::INT8, $10::TEXT, $11::TEXT, now()
       FROM storage_events WHERE volume_id = $1::UUID
       RETURNING ${COLUMNS}`,
      [
        ev.volume_id,
        randomUUID(),
        ev.tenant_id,
        ev.execution_id,
        ev.operation,
        ev.path,
        ev.new_path ?? null,
        ev.offset ?? null,
        ev.bytes ?? 0,
        ev.status,
        ev.error ?? null,
      ],
    );
    return toEvent(res.rows[0]!);
  } catch (err) {
    if (isDuplicateSeq(err)) throw new SerializationConflict(`concurrent storage event on volume ${ev.volume_id}`, { cause: err });
    throw err;
  }
}

/** Persists, then publishes (a bus failure is the caller's log line, not a lost event: the row is there). */
export async function recordStorageEvent(db: Db, bus: EventBus | undefined, ev: NewStorageEvent): Promise<StorageEvent> {
  const saved = await db.tx((tx) => appendStorageEvent(tx, ev));
  if (bus) await bus.publish(toBusEvent(saved));
  return saved;
}

export interface StorageEventQuery {
  execution_id?: string;
  volume_id?: string;
  operation?: FsalOperation;
  limit?: number;
  offset?: number;
}

/** The logs query: a tenant's StorageEvents, oldest first, filtered by execution and/or volume. */
export async function listStorageEvents(db: Queryable, tenantId: string, q: StorageEventQuery = {}): Promise<{ events: StorageEvent[]; count: number; limit: number; offset: number }> {
  const where = ['tenant_id = $1'];
  const params: unknown[] = [tenantId];
  if (q.execution_id) {
    params.push(q.execution_id);
    where.push(`execution_id = $${params.length}::UUID`);
  }
  if (q.volume_id) {
    params.push(q.volume_id);
    where.push(`volume_id = $${params.length}::UUID`);
  }
  if (q.operation) {
    params.push(q.operation);
    where.push(`operation = $${params.length}`);
  }
  const limit = Math.min(Math.max(q.limit ?? 50, 1), 1000);
  const offset = Math.max(q.offset ?? 0, 0);
  const count = await db.query<{ n: string | number }>(`SELECT COUNT(*) AS n FROM storage_events WHERE ${where.join(' AND ')}`, params);
  const rows = await db.query<Row>(
    `SELECT ${COLUMNS} FROM storage_events WHERE ${where.join(' AND ')} ORDER BY recorded_at, volume_id, seq LIMIT ${limit} OFFSET ${offset}`,
    params,
  );
  return { events: rows.rows.map(toEvent), count: Number(count.rows[0]?.n ?? 0), limit, offset };
}

/** History for late subscribers of `storage:<volume_id>` streams. */
export class StorageHistory implements HistorySource {
  constructor(private readonly db: Queryable) {}

  async read(stream: string, fromSeq: number, limit: number): Promise<BusEvent[]> {
    const id = stream.startsWith('storage:') ? stream.slice('storage:'.length) : '';
    if (!/^[0-9a-f-]{36}$/i.test(id)) return [];
    const res = await this.db.query<Row>(`SELECT ${COLUMNS} FROM storage_events WHERE volume_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`, [id, fromSeq, limit]);
    return res.rows.map((r) => toBusEvent(toEvent(r)));
  }
}
