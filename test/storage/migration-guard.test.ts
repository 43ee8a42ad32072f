// Statements marked `-- postgresql-only` in a migration (autovacuum storage parameters, which CockroachDB refuses)
// are applied on PostgreSQL and skipped on CockroachDB. CockroachDB cannot run here (docs/COCKROACH.md), so its side
// is a real PostgreSQL database whose version() answers as CockroachDB's does: what migrate() decides from.
import test from 'ava';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { isPostgresqlOnly } from '../../src/storage/migration-guard.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { splitSql } from '../../src/storage/sql-split.ts';
import { createTestDatabase } from '../support/pg.ts';

async function reloptions(db: Db, table: string): Promise<string[]> {
  const res = await db.query<{ o: string[] | null }>('SELECT reloptions AS o FROM pg_class WHERE relname = $1', [table]);
  return res.rows[0]?.o ?? [];
}

test('the mark covers its own statement: a file with a marked and an unmarked statement', (t) => {
  const [a, b] = splitSql('-- postgresql-only\nALTER TABLE a SET (autovacuum_vacuum_threshold = 1);\n-- a comment\nALTER TABLE b SET (fillfactor = 70);');
  t.true(isPostgresqlOnly(a!));
  t.false(isPostgresqlOnly(b!));
  t.false(isPostgresqlOnly('-- PostgreSQL only: prose about `-- postgresql-only`\nALTER TABLE b SET (fillfactor = 70)'));
});

for (const engine of ['PostgreSQL', 'CockroachDB'] as const) {
  test(`migrations on ${engine}: autovacuum settings ${engine === 'PostgreSQL' ? 'applied' : 'skipped'}, fillfactor and indexes applied`, async (t) => {
    const tdb = await createTestDatabase();
    t.teardown(() => tdb.drop());
    const real = await openPg(tdb.url, { logger: silentLogger() });
    t.teardown(() => real.close());
    const cockroachVersion = 'CockroachDB CCL v24.2.4 (x86_64-pc-linux-gnu, built 2024/10/10 00:00:00, go1.22.5 X:nocoverageredesign)';
    const db: Db =
      engine === 'PostgreSQL'
        ? real
        : {
            ...real,
            kind: real.kind,
            query: (sql, params, options) => (/^SELECT version\(\)/.test(sql) ? Promise.resolve({ rows: [{ v: cockroachVersion }] as never[], rowCount: 1 }) : real.query(sql, params, options)),
            tx: (fn) => real.tx(fn),
            ping: () => real.ping(),
            close: () => real.close(),
          };
    await migrate(db, silentLogger());
    const wf = await reloptions(real, 'workflow_executions');
    t.true(wf.includes('fillfactor=50'));
    t.true((await reloptions(real, 'executions')).includes('fillfactor=70'));
    t.is(wf.includes('autovacuum_vacuum_scale_factor=0.02'), engine === 'PostgreSQL', wf.join(', '));
    // 085: the quota and lease rows, rewritten on every FSAL write and every renewal.
    const volumes = await reloptions(real, 'volumes');
    t.true(volumes.includes('fillfactor=70'), volumes.join(', '));
    t.is(volumes.includes('autovacuum_vacuum_threshold=200'), engine === 'PostgreSQL', volumes.join(', '));
    t.true((await reloptions(real, 'leases')).includes('fillfactor=50'));
    const idx = await real.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE indexname = 'workflow_executions_live'`);
    t.is(idx.rows.length, 1);
  });
}
