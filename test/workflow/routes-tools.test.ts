// The orch.workflow.* run tools and orch.execute.wait through the node's real tool catalog, over the engine on real
// PostgreSQL, with the result shapes of seed 001 (control tools answer false with `error` inside a success).
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';
import { callContext, context, nodeConfig } from '../tools/helpers.ts';
import { manifest, startEngine } from './engine-harness.ts';

const FLOW = manifest(
  'toolflow',
  'a',
  `    a:
      kind: System
      command: 'update_blackboard {"v": "{{input.v}}"}'
      transitions: [{ target: gate }]
    gate:
      kind: Human
      prompt: 'ok?'
      transitions:
        - { condition: input_equals_yes, target: end }
        - { target: end }
    end:
      kind: System
      command: 'true'
      transitions: []
`,
  `  output_template:
    v: '{{blackboard.v}}'
`,
);

test('run, status, executions.list/get, logs, wait (timed_out, then done), signal, cancel, remove', async (t) => {
  const h = await startEngine(t);
  await h.deploy(FLOW);
  const catalog = createToolCatalog({ config: nodeConfig(), logger: silentLogger(), workflowRuns: () => h.cap.runs });
  const ctx = callContext(context());
  const call = async (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const out = await catalog.call(ctx, name, args);
    if (!out.ok) throw new Error(`${name}: ${out.error.error} ${out.error.message}`);
    return out.result as Record<string, unknown>;
  };

  const run = await call('orch.workflow.run', { name: 'toolflow', input: { v: 'seven' }, intent: 'tool test' });
  t.is(run.status, 'started');
  const id = String(run.execution_id);
  await h.waitFor(id, 'waiting_for_human_input');

  const status = await call('orch.workflow.status', { execution_id: id });
  t.deepEqual(Object.keys(status).sort(), ['current_state', 'execution_id', 'last_transition_at', 'started_at', 'status', 'workflow_id']);
  t.like(status, { execution_id: id, status: 'waiting_for_human_input', current_state: 'gate' });

  const timedOut = await call('orch.workflow.wait', { execution_id: id, timeout_seconds: 1, poll_interval_seconds: 1 });
  t.deepEqual(timedOut, { execution_id: id, status: 'waiting_for_human_input', current_state: 'gate', timed_out: true });

  const list = await call('orch.workflow.executions.list', { workflow_id: 'toolflow' });
  t.is((list.executions as unknown[]).length, 1);
  t.like((list.executions as Record<string, unknown>[])[0], { execution_id: id, status: 'waiting_for_human_input', current_state: 'gate' });
  const get = await call('orch.workflow.executions.get', { execution_id: id });
  t.like(get, { status: 'waiting_for_human_input', input: { v: 'seven' }, state_outputs: { a: { status: 'success' } } });
  t.is((get.blackboard as Record<string, unknown>).v, 'seven');

  const logs = await call('orch.workflow.logs', { execution_id: id, limit: 2 });
  t.is(logs.tool, 'orch.workflow.logs');
  t.is(logs.limit, 2);
  t.is((logs.events as { event_type: string }[])[0]!.event_type, 'WorkflowExecutionStarted');
  t.true(Number(logs.total) >= 5);

  t.deepEqual(await call('orch.workflow.remove', { execution_id: id }), {
    tool: 'orch.workflow.remove',
    removed: false,
    execution_id: id,
    error: 'execution is still in progress',
  });
  t.deepEqual(await call('orch.workflow.signal', { execution_id: id, response: 'yes' }), { tool: 'orch.workflow.signal', signalled: true, execution_id: id });
  const done = await call('orch.execute.wait', { execution_id: id, timeout_seconds: 20, poll_interval_seconds: 1 });
  t.like(done, { execution_id: id, status: 'completed', current_state: 'end', last_output: { v: 'seven' } });
  t.truthy(done.workflow_id);
  t.truthy(done.started_at);
  t.truthy(done.last_transition_at);
  t.is((done.blackboard as Record<string, unknown>).intent, 'tool test');

  const again = await call('orch.workflow.signal', { execution_id: id, response: 'yes' });
  t.like(again, { tool: 'orch.workflow.signal', signalled: false, execution_id: id });
  t.regex(String(again.error), /not waiting_for_human_input/);
  const cancel = await call('orch.workflow.cancel', { execution_id: id });
  t.like(cancel, { tool: 'orch.workflow.cancel', cancelled: false, execution_id: id });
  t.regex(String(cancel.error), /already completed/);
  const unknown = randomUUID();
  t.deepEqual(await call('orch.workflow.cancel', { execution_id: unknown }), { tool: 'orch.workflow.cancel', cancelled: false, execution_id: unknown, error: 'execution not found' });
  t.deepEqual(await call('orch.workflow.remove', { execution_id: id }), { tool: 'orch.workflow.remove', removed: true, execution_id: id });
  t.deepEqual(await call('orch.workflow.remove', { execution_id: id }), { tool: 'orch.workflow.remove', removed: false, execution_id: id, error: 'execution not found' });

  const missing = await catalog.call(ctx, 'orch.workflow.signal', { execution_id: id });
  t.like(missing, { ok: false, error: { error: 'InvalidArguments' } });
  const notFound = await catalog.call(ctx, 'orch.workflow.status', { execution_id: randomUUID() });
  t.like(notFound, { ok: false, error: { error: 'NOT_FOUND' } });
  const badInput = await catalog.call(ctx, 'orch.workflow.run', { name: 'nope' });
  t.like(badInput, { ok: false, error: { error: 'NOT_FOUND' } });
});

test('cancel through the tool stops a waiting run', async (t) => {
  const h = await startEngine(t);
  await h.deploy(FLOW);
  const catalog = createToolCatalog({ config: nodeConfig(), logger: silentLogger(), workflowRuns: () => h.cap.runs });
  const ctx = callContext(context());
  const run = await catalog.call(ctx, 'orch.workflow.run', { name: 'toolflow', input: { v: 'x' } });
  const id = String((run as { result: { execution_id: string } }).result.execution_id);
  await h.waitFor(id, 'waiting_for_human_input');
  t.deepEqual(await catalog.call(ctx, 'orch.workflow.cancel', { execution_id: id }), { ok: true, result: { tool: 'orch.workflow.cancel', cancelled: true, execution_id: id } });
  t.is((await h.waitFor(id)).status, 'cancelled');
  const waited = await catalog.call(ctx, 'orch.workflow.wait', { execution_id: id, timeout_seconds: 5 });
  t.like(waited, { ok: true, result: { status: 'cancelled', last_output: null } });
});
