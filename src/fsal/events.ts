// StorageEvents: one row per FSAL operation in storage_events (migration 007), numbered per volume, announced on the
// bus stream `storage:<volume_id>` after the commit (the database is the truth, the bus only announces), and read
// back by the logs query below (tenant-scoped) or by a late bus subscriber through StorageHistory.
import { randomUUID } from 'node:crypto';
import type { BusEvent, EventBus, HistorySource } from '../bus/bus.ts';
import { DependencyUnavailable } from '../errors/outage.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { SerializationConflict, withTxRetry } from '../storage/retry.ts';

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

/**
 * Part of every StorageEvent INSERT: the transaction it commits in (the statement's own, or the batch's) commits
 * without waiting for PostgreSQL's WAL flush (`synchronous_commit` off, local to that transaction). The row is
 * committed — visible, numbered, atomic — before the FSAL call is answered, and an orch node crash loses nothing;
 * only a crash of the PostgreSQL server or the machine can lose the last commits (at most 3 × wal_writer_delay,
 * 600 ms by default), and such a crash loses those calls' file bytes too: the FSAL writes through the page cache
 * and never fsyncs. So an event is as durable as the operation it records. The flush was most of a sequential
 * caller's time per call (3-5 ms at load 20 against 0.3-0.6 ms without; docs/BENCHMARKS.md, issue 21). A volatile
 * function in the select list is always evaluated, once per statement here (an aggregate row / a one-row subquery).
 */
const ASYNC_COMMIT = "set_config('synchronous_commit', 'off', true) AS async_commit";

/**
 * The StorageEvent INSERTs run as named prepared statements: each pooled connection parses and plans them once, then
 * only binds and executes. Parsing and planning the batch INSERT (unnest of ten arrays WITH ORDINALITY, the MAX(seq)
 * subquery, RETURNING) was most of its time: 0.6–0.9 ms a statement unprepared against 0.14–0.33 ms prepared on this
 * machine, where a round trip is ~0.05 ms (docs/BENCHMARKS.md, issue 21, "fsal"). It is the only statement an FSAL
 * call runs, so it was most of a small call's time in the service. The texts below are fixed (one name, one text).
 */
const STORAGE_EVENT_STATEMENTS = { one: 'orch_storage_event', batch: 'orch_storage_events' } as const;

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
       SELECT $1::UUID, base.m + 1, $2::UUID, $3::TEXT, $4::UUID, $5::TEXT, $6::TEXT, $7::TEXT, $8::INT8, $9::INT8, $10::TEXT, $11::TEXT, now()
       FROM (SELECT COALESCE(MAX(seq), 0) AS m, ${ASYNC_COMMIT} FROM storage_events WHERE volume_id = $1::UUID) AS base
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
      { prepare: STORAGE_EVENT_STATEMENTS.one },
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

interface Pending {
  ev: NewStorageEvent;
  /** Settled once: at the commit, or UNAVAILABLE when maxWaitMs passed first (the event stays queued). */
  settle: (err?: unknown) => void;
}

/**
 * Group commit of StorageEvents: an FSAL call is answered only once its event is committed, and the events of
 * concurrent calls share one transaction (one INSERT per volume). A commit starts as soon as none is in flight
 * (gathering what arrived in the same event-loop turn); events that arrive while one is in flight go in the next —
 * there is no timer window. A committed transaction per call was most of a small call's time (docs/BENCHMARKS.md,
 * "FSAL and FUSE mounts"); a sequential caller still pays one commit per call, concurrent callers share them.
 *
 * A failed commit is retried with capped backoff, the events staying queued in order. A caller waits through the
 * retries up to `maxWaitMs` (default 5 s, under the FUSE client's 10 s deadline) and is then refused UNAVAILABLE
 * (DependencyUnavailable), as any FSAL call that meets a database outage; its event stays queued and is committed
 * when the database returns. No caller is told success before its event is committed. Past `maxQueued` queued
 * events (a long outage) `admit()` refuses new calls before they act.
 */
