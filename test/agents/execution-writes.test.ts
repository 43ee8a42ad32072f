// The execution owner's writes, each one statement since issue 24 (an event: fence + key check + insert; a journal
// step: fence + insert + the row's changes), on PostgreSQL and PGlite: they keep the rules the multi-statement
// transactions had — a node whose claim was taken over writes nothing and gets LEASE_LOST, a repeated event key is
// recorded once, two writers of one execution at once both land with seqs 1..n (the later one runs again on the
// unique constraint), and a journal step's row changes (token counts) are written with it.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readExecutionEvents, recordExecutionEvent } from '../../src/agents/execution/events.ts';
import { Journal } from '../../src/agents/execution/journal.ts';
import { insertExecution } from '../../src/agents/execution/repo.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import type { Db } from '../../src/storage/db.ts';
import type { RowFence } from '../../src/storage/row-lease.ts';
import { createTestDatabase } from '../support/pg.ts';
import { pgWire } from '../support/pg-wire.ts';
import { recordQueries } from '../support/query-recorder.ts';

const engines = ['pg', 'pglite'] as const;

async function open(t: import('ava').ExecutionContext, engine: (typeof engines)[number]): Promise<Db> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-exec-writes-'));
  const pg = engine === 'pg' ? await createTestDatabase() : undefined;
  const db = await openDb({ ...(pg ? { url: pg.url } : {}), dataDir: dir, poolSize: 8 }, silentLogger());
  t.teardown(async () => {
    await db.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  });
  return db;
}

async function execution(db: Db): Promise<RowFence> {
  const id = randomUUID();
  const manifest = { apiVersion: 'orch.dev/v1', kind: 'Agent', metadata: { name: 'a', version: '1.0.0' }, spec: {} } as never;
  await db.tx((tx) => insertExecution(tx, { id, tenantId: 't', agentId: randomUUID(), agentName: 'a', agentVersion: '1.0.0', manifest, input: '', ownerNode: 'n1', leaseMs: 60_000 }));
  return { table: 'executions', keyColumn: 'id', key: id, nodeId: 'n1', epoch: 0 };
}

