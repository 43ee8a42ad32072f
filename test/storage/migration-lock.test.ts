// Two nodes starting at once on a fresh PostgreSQL database (the lock row of src/storage/migration-lock.ts). Both
// defects were seen in the full suite as `pg: openDb on the same fresh database from two nodes at once` failing about
// one run in ten: CREATE TABLE IF NOT EXISTS racing in the catalog answered 42710 ("type schema_migrations already
// exists"), which was not retried; and the waiting node's lock attempt, blocked on the row the migrating node renews
// in every migration's transaction, got a serialization failure each time and gave up after 10 of them.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { ensureMigrationTables, releaseMigrationLock, renewMigrationLock, takeMigrationLock } from '../../src/storage/migration-lock.ts';
import { openPg } from '../../src/storage/pg.ts';
import { createTestDatabase } from '../support/pg.ts';

test('ensureMigrationTables from four connections at once on fresh databases never fails', async (t) => {
  t.timeout(120_000);
  for (let round = 0; round < 12; round++) {
    const database = await createTestDatabase();
    const dbs = await Promise.all([0, 1, 2, 3].map(() => openPg(database.url, { poolSize: 1, plans: false })));
    try {
      await Promise.all(dbs.map((db) => ensureMigrationTables(db)));
      const res = await dbs[0]!.query<{ n: number }>(
        `SELECT count(*)::INT4 AS n FROM information_schema.tables WHERE table_name IN ('schema_migrations', 'migration_lock')`,
      );
      t.is(res.rows[0]!.n, 2);
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
      await database.drop();
    }
  }
});

test('a node waiting for the lock outlasts many migrations renewing it, then takes it', async (t) => {
  t.timeout(120_000);
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  const a = await openPg(database.url);
  const b = await openPg(database.url);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await ensureMigrationTables(a);
  const holderA = `a-${randomUUID()}`;
  await takeMigrationLock(a, holderA, { ttlMs: 60_000, waitMs: 10_000 });
  const waiting = takeMigrationLock(b, `b-${randomUUID()}`, { ttlMs: 60_000, waitMs: 60_000 }).then(() => 'taken');
  // 25 "migrations", each renewing the lock and holding its row for a while, as migrate() does.
  for (let i = 0; i < 25; i++) {
    await a.tx(async (tx) => {
      await renewMigrationLock(tx, holderA, 60_000);
      await tx.query('SELECT pg_sleep(0.08)');
    });
  }
  await releaseMigrationLock(a, holderA);
  t.is(await waiting, 'taken');
});