export class StorageEventBatcher {
  private queue: Pending[] = [];
  private scheduled = false;
  private flushing: Promise<void> | undefined;
  /** Publishing after commits, chained so the bus sees each volume's events in seq order. */
  private publishing: Promise<void> = Promise.resolve();
  private failures = 0;
  private lastError: unknown;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly bus: EventBus | undefined,
    private readonly log: { error: (o: object, m: string) => void; warn: (o: object, m: string) => void },
    private readonly opts: { maxWaitMs?: number; maxBatch?: number; maxQueued?: number } = {},
  ) {}

  /** Throws UNAVAILABLE when the queue is full (the database has been failing): a call must not act then. */
  admit(): void {
    if (this.queue.length >= (this.opts.maxQueued ?? 20_000)) throw this.unavailable(`${this.queue.length} storage events wait for the database`);
  }

  /** Resolves once the event is committed; rejects UNAVAILABLE after maxWaitMs without a commit (it stays queued). */
  add(ev: NewStorageEvent): Promise<void> {
    if (this.closed) this.log.warn({ volume: ev.volume_id }, 'storage event after close; committing it anyway');
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const settle = (err?: unknown): void => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        if (err === undefined) resolve();
        else reject(err);
      };
      const waitMs = this.opts.maxWaitMs ?? 5000;
      if (Number.isFinite(waitMs)) {
        timer = setTimeout(() => settle(this.unavailable(`the storage event was not committed within ${waitMs} ms`)), waitMs);
        timer.unref();
      }
      this.queue.push({ ev, settle });
      this.schedule();
    });
  }

  /** Waits until everything queued so far is committed and published (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.flushing) {
      if (this.flushing) await this.flushing;
      else await this.commitOnce();
    }
    await this.publishing;
  }

  /** Commits what is queued and stops; a database still failing after `withinMs` loses the rest (logged). */
  async close(withinMs = 10_000): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), withinMs).unref()));
    const outcome = await Promise.race([this.flush().then(() => 'done' as const), gaveUp]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      this.log.error({ lost: this.queue.length }, 'storage events not committed at shutdown: the database kept failing');
      for (const p of this.queue.splice(0)) p.settle(this.unavailable('shutting down before the storage event was committed'));
    }
  }

  private unavailable(why: string): DependencyUnavailable {
    const last = this.lastError instanceof Error ? `; last error: ${this.lastError.message}` : '';
    return new DependencyUnavailable('database', `database unavailable: ${why}${last}`, this.lastError === undefined ? undefined : { cause: this.lastError });
  }

  /** Starts a commit after this event-loop turn's events are in, unless one is in flight (it starts the next). */
  private schedule(): void {
    if (this.flushing || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      // never-rejects: commitOnce catches every failure of a commit, logs it and retries with backoff.
      void this.commitOnce();
    });
  }

  private commitOnce(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.queue.length === 0) return Promise.resolve();
    const batch = this.queue.slice(0, this.opts.maxBatch ?? 500);
    this.flushing = (async () => {
      try {
        const byVolume = new Map<string, NewStorageEvent[]>();
        for (const { ev } of batch) byVolume.set(ev.volume_id, [...(byVolume.get(ev.volume_id) ?? []), ev]);
        const groups = [...byVolume.values()];
        // One volume (a mount's calls; the common case): the INSERT is a single statement, so it commits on its own
        // in one round trip rather than BEGIN, INSERT, COMMIT — three round trips, which were most of a small call's
        // database time on a busy machine. Several volumes share one transaction, all or nothing.
        const saved =
          groups.length === 1
            ? await withTxRetry(() => appendStorageEvents(this.db, groups[0]!))
            : await this.db.tx(async (tx) => {
                const out: StorageEvent[] = [];
                for (const evs of groups) out.push(...(await appendStorageEvents(tx, evs)));
                return out;
              });
        this.queue.splice(0, batch.length);
        this.failures = 0;
        this.lastError = undefined;
        for (const p of batch) p.settle();
        if (this.bus) this.publishing = this.publishing.then(() => this.publish(saved));
      } catch (err) {
        this.failures += 1;
        this.lastError = err;
        this.log.error({ err, queued: this.queue.length }, 'committing storage events failed; retrying');
        const wait = Math.min(5000, 50 * 2 ** Math.min(this.failures, 7));
        await new Promise((r) => setTimeout(r, wait).unref());
      } finally {
        this.flushing = undefined;
      }
      // never-rejects: the commit's failures are caught above and retried; events that arrived meanwhile go next.
      if (this.queue.length > 0) void this.commitOnce();
    })();
    return this.flushing;
  }

  private async publish(saved: StorageEvent[]): Promise<void> {
    for (const e of saved) {
      await this.bus!.publish(toBusEvent(e)).catch((err: unknown) => this.log.warn({ err, volume: e.volume_id }, 'publishing a storage event failed (it is committed)'));
    }
  }
}

/**
 * Inserts events of one volume with consecutive seqs in one statement (in a transaction, or standalone: one statement
 * is atomic). A concurrent append of the same volume is a SerializationConflict, to retry.
 */
export async function appendStorageEvents(tx: Queryable, evs: NewStorageEvent[]): Promise<StorageEvent[]> {
  const first = evs[0];
  if (!first) return [];
  const col = <K extends keyof NewStorageEvent>(k: K, d: NewStorageEvent[K] | null = null) => evs.map((e) => e[k] ?? d);
  try {
    const res = await tx.query<Row>(
      `INSERT INTO storage_events (volume_id, seq, event_id, tenant_id, execution_id, operation, path, new_path, offset_bytes, bytes, status, error, recorded_at)
       SELECT $1::UUID, base.m + t.ord, t.event_id, t.tenant_id, t.execution_id, t.operation, t.path, t.new_path, t.offset_bytes, t.bytes, t.status, t.error, now()
       FROM (SELECT COALESCE(MAX(seq), 0) AS m, ${ASYNC_COMMIT} FROM storage_events WHERE volume_id = $1::UUID) AS base,
            unnest($2::UUID[], $3::TEXT[], $4::UUID[], $5::TEXT[], $6::TEXT[], $7::TEXT[], $8::INT8[], $9::INT8[], $10::TEXT[], $11::TEXT[])
              WITH ORDINALITY AS t(event_id, tenant_id, execution_id, operation, path, new_path, offset_bytes, bytes, status, error, ord)
       RETURNING ${COLUMNS}`,
      [
        first.volume_id,
        evs.map(() => randomUUID()),
        col('tenant_id'),
        col('execution_id'),
        col('operation'),
        col('path'),
        col('new_path'),
        col('offset'),
        evs.map((e) => e.bytes ?? 0),
        col('status'),
        col('error'),
      ],
      { prepare: STORAGE_EVENT_STATEMENTS.batch },
    );
    return res.rows.map(toEvent).sort((a, b) => a.seq - b.seq);
  } catch (err) {
    if (isDuplicateSeq(err)) throw new SerializationConflict(`concurrent storage event on volume ${first.volume_id}`, { cause: err });
    throw err;
  }
}
