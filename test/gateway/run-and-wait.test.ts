// Run-and-wait over HTTP (issue 16): `POST /v1/workflows/{name}/run` with `Prefer: wait=N` (RFC 7240) answers 200
// with the run's end when it ends within the wait, else 201 with the run id at the wait's end; a malformed
// preference is ignored (201 at once, no Preference-Applied), a large one capped. Its gRPC twin RunWorkflow.
import test from 'ava';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { OrchRuntimeClient, RunWorkflowRequest, type RunWorkflowResponse } from '../../src/gen/orch/runtime/v1/runtime.js';
import { startTestNode } from '../support/in-process-node.ts';
import { raceManifest } from '../../bench/workflow-race.ts';
import { humanWorkflow } from './ws-support.ts';
import { preferWaitSeconds } from '../../src/gateway/http/prefer.ts';
import type { ActorRuntime } from '../../src/actors/runtime.ts';
import { awaitRunEnd } from '../../src/workflow/await-end.ts';
import { Wakers } from '../../src/workflow/engine/wakers.ts';

test('Prefer parsing: wait=N among other preferences, capped; malformed values ignored', (t) => {
  t.is(preferWaitSeconds('wait=5'), 5);
  t.is(preferWaitSeconds('respond-async, wait=10'), 10);
  t.is(preferWaitSeconds('WAIT = 7 ;x=y'), 7);
  t.is(preferWaitSeconds('wait="3"'), 3);
  t.is(preferWaitSeconds(['return=minimal', 'wait=4']), 4);
  t.is(preferWaitSeconds('wait=100000'), 60);
  for (const bad of ['wait=abc', 'wait=-1', 'wait=1.5', 'wait=', 'wait=0', 'respond-async', '']) t.is(preferWaitSeconds(bad), undefined, bad);
  t.is(preferWaitSeconds(undefined), undefined);
});

test('run-and-wait: a short run answers 200 with its end; a long one the run id at the wait end; bad Prefer ignored', async (t) => {
  const n = await startTestNode(t, { name: 'runwait' });
  const token = await n.token();
  for (const yaml of [raceManifest('quick'), humanWorkflow('slow')]) {
    const d = await n.api('POST', '/v1/workflows', { manifest_yaml: yaml }, token);
    t.is(d.status, 201, JSON.stringify(d.body));
  }

  // Short: ten durable steps end well within 20 s.
  const res = await fetch(`${n.http}/v1/workflows/quick/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', prefer: 'wait=20' },
    body: JSON.stringify({ input: {} }),
  });
  const body = (await res.json()) as { execution_id?: string; status?: string; final_output?: unknown };
  t.is(res.status, 200, JSON.stringify(body));
  t.is(res.headers.get('preference-applied'), 'wait=20');
  t.is(body.status, 'completed');
  t.true('final_output' in body);
  t.regex(body.execution_id ?? '', /^[0-9a-f-]{36}$/);
  // The answer is the committed end: the row agrees.
  const row = await n.api<{ status: string; blackboard?: Record<string, unknown> }>('GET', `/v1/workflows/executions/${body.execution_id}`, undefined, token);
  t.is(row.body.status, 'completed');

  // Long: a Human state waits forever; the answer is the run id when the 1 s wait is over.
  const t0 = Date.now();
  const slow = await fetch(`${n.http}/v1/workflows/slow/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', prefer: 'wait=1' },
    body: '{}',
  });
  const slowBody = (await slow.json()) as { execution_id?: string; status?: string };
  t.is(slow.status, 201, JSON.stringify(slowBody));
  t.is(slow.headers.get('preference-applied'), 'wait=1');
  t.is(slowBody.status, 'started');
  t.regex(slowBody.execution_id ?? '', /^[0-9a-f-]{36}$/);
  t.true(Date.now() - t0 >= 900, 'it waited for the preference');

  // Malformed: ignored (RFC 7240), so 201 without Preference-Applied.
  const bad = await fetch(`${n.http}/v1/workflows/slow/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', prefer: 'wait=soon' },
    body: '{}',
  });
  t.is(bad.status, 201);
  t.is(bad.headers.get('preference-applied'), null);
  t.is(((await bad.json()) as { status?: string }).status, 'started');

  // Unknown workflow with a wait: still the 404 of a plain run.
  const missing = await fetch(`${n.http}/v1/workflows/nope/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', prefer: 'wait=5' },
    body: '{}',
  });
  t.is(missing.status, 404);
});

