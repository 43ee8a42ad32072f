// QueryOptions.prepare on real PostgreSQL: a named statement is prepared on the connection that runs it (it shows in
// pg_prepared_statements there) and answers right for each new set of parameters, on the pool and inside a
// transaction; without the option nothing is prepared.
import test from 'ava';
import { openPg } from '../../src/storage/pg.ts';
import { createTestDatabase } from '../support/pg.ts';

test('prepare: the statement is prepared once per connection and reused with new parameters', async (t) => {
  const database = await createTestDatabase();
  // One connection, so every statement below runs on the same server session.
  const db = await openPg(database.url, { poolSize: 1 });
  t.teardown(async () => {
    await db.close();
    await database.drop();
  });
  const prepared = async (): Promise<string[]> =>
    (await db.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r) => r.name);
  const sql = 'SELECT $1::INT4 * 2 AS doubled, $2::TEXT[] AS tags';

  await db.query(sql, [1, ['a']]);
  t.deepEqual(await prepared(), [], 'not prepared without the option');

  const a = await db.query<{ doubled: number; tags: string[] }>(sql, [21, ['x', 'y']], { prepare: 'test_double' });
  const b = await db.query<{ doubled: number; tags: string[] }>(sql, [5, []], { prepare: 'test_double' });
  t.deepEqual(a.rows, [{ doubled: 42, tags: ['x', 'y'] }]);
  t.deepEqual(b.rows, [{ doubled: 10, tags: [] }]);
  t.deepEqual(await prepared(), ['test_double']);

  const inTx = await db.tx((tx) => tx.query<{ doubled: number }>(sql, [7, ['z']], { prepare: 'test_double' }));
  t.is(inTx.rows[0]?.doubled, 14);
  t.deepEqual(await prepared(), ['test_double'], 'the transaction reused the connection\'s statement');
});
