// What the order of run ids costs PostgreSQL as history grows (issue 23), in-process: a throwaway database on the
// shared server with two table pairs shaped like workflow_executions (UUID primary key) and workflow_events
// ((execution_id, seq) primary key), each holding `history` runs with 5 events, once with random ids (UUID v4, what
// orch writes) and once with time-ordered ids (UUID v7). Then, after a CHECKPOINT, 2,000 starts of 2 runs each (one
// statement: the runs and their 5 events) per kind: the WAL each run writes and the wall time per statement. With
// random ids every new row lands on another leaf page of a large index, and the first change to a page after a
// checkpoint writes the whole 8 kB page to the WAL (full-page images); time-ordered ids touch the same few pages.
//
//   npm run bench -- id-order-wal [--history 1000000] [--rounds 2]
import { v4, v7 } from 'uuid';
import pg from 'pg';
import { createTestDatabase } from '../test/support/pg.ts';

const KINDS = [
  ['v4', v4],
  ['v7', v7],
] as const;

export async function benchIdOrderWal(history: number, rounds: number, log: (line: string) => void): Promise<void> {
  const database = await createTestDatabase();
  const c = new pg.Client({ connectionString: database.url });
  await c.connect();
  try {
    for (const [name, gen] of KINDS) {
      await c.query(`CREATE TABLE runs_${name} (id UUID PRIMARY KEY, payload TEXT)`);
      await c.query(`CREATE TABLE events_${name} (execution_id UUID, seq INT4, payload TEXT, PRIMARY KEY (execution_id, seq))`);
      const batch = 20_000;
      for (let i = 0; i < history; i += batch) {
        const ids = Array.from({ length: Math.min(batch, history - i) }, () => gen());
        await c.query(`INSERT INTO runs_${name} SELECT unnest($1::UUID[]), 'x'`, [ids]);
        await c.query(`INSERT INTO events_${name} SELECT i, s, 'y' FROM unnest($1::UUID[]) i, generate_series(1, 5) s`, [ids]);
      }
      await c.query(`VACUUM ANALYZE runs_${name}`);
      await c.query(`VACUUM ANALYZE events_${name}`);
    }
    log(`history: ${history} runs and ${history * 5} events per kind`);
    for (let round = 1; round <= rounds; round++) {
      for (const [name, gen] of KINDS) {
        await c.query('CHECKPOINT');
        const lsn0 = (await c.query<{ l: string }>('SELECT pg_current_wal_lsn()::TEXT AS l')).rows[0]!.l;
        const starts = 2_000;
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < starts; i++) {
          await c.query(
            `WITH a AS (INSERT INTO runs_${name} SELECT unnest($1::UUID[]), 'x' RETURNING id)
             INSERT INTO events_${name} SELECT a.id, s, 'y' FROM a, generate_series(1, 5) s`,
            [[gen(), gen()]],
          );
        }
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        const wal = Number((await c.query<{ b: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::TEXT AS b', [lsn0])).rows[0]!.b);
        log(`round ${round} ${name}: WAL ${(wal / (starts * 2) / 1024).toFixed(1)} KiB per run, ${(ms / starts).toFixed(2)} ms per statement (2 runs, commit included)`);
      }
    }
  } finally {
    await c.end();
    await database.drop();
  }
}
