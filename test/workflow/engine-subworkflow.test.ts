// Subworkflow states over the engine's ChildWorkflows (WorkflowExecutionService): a blocking child with result_key
// and its final_output as `result`, fire_and_forget, a cycle detected at run time, and the child row linked to its
// parent (parent id, depth, ancestry).
import test from 'ava';
import { getWorkflowExecution } from '../../src/workflow/engine/repo.ts';
import { manifest, startEngine } from './engine-harness.ts';

const CHILD = manifest(
  'child',
  'work',
  `    work:
      kind: System
      command: 'update_blackboard {"doubled": "{{input.n}}{{input.n}}"}'
      transitions: []
`,
  `  output_template:
    doubled: '{{blackboard.doubled}}'
`,
);

test('blocking child with result_key, then fire_and_forget; the child row is linked to its parent', async (t) => {
  const h = await startEngine(t);
  await h.deploy(CHILD);
  await h.deploy(
    manifest(
      'parent',
      'call',
      `    call:
      kind: Subworkflow
      workflow_id: child
      input: '{"n": "{{input.n}}"}'
      result_key: child_board
      transitions:
        - { condition: on_success, target: spawn }
        - { target: broken }
    spawn:
      kind: Subworkflow
      workflow_id: child
      mode: fire_and_forget
      input: '{"n": "zz"}'
      transitions: [{ target: done }]
    done:
      kind: System
      command: 'update_blackboard {"got": "{{call.result.doubled}}"}'
      transitions: []
    broken:
      kind: System
      command: 'false'
      transitions: []
`,
    ),
  );
  const id = await h.run('parent', { input: { n: 'ab' } });
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.got, 'abab');
  const call = row.blackboard.call as { status: string; result: unknown; child_execution_id: string };
  t.like(call, { status: 'success', result: { doubled: 'abab' } });
  t.is((row.blackboard.child_board as Record<string, unknown>).doubled, 'abab');
  const child = await getWorkflowExecution(h.db, call.child_execution_id);
  t.like(child, { status: 'completed', parent_execution_id: id, depth: 1 });
  t.deepEqual(child?.ancestry, ['parent']);
  const spawned = (row.blackboard.spawn as { child_execution_id: string }).child_execution_id;
  const second = await h.waitFor(spawned);
  t.is(second.blackboard.doubled, 'zzzz');
});

test('a workflow that calls itself is refused at run time (cycle)', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'selfish',
      'again',
      `    again:
      kind: Subworkflow
      workflow_id: selfish
      transitions:
        - { condition: on_success, target: fine }
        - { condition: on_failure, target: caught, feedback: '{{again.error}}' }
    fine:
      kind: System
      command: 'true'
      transitions: []
    caught:
      kind: System
      command: 'update_blackboard {"why": {{json state.feedback}} }'
      transitions: []
`,
    ),
  );
  const id = await h.run('selfish');
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.regex(String(row.blackboard.why), /SubworkflowCycle/);
  const children = await h.db.query<{ n: number }>('SELECT count(*)::INT4 AS n FROM workflow_executions WHERE parent_execution_id = $1', [id]);
  t.is(children.rows[0]!.n, 0);
});
