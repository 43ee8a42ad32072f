// The group-commit StepWriter on real PostgreSQL: steps of many runs that arrive while a commit is in flight are
// committed together in one statement; a step whose fence was taken over by another node changes nothing, writes no
// event and is rejected with LEASE_LOST, while the rest of its batch commits.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { claimRow, type RowFence } from '../../src/storage/row-lease.ts';
import { insertWorkflowExecution, getWorkflowExecution } from '../../src/workflow/engine/repo.ts';
import { StepWriter, type RunSnapshot } from '../../src/workflow/engine/writer.ts';
import { parseWorkflowManifest } from '../../src/workflow/manifest/parse.ts';
import { createTestDatabase } from '../support/pg.ts';

test('batched steps commit together; a fenced-off step is rejected alone', async (t) => {
  const tdb = await createTestDatabase();
  t.teardown(() => tdb.drop());
  const db = await openPg(tdb.url, { logger: silentLogger() });
  t.teardown(() => db.close());
  await migrate(db, silentLogger());
  const parsed = parseWorkflowManifest(`apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: w, version: 1.0.0 }
spec:
  initial_state: a
  states:
    a: { kind: System, command: 'true', transitions: [{ target: b }] }
    b: { kind: System, command: 'true', transitions: [] }
`);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  for (const id of ids) {
    await insertWorkflowExecution(
      db,
      { id, tenantId: 't', workflowId: 'w', workflowName: 'w', workflowVersion: '1.0.0', manifest: parsed.manifest, input: {}, blackboard: {}, context: {}, depth: 0, ancestry: [], ownerNode: 'node-a', leaseMs: 30_000 },
      [{ type: 'WorkflowExecutionStarted', key: 'started', payload: {} }],
    );
  }
  const fence = (id: string): RowFence => ({ table: 'workflow_executions', keyColumn: 'id', key: id, nodeId: 'node-a', epoch: 0 });
  // Another node takes over the third run (its claim expired).
  await db.query(`UPDATE workflow_executions SET lease_expires_at = now() - INTERVAL '1 second' WHERE id = $1`, [ids[2]]);
  t.truthy(await claimRow(db, 'workflow_executions', 'id', ids[2]!, 'node-b', 30_000));

  const writer = new StepWriter(db, undefined, silentLogger(), { maxInFlight: 1 });
  const snap = (n: number): RunSnapshot => ({
    status: 'running',
    current_state: 'b',
    blackboard: { a: { n } },
    context: {},
    visits: { a: 1, b: 1 },
    total_transitions: 1,
    feedback: null,
    human_feedback: null,
    final_output: null,
    error: null,
  });
  const step = (i: number) =>
    writer.write({
      fence: fence(ids[i]!),
      snapshot: snap(i),
      firstSeq: 2,
      transition: true,
      events: [
        { type: 'WorkflowStateCompleted', key: 'completed:a:1', state_name: 'a', iteration_number: 1, payload: {} },
        { type: 'WorkflowStateEntered', key: 'entered:b:1', state_name: 'b', iteration_number: 1, payload: { entered_at: 'x' } },
      ],
    });
  const results = await Promise.allSettled([step(0), step(1), step(2)]);
  t.is(results[0]!.status, 'fulfilled');
  t.is(results[1]!.status, 'fulfilled');
  t.is(results[2]!.status, 'rejected');
  t.is(((results[2] as PromiseRejectedResult).reason as { code: string }).code, 'lease_lost');
  t.deepEqual(writer.stats, { transactions: 2, steps: 3 }, 'the second and third steps shared one commit');
  const events = (id: string) => db.query<{ seq: number; type: string }>('SELECT seq, type FROM workflow_events WHERE execution_id = $1 ORDER BY seq', [id]);
  t.deepEqual((await events(ids[1]!)).rows, [
    { seq: 1, type: 'WorkflowExecutionStarted' },
    { seq: 2, type: 'WorkflowStateCompleted' },
    { seq: 3, type: 'WorkflowStateEntered' },
  ]);
  t.is((await events(ids[2]!)).rows.length, 1, 'no event of the fenced-off step');
  const fenced = await getWorkflowExecution(db, ids[2]!);
  t.is(fenced?.current_state, 'a');
  t.is(fenced?.last_seq, 1);
  const ok = await getWorkflowExecution(db, ids[1]!);
  t.like(ok, { current_state: 'b', last_seq: 3, total_transitions: 1, blackboard: { a: { n: 1 } } });
  t.truthy(ok?.last_transition_at);
});
