// CockroachDB's rules exercised on PostgreSQL (issue 17): every session SERIALIZABLE (default_transaction_isolation,
// so standalone statements too) and SQLSTATE 40001 injected on a seeded fraction of statements — at a transaction's
// first statement, in the middle, at commit, and on standalone statements — beneath the adapter's retry loops
// (test/support/faulty-db.ts). The whole Db conformance suite must pass through it unchanged: every path retries,
// nothing is written twice (the event-log and fencing tests count rows), and no fault is swallowed.
import test from 'ava';
import { openPg } from '../../src/storage/pg.ts';
import { describeFaults, faultSeed, faultyDb, serializableUrl, sumCounts, type FaultyDb } from '../support/faulty-db.ts';
import { createTestDatabase } from '../support/pg.ts';
import { dbConformance } from './db-conformance.ts';

const SEED = faultSeed(1717);
const PLAN = { seed: SEED, first: 0.1, mid: 0.05, commit: 0.1, standalone: 0.05 };
// Every database the suite opens (some tests open their own) counts into the same totals.
const opened: FaultyDb[] = [];

dbConformance({
  kind: 'pg',
  faultInjected: true,
  fresh: async () => {
    const database = await createTestDatabase();
    const db = await openPg(serializableUrl(database.url), {
      poolSize: 12,
      inject: (raw) => {
        const f = faultyDb(raw, { ...PLAN, seed: SEED + opened.length });
        opened.push(f);
        return f.db;
      },
    });
    return {
      db,
      cleanup: async () => {
        await db.close();
        await database.drop();
      },
    };
  },
});

test.after('faults were injected at every place, and none was swallowed', (t) => {
  const c = sumCounts(opened.map((f) => f.counts));
  t.log(`seed=${SEED} ${describeFaults(c)}`);
  t.true(c.first > 0 && c.mid > 0 && c.commit > 0 && c.standalone > 0, describeFaults(c));
  t.is(c.swallowed, 0);
});
