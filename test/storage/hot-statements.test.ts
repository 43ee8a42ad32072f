// Issue 23: the cost of a hot statement must not grow with the history the tables hold. The tables are loaded with
// 100,000+ rows (mostly terminal, some live, dead row versions, ANALYZEd); the real code paths (workflow starts and
// steps through the engine, its claims and lease renewals, a Human state's approval, event reads as the SSE and
// WebSocket history serve them, the live feed, agent executions, heartbeats and the controller's watch, stimuli, the
// dashboard's prefix search, stats history, usage and minute sampler) run
// through a recording Db; then every statement they sent that touches a loaded table is EXPLAINed with its real
// parameters (test/support/plan-check.ts): no plan may read a large table whole, and run once it may read only a few
// thousand rows of it.
import test from 'ava';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { claimLeasedRow, lapsedRowKeys, recoverableRowKeys } from '../../src/actors/leased-row/table.ts';
import { heartbeatSelf, markUnhealthyIfOverdue, recoverableNodeIds, watchableNodes, watchTick } from '../../src/actors/node-peer/repo.ts';
import { appendExecutionEvent, readExecutionEvents, recordExecutionEvent } from '../../src/agents/execution/events.ts';
import { Journal } from '../../src/agents/execution/journal.ts';
import { EXECUTIONS_TABLE, getTenantExecution, insertExecution, listExecutions } from '../../src/agents/execution/repo.ts';
import { PLAIN_SQL, RECOVER_SQL } from '../../src/cluster/membership.ts';
import { holderOf } from '../../src/cluster/tell/post.ts';
import { readWorkflow, snapshotExecutions, snapshotWorkflows } from '../../src/gateway/feed/rows.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { LeaseRenewer } from '../../src/storage/lease-renewer.ts';
import { retentionBatch } from '../../src/storage/retention.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { fencedUpdate, renewRow } from '../../src/storage/row-lease.ts';
import { recoverableApprovalIds } from '../../src/workflow/approvals/repo.ts';
import { listWorkflowExecutions, recoverableWorkflowIds, WORKFLOW_EXECUTIONS_TABLE } from '../../src/workflow/engine/repo.ts';
import { sweepFinds } from '../../src/workflow/engine/sweep.ts';
import { getStimulus, insertStimulus, keyHolder, listStimuli, recordOutcome } from '../../src/stimuli/repo.ts';
import type { AgentManifest } from '../../src/agents/manifest/types.ts';
import { loadHistory, LOADED_TABLES } from '../support/history-load.ts';
import { uuidPrefixRange } from '../../src/storage/id-prefix.ts';
import { StatsService } from '../../src/stats/history.ts';
import { PriceTable } from '../../src/stats/pricing.ts';
import { samplePass } from '../../src/stats/sampler.ts';
import { readUsage } from '../../src/stats/usage.ts';
import { createTestDatabase } from '../support/pg.ts';
import { checkStatementPlans } from '../support/plan-check.ts';
import { recordQueries, type QueryRecorder } from '../support/query-recorder.ts';
import { manifest, startEngine, TENANT } from '../workflow/engine-harness.ts';

const RUNS = 100_000;
const OTHER_NODE = 'node-elsewhere';

const steps = manifest(
  'steps',
  's0',
  ['s0', 's1', 's2']
    .map((s, i, all) => `    ${s}:\n      kind: System\n      command: 'update_blackboard {"${s}": ${i}}'\n      transitions: ${all[i + 1] ? `[{ target: ${all[i + 1]} }]` : '[]'}`)
    .join('\n') + '\n',
);

const gate = manifest(
  'gate',
  'ask',
  `    ask:
      kind: Human
      prompt: 'Ship?'
      timeout: 1h
      default_response: 'no'
      transitions:
        - { condition: input_equals_yes, target: done }
        - { condition: input_equals_no, target: done }
    done:
      kind: System
      command: 'update_blackboard {"done": true}'
      transitions: []
`,
);

