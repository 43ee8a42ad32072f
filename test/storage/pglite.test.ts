// The Db conformance suite on PGlite (in a temp dir), plus what only PGlite has: one connection, so transactions
// must never interleave, and files that outlive the process.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { listMigrations } from '../../src/storage/migration-files.ts';
import { materializeSchemaDir, openPglite } from '../../src/storage/pglite.ts';
import { schemaDirTemplate, schemaKey, templateFile } from '../../src/storage/pglite-template.ts';
import { dbConformance } from './db-conformance.ts';
import { emptyPgliteDir, freshInTempDir, tempDir } from '../support/engines.ts';

dbConformance({ kind: 'pglite', fresh: freshInTempDir('orch-pglite-', openPglite) });

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('pglite: concurrent transactions run one after another, never interleaved', async (t) => {
  const tmp = await tempDir('orch-pglite-tx-');
  t.teardown(() => tmp.remove());
  const db = await openPglite(await emptyPgliteDir(path.join(tmp.dir, 'db')));
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
  const first = await openPglite(await emptyPgliteDir(dir));
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

// Issue 15 item 4: under load a test node spent most of ~51 s applying the migrations one by one to its fresh PGlite.
// A fresh data dir now starts from the schema template (initdb plus every migration, keyed by a hash of the files):
// the migrations find nothing to do. A new migration file changes the key, so it is applied, never skipped.
test('pglite: a fresh data dir starts from the schema template of its migrations; a new migration misses it', async (t) => {
  const tmp = await tempDir('orch-pglite-schema-');
  t.teardown(() => tmp.remove());
  const cache = path.join(tmp.dir, 'cache');
  const migrations = path.join(tmp.dir, 'migrations');
  await mkdir(migrations, { recursive: true });
  // The initdb template as the default cache has it (the test above covers how it is made): without it the first
  // open here would run initdb in WebAssembly (~4.5 s of CPU) before the schema part this test is about.
  await mkdir(cache, { recursive: true });
  await copyFile(await templateFile(), await templateFile(cache)).catch(() => undefined);
  await writeFile(path.join(migrations, '001_one.sql'), 'CREATE TABLE s_one (id INT PRIMARY KEY);');
  await writeFile(path.join(migrations, '002_two.sql'), "CREATE TABLE s_two (note TEXT); INSERT INTO s_two VALUES ('seeded');");
  const open = async (name: string): Promise<{ applied: number[]; db: Awaited<ReturnType<typeof openPglite>> }> => {
    let applied: number[] = [];
    const key = await schemaKey(await listMigrations(migrations));
    const db = await openPglite(path.join(tmp.dir, name), { templateDir: cache, schema: { key, migrate: async (d) => (applied = await migrate(d, undefined, { dir: migrations })) } });
    return { applied, db };
  };

  const a = await open('a');
  t.deepEqual(a.applied, [1, 2], 'the first fresh dir applies every migration');
  await a.db.query('INSERT INTO s_one VALUES (42)');
  await a.db.close();
  const key = await schemaKey(await listMigrations(migrations));
  t.true((await stat(await templateFile(cache, key))).size > 0, 'its schema was kept as the template');

  // From the tarball (b), then from the directory npm install makes of it (b2): the same schema, nothing else.
  for (const name of ['b', 'b2']) {
    if (name === 'b2') {
      await materializeSchemaDir(key, cache);
      t.true(existsSync(path.join(await schemaDirTemplate(cache, key), 'READY')), 'the directory template is complete');
    }
    const b = await open(name);
    t.teardown(() => b.db.close());
    t.deepEqual(b.applied, [], `${name}: the fresh dir came with the schema, nothing to apply`);
    t.deepEqual((await b.db.query('SELECT version FROM schema_migrations ORDER BY version')).rows, [{ version: 1 }, { version: 2 }]);
    t.deepEqual((await b.db.query('SELECT note FROM s_two')).rows, [{ note: 'seeded' }], "the migrations' own rows came too");
    t.deepEqual((await b.db.query('SELECT id FROM s_one')).rows, [], 'nothing written after the migrations did');
    if (name === 'b2') {
      // The directory template leaves out template0/template1 (never opened by PGlite): half the files to copy.
      t.deepEqual((await b.db.query('SELECT datname FROM pg_database ORDER BY datname')).rows, [{ datname: 'postgres' }]);
      await b.db.query('CREATE TABLE after_copy (id INT PRIMARY KEY)');
      await b.db.query('INSERT INTO after_copy VALUES (1)');
      t.deepEqual((await b.db.query('SELECT id FROM after_copy')).rows, [{ id: 1 }], 'the copy is a working database');
    }
  }
  t.false(existsSync(path.join(tmp.dir, 'b2', 'READY')), 'the marker stays with the template');

  await writeFile(path.join(migrations, '003_three.sql'), 'CREATE TABLE s_three (id INT);');
  const c = await open('c');
  t.teardown(() => c.db.close());
  t.deepEqual(c.applied, [1, 2, 3], 'a new migration set misses the old template and is applied in full');
  const templates = (await readdir(cache)).filter((f) => f.includes('-schema-'));
  t.deepEqual(templates, [path.basename(await templateFile(cache, await schemaKey(await listMigrations(migrations))))], 'the old schema template (tarball and directory) was replaced');
});