test('run-and-wait for a run held elsewhere: woken by its terminal event on the bus, not by the row poll', async (t) => {
  const n = await startTestNode(t, { name: 'runwait-remote' });
  const token = await n.token();
  t.is((await n.api('POST', '/v1/workflows', { manifest_yaml: humanWorkflow('gate') }, token)).status, 201);
  const started = await n.api<{ execution_id: string }>('POST', '/v1/workflows/gate/run', {}, token);
  t.is(started.status, 201);
  const id = started.body.execution_id;
  // As another node sees it: the run is not live here and no terminal cache; the safety-net poll is 60 s, so only
  // the bus can end the wait within the test's time.
  const deps = { db: n.node.db, bus: n.node.bus, actors: { isLive: () => false } as unknown as ActorRuntime, wakers: new Wakers() };
  const t0 = Date.now();
  const waiting = awaitRunEnd(deps, id, 50_000, undefined, 60_000);
  // Wait until the run is at its Human state, then answer it.
  for (let i = 0; i < 200; i++) {
    const row = await n.api<{ status: string }>('GET', `/v1/workflows/executions/${id}`, undefined, token);
    if (row.body.status === 'waiting_for_human_input') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.is((await n.api('POST', `/v1/workflows/executions/${id}/signal`, { response: 'yes' }, token)).status, 200);
  const end = await waiting;
  t.is(end?.status, 'completed');
  t.is(end?.blackboard['shipped'], true);
  t.true(Date.now() - t0 < 45_000, 'ended by the bus wake-up, not the 60 s poll');
  // Already ended before the wait began: the first row read answers it.
  const again = await awaitRunEnd(deps, id, 5_000, undefined, 60_000);
  t.is(again?.status, 'completed');
});

/** A one-state workflow whose final_output doubles its input (output_template). */
const DOUBLER = `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: doubler
  version: 1.0.0
  output_template:
    doubled: '{{blackboard.doubled}}'
spec:
  initial_state: work
  states:
    work:
      kind: System
      command: 'update_blackboard {"doubled": "{{input.n}}{{input.n}}"}'
      transitions: []
`;

function runWorkflow(client: InstanceType<typeof OrchRuntimeClient>, req: Partial<RunWorkflowRequest>, token?: string): Promise<{ res?: RunWorkflowResponse; err?: ServiceError; ms: number }> {
  const md = new Metadata();
  if (token) md.set('authorization', `Bearer ${token}`);
  const t0 = Date.now();
  return new Promise((resolve) =>
    client.runWorkflow(RunWorkflowRequest.fromPartial(req), md, { deadline: Date.now() + 60_000 }, (err, res) => resolve({ ...(err ? { err } : { res }), ms: Date.now() - t0 })),
  );
}

test('gRPC RunWorkflow: with wait_seconds the end and output; a long run the id at the wait end; bad input INVALID_ARGUMENT', async (t) => {
  const n = await startTestNode(t, { name: 'runwait-grpc' });
  const token = await n.token();
  for (const yaml of [DOUBLER, humanWorkflow('slowgrpc')]) t.is((await n.api('POST', '/v1/workflows', { manifest_yaml: yaml }, token)).status, 201);
  const client = new OrchRuntimeClient(n.node.addresses.grpc, credentials.createInsecure());
  t.teardown(() => client.close());

  const done = await runWorkflow(client, { workflow: 'doubler', input_json: '{"n": 21}', wait_seconds: 20 }, token);
  t.is(done.err, undefined, done.err?.details);
  t.is(done.res?.status, 'completed');
  t.deepEqual(JSON.parse(done.res?.final_output_json ?? 'undefined'), { doubled: '2121' });
  t.is(done.res?.error, undefined);
  const row = await n.api<{ status: string; final_output: unknown }>('GET', `/v1/workflows/executions/${done.res?.execution_id}`, undefined, token);
  t.like(row.body, { status: 'completed', final_output: { doubled: '2121' } }, 'the answer is the committed end');

  // No wait: the run id at once, as a plain start.
  const now = await runWorkflow(client, { workflow: 'slowgrpc' }, token);
  t.is(now.res?.status, 'started');
  t.regex(now.res?.execution_id ?? '', /^[0-9a-f-]{36}$/);
  t.is(now.res?.final_output_json, undefined);

  // A run still going when the wait ends: its id, after the wait.
  const slow = await runWorkflow(client, { workflow: 'slowgrpc', wait_seconds: 1 }, token);
  t.is(slow.res?.status, 'started');
  t.true(slow.ms >= 900, `it waited for the ask (${slow.ms} ms)`);

  const badJson = await runWorkflow(client, { workflow: 'doubler', input_json: '{nope', wait_seconds: 5 }, token);
  t.is(badJson.err?.code, status.INVALID_ARGUMENT);
  t.is(badJson.err?.details, 'input_json is not valid JSON');
  const badBoard = await runWorkflow(client, { workflow: 'doubler', blackboard_json: '[1]', wait_seconds: 5 }, token);
  t.is(badBoard.err?.code, status.INVALID_ARGUMENT);
  t.is((await runWorkflow(client, { workflow: 'nope', wait_seconds: 5 }, token)).err?.code, status.NOT_FOUND);
  t.is((await runWorkflow(client, { workflow: 'doubler', wait_seconds: 5 })).err?.code, status.UNAUTHENTICATED);
  // Nothing half-written by the refusals: only the three runs above exist.
  const list = await n.api<{ count: number }>('GET', '/v1/workflows/executions?limit=50', undefined, token);
  t.is(list.body.count, 3);
});
