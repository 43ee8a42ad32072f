// Unit test of the Subworkflow runner's own logic (modes, result_key, ids, depth, cycles, not deployed, cancel on
// timeout) against a small in-test ChildWorkflows. The engine's real ChildWorkflows is exercised end to end on
// PostgreSQL in subworkflow-e2e.test.ts.
import test from 'ava';
import Handlebars from 'handlebars';
import { renderShellTemplate } from '../../src/workflow/template/render.ts';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import type { ChildStartRequest, ChildTerminal, ChildWorkflows } from '../../src/workflow/engine/child-types.ts';
import type { StateRunContext } from '../../src/workflow/engine/runner-types.ts';
import type { SubworkflowState } from '../../src/workflow/manifest/types.ts';
import { subworkflowRunner } from '../../src/workflow/states/subworkflow.ts';

/** Deployed "workflows" are functions of the input that finish after `ms`. */
class Children implements ChildWorkflows {
  readonly started: ChildStartRequest[] = [];
  readonly cancelled: string[] = [];
  private readonly runs = new Map<string, { done: Promise<ChildTerminal>; cancel: () => void }>();
  constructor(private readonly deployed: Record<string, { ms: number; run: (input: unknown) => ChildTerminal }>) {}

  async start(req: ChildStartRequest): Promise<void> {
    const wf = this.deployed[req.workflow];
    if (!wf) throw new Error(`workflow ${req.workflow} is not deployed in tenant ${req.tenantId}`);
    this.started.push(req);
    if (this.runs.has(req.childExecutionId)) return;
    let cancel = (): void => undefined;
    const done = new Promise<ChildTerminal>((resolve) => {
      const t = setTimeout(() => resolve(wf.run(req.input)), wf.ms);
      cancel = () => {
        clearTimeout(t);
        resolve({ status: 'cancelled', final_output: null, blackboard: {} });
      };
    });
    this.runs.set(req.childExecutionId, { done, cancel });
  }

  async waitTerminal(id: string, signal: AbortSignal): Promise<ChildTerminal> {
    const run = this.runs.get(id);
    if (!run) throw new Error(`no child ${id}`);
    return Promise.race([
      run.done,
      new Promise<never>((_r, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })),
    ]);
  }

  async cancel(id: string): Promise<void> {
    this.cancelled.push(id);
    this.runs.get(id)?.cancel();
  }
}

function ctx(over: Partial<StateRunContext> & { scope?: Record<string, unknown> } = {}): StateRunContext {
  const id = randomUUID();
  const scope = over.scope ?? {};
  return {
    workflowExecutionId: id, tenantId: 't1', stateName: 'child', visit: 1, visitKey: `${id}:child:1`,
    render: (t) => Handlebars.compile(t, { noEscape: true })(scope),
    renderShell: (t) => renderShellTemplate(t, scope as never),
    signal: new AbortController().signal, storage: { shared: {} }, depth: 0, ancestry: ['top'], logger: silentLogger(),
    ...over,
  };
}

function sub(over: Partial<SubworkflowState> = {}): SubworkflowState {
  return { kind: 'Subworkflow', max_state_visits: 5, timeout_seconds: 300, volumes: [], transitions: [], workflow_id: 'review', mode: 'blocking', ...over };
}

const review = { ms: 20, run: (input: unknown): ChildTerminal => ({ status: 'completed', final_output: { verdict: 'ok', got: input }, blackboard: { lint: { status: 'success' }, input } }) };

test('blocking: waits for the child, writes status/result/child_execution_id, result_key patches the blackboard', async (t) => {
  const children = new Children({ review });
  const c = ctx({ scope: { input: { pr: 42 } } });
  const r = await subworkflowRunner({ children })(sub({ input: '{"pr": {{input.pr}} }', result_key: 'review_bb' }), c);
  t.is(r.outcome.status, 'success');
  const out = r.output as { status: string; result: unknown; child_execution_id: string };
  t.is(out.status, 'success');
  t.deepEqual(out.result, { verdict: 'ok', got: { pr: 42 } });
  t.regex(out.child_execution_id, /^[0-9a-f-]{36}$/);
  t.deepEqual(r.blackboardPatch, { review_bb: { lint: { status: 'success' }, input: { pr: 42 } } });
  const req = children.started[0];
  t.like(req, { workflow: 'review', tenantId: 't1', parentExecutionId: c.workflowExecutionId, depth: 1, ancestry: ['top'], input: { pr: 42 } });
});

