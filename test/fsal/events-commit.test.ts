// Group commit of StorageEvents: an FSAL call is answered only once its event's row is committed (read straight
// after the answer, no flushEvents()); a database that fails holds the answer until the row is in, and one that
// keeps failing gets the call refused UNAVAILABLE — never success without the row — while the event stays queued
// and is committed once the database is back (one row, no second event for the same call).
import test from 'ava';
import { status } from '@grpc/grpc-js';
import { FsalServiceService as S } from '../../src/gen/orch/fsal/v1/fsal.js';
import { FsalService } from '../../src/fsal/service.ts';
import { isOrchError } from '../../src/errors/catalog.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { fsalFixture, TENANT, type FsalFixture } from './support.ts';

/** `db` whose storage-event commits fail while `failures.left > 0` (a connection-class error, as a down server gives). */
function failing(db: Db, failures: { left: number; calls: number }): Db {
  // A commit of storage events: a transaction (several volumes), or the standalone INSERT of one volume's events.
  const commit = <T>(run: () => Promise<T>): Promise<T> => {
    failures.calls += 1;
    if (failures.left > 0) {
      failures.left -= 1;
      return Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
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

async function rows(f: FsalFixture, vol: string) {
  const r = await f.db.query<{ operation: string; path: string; bytes: string; status: string; seq: number }>(
    'SELECT operation, path, bytes, status, seq FROM storage_events WHERE volume_id = $1 ORDER BY seq',
    [vol],
  );
  return r.rows.map((x) => [x.operation, x.path, Number(x.bytes), x.status, x.seq]);
}

async function setup(f: FsalFixture) {
  const exec = await f.execution();
  const vol = await f.volume();
  await f.grant(exec, vol, 'read-write');
  return { exec, vol, ids: { execution_id: exec, volume_id: vol } };
}

test('a Create and a Write answered over gRPC have their rows committed already', async (t) => {
  const f = await fsalFixture();
  t.teardown(() => f.close());
  const { vol, ids } = await setup(f);
  t.is((await f.rpc(S.create, { ...ids, path: 'a.txt', mode: 0, exclusive: true })).code, status.OK);
  t.deepEqual(await rows(f, vol), [['create', '/a.txt', 0, 'OK', 1]], 'read right after the answer');
  t.is((await f.rpc(S.write, { ...ids, path: 'a.txt', offset: 0, data: Buffer.from('hello') })).code, status.OK);
  t.deepEqual(await rows(f, vol), [
    ['create', '/a.txt', 0, 'OK', 1],
    ['write', '/a.txt', 5, 'OK', 2],
  ]);
});

test('concurrent calls share commits, each answered after its own row is in', async (t) => {
  const f = await fsalFixture();
  t.teardown(() => f.close());
  const { vol, ids } = await setup(f);
  const counted = { left: 0, calls: 0 };
  const fsal = new FsalService({ db: failing(f.db, counted), volumes: f.volumes, logger: silentLogger() });
  t.teardown(() => fsal.close());
  const caller = { tenantId: TENANT };
  await fsal.mkDir(caller, { ...ids, path: 'd', mode: 0 });
  counted.calls = 0;
  const seenAtAnswer: number[] = [];
  await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      await fsal.create(caller, { ...ids, path: `d/f${i}`, mode: 0, exclusive: true });
      const r = await f.db.query<{ n: number }>("SELECT COUNT(*)::INT4 AS n FROM storage_events WHERE volume_id = $1 AND path = $2", [vol, `/d/f${i}`]);
      seenAtAnswer.push(r.rows[0]!.n);
    }),
  );
  t.deepEqual(seenAtAnswer, Array.from({ length: 40 }, () => 1), 'every call found its row at its answer');
  t.true(counted.calls < 40, `40 concurrent calls took ${counted.calls} commits`);
  t.is((await rows(f, vol)).length, 41);
});

test('a failing database holds the answer until the row is in; one that keeps failing gets UNAVAILABLE, not success', async (t) => {
  const f = await fsalFixture();
  t.teardown(() => f.close());
  const { vol, ids } = await setup(f);
  const failures = { left: 0, calls: 0 };
  const fsal = new FsalService({ db: failing(f.db, failures), volumes: f.volumes, logger: silentLogger(), eventCommitWaitMs: 1500 });
  t.teardown(() => fsal.close());
  const caller = { tenantId: TENANT };
  await fsal.create(caller, { ...ids, path: 'a.txt', mode: 0, exclusive: true });

  // Three failed commits (backoff 100 + 200 + 400 ms), then the database takes it: the Write answers after that.
  failures.left = 3;
  const t0 = Date.now();
  await fsal.write(caller, { ...ids, path: 'a.txt', offset: 0, data: Buffer.from('hello') });
  t.is(failures.left, 0, 'answered only after the failed commits');
  t.true(Date.now() - t0 >= 600, `answered after ${Date.now() - t0} ms`);
  t.deepEqual((await rows(f, vol)).at(-1), ['write', '/a.txt', 5, 'OK', 2], 'its row is there at the answer');

  // A database down for longer than eventCommitWaitMs: the Write (done on disk) is refused UNAVAILABLE.
  failures.left = 1_000_000;
  const err = await t.throwsAsync(fsal.write(caller, { ...ids, path: 'a.txt', offset: 5, data: Buffer.from(' world') }));
  t.true(isOrchError(err) && err.spec.code === 'unavailable', `refused with ${String(err)}`);
  t.is((await rows(f, vol)).length, 2, 'no row yet');
  // The database returns: the queued event is committed, once, as what happened (OK, 6 bytes).
  failures.left = 0;
  await fsal.flushEvents();
  t.deepEqual(await rows(f, vol), [
    ['create', '/a.txt', 0, 'OK', 1],
    ['write', '/a.txt', 5, 'OK', 2],
    ['write', '/a.txt', 6, 'OK', 3],
  ]);
});
