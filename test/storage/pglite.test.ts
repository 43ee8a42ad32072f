// The Db conformance suite on PGlite (in a temp dir), plus what only PGlite has: one connection, so transactions
// must never interleave, and files that outlive the process.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import { listMigrations } from '../../src/storage/migration-files.ts';
import { openPglite, MEMORY } from '../../src/storage/pglite.ts';
import { templateFile } from '../../src/storage/pglite-template.ts';
import { dbConformance } from './db-conformance.ts';

async function tempDir(prefix: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

dbConformance({
  kind: 'pglite',
  fresh: async () => {
    const tmp = await tempDir('orch-pglite-');
    const db = await openPglite(path.join(tmp.dir, 'db'));
    return {
      db,
      cleanup: async () => {
        await db.close();
        await tmp.remove();
      },
    };
  },
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('pglite: concurrent transactions run one after another, never interleaved', async (t) => {
  const db = await openPglite(MEMORY);
  t.teardown(() => db.close());
  await db.query('CREATE TABLE counter (id INT PRIMARY KEY, n INT NOT NULL)');
  await db.query('INSERT INTO counter VALUES (1, 0)');
  const log: string[] = [];
  // Read-modify-write with a pause in between: interleaving would lose increments and mix the log.
  await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      db.tx(async (tx) => {
        log.push(`enter ${i}`);
        const { rows } = await tx.query<{ n: number }>('SELECT n FROM counter WHERE id = 1');
        await sleep(5);
        await tx.query('UPDATE counter SET n = $1 WHERE id = 1', [rows[0]!.n + 1]);
        log.push(`exit ${i}`);
      }),
    ),
  );
  const { rows } = await db.query<{ n: number }>('SELECT n FROM counter WHERE id = 1');
  t.is(rows[0]!.n, 8);
  for (let i = 0; i < log.length; i += 2) {
    t.is(log[i]!.replace('enter', ''), log[i + 1]!.replace('exit', ''), `transaction ${log[i]} ran alone`);
  }
});

test('pglite: data written before close is there after reopening the same directory', async (t) => {
  const tmp = await tempDir('orch-pglite-reopen-');
  t.teardown(() => tmp.remove());
  const dir = path.join(tmp.dir, 'nested', 'db');
  const id = randomUUID();
  const first = await openPglite(dir);
  await first.query('CREATE TABLE kept (id UUID PRIMARY KEY)');
  await first.tx((tx) => tx.query('INSERT INTO kept VALUES ($1)', [id]));
  await first.close();
  const second = await openPglite(dir);
  t.teardown(() => second.close());
  const { rows } = await second.query<{ id: string }>('SELECT id FROM kept');
  t.deepEqual(rows, [{ id }]);
});

test('openDb without a URL opens PGlite under <dataDir>/pglite with the schema migrated', async (t) => {
  const tmp = await tempDir('orch-opendb-');
  t.teardown(() => tmp.remove());
  const db = await openDb({ dataDir: tmp.dir }, silentLogger());
  t.teardown(() => db.close());
  t.is(db.kind, 'pglite');
  t.true((await stat(path.join(tmp.dir, 'pglite'))).isDirectory());
  const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
  t.deepEqual(rows, (await listMigrations()).map((m) => ({ version: m.version })), 'every shipped migration, once');
});

test('pglite: a fresh data dir is made from the initdb template, which holds no schema or data', async (t) => {
  const tmp = await tempDir('orch-pglite-template-');
  t.teardown(() => tmp.remove());
  const cache = path.join(tmp.dir, 'cache');
  // First fresh dir: initdb runs and its output becomes the template.
  const first = await openDb({ dataDir: path.join(tmp.dir, 'a') }, silentLogger());
  await first.query('CREATE TABLE only_in_a (x INT)');
  await first.close();
  const firstRaw = await openPglite(path.join(tmp.dir, 'b'), { templateDir: cache });
  await firstRaw.query('CREATE TABLE only_in_b (x INT)');
  await firstRaw.close();
  t.true((await stat(await templateFile(cache))).size > 0, 'the template was written');
  // Second fresh dir: loaded from the template; it is a blank cluster, not a copy of b.
  const second = await openPglite(path.join(tmp.dir, 'c'), { templateDir: cache });
  t.teardown(() => second.close());
  const tables = await second.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'",
  );
  t.is(tables.rows[0]?.n, 0, 'no tables come with the template');
  await second.query('CREATE TABLE t (id INT PRIMARY KEY)');
  await second.query('INSERT INTO t VALUES (1)');
  t.deepEqual((await second.query<{ id: number }>('SELECT id FROM t')).rows, [{ id: 1 }]);
});
