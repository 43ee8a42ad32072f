// A starting node's first stats sample waits (issue 15 item 4): PGlite runs queries on the node's main thread, and
// the sampler's first pass ran in the middle of the start. With firstAfterMs the first pass comes after that delay,
// then every everyMs as before.
import test from 'ava';
import { startStatsSampler } from '../../src/stats/sampler.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Queryable } from '../../src/storage/db.ts';

function countingDb(): { db: Queryable; sql: string[] } {
  const sql: string[] = [];
  return { sql, db: { query: async (q: string) => (sql.push(q), { rows: [], rowCount: 0 }) } as unknown as Queryable };
}

test('with firstAfterMs the first sample waits for it; without, it is taken at once', async (t) => {
  const later = countingDb();
  const delayed = startStatsSampler(later.db, silentLogger(), 60_000, 300);
  t.teardown(() => delayed.stop());
  const now = countingDb();
  const immediate = startStatsSampler(now.db, silentLogger());
  t.teardown(() => immediate.stop());
  await new Promise((r) => setTimeout(r, 100));
  t.deepEqual(later.sql, [], 'sampled before firstAfterMs');
  t.true(now.sql.length > 0, 'the default still samples at once');
  await new Promise((r) => setTimeout(r, 500));
  t.true(later.sql.some((q) => q.includes('INSERT INTO node_samples')), 'no sample after firstAfterMs');
});