test('the child id is UUID v5 of the visit key: a re-run of the same visit finds the same child', async (t) => {
  const children = new Children({ review });
  const c = ctx();
  const a = await subworkflowRunner({ children })(sub(), c);
  const b = await subworkflowRunner({ children })(sub(), c);
  const other = await subworkflowRunner({ children })(sub(), { ...c, visit: 2, visitKey: `${c.workflowExecutionId}:child:2` });
  const id = (r: typeof a) => (r.output as { child_execution_id: string }).child_execution_id;
  t.is(id(a), id(b));
  t.not(id(a), id(other));
  t.is(id(a)[14], '5', 'version 5');
});

test('blocking: a failed child fails the state; without result_key no patch', async (t) => {
  const children = new Children({ bad: { ms: 5, run: () => ({ status: 'failed', final_output: null, blackboard: {} }) } });
  const r = await subworkflowRunner({ children })(sub({ workflow_id: 'bad' }), ctx());
  t.is(r.outcome.status, 'failed');
  t.is((r.output as { status: string }).status, 'failed');
  t.regex(r.error ?? '', /child workflow bad \(.+\) ended failed/);
  t.is(r.blackboardPatch, undefined);
});

test('fire_and_forget: success as soon as the child started; result_key ignored', async (t) => {
  const children = new Children({ slow: { ms: 60_000, run: () => ({ status: 'completed', final_output: 1, blackboard: {} }) } });
  const t0 = Date.now();
  const r = await subworkflowRunner({ children })(sub({ workflow_id: 'slow', mode: 'fire_and_forget', result_key: 'x' }), ctx());
  // Far under the child's 60 s: the runner did not wait for it (a generous bound for a loaded machine).
  t.true(Date.now() - t0 < 30_000);
  t.is(r.outcome.status, 'success');
  t.deepEqual(Object.keys(r.output as object).sort(), ['child_execution_id', 'status']);
  t.is(r.blackboardPatch, undefined);
  t.is(children.started.length, 1);
  await children.cancel(children.started[0]!.childExecutionId);
});

test('depth: the child of a depth-9 run is allowed (depth 10); of a depth-10 run fails SubworkflowDepthExceeded', async (t) => {
  const children = new Children({ review });
  t.is((await subworkflowRunner({ children })(sub(), ctx({ depth: 9 }))).outcome.status, 'success');
  const r = await subworkflowRunner({ children })(sub(), ctx({ depth: 10 }));
  t.is(r.outcome.status, 'failed');
  t.regex(r.error ?? '', /^SubworkflowDepthExceeded: starting review would nest 11 levels deep \(limit 10\)/);
  t.is(children.started.length, 1, 'nothing started for the refused one');
});

test('a cycle (the workflow is already an ancestor) fails at run time naming the cycle', async (t) => {
  const children = new Children({ review });
  const r = await subworkflowRunner({ children })(sub({ workflow_id: 'review' }), ctx({ ancestry: ['top', 'review', 'fix'] }));
  t.is(r.outcome.status, 'failed');
  t.regex(r.error ?? '', /circular subworkflow composition review -> fix -> review/);
  t.is(children.started.length, 0);
});

test('a workflow that is not deployed fails at state entry with a descriptive error', async (t) => {
  const r = await subworkflowRunner({ children: new Children({}) })(sub({ workflow_id: 'ghost' }), ctx());
  t.is(r.outcome.status, 'failed');
  t.is(r.error, 'starting child workflow ghost failed: workflow ghost is not deployed in tenant t1');
});

test('the parent state timing out cancels the blocking child', async (t) => {
  const children = new Children({ slow: { ms: 60_000, run: () => ({ status: 'completed', final_output: 1, blackboard: {} }) } });
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error('state "child" timed out after 1 s')), 100);
  const r = await subworkflowRunner({ children })(sub({ workflow_id: 'slow' }), ctx({ signal: ac.signal }));
  t.is(r.outcome.status, 'failed');
  const id = (r.output as { child_execution_id: string }).child_execution_id;
  t.deepEqual(children.cancelled, [id]);
  t.regex(r.error ?? '', /timed out after 1 s; child workflow .+ cancelled/);
});
