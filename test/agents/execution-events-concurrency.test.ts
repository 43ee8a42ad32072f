// Many executions announcing events at the same moment (issue 24: a hundred started at once, no bootstrap to stagger
// them) on PostgreSQL: every event of every execution is recorded, each execution's seqs are 1..n without a gap, and
// no transaction gives up. Under SERIALIZABLE the per-execution `MAX(seq)` read takes page-level predicate locks
// on the shared index, so appends of DIFFERENT executions failed each other with 40001 until the retry loop gave up
// ("transaction still conflicting after 10 attempts": 7 of 100 executions failed in the density bench).
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { recordExecutionEvent } from '../../src/agents/execution/events.ts';
import { insertExecution } from '../../src/agents/execution/repo.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import type { RowFence } from '../../src/storage/row-lease.ts';
import { createTestDatabase } from '../support/pg.ts';

const EXECUTIONS = 150;
const EVENTS_EACH = 6;

test('150 executions appending 6 events each, all at once: none fails, seqs are 1..6 per execution', async (t) => {
  const pg = await createTestDatabase({ migrated: true });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-events-'));
  const db = await openDb({ url: pg.url, dataDir: dir, poolSize: 20 }, silentLogger());
  t.teardown(async () => {
    await db.close();
    await pg.drop();
    await rm(dir, { recursive: true, force: true });
  });
  const manifest = { apiVersion: 'orch.dev/v1', kind: 'Agent', metadata: { name: 'a', version: '1.0.0' }, spec: {} } as never;
  const fences: RowFence[] = [];
  for (let i = 0; i < EXECUTIONS; i++) {
    const id = randomUUID();
    await db.tx((tx) => insertExecution(tx, { id, tenantId: 't', agentId: randomUUID(), agentName: 'a', agentVersion: '1.0.0', manifest, input: '', ownerNode: 'n1', leaseMs: 60_000 }));
    fences.push({ table: 'executions', keyColumn: 'id', key: id, nodeId: 'n1', epoch: 0 });
  }
  const failures: string[] = [];
  await Promise.all(
    fences.map(async (fence) => {
      for (let e = 1; e <= EVENTS_EACH; e++) {
        try {
          await recordExecutionEvent(db, fence, 'iteration_output', `out:${e}`, { output: `line ${e}` }, e === 1 ? { sql: `status = 'running'`, params: [] } : undefined);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    }),
  );
  t.deepEqual(failures.slice(0, 3), [], `${failures.length} appends failed`);
  const rows = await db.query<{ n: number; max: number }>('SELECT COUNT(*)::INT4 AS n, MAX(seq)::INT4 AS max FROM execution_events GROUP BY execution_id');
  t.is(rows.rows.length, EXECUTIONS);
  for (const r of rows.rows) t.deepEqual(r, { n: EVENTS_EACH, max: EVENTS_EACH });
});
