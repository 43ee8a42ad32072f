// Issue 23, the mechanism behind the soak's collapse: a named prepared statement (the step writer's group commit)
// is planned while its table is small; PostgreSQL then caches a generic plan (a sequential scan is cheapest on a
// table of one page) and keeps it until something invalidates it — an ANALYZE by autovacuum. On a busy server
// autovacuum can lag for minutes (the soak ran on a server shared with other test suites), and every step
// reads the whole, growing table. The pg adapter makes PostgreSQL plan such statements for the values and table
// size at hand each time (plan_cache_mode = force_custom_plan, CockroachDB's own default), so a plan made while the
// table was small is never reused. Here autovacuum is switched off for the table (a starved autovacuum), the writer
// runs a dozen batches on a small table, then the table grows to 100,000 rows, and the plan the same connection
// would run the writer's statement with is read with EXPLAIN EXECUTE.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { StepWriter, type RunSnapshot } from '../../src/workflow/engine/writer.ts';
import { createTestDatabase } from '../support/pg.ts';

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
  const tdb = await createTestDatabase();
  t.teardown(() => tdb.drop());
  // One connection: the prepared statement and the EXPLAIN EXECUTE share it, as a node's pooled connection would.
  const db = await openPg(tdb.url, { logger: silentLogger(), poolSize: 1 });
  t.teardown(() => db.close());
  await migrate(db, silentLogger());
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
  await db.query(
    `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, current_state,
       blackboard, context, visits, ancestry, completed_at)
     SELECT md5('r' || g)::UUID, 't', 'w', 'w', '1', '{}', '{}', 'completed', 's9', '{}', '{}', '{}', '[]', now() FROM generate_series(1, 100000) g`,
  );
  const arr = (v: string): string => `'{${v}}'`;
  const args = [arr(id), arr('node-a'), arr('1'), arr('running'), arr('s1'), arr('"{}"'), arr('"{}"'), arr('"{}"'), arr('13'), arr('NULL'), arr('NULL'), arr('NULL'), arr('NULL'), arr('13'), arr('t'),
    arr(id), arr('13'), arr('WorkflowStateEntered'), arr('entered:13'), arr('s1'), arr('13'), arr('"{}"')];
  const res = await db.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) EXECUTE orch_workflow_steps(${args.join(', ')})`);
  const found = scans(res.rows[0]!['QUERY PLAN'][0]!.Plan);
  t.true(found.some((s) => s.endsWith('on workflow_executions')), found.join('; '));
  t.false(found.includes('Seq Scan on workflow_executions'), `the writer's statement would read the whole table: ${found.join('; ')}`);
});
