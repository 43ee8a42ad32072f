// StorageEventBatcher: concurrent events committed together (group commit), in order, one seq per event, each add()
// resolved after its commit; a database that fails keeps them queued and is retried (nothing lost, nothing
// doubled); close() on a database that keeps failing gives up after its deadline instead of hanging the shutdown.
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { MemoryBus } from '../../src/bus/memory.ts';
import { StorageEventBatcher, storageStream, type NewStorageEvent, type StorageEvent } from '../../src/fsal/events.ts';
import type { Db } from '../../src/storage/db.ts';
import { fsalFixture, TENANT } from './support.ts';

const quiet = { error: () => undefined, warn: () => undefined };

function failing(db: Db, failures: { left: number }): Db {
  // A commit of storage events: a transaction (several volumes), or the standalone INSERT of one volume's events.
  const commit = <T>(run: () => Promise<T>): Promise<T> => {
    if (failures.left > 0) {
      failures.left -= 1;
      return Promise.reject(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' }));
    }
    return run();
  };
  return {
    kind: db.kind,
    query: ((sql: string, params?: readonly unknown[], options?: unknown) =>
      sql.trimStart().startsWith('INSERT INTO storage_events') ? commit(() => db.query(sql, params, options as never)) : db.query(sql, params, options as never)) as Db['query'],
    ping: db.ping.bind(db),
    close: db.close.bind(db),
    tx: (fn) => commit(() => db.tx(fn)),
  };
}

test('events are committed together in order, and a failing database only delays them', async (t) => {
  const f = await fsalFixture();
  t.teardown(() => f.close());
  const bus = new MemoryBus();
  const vol = await f.volume();
  const other = await f.volume();
  const seen: StorageEvent[] = [];
  await bus.subscribe(storageStream(vol), (e) => seen.push(e.payload as StorageEvent));
  const failures = { left: 2 };
  const batcher = new StorageEventBatcher(failing(f.db, failures), bus, quiet);
  const ev = (volume: string, i: number): NewStorageEvent => ({ volume_id: volume, tenant_id: TENANT, execution_id: randomUUID(), operation: 'write', path: `/f${i}`, offset: i, bytes: i, status: 'OK' });
  await Promise.all(Array.from({ length: 30 }, (_, k) => batcher.add(ev((k + 1) % 3 === 0 ? other : vol, k + 1))));
  t.is(failures.left, 0, 'the database failed twice first, and every add() waited for the commit');
  await batcher.flush();
  const rows = await f.db.query<{ volume_id: string; seq: number; path: string; bytes: string }>('SELECT volume_id, seq, path, bytes FROM storage_events WHERE volume_id IN ($1, $2) ORDER BY volume_id, seq', [vol, other]);
  const of = (v: string) => rows.rows.filter((r) => r.volume_id === v);
  t.deepEqual(of(vol).map((r) => r.path), Array.from({ length: 30 }, (_, k) => k + 1).filter((i) => i % 3 !== 0).map((i) => `/f${i}`), 'in the order they were added');
  t.deepEqual(of(vol).map((r) => r.seq), Array.from({ length: 20 }, (_, k) => k + 1), 'one seq each, no gap, no double');
  t.deepEqual(of(other).map((r) => r.seq), Array.from({ length: 10 }, (_, k) => k + 1));
  t.deepEqual(seen.map((e) => e.seq), Array.from({ length: 20 }, (_, k) => k + 1), 'published after the commit, in seq order');
  // A later batch continues the numbering.
  await batcher.add(ev(vol, 31));
  await batcher.flush();
  const last = await f.db.query<{ seq: number }>('SELECT MAX(seq)::INT4 AS seq FROM storage_events WHERE volume_id = $1', [vol]);
  t.is(last.rows[0]!.seq, 21);
});

test('close() on a database that keeps failing gives up after its deadline', async (t) => {
  const f = await fsalFixture();
  t.teardown(() => f.close());
  const batcher = new StorageEventBatcher(failing(f.db, { left: 1_000_000 }), undefined, quiet);
  const added = batcher.add({ volume_id: await f.volume(), tenant_id: TENANT, execution_id: randomUUID(), operation: 'read', path: '/x', status: 'OK' });
  const t0 = Date.now();
  await batcher.close(1000);
  t.true(Date.now() - t0 < 8000, `close returned after ${Date.now() - t0} ms`);
  await t.throwsAsync(added, { message: /database unavailable/ }, 'the waiting caller is refused, not told success');
});
