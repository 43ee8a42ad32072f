// PgDb through a dropped connection (issue 20, defect 2): PostgreSQL killed while a transaction holds a checked-out
// client. Before the fix the client's 'error' event had no listener and killed the process (here: the ava worker).
import test from 'ava';
import { openPg } from '../../src/storage/pg.ts';
import { DependencyUnavailable, isOutage } from '../../src/errors/outage.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { retryThroughOutage } from '../../src/storage/outage-retry.ts';
import { startPrivatePostgres } from '../support/private-services.ts';

test('a transaction whose server is killed fails as DependencyUnavailable, the process survives, the pool recovers', async (t) => {
  const server = await startPrivatePostgres();
  t.teardown(() => server.cleanup());
  const db = await openPg(await server.createDatabase(), { logger: silentLogger(), poolSize: 4 });
  t.teardown(() => db.close());
  await db.query('CREATE TABLE t (v int PRIMARY KEY)');
  let inside!: () => void;
  const entered = new Promise<void>((resolve) => (inside = resolve));
  // Several transactions hold clients while the server dies: each client emits 'error' while checked out.
  const txs = [1, 2, 3].map((v) =>
    db.tx(async (tx) => {
      await tx.query('INSERT INTO t VALUES ($1)', [v]);
      inside();
      await tx.query('SELECT pg_sleep(60)');
    }),
  );
  await entered;
  await new Promise((r) => setTimeout(r, 300));
  await server.kill();
  for (const result of await Promise.allSettled(txs)) {
    t.is(result.status, 'rejected');
    if (result.status === 'rejected') t.true(result.reason instanceof DependencyUnavailable, String(result.reason));
  }
  // While it is down: ping is false, a query is an outage, a constraint error is not.
  t.false(await db.ping());
  const down = await t.throwsAsync(db.query('SELECT 1'));
  t.true(isOutage(down));
  // A background call waits the outage out and succeeds once the server is back.
  const started = Date.now();
  const back = retryThroughOutage(() => db.query<{ n: number }>('SELECT count(*)::int AS n FROM t'));
  setTimeout(() => void server.start(), 2_000);
  t.is((await back).rows[0]!.n, 0, 'the killed transactions committed nothing');
  t.true(Date.now() - started >= 1_500);
  t.true(await db.ping());
  await db.query('INSERT INTO t VALUES (1)');
  const dup = await t.throwsAsync(db.query('INSERT INTO t VALUES (1)'));
  t.false(isOutage(dup), 'a unique violation is terminal');
  t.false(dup instanceof DependencyUnavailable);
  let calls = 0;
  await t.throwsAsync(retryThroughOutage(async () => {
    calls++;
    await db.query('INSERT INTO t VALUES (1)');
  }));
  t.is(calls, 1, 'terminal errors are never retried');
});
