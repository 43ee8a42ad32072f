// Issue 23: the step writer's statement is planned once per connection, not at every call. PostgreSQL's default plan
// cache (plan_cache_mode = auto) plans a prepared statement for its parameters at its first five runs and then keeps
// doing so while the generic plan's estimate is above the custom plans' average — always, for the writer's statement,
// whose generic plan costs each array at 10 elements. The pg adapter runs statements that ask for it
// (QueryOptions.genericPlan) on a small lane of connections with plan_cache_mode = force_generic_plan. What a
// statement's connection did is in pg_prepared_statements (per session): generic_plans and custom_plans count the
// runs of each kind, so the test reads them from the connection that ran the statement.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg, type PgDb } from '../../src/storage/pg.ts';
import { StepWriter, type RunSnapshot } from '../../src/workflow/engine/writer.ts';
import { createTestDatabase } from '../support/pg.ts';

const snap: RunSnapshot = { status: 'running', current_state: 's1', blackboard: {}, context: {}, visits: {}, total_transitions: 1, feedback: null, human_feedback: null, final_output: null, error: null };

/** A table of 20,000 terminal runs and 4 live ones owned by node-a; answers the live runs' ids. */
async function load(db: PgDb): Promise<string[]> {
  await migrate(db, silentLogger());
  await db.query(`INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, current_state,
       blackboard, context, visits, ancestry, completed_at)
     SELECT md5('r' || g)::UUID, 't', 'w', 'w', '1', '{}', '{}', 'completed', 's9', '{}', '{}', '{}', '[]', now() FROM generate_series(1, 20000) g`);
  const ids = Array.from({ length: 4 }, () => randomUUID());
  for (const id of ids) {
    await db.query(
      `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, current_state,
         blackboard, context, visits, ancestry, owner_node, epoch) VALUES ($1, 't', 'w', 'w', '1', '{}', '{}', 'running', 's0', '{}', '{}', '{}', '[]', 'node-a', 1)`,
      [id],
    );
  }
  await db.query('ANALYZE workflow_executions');
  return ids;
}

/** `batches` group commits of one step per live run (the writer's one-statement path). */
async function write(db: PgDb, ids: string[], batches: number): Promise<void> {
  const writer = new StepWriter(db, undefined, silentLogger(), { maxInFlight: 1 });
  for (let i = 1; i <= batches; i++) {
    await Promise.all(
      ids.map((id) =>
        writer.write({
          fence: { table: 'workflow_executions', keyColumn: 'id', key: id, nodeId: 'node-a', epoch: 1 },
          snapshot: { ...snap, total_transitions: i },
          firstSeq: i,
          transition: true,
          events: [{ type: 'WorkflowStateEntered', key: `entered:${i}`, state_name: 's1', iteration_number: i, payload: {} }],
        }),
      ),
    );
  }
  if (writer.stats.transactions !== batches) throw new Error(`expected ${batches} transactions, saw ${writer.stats.transactions}`);
}

async function counts(db: PgDb, genericPlan: boolean): Promise<{ generic: number; custom: number }> {
  const res = await db.query<{ generic_plans: string; custom_plans: string }>(
    `SELECT generic_plans::TEXT, custom_plans::TEXT FROM pg_prepared_statements WHERE name = 'orch_workflow_steps'`,
    [],
    { genericPlan },
  );
  const row = res.rows[0];
  if (!row) throw new Error('the connection never prepared orch_workflow_steps');
  return { generic: Number(row.generic_plans), custom: Number(row.custom_plans) };
}

test('the step writer statement runs its cached generic plan from the first call, on the generic-plan lane', async (t) => {
  const tdb = await createTestDatabase();
  t.teardown(() => tdb.drop());
  // One connection per pool, so the statement and the pg_prepared_statements read share a session.
  const db = await openPg(tdb.url, { logger: silentLogger(), poolSize: 1 });
  t.teardown(() => db.close());
  const ids = await load(db);
  await write(db, ids, 20);
  t.deepEqual(await counts(db, true), { generic: 20, custom: 0 });
  const mode = await db.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode', [], { genericPlan: true });
  t.is(mode.rows[0]?.plan_cache_mode, 'force_generic_plan');
  // The main pool's connections keep PostgreSQL's default: unnamed statements there are planned for their parameters.
  const main = await db.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode');
  t.is(main.rows[0]?.plan_cache_mode, 'auto');
});

test('without the lane PostgreSQL plans the step writer statement for its parameters at every call', async (t) => {
  const tdb = await createTestDatabase();
  t.teardown(() => tdb.drop());
  const db = await openPg(tdb.url, { logger: silentLogger(), poolSize: 1, genericPlanPoolSize: 0 });
  t.teardown(() => db.close());
  const ids = await load(db);
  await write(db, ids, 20);
  // With no lane, genericPlan falls back to the main pool (as on CockroachDB and PGlite).
  const c = await counts(db, true);
  t.is(c.generic + c.custom, 20);
  // At least the first five runs are custom plans under plan_cache_mode = auto; for this statement PostgreSQL keeps
  // choosing them (its generic plan costs every array at 10 elements): what the lane saves.
  t.true(c.custom >= 5, JSON.stringify(c));
  t.log(`auto: ${c.custom} custom and ${c.generic} generic plans in 20 calls`);
});
