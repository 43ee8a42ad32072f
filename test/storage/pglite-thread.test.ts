// A node's PGlite on a worker thread (src/storage/pglite-thread.ts, issue 15 item 4: start-up). The Db conformance
// suite holds it to the same behaviour as the in-process adapter and PostgreSQL; the tests below check what the
// thread adds: errors keep the fields callers test, transactions still run one after another, and opening the
// node's database (openDb without a URL) leaves the main thread free (in-process, PostgreSQL's start ran on it).
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import { openPgliteThread, pgliteWorkerOf } from '../../src/storage/pglite-thread.ts';
import { isOutage } from '../../src/errors/outage.ts';
import { dbConformance } from './db-conformance.ts';
import { emptyPgliteDir, freshInTempDir, tempDir } from '../support/engines.ts';

dbConformance({ kind: 'pglite', fresh: freshInTempDir('orch-pglite-thread-', async (dir) => (await openPgliteThread(dir, { migrate: false })).db) });

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('pglite thread: a constraint violation arrives with its SQLSTATE, constraint and detail', async (t) => {
  const tmp = await tempDir('orch-pglite-thread-err-');
  t.teardown(() => tmp.remove());
  const { db } = await openPgliteThread(await emptyPgliteDir(path.join(tmp.dir, 'db')), { migrate: false });
  t.teardown(() => db.close());
  await db.query('CREATE TABLE u (id TEXT CONSTRAINT u_pkey PRIMARY KEY)');
  await db.query('INSERT INTO u VALUES ($1)', ['a']);
  const err = await t.throwsAsync(db.query('INSERT INTO u VALUES ($1)', ['a']));
  t.like(err as unknown as Record<string, unknown>, { code: '23505', constraint: 'u_pkey' });
  t.regex(String((err as unknown as { detail?: string }).detail), /already exists/);
  // A failed statement inside a transaction rolls the transaction back when the function throws it.
  await t.throwsAsync(db.tx(async (tx) => {
    await tx.query('INSERT INTO u VALUES ($1)', ['b']);
    await tx.query('INSERT INTO u VALUES ($1)', ['a']);
  }));
  t.deepEqual((await db.query('SELECT id FROM u ORDER BY id')).rows, [{ id: 'a' }]);
});

test('pglite thread: a query outside a transaction waits for the open one, as in-process', async (t) => {
  const tmp = await tempDir('orch-pglite-thread-order-');
  t.teardown(() => tmp.remove());
  const { db } = await openPgliteThread(await emptyPgliteDir(path.join(tmp.dir, 'db')), { migrate: false });
  t.teardown(() => db.close());
  await db.query('CREATE TABLE c (n INT4)');
  const seen: string[] = [];
  const inTx = db.tx(async (tx) => {
    await tx.query('INSERT INTO c VALUES (1)');
    seen.push('tx wrote');
    await sleep(200);
    seen.push('tx ends');
  });
  await sleep(50);
  const outside = db.query<{ n: number }>('SELECT count(*)::INT4 AS n FROM c').then((r) => (seen.push('outside read'), r.rows[0]!.n));
  await inTx;
  t.is(await outside, 1, 'the outside read saw the committed row');
  t.deepEqual(seen, ['tx wrote', 'tx ends', 'outside read']);
});

test('pglite thread: a closed database refuses statements', async (t) => {
  const tmp = await tempDir('orch-pglite-thread-close-');
  t.teardown(() => tmp.remove());
  const { db } = await openPgliteThread(await emptyPgliteDir(path.join(tmp.dir, 'db')), { migrate: false });
  await db.close();
  await t.throwsAsync(db.query('SELECT 1'), { message: /closed/ });
  t.false(await db.ping());
});