test('every hot statement is index-driven on tables holding 100,000+ rows of history', async (t) => {
  t.timeout(600_000);
  const tdb = await createTestDatabase();
  t.teardown(() => tdb.drop());
  const setup = await openPg(tdb.url, { logger: silentLogger() });
  t.teardown(() => setup.close());
  await migrate(setup, silentLogger());
  await loadHistory(setup, { runs: RUNS, eventsPerRun: 6, rows: RUNS, tenant: TENANT, otherNode: OTHER_NODE });

  // The workflow engine as a node runs it, its Db recorded: starts, steps, claims, renewals (a lease of 1.5 s renews
  // every 0.5 s while the Human state waits), approval timers' recovery, the history reads of SSE/WebSocket.
  let rec: QueryRecorder | undefined;
  const h = await startEngine(t, { db: { url: tdb.url }, leaseMs: 1500, wrapDb: (db) => (rec = recordQueries(db)).db });
  const db = rec!.db;
  await h.deploy(steps);
  await h.deploy(gate);
  const ids = await Promise.all([h.run('steps'), h.run('steps'), h.run('steps')]);
  for (const id of ids) t.is((await h.waitFor(id)).status, 'completed');
  const waiting = await h.run('gate');
  await h.waitFor(waiting, 'waiting_for_human_input');
  await new Promise((r) => setTimeout(r, 2000)); // renewals of the waiting run's claim (time itself is the condition)
  const seen: number[] = [];
  const sub = await h.cap.runs.follow(TENANT, ids[0]!, (e) => seen.push(e.seq), 1);
  await h.cap.runs.logs(TENANT, ids[0]!, 50, 0);
  await h.cap.runs.get(TENANT, ids[0]!);
  t.true((await h.cap.runs.signal(TENANT, waiting, 'yes', 'bob')).signalled);
  t.is((await h.waitFor(waiting)).status, 'completed');
  await sub.close();
  t.true(seen.length > 0, 'the history of a run was read');
  // Start-up recovery: runs and approval timers to recover; the sweep a node runs every sixth of the lease
  // (capability.ts startSweeper) reads the same and the lapsed parking leases in one statement (engine/sweep.ts).
  await recoverableWorkflowIds(db, 'node-a');
  await recoverableApprovalIds(db, 'node-a');
  await sweepFinds(db, 'node-a');
  // The lapsed-lease sweep (every sixth of the lease, at most 2 s): a worker's own rows, a hybrid's non-workers' rows.
  await lapsedRowKeys(db, WORKFLOW_EXECUTIONS_TABLE, 'node-a', 'own', [waiting]);
  await lapsedRowKeys(db, WORKFLOW_EXECUTIONS_TABLE, 'node-a', 'non-workers', [waiting]);
  await snapshotWorkflows(db, TENANT, 50);
  await readWorkflow(db, ids[0]!);
  // Parked runs (parking.ts): adoption of a dead node's parked runs, the safety-net scan, a message's holder lookup.
  await db.query(`INSERT INTO workflow_parking_leases (node_id, expires_at) VALUES ('gone-node', now() - INTERVAL '1 minute')`);
  await h.cap.parker.adopt();
  await h.cap.parker.scan(); // the first pass: the full check (keyset pages)
  await h.cap.parker.scan(); // a periodic pass: what changed since
  await holderOf(db, 'workflow', ids[0]!);

  // Agent executions: start, claim, renew (one statement for all held rows), events, recovery, the feed.
  const exec = { id: randomUUID() };
  await insertExecution(db, {
      id: exec.id,
      tenantId: TENANT,
      agentId: randomUUID(),
      agentName: 'a',
      agentVersion: '1.0.0',
      manifest: {} as AgentManifest,
      input: 'hi',
      ownerNode: 'node-a',
      leaseMs: 60_000,
    });
  const claim = await claimLeasedRow(db, EXECUTIONS_TABLE, exec.id, 'node-a', 60_000);
  t.truthy(claim);
  const renewer = new LeaseRenewer(db, { table: 'executions', keyColumn: 'id', keyType: 'UUID', nodeId: 'node-a', ttlMs: 60_000, columns: ['cancel_requested'], logger: silentLogger() });
  renewer.hold(claim!, { lost: () => undefined });
  t.is((await renewer.tick()).renewed, 1);
  await renewRow(db, claim!, 60_000);
  await fencedUpdate(db, claim!, `status = 'running', iteration = iteration + 1, updated_at = now()`);
  await db.tx((tx) => appendExecutionEvent(tx, exec.id, 'iteration_started', 'it:1', {}));
  // The owner's writes as the loop sends them (issue 24: one statement each).
  await recordExecutionEvent(db, claim!, 'iteration_output', 'it:1:out', { output: 'x' }, { sql: 'iteration = $1', params: [1] });
  await (await Journal.load(db, exec.id, claim!)).step('it1:llm1', 'llm', async () => ({ ok: true }), () => ({ sql: 'prompt_tokens = prompt_tokens + $1', params: [1] }));
  await readExecutionEvents(db, exec.id, 1);
  await recoverableRowKeys(db, EXECUTIONS_TABLE, 'node-a');
  await getTenantExecution(db, TENANT, exec.id);
  await snapshotExecutions(db, TENANT, 50);
  // The dashboard (issue 22): prefix search by id on both lists, the stats history and usage, the minute sampler.
  await listExecutions(db, TENANT, { idRange: uuidPrefixRange(exec.id.slice(0, 8)), limit: 50, offset: 0 });
  await listWorkflowExecutions(db, TENANT, { idRange: uuidPrefixRange(ids[0]!.slice(0, 8)), limit: 50, offset: 0 });
  const prices = new PriceTable({ currency: 'USD', models: [{ model: 'default', input_per_1k: 1, output_per_1k: 2 }] });
  await samplePass(db);
  await new StatsService(db, prices).history(TENANT, 60);
  await readUsage(db, prices, { tenant: TENANT, minutes: 60, cluster: false });
  await readUsage(db, prices, { tenant: TENANT, minutes: 60, cluster: true });

  // Heartbeats (the batched UPDATE … FROM unnest and its UNHEALTHY variant) and the controller's watch.
  const members = ['live-1', 'live-2', 'live-3'];
  const beat = [members, members.map(() => 's'), members.map(() => 'p'), members.map(() => '{}'), members.map(() => 'ACTIVE'), members.map(() => Date.now()), members.map(() => 'n')];
  await db.query(PLAIN_SQL, beat);
  await db.query(RECOVER_SQL, [...beat, 'node:']);
  await watchTick(db, OTHER_NODE, 10_000, 10_000);
  // A controller's own heartbeat (its executions counted in the same statement); the fence may not
  // match the loaded row, what is checked is the statement's plan.
  await heartbeatSelf(db, { nodeId: 'live-1', owner: OTHER_NODE, epoch: 1 }, 10_000, {}).catch(() => undefined);
  await markUnhealthyIfOverdue(db, { nodeId: 'live-1', owner: OTHER_NODE, epoch: 1 }, 3_600_000);
  await recoverableNodeIds(db, 'node-a');
  await watchableNodes(db, OTHER_NODE);

  // Stimuli: a delivery taking its key, the duplicate's holder, the outcome, reads.
  const stim = randomUUID();
  await insertStimulus(db, { id: stim, tenantId: TENANT, source: 'hook', idempotencyKey: `k-${stim}`, content: '{}', headers: {}, workflowExecutionId: randomUUID() }, 3600);
  await keyHolder(db, TENANT, 'hook', `k-${stim}`);
  await recordOutcome(db, TENANT, stim, { status: 'routed', routedBy: 'route', workflowName: 'steps', workflowExecutionId: ids[0]! });
  await getStimulus(db, TENANT, stim);
  await listStimuli(db, TENANT, { limit: 20, offset: 0 });

  // Retention (spec.retention): one batch of each kind (500 runs of history are old enough).
  const deleted = await retentionBatch(db, { terminal_runs_hours: 0.5, stimuli_hours: 0.5, batch_size: 500 });
  t.is(deleted.workflowRuns, 500);

  const statements = rec!.statements().filter((s) => /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(s.sql) && LOADED_TABLES.some((tb) => new RegExp(`\\b${tb}\\b`).test(s.sql)));
  // Not vacuous: the hot paths named in the issue are among what was checked.
  for (const [what, re] of [
    ['workflow step writer', /UPDATE workflow_executions AS w SET/],
    ['workflow starts', /INSERT INTO workflow_executions/],
    ['workflow claim renewals', /UPDATE workflow_executions w SET lease_expires_at/],
    ['workflow recovery sweep', /SELECT id::TEXT AS id FROM workflow_executions\s+WHERE status IN/],
    ['the engine sweep in one statement', /SELECT ARRAY\(SELECT id::TEXT AS id FROM workflow_executions/],
    ['the watch tick of a controller', /WITH ch AS \(\s*UPDATE cluster_nodes/],
    ['the self heartbeat', /heartbeat_count = heartbeat_count \+ 1, last_heartbeat_at = now\(\),\s+load = \$5::JSONB/],
    ['parked-run adoption', /WHERE id IN \(SELECT id FROM workflow_executions WHERE parked AND owner_node/],
    ['parked-run full check', /WHERE w\.parked AND w\.owner_node/],
    ['parked-run scan', /FROM approvals a\s+WHERE a\.resolved_at/],
    ['answer with its holder', /WITH a AS \(UPDATE approvals SET/],
    ['holder of a run', /FROM workflow_executions r WHERE r\.id/],
    ['lapsed-lease sweep', /FROM workflow_executions e/],
    ['workflow event history', /FROM workflow_events/],
    ['approval timer recovery', /FROM approvals a/],
    ['heartbeats', /UPDATE cluster_nodes c SET last_heartbeat_at/],
    ['execution renewals', /UPDATE executions w SET lease_expires_at/],
    ['execution events', /INSERT INTO execution_events/],
    ['stimuli', /INSERT INTO stimulus_keys/],
    ['retention of runs', /DELETE FROM workflow_events/],
    ['retention of executions', /DELETE FROM execution_events/],
    ['retention of stimuli', /DELETE FROM stimuli/],
    ['retention of keys', /DELETE FROM stimulus_keys/],
  ] as const) {
    t.true(statements.some((s) => re.test(s.sql)), `${what} was recorded`);
  }

  const c = new pg.Client({ connectionString: tdb.url });
  await c.connect();
  t.teardown(() => c.end());
  const problems: string[] = [];
  for (const s of statements) {
    try {
      for (const p of await checkStatementPlans(c, s.sql, s.params, { large: new Set(LOADED_TABLES), maxRowsRead: 5_000 })) {
        problems.push(`${p.mode}: ${p.problem} — ${s.sql.replace(/\s+/g, ' ').slice(0, 160)}`);
      }
    } catch (err) {
      problems.push(`could not EXPLAIN (${(err as Error).message}) — ${s.sql.replace(/\s+/g, ' ').slice(0, 160)}`);
    }
  }
  t.log(`${statements.length} statements checked`);
  t.deepEqual(problems, [], 'every hot statement finds its rows through an index and reads only them');
});
