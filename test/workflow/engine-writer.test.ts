// The group-commit StepWriter on real PostgreSQL: steps of many runs that arrive in the same turn of the event loop,
// or while a commit is in flight, are committed together in one statement; a step whose fence was taken over by another node changes nothing, writes no
// event and is rejected with LEASE_LOST, while the rest of its batch commits.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import { claimRow, type RowFence } from '../../src/storage/row-lease.ts';
import { getWorkflowExecution } from '../../src/workflow/engine/repo.ts';
import { StepWriter, type RunSnapshot } from '../../src/workflow/engine/writer.ts';
import { insertRuns, migratedPg, ONE_STATE_WORKFLOW, wiredPg } from './engine-harness.ts';

/** Runs `ids` of the workflow `w` of `yaml` for tenant `t`, started and claimed by node-a. */
/** The k-th step of run `id` (node-a holds it, epoch 0): entered state a for the k-th time. */
function kthStep(id: string, k: number): Parameters<StepWriter['write']>[0] {
  return {
    fence: { table: 'workflow_executions', keyColumn: 'id', key: id, nodeId: 'node-a', epoch: 0 },
    snapshot: { status: 'running', current_state: 'a', blackboard: { k }, context: {}, visits: { a: k }, total_transitions: k, feedback: null, human_feedback: null, final_output: null, error: null },
    firstSeq: k + 1,
    transition: true,
    events: [{ type: 'WorkflowStateEntered', key: `entered:a:${k}`, state_name: 'a', iteration_number: k, payload: {} }],
  };
}