test("openDb without a URL starts PostgreSQL off the main thread: the main thread's event loop stays mostly idle", async (t) => {
  const tmp = await tempDir('orch-pglite-thread-elu-');
  t.teardown(() => tmp.remove());
  // Warm what both ways share (the modules of open.ts, the migrations' hash), so the figure is the database's.
  const warm = await openDb({ dataDir: path.join(tmp.dir, 'warm') }, silentLogger());
  await warm.close();
  const before = performance.eventLoopUtilization();
  const db = await openDb({ dataDir: path.join(tmp.dir, 'node') }, silentLogger());
  const elu = performance.eventLoopUtilization(before);
  t.teardown(() => db.close());
  t.is(db.kind, 'pglite');
  t.is((await db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one, 1);
  // In-process, PostgreSQL's boot and the migrations' check kept the loop busy for most of the open (0.9+); on a
  // worker the main thread only waits for messages.
  t.true(elu.utilization < 0.5, `the main thread was busy ${(elu.utilization * 100).toFixed(0)} % of ${elu.idle + elu.active} ms`);
});

test("a node's PGlite runs with 16 MB of shared buffers (initdb's 128 MB were zeroed at every start)", async (t) => {
  const tmp = await tempDir('orch-pglite-thread-buffers-');
  t.teardown(() => tmp.remove());
  const db = await openDb({ dataDir: tmp.dir }, silentLogger());
  t.teardown(() => db.close());
  t.deepEqual((await db.query('SHOW shared_buffers')).rows, [{ shared_buffers: '16MB' }]);
});

test('beginPgliteThread copies the schema template and opens the database at once; openDb of that directory takes it over', async (t) => {
  const tmp = await tempDir('orch-pglite-thread-begun-');
  t.teardown(() => tmp.remove());
  const { beginPgliteThread } = await import('../../src/storage/pglite-thread.ts');
  const { listMigrations } = await import('../../src/storage/migration-files.ts');
  beginPgliteThread(path.join(tmp.dir, 'pglite'));
  const db = await openDb({ dataDir: tmp.dir }, silentLogger());
  t.teardown(() => db.close());
  const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
  t.deepEqual(rows, (await listMigrations()).map((m) => ({ version: m.version })), 'every shipped migration, once');
  // Its statements run while the catalog is warmed in the background (warmCatalog) and after.
  await db.query('CREATE TABLE begun_check (id INT4)');
  t.is((await db.query('SELECT * FROM begun_check')).rowCount, 0);
});

test('pglite thread: a worker that dies is replaced on the same directory; meanwhile calls fail as an outage, and committed rows are there after', async (t) => {
  const tmp = await tempDir('orch-pglite-thread-death-');
  t.teardown(() => tmp.remove());
  const { db } = await openPgliteThread(await emptyPgliteDir(path.join(tmp.dir, 'db')), { migrate: false });
  t.teardown(() => db.close());
  await db.query('CREATE TABLE kept (id INT PRIMARY KEY)');
  await db.query('INSERT INTO kept VALUES (1)');
  const first = pgliteWorkerOf(db)!;
  // A transaction open when the thread dies: PGlite never committed it.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const open = db.tx(async (tx) => {
    await tx.query('INSERT INTO kept VALUES (2)');
    await held;
    await tx.query('INSERT INTO kept VALUES (3)');
  });
  await sleep(50);
  await first.terminate(); // the thread ends as a WebAssembly abort would end it
  release();
  const lost = await t.throwsAsync(open);
  t.true(isOutage(lost), `an open transaction fails as an outage: ${lost?.message}`);
  const during = await t.throwsAsync(db.query('SELECT 1'));
  t.true(isOutage(during), `a call while it is replaced fails as an outage: ${during?.message}`);

  const deadline = Date.now() + 30_000;
  let rows: number[] | undefined;
  while (!rows && Date.now() < deadline) {
    rows = await db.query<{ id: number }>('SELECT id FROM kept ORDER BY id').then(
      (r) => r.rows.map((x) => x.id),
      () => sleep(50).then(() => undefined),
    );
  }
  t.deepEqual(rows, [1], 'the committed row is there; the lost transaction left nothing');
  t.not(pgliteWorkerOf(db), first, 'a new thread serves the Db');
  await db.tx(async (tx) => tx.query('INSERT INTO kept VALUES (4)'));
  t.deepEqual((await db.query<{ id: number }>('SELECT id FROM kept ORDER BY id')).rows.map((x) => x.id), [1, 4]);
});
