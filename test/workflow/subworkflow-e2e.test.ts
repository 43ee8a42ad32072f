// Subworkflow end to end on real PostgreSQL: parent and child runs through the real engine (WorkflowExecutionService
// as ChildWorkflows): blocking with result_key and the child's final_output, fire_and_forget, a workflow that is not
// deployed, nesting deeper than 10, a cycle detected at run time, and the child cancelled when the parent state times
// out.
import test from 'ava';
import { manifest, startEngine, type EngineHarness } from './engine-harness.ts';

const child = manifest(
  'child',
  'add',
  `    add:
      kind: System
      command: 'update_blackboard {"sum": {{input.a}}, "who": "{{input.who}}"}'
      transitions: []
`,
  `  output_template:
    total: '{{blackboard.sum}}'
`,
);

async function childRows(h: EngineHarness, parent: string) {
  const res = await h.db.query<{ id: string; status: string; depth: number; ancestry: string[]; workflow_name: string; error: string | null }>(
    'SELECT id, status, depth, ancestry, workflow_name, error FROM workflow_executions WHERE parent_execution_id = $1',
    [parent],
  );
  return res.rows;
}

test('blocking: the parent waits, gets status/result/child_execution_id, and result_key holds the child blackboard', async (t) => {
  const h = await startEngine(t);
  await h.deploy(child);
  await h.deploy(manifest('parent', 'call', `    call:
      kind: Subworkflow
      workflow_id: child
      result_key: kid
      input: '{"a": {{input.n}}, "who": "{{input.who}}"}'
      transitions:
        - { condition: on_success, target: after }
        - { condition: on_failure, target: broken }
    after:
      kind: System
      command: 'update_blackboard {"seen": "{{call.result.total}}-{{blackboard.kid.sum}}-{{call.status}}"}'
      transitions: []
    broken:
      kind: System
      command: 'update_blackboard {"seen": "broken"}'
      transitions: []
`));
  const id = await h.run('parent', { input: { n: 41, who: 'ann' } });
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  const call = row.blackboard.call as { status: string; result: unknown; child_execution_id: string };
  t.is(call.status, 'success');
  t.deepEqual(call.result, { total: '41' });
  t.is(row.blackboard.seen, '41-41-success');
  t.like(row.blackboard.kid as object, { sum: 41, who: 'ann' });
  const kids = await childRows(h, id);
  t.is(kids.length, 1);
  t.like(kids[0], { id: call.child_execution_id, status: 'completed', depth: 1, workflow_name: 'child' });
});

test('fire_and_forget: the parent goes on at once; the child runs to its end on its own', async (t) => {
  const h = await startEngine(t);
  await h.deploy(manifest('slowchild', 'wait', `    wait:
      kind: System
      command: 'sleep 2'
      transitions: [{ target: mark }]
    mark:
      kind: System
      command: 'update_blackboard {"done": true}'
      transitions: []
`));
  await h.deploy(manifest('launcher', 'spawn', `    spawn:
      kind: Subworkflow
      workflow_id: slowchild
      mode: fire_and_forget
      transitions: [{ condition: on_success, target: end }]
    end:
      kind: System
      command: 'update_blackboard {"ended": "{{spawn.status}}"}'
      transitions: []
`));
  const id = await h.run('launcher');
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.ended, 'success');
  t.deepEqual(Object.keys(row.blackboard.spawn as object).sort(), ['child_execution_id', 'status']);
  const spawned = row.blackboard.spawn as { child_execution_id: string };
  const kid = await h.waitFor(spawned.child_execution_id, undefined, 30_000);
  t.is(kid.status, 'completed');
  t.true(kid.completed_at !== null && row.completed_at !== null && kid.completed_at > row.completed_at, 'the parent finished first');
});

