// Issue 18: a run whose Subworkflow state waits on a child run parks (leaves memory) like a run waiting on a Human
// state. Real PostgreSQL, the engine as a node wires it, spec.workflow.park_after_seconds 0: the parent parks in status
// `running` at the Subworkflow state (the child, waiting on a Human state, parks too). The child's end brings the
// parent back (a message, in-process here; test/cluster/parking.test.ts does it across nodes); a state timeout is kept
// while parked (the row's wake_at, read by the scan) and cancels the child.
import test from 'ava';
import { getWorkflowExecution } from '../../src/workflow/engine/repo.ts';
import { manifest, startEngine, TENANT, type EngineHarness } from './engine-harness.ts';

const CHILD = manifest(
  'kid',
  'ask',
  `    ask:
      kind: Human
      prompt: 'Go?'
      transitions: [{ target: done }]
    done:
      kind: System
      command: 'update_blackboard {"answer": "{{state.feedback}}"}'
      transitions: []
`,
  `  output_template:
    answer: '{{blackboard.ask.response}}'
`,
);

function parent(timeout = ''): string {
  return manifest(
    'dad',
    'call',
    `    call:
      kind: Subworkflow
      workflow_id: kid
${timeout}      transitions:
        - { condition: on_success, target: done }
        - { target: late }
    done:
      kind: System
      command: 'update_blackboard {"got": "{{call.result.answer}}"}'
      transitions: []
    late:
      kind: System
      command: 'update_blackboard {"late": true}'
      transitions: []
`,
  );
}

async function parkedRow(h: EngineHarness, id: string): Promise<{ status: string; wake_at: Date | null }> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 25))) {
    const r = await h.db.query<{ status: string; parked: boolean; wake_at: Date | null }>('SELECT status, parked, wake_at FROM workflow_executions WHERE id = $1', [id]);
    if (r.rows[0]?.parked && !h.actors.isLive('workflow', id)) return r.rows[0];
  }
  throw new Error(`run ${id} did not park`);
}

async function childOf(h: EngineHarness, id: string): Promise<string> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 25))) {
    const r = await h.db.query<{ id: string }>('SELECT id::TEXT AS id FROM workflow_executions WHERE parent_execution_id = $1', [id]);
    if (r.rows[0]) return r.rows[0].id;
  }
  throw new Error(`run ${id} started no child`);
}

test('a run waiting on a child parks, and the child’s end brings it back once', async (t) => {
  const h = await startEngine(t, { parkAfterMs: 0 });
  await h.deploy(CHILD);
  await h.deploy(parent());
  const id = await h.run('dad');
  const kid = await childOf(h, id);
  const parked = await parkedRow(h, id);
  t.is(parked.status, 'running', 'parked in its Subworkflow state');
  t.truthy(parked.wake_at, 'with the deadline of the visit (300 s default)');
  await parkedRow(h, kid);
  t.true((await h.cap.runs.signal(TENANT, kid, 'yes', 'bob')).signalled);
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.got, 'yes', JSON.stringify(row.blackboard));
  t.false(row.parked);
  const events = await h.events(id);
  t.is(events.filter((e) => e.type === 'WorkflowStateCompleted' && e.state_name === 'call').length, 1, 'the visit completed once');
  t.is((await h.db.query('SELECT 1 FROM workflow_executions WHERE parent_execution_id = $1', [id])).rowCount, 1, 'one child, found again on the way back');
});

test('a parked run’s state timeout still fires (the scan reads wake_at) and cancels the child', async (t) => {
  const h = await startEngine(t, { parkAfterMs: 0 });
  await h.deploy(CHILD);
  await h.deploy(parent('      timeout: 2s\n'));
  const t0 = Date.now();
  const id = await h.run('dad');
  const kid = await childOf(h, id);
  const parked = await parkedRow(h, id);
  t.truthy(parked.wake_at);
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.true(row.blackboard.late as boolean, 'the state failed by its timeout');
  t.regex(JSON.stringify(row.blackboard.call), /timed out/);
  t.true(Date.now() - t0 >= 2000, 'not before its deadline');
  const child = await h.waitFor(kid);
  t.is(child.status, 'cancelled');
  t.is((await getWorkflowExecution(h.db, id))?.wake_at ?? null, null, 'the next step cleared the deadline');
});

test('a parked run whose child ended without a message is found by the scan', async (t) => {
  const h = await startEngine(t, { parkAfterMs: 0 });
  await h.deploy(CHILD);
  await h.deploy(parent());
  const id = await h.run('dad');
  const kid = await childOf(h, id);
  await parkedRow(h, id);
  await parkedRow(h, kid);
  // The child ends as if its node died right after the commit, before it told the parent: written directly.
  await h.db.query(`UPDATE workflow_executions SET status = 'completed', final_output = '{"answer": "quiet"}', completed_at = now(), parked = FALSE WHERE id = $1`, [kid]);
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.got, 'quiet');
});
