// spec.retention (docs/RETENTION.md): terminal history older than the setting is deleted in batches — runs with their
// events and approvals, agent executions with their events, old stimuli and expired idempotency keys — while live
// work, recent history and a finished child of a run still going are kept. (That each statement is index-driven on
// a large table is proven in hot-statements.test.ts.)
import test from 'ava';
import { loadNodeConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { retentionPass, startRetention } from '../../src/storage/retention.ts';
import { loadHistory } from '../support/history-load.ts';
import { createTestDatabase } from '../support/pg.ts';

const N = 3000;

async function loaded(t: import('ava').ExecutionContext): Promise<Db> {
  const tdb = await createTestDatabase();
  t.teardown(() => tdb.drop());
  const db = await openPg(tdb.url, { logger: silentLogger() });
  t.teardown(() => db.close());
  await migrate(db, silentLogger());
  // Terminal runs ended 1 h + g s ago; every 50th run is live (its events and approvals too); stimuli g s old.
  await loadHistory(db, { runs: N, eventsPerRun: 6, rows: N, tenant: 'acme', otherNode: 'node-x' });
  // A run that ended a minute ago, and an old finished child of a live parent (run 50 is live).
  await db.query(
    `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, blackboard, context, visits,
       ancestry, parent_execution_id, completed_at)
     VALUES (md5('recent')::UUID, 'acme', 'w', 'w', '1', '{}', '{}', 'completed', '{}', '{}', '{}', '[]', NULL, now() - INTERVAL '1 minute'),
            (md5('child')::UUID, 'acme', 'w', 'w', '1', '{}', '{}', 'completed', '{}', '{}', '{}', '[]', md5('run50')::UUID, now() - INTERVAL '2 hours')`,
  );
  await db.query(`INSERT INTO workflow_events (execution_id, seq, type, event_key, payload) VALUES (md5('recent')::UUID, 1, 'WorkflowExecutionStarted', 's', '{}')`);
  return db;
}

async function count(db: Db, sql: string): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM ${sql}`)).rows[0]!.n;
}

test('a pass deletes old terminal history in batches and keeps live work, recent history and children of live runs', async (t) => {
  const db = await loaded(t);
  const live = N / 50;
  const pass = await retentionPass(db, { terminal_runs_hours: 0.5, stimuli_hours: 0.5, batch_size: 500 });
  t.is(pass.workflowRuns, N - live);
  t.is(pass.workflowEvents, (N - live) * 6);
  t.is(pass.executions, N - N / 100);
  t.is(await count(db, `workflow_executions WHERE completed_at IS NULL`), live, 'live runs kept');
  t.deepEqual(
    (await db.query<{ id: string }>(`SELECT id FROM workflow_executions WHERE completed_at IS NOT NULL ORDER BY id`)).rows.map((r) => r.id).sort(),
    [(await db.query<{ id: string }>(`SELECT md5('recent')::UUID::TEXT AS id`)).rows[0]!.id, (await db.query<{ id: string }>(`SELECT md5('child')::UUID::TEXT AS id`)).rows[0]!.id].sort(),
    'the recent run and the child of a live run are kept',
  );
  t.is(await count(db, `workflow_events e WHERE NOT EXISTS (SELECT 1 FROM workflow_executions w WHERE w.id = e.execution_id)`), 0, 'no event outlives its run');
  t.is(await count(db, `workflow_events`), live * 6 + 1);
  t.is(await count(db, `approvals a WHERE NOT EXISTS (SELECT 1 FROM workflow_executions w WHERE w.id = a.workflow_execution_id)`), 0, 'no approval outlives its run');
  t.is(await count(db, `executions`), N / 100, 'pending executions kept');
  t.is(await count(db, `execution_events e WHERE NOT EXISTS (SELECT 1 FROM executions x WHERE x.id = e.execution_id)`), 0);
  // Stimuli are g seconds old (g = 1..N): those older than 30 minutes go.
  // (The pass runs seconds after the load, so a few at the 30-minute line have crossed it.)
  const kept = await count(db, `stimuli`);
  t.true(kept <= 1800 && kept > 1700, `stimuli of the last 30 minutes kept (${kept})`);
  t.is(await count(db, `stimulus_keys`), 0, 'expired keys deleted');
  // Nothing left to do: a second pass deletes nothing. The kept stimuli are made a minute younger first, so that
  // none crosses the 30-minute line in the time between the passes (under load that was a second or more).
  await db.query(`UPDATE stimuli SET created_at = created_at + INTERVAL '1 minute'`);
  t.deepEqual(await retentionPass(db, { terminal_runs_hours: 0.5, stimuli_hours: 0.5, batch_size: 500 }), { workflowRuns: 0, workflowEvents: 0, executions: 0, stimuli: 0, keys: 0 });
});

test('a kind without its *_hours is kept; the sweeper runs passes on its own until stopped', async (t) => {
  const db = await loaded(t);
  const sweeper = startRetention(db, { stimuli_hours: 0.5, interval_seconds: 1, batch_size: 1000 }, silentLogger());
  t.teardown(() => sweeper.stop());
  const deadline = Date.now() + 60_000;
  while ((await count(db, 'stimulus_keys')) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  t.is(await count(db, 'stimulus_keys'), 0);
  await sweeper.stop();
  t.true((await count(db, 'stimuli')) <= 1800);
  t.is(await count(db, 'workflow_executions'), N + 2, 'no terminal_runs_hours: runs are kept');
});

test('spec.retention is read from the node config; bad values are refused', (t) => {
  const base = 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  retention: ';
  t.deepEqual(loadNodeConfig({ text: `${base}{ terminal_runs_hours: 720, stimuli_hours: 168, interval_seconds: 60, batch_size: 500 }\n`, env: {} }).retention, {
    terminal_runs_hours: 720,
    stimuli_hours: 168,
    interval_seconds: 60,
    batch_size: 500,
  });
  t.is(loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\n', env: {} }).retention, undefined);
  t.throws(() => loadNodeConfig({ text: `${base}{ terminal_runs_hours: 0 }\n`, env: {} }));
  t.throws(() => loadNodeConfig({ text: `${base}{ batch_size: 2.5 }\n`, env: {} }));
  t.throws(() => loadNodeConfig({ text: `${base}{ keep: forever }\n`, env: {} }));
});
