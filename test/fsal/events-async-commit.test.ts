// StorageEvents commit without waiting for PostgreSQL's WAL flush (src/fsal/events.ts, ASYNC_COMMIT): the INSERT
// turns `synchronous_commit` off for its own transaction only. The flush was most of a sequential FSAL caller's
// time per call (docs/BENCHMARKS.md, issue 21); the row is still committed, and visible, before the call is answered
// (test/fsal/events-commit.test.ts). Checked on one connection, so the setting is seen not to leak past the
// transaction onto the pooled connection's next statements.
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { onePgConnection } from './support.ts';
import { appendStorageEvent, appendStorageEvents, type NewStorageEvent } from '../../src/fsal/events.ts';

const ev = (volume: string, i: number): NewStorageEvent => ({ volume_id: volume, tenant_id: 'acme', execution_id: randomUUID(), operation: 'write', path: `/f${i}`, bytes: i, status: 'OK' });

test('a StorageEvent INSERT commits its own transaction asynchronously, and only its own', async (t) => {
  const { db } = await onePgConnection(t, 'orch-fsal-async-');
  const setting = async (q: { query: typeof db.query } = db): Promise<string> =>
    (await q.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit;
  t.is(await setting(), 'on', 'the server default');
  const vol = randomUUID();

  // The batcher's path for one volume: the INSERT alone, its own transaction.
  const saved = await appendStorageEvents(db, [ev(vol, 1), ev(vol, 2)]);
  t.deepEqual(saved.map((e) => e.seq), [1, 2]);
  t.is(await setting(), 'on', 'the next statement on the same connection commits synchronously again');

  // Several volumes share a transaction: the INSERT turns it asynchronous for the rest of that transaction.
  await db.tx(async (tx) => {
    t.is(await setting(tx), 'on');
    await appendStorageEvents(tx, [ev(vol, 3)]);
    t.is(await setting(tx), 'off', 'the batch transaction commits without waiting for the WAL flush');
  });
  // The fs.* tools' single event, in its transaction.
  await db.tx(async (tx) => {
    const one = await appendStorageEvent(tx, ev(vol, 4));
    t.is(one.seq, 4);
    t.is(await setting(tx), 'off');
  });
  t.is(await setting(), 'on', 'nothing leaks onto the pooled connection');
  const rows = await db.query<{ seq: number }>('SELECT seq FROM storage_events WHERE volume_id = $1 ORDER BY seq', [vol]);
  t.deepEqual(rows.rows.map((r) => r.seq), [1, 2, 3, 4], 'every event committed once');
});
