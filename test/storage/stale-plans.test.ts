// Issue 23, the mechanism behind the soak's collapse: a named prepared statement (the step writer's group commit)
// is planned while its table is small; PostgreSQL then caches a generic plan (a sequential scan is cheapest on a
// table of one page) and keeps it until something invalidates it — an ANALYZE by autovacuum. On a busy server
// autovacuum can lag for minutes (the soak ran on a server shared with other test suites), and every step
// reads the whole, growing table. The pg adapter keeps generic plans (planning at every run cost as much as running
// the statement) and remakes them when a table has grown: src/storage/plan-generations.ts reads the tables' sizes on
// a slow timer, a doubling starts a new plan generation, and a pooled connection of an older generation runs DISCARD
// PLANS before its next statement. Here autovacuum is switched off for the table (a starved autovacuum), the writer
// runs a dozen batches on a small table, then the table grows to 100,000 rows, and the plan the same connection
// would run the writer's statement with is read with EXPLAIN EXECUTE.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { StepWriter, type RunSnapshot } from '../../src/workflow/engine/writer.ts';
import { createTestDatabase } from '../support/pg.ts';
import { startPrivatePostgres } from '../support/private-services.ts';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function scans(n: PlanNode, out: string[] = []): string[] {
  if (n['Relation Name'] && n['Node Type'] !== 'ModifyTable') out.push(`${n['Node Type']} on ${n['Relation Name']}`);
  for (const c of n.Plans ?? []) scans(c, out);
  return out;
}

test('a statement prepared while its table was small is not run with that plan once the table is large', async (t) => {
  t.timeout(180_000);
  // A private server: on the shared one, other suites' catalog churn can overflow the invalidation queue, which
  // drops every cached plan at random (and would hide the stale plan this test first shows).
  const server = await startPrivatePostgres();
  t.teardown(() => server.cleanup());
  const tdb = { url: await server.createDatabase() };
  // One connection: the prepared statement and the EXPLAIN EXECUTE share it, as a node's pooled connection would.
  // The timer only reads the sizes once at the start: the test calls check() itself, when the table has grown.
  const db = await openPg(tdb.url, { logger: silentLogger(), poolSize: 1, plans: { intervalMs: 3_600_000 } });
  t.teardown(() => db.close());
  await migrate(db, silentLogger());
  const plans = db.plans;
  if (!plans) return t.fail('the pg adapter watches table sizes on PostgreSQL');
  await plans.check();
  const before = plans.generation;
  await db.query('ALTER TABLE workflow_executions SET (autovacuum_enabled = false)');
  const id = randomUUID();
  await db.query(
    `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, current_state,
       blackboard, context, visits, ancestry, owner_node, epoch)
     VALUES ($1, 't', 'w', 'w', '1', '{}', '{}', 'running', 's0', '{}', '{}', '{}', '[]', 'node-a', 1)`,
    [id],
  );
  const writer = new StepWriter(db, undefined, silentLogger(), { maxInFlight: 1 });
  const snap: RunSnapshot = { status: 'running', current_state: 's1', blackboard: {}, context: {}, visits: {}, total_transitions: 1, feedback: null, human_feedback: null, final_output: null, error: null };
  for (let i = 1; i <= 12; i++) {
    await writer.write({
      fence: { table: 'workflow_executions', keyColumn: 'id', key: id, nodeId: 'node-a', epoch: 1 },
      snapshot: { ...snap, total_transitions: i },
      firstSeq: i,
      transition: true,
      events: [{ type: 'WorkflowStateEntered', key: `entered:${i}`, state_name: 's1', iteration_number: i, payload: {} }],
    });
  }
  t.is(writer.stats.transactions, 12);
  // Plans are cached, not made at every run: the writer's statement runs on the generic-plan lane (one connection
  // here, as poolSize is 1), where it was planned once. Everything below asks that connection.
  const lane = { genericPlan: true };
  const cached = await db.query<{ generic_plans: string; custom_plans: string }>(`SELECT generic_plans::TEXT, custom_plans::TEXT FROM pg_prepared_statements WHERE name = 'orch_workflow_steps'`, [], lane);
  t.is(Number(cached.rows[0]?.generic_plans), 12, `generic plans ${cached.rows[0]?.generic_plans}, custom ${cached.rows[0]?.custom_plans}`);
  t.false(await plans.check(), 'a table that has not grown keeps its plans');
  t.is(plans.generation, before);
  await db.query(
    `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, current_state,
       blackboard, context, visits, ancestry, completed_at)
     SELECT md5('r' || g)::UUID, 't', 'w', 'w', '1', '{}', '{}', 'completed', 's9', '{}', '{}', '{}', '[]', now() FROM generate_series(1, 100000) g`,
  );
  const rows = [{ id, owner: 'node-a', epoch: 1, status: 'running', current_state: 's1', blackboard: {}, context: {}, visits: {}, total_transitions: 13, last_seq: 13, transition: true }];
  const events = [{ execution_id: id, seq: 13, type: 'WorkflowStateEntered', event_key: 'entered:13', state_name: 's1', iteration_number: 13, payload: {} }];
  const args = [`'{${id}}'`, `'${JSON.stringify(rows)}'`, `'${JSON.stringify(events)}'`];
  const plan = async (): Promise<string[]> => {
    const res = await db.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) EXECUTE orch_workflow_steps(${args.join(', ')})`, [], lane);
    return scans(res.rows[0]!['QUERY PLAN'][0]!.Plan);
  };
  // Not vacuous: until the sizes are read again, the connection still holds the plan made on the one-page table.
  const stale = await plan();
  t.true(stale.includes('Seq Scan on workflow_executions'), `the cached plan was made on the small table: ${stale.join('; ')}`);
  t.true(await plans.check(), 'a table grown from one page to 100,000 rows starts a new plan generation');
  t.is(plans.generation, before + 1);
  const found = await plan();
  t.true(found.some((s) => s.endsWith('on workflow_executions')), found.join('; '));
  t.false(found.includes('Seq Scan on workflow_executions'), `the writer's statement would read the whole table: ${found.join('; ')}`);
});

test('a plan generation begins when a table doubles, not when it shrinks, and again when it regrows from the smaller size', async (t) => {
  const tdb = await createTestDatabase();
  t.teardown(() => tdb.drop());
  const db = await openPg(tdb.url, { logger: silentLogger(), plans: { intervalMs: 3_600_000, floorBytes: 8192 } });
  t.teardown(() => db.close());
  const plans = db.plans!;
  await db.query('CREATE TABLE grows (id INT8 PRIMARY KEY, pad TEXT)');
  const fill = (from: number, to: number): Promise<unknown> => db.query(`INSERT INTO grows SELECT g, repeat('x', 200) FROM generate_series($1::INT8, $2::INT8) g`, [from, to]);
  await fill(1, 500);
  await plans.check();
  const g0 = plans.generation;
  await fill(501, 600);
  t.false(await plans.check(), 'a fifth more is not a new generation');
  await fill(601, 1200);
  t.true(await plans.check(), 'more than twice the size is');
  t.is(plans.generation, g0 + 1);
  await db.query('TRUNCATE grows');
  await fill(1, 100);
  t.false(await plans.check(), 'shrinking keeps the plans (made for a larger table, they stay right)');
  await fill(101, 400);
  t.true(await plans.check(), 'growing again from the smaller size remakes them');
  t.is(plans.generation, g0 + 2);
});