for (const engine of engines) {
  test(`${engine}: events — fenced, once per key, row changes with them, two writers at once both land`, async (t) => {
    const db = await open(t, engine);
    const fence = await execution(db);
    const first = await recordExecutionEvent(db, fence, 'execution_started', 'execution_started', { at: 1 }, { sql: `status = 'running', iteration = $1`, params: [3] });
    t.like(first, { seq: 1, type: 'execution_started', stream: `execution:${fence.key}` });
    t.deepEqual(first!.payload, { execution_id: fence.key, at: 1 });
    const row = await db.query<{ status: string; iteration: number }>('SELECT status, iteration FROM executions WHERE id = $1', [fence.key]);
    t.deepEqual(row.rows[0], { status: 'running', iteration: 3 });

    t.is(await recordExecutionEvent(db, fence, 'execution_started', 'execution_started', { at: 2 }), null, 'a key already recorded is not recorded again');

    const lost = { ...fence, epoch: 7 };
    const err = await t.throwsAsync(recordExecutionEvent(db, lost, 'iteration_output', 'lost', { output: 'x' }, { sql: `status = 'failed'`, params: [] }));
    t.regex(err!.message, /claim on executions .* lost/);
    t.is((await db.query<{ status: string }>('SELECT status FROM executions WHERE id = $1', [fence.key])).rows[0]!.status, 'running', 'the lost writer changed nothing');

    const both = await Promise.all(Array.from({ length: 8 }, (_, i) => recordExecutionEvent(db, fence, 'iteration_output', `out:${i}`, { output: String(i) })));
    t.deepEqual(both.map((e) => e!.seq).sort((a, b) => a - b), [2, 3, 4, 5, 6, 7, 8, 9]);
    const all = await readExecutionEvents(db, fence.key);
    t.deepEqual(all.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    t.false(all.some((e) => e.type === 'iteration_output' && (e.payload as { output?: string }).output === 'x'));
  });

  test(`${engine}: an event is one statement in its transaction — no SET TRANSACTION round trip`, async (t) => {
    // Issue 24: BEGIN, SET TRANSACTION ISOLATION LEVEL READ COMMITTED, the statement, COMMIT were four round trips
    // per event, six events per execution; the isolation now goes in the BEGIN (test/storage/pg.test.ts shows it).
    const rec = recordQueries(await open(t, engine));
    const fence = await execution(rec.db);
    rec.clear();
    t.like(await recordExecutionEvent(rec.db, fence, 'iteration_output', 'out:1', { output: 'x' }), { seq: 1 });
    t.deepEqual(rec.statements().map((s) => s.sql.trim().split(/\s+/)[0]), ['WITH']);
  });

  test(`${engine}: a journal step — recorded with its row changes in one statement, fenced, taken from the journal after`, async (t) => {
    const db = await open(t, engine);
    const fence = await execution(db);
    const journal = await Journal.load(db, fence.key, fence);
    const tokens = (r: { p: number; c: number }) => ({ sql: 'prompt_tokens = prompt_tokens + $1, completion_tokens = completion_tokens + $2', params: [r.p, r.c] });
    t.deepEqual(await journal.step('it1:llm1', 'llm', async () => ({ p: 10, c: 3 }), tokens), { p: 10, c: 3 });
    const counts = () => db.query<{ p: number; c: number }>('SELECT prompt_tokens::INT4 AS p, completion_tokens::INT4 AS c FROM executions WHERE id = $1', [fence.key]).then((r) => r.rows[0]);
    t.deepEqual(await counts(), { p: 10, c: 3 });

    const again = await Journal.load(db, fence.key, fence);
    let called = false;
    t.deepEqual(await again.step('it1:llm1', 'llm', async () => ((called = true), { p: 99, c: 99 }), tokens), { p: 10, c: 3 });
    t.false(called, 'taken from the journal');
    t.deepEqual(await counts(), { p: 10, c: 3 });

    const lost = await Journal.load(db, fence.key, { ...fence, epoch: 5 });
    const err = await t.throwsAsync(lost.step('it1:llm2', 'llm', async () => ({ p: 1, c: 1 }), tokens));
    t.regex(err!.message, /claim on executions .* lost/);
    const steps = await db.query<{ step_key: string }>('SELECT step_key FROM execution_journal WHERE execution_id = $1', [fence.key]);
    t.deepEqual(steps.rows.map((r) => r.step_key), ['it1:llm1'], 'the lost writer recorded nothing');
    t.deepEqual(await counts(), { p: 10, c: 3 });
  });
}

test('pg: an execution\'s events go on the wire as their statements alone, no BEGIN, SET TRANSACTION or COMMIT', async (t) => {
  // Issue 24: each event was BEGIN ISOLATION LEVEL SERIALIZABLE, SET TRANSACTION ISOLATION LEVEL READ COMMITTED, the
  // statement, COMMIT — four round trips, six events per execution. PostgreSQL's sessions run READ COMMITTED already.
  const pg = await createTestDatabase();
  const wire = await pgWire(pg.url);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-exec-writes-'));
  const db = await openDb({ url: wire.url, dataDir: dir, poolSize: 4 }, silentLogger());
  t.teardown(async () => {
    await db.close();
    await wire.close();
    await pg.drop();
    await rm(dir, { recursive: true, force: true });
  });
  const fence = await execution(db);
  wire.reset();
  for (let i = 1; i <= 6; i++) t.like(await recordExecutionEvent(db, fence, 'iteration_output', `out:${i}`, { output: String(i) }), { seq: i });
  t.deepEqual([wire.count('BEGIN'), wire.count('SET TRANSACTION'), wire.count('COMMIT\0'), wire.count('INSERT INTO execution_events')], [0, 0, 0, 6]);
});