test('a workflow that is not deployed fails the state at entry with a descriptive error', async (t) => {
  const h = await startEngine(t);
  await h.deploy(manifest('orphaned', 'call', `    call:
      kind: Subworkflow
      workflow_id: nowhere
      transitions:
        - { condition: on_failure, target: failed }
    failed:
      kind: System
      command: 'update_blackboard {"why": "{{call.error}}"}'
      transitions: []
`));
  const id = await h.run('orphaned');
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.is((row.blackboard.call as { status: string }).status, 'failed');
  t.regex(String(row.blackboard.why), /starting child workflow nowhere failed: .*nowhere.*not deployed/);
  t.deepEqual(await childRows(h, id), []);
});

test('nesting deeper than 10 fails with SubworkflowDepthExceeded', async (t) => {
  const h = await startEngine(t);
  // n0 -> n1 -> ... -> n11: n10 runs at depth 10 and may not start n11.
  for (let i = 0; i <= 11; i++) {
    const states = i < 11
      ? `    go:
      kind: Subworkflow
      workflow_id: n${i + 1}
      transitions: []
`
      : `    leaf:
      kind: System
      command: 'update_blackboard {"leaf": true}'
      transitions: []
`;
    await h.deploy(manifest(`n${i}`, i < 11 ? 'go' : 'leaf', states));
  }
  const id = await h.run('n0');
  await h.waitFor(id, undefined, 60_000);
  const res = await h.db.query<{ workflow_name: string; depth: number; blackboard: Record<string, unknown> }>(
    "SELECT workflow_name, depth, blackboard FROM workflow_executions WHERE workflow_name IN ('n10', 'n11')",
  );
  t.deepEqual(res.rows.map((r) => r.workflow_name), ['n10'], 'n11 never started');
  const n10 = res.rows[0];
  t.is(n10?.depth, 10);
  t.regex(String((n10?.blackboard.go as { error?: string }).error), /^SubworkflowDepthExceeded/);
});

test('a cycle is detected at run time and names the cycle', async (t) => {
  const h = await startEngine(t);
  for (const [name, next] of [['ping', 'pong'], ['pong', 'ping']] as const) {
    await h.deploy(manifest(name, 'go', `    go:
      kind: Subworkflow
      workflow_id: ${next}
      transitions: []
`));
  }
  const id = await h.run('ping');
  await h.waitFor(id, undefined, 60_000);
  const res = await h.db.query<{ workflow_name: string; depth: number; blackboard: Record<string, unknown> }>(
    'SELECT workflow_name, depth, blackboard FROM workflow_executions ORDER BY depth',
  );
  t.deepEqual(res.rows.map((r) => `${r.workflow_name}@${r.depth}`), ['ping@0', 'pong@1'], 'pong does not start ping again');
  t.regex(String((res.rows[1]?.blackboard.go as { error?: string }).error), /circular subworkflow composition ping -> pong -> ping/);
});

test('the parent state timing out cancels the blocking child', async (t) => {
  const h = await startEngine(t);
  await h.deploy(manifest('sleepy', 'nap', `    nap:
      kind: System
      command: 'sleep 600'
      timeout: 900s
      transitions: []
`));
  await h.deploy(manifest('impatient', 'call', `    call:
      kind: Subworkflow
      workflow_id: sleepy
      timeout: 2s
      transitions:
        - { condition: on_failure, target: gaveup }
    gaveup:
      kind: System
      command: 'update_blackboard {"gaveup": true}'
      transitions: []
`));
  const t0 = Date.now();
  const id = await h.run('impatient');
  const row = await h.waitFor(id, undefined, 90_000);
  // Far under the child's 600 s: the parent's 2 s timeout ended the wait (the margin is for a loaded machine).
  t.true(Date.now() - t0 < 60_000);
  t.is(row.blackboard.gaveup, true);
  const [kid] = await childRows(h, id);
  t.truthy(kid);
  const kidRow = await h.waitFor(kid!.id, undefined, 60_000);
  t.is(kidRow.status, 'cancelled');
});