test('batched steps commit together; a fenced-off step is rejected alone', async (t) => {
  const db = await migratedPg(t);
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  await insertRuns(
    db,
    ids,
    `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: w, version: 1.0.0 }
spec:
  initial_state: a
  states:
    a: { kind: System, command: 'true', transitions: [{ target: b }] }
    b: { kind: System, command: 'true', transitions: [] }
`,
  );
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
  t.deepEqual(writer.stats, { transactions: 1, steps: 3 }, 'the three steps of one turn shared one commit');
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

test('runs resumed by one commit write their next steps into one commit, not one commit each', async (t) => {
  const db = await migratedPg(t);
  const RUNS = 16;
  const STEPS = 5;
  const ids = Array.from({ length: RUNS }, () => randomUUID());
  await insertRuns(db, ids, ONE_STATE_WORKFLOW);
  // Two transactions may be in flight: the old writer sent the first step to come back after a commit alone, at once.
  const writer = new StepWriter(db, undefined, silentLogger(), { maxInFlight: 2 });
  const run = async (id: string): Promise<void> => {
    for (let k = 1; k <= STEPS; k++) {
      // A run computes its next step in a few microtasks after its commit (as WorkflowRun does), no I/O.
      for (let m = 0; m < k; m++) await Promise.resolve();
      await writer.write(kthStep(id, k));
    }
  };
  await Promise.all(ids.map(run));
  t.deepEqual(writer.stats, { transactions: STEPS, steps: RUNS * STEPS }, 'one commit per round of all runs');
  const rows = await db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM workflow_events WHERE execution_id = ANY($1::UUID[])`, [ids]);
  t.is(rows.rows[0]?.n, RUNS * (STEPS + 1));
  const last = await db.query<{ last_seq: number; blackboard: { k: number } }>(`SELECT last_seq, blackboard FROM workflow_executions WHERE id = ANY($1::UUID[])`, [ids]);
  t.true(last.rows.every((r) => r.last_seq === STEPS + 1 && r.blackboard.k === STEPS));
});

test('runs that start a few at a time merge into one cohort instead of committing in small batches of their own', async (t) => {
  const db = await migratedPg(t);
  const COHORTS = 4;
  const PER = 4;
  const STEPS = 6;
  const ids = Array.from({ length: COHORTS * PER }, () => randomUUID());
  await insertRuns(db, ids, ONE_STATE_WORKFLOW);
  // Four transactions may be in flight (the default): four cohorts each had a connection and stayed apart for good.
  const writer = new StepWriter(db, undefined, silentLogger());
  const run = async (id: string): Promise<void> => {
    for (let k = 1; k <= STEPS; k++) {
      await writer.write(kthStep(id, k));
    }
  };
  // The cohorts arrive in successive turns of the event loop, as HTTP requests on separate connections do.
  const runs: Promise<void>[] = [];
  for (let c = 0; c < COHORTS; c++) {
    runs.push(...ids.slice(c * PER, (c + 1) * PER).map(run));
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(runs);
  t.is(writer.stats.steps, COHORTS * PER * STEPS);
  // The first cohort's first step goes alone; the others wait for it and merge: about one commit per round after.
  t.true(writer.stats.transactions <= STEPS + 2, `${writer.stats.transactions} commits for ${STEPS} rounds of ${COHORTS} cohorts`);
  const rows = await db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM workflow_events WHERE execution_id = ANY($1::UUID[])`, [ids]);
  t.is(rows.rows[0]?.n, COHORTS * PER * (STEPS + 1));
});

test('a step sends its blackboard once encoded, and every value reads back as written', async (t) => {
  // Each JSON value used to travel inside an array literal: stringified, then escaped by pg (every quote and
  // backslash doubled) and parsed twice by the server. The step's bytes on the wire grew by more than the JSON.
  const { db, wire } = await wiredPg(t);
  const ids = [randomUUID(), randomUUID()];
  await insertRuns(db, ids, ONE_STATE_WORKFLOW);
  const writer = new StepWriter(db, undefined, silentLogger(), { maxInFlight: 1 });
  const odd = 'quote " backslash \\ tab \t unicode é ✓ {braces} [1,2] NULL';
  const big: Record<string, unknown> = {};
  for (let i = 0; i < 400; i++) big[`key_${i}`] = { text: `value "${i}"`, list: [i, `x${i}`] };
  const step = (id: string, k: number, blackboard: Record<string, unknown>) => {
    const s = kthStep(id, k);
    return { ...s, snapshot: { ...s.snapshot, blackboard, feedback: odd, error: odd, final_output: { odd, n: null } }, events: [{ ...s.events[0]!, payload: { odd } }] };
  };
  // Warm: the statement is prepared (its text sent) on the first call; measure the next ones.
  await writer.write(step(ids[0]!, 1, {}));
  await writer.write(step(ids[1]!, 1, {}));
  wire.reset();
  await writer.write(step(ids[0]!, 2, {}));
  const small = wire.bytes();
  wire.reset();
  await writer.write(step(ids[1]!, 2, big));
  const grown = wire.bytes() - small;
  const json = Buffer.byteLength(JSON.stringify(big));
  t.true(grown <= json * 1.02 + 64, `a ${json}-byte blackboard made the step ${grown} bytes larger`);
  const rows = await db.query<{ id: string; blackboard: unknown; feedback: string; error: string; final_output: unknown }>(
    'SELECT id, blackboard, feedback, error, final_output FROM workflow_executions WHERE id = ANY($1::UUID[])',
    [ids],
  );
  const row = (id: string) => rows.rows.find((r) => r.id === id)!;
  t.deepEqual(row(ids[1]!).blackboard, big);
  t.deepEqual(row(ids[0]!).blackboard, {});
  t.is(row(ids[0]!).feedback, odd);
  t.is(row(ids[0]!).error, odd);
  t.deepEqual(row(ids[0]!).final_output, { odd, n: null });
  const ev = await db.query<{ payload: unknown }>('SELECT payload FROM workflow_events WHERE execution_id = $1 AND seq = 3', [ids[0]]);
  t.deepEqual(ev.rows[0]?.payload, { odd });
});

test('a step without a final output writes SQL NULL, not a JSON null', async (t) => {
  const db = await migratedPg(t);
  const id = randomUUID();
  await insertRuns(db, [id], ONE_STATE_WORKFLOW);
  const writer = new StepWriter(db, undefined, silentLogger());
  await writer.write(kthStep(id, 1));
  const r = await db.query<{ none: boolean }>('SELECT final_output IS NULL AS none FROM workflow_executions WHERE id = $1', [id]);
  t.true(r.rows[0]?.none);
});

test('a run\'s next step joins its step still in the queue only while that is the writer\'s lone entry', async (t) => {
  const db = await migratedPg(t);
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  await insertRuns(db, ids);
  const writer = new StepWriter(db, undefined, silentLogger());
  // Alone: the second step joins the first (one entry, one statement for both).
  const a1 = writer.writeStep(kthStep(ids[0]!, 1));
  const a2 = writer.writeStep({ ...kthStep(ids[0]!, 2), previous: a1 });
  t.true(a2.joined);
  // Another run's step queued beside it: the run's next step queues behind its own instead (a cohort keeps in step).
  const b1 = writer.writeStep(kthStep(ids[1]!, 1));
  const c1 = writer.writeStep(kthStep(ids[2]!, 1));
  const b2 = writer.writeStep({ ...kthStep(ids[1]!, 2), previous: b1 });
  t.false(b2.joined);
  await Promise.all([a1.settled, a2.settled, b1.settled, c1.settled, b2.settled]);
  for (const [id, seq] of [[ids[0]!, 3], [ids[1]!, 3], [ids[2]!, 2]] as const) t.is((await getWorkflowExecution(db, id))?.last_seq, seq);
});
