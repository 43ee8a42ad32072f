// Workflow run and human-approval routes on a real `orch up` node over PostgreSQL (seed 000, CONTRACT.md): run 201,
// 404 and 422 (nothing written), list with the workflow filter, detail with final_output, signal, approvals with
// the seed's exact bodies, cancel, DELETE 409 while running, paged logs and the SSE stream (history, then live).
import test from 'ava';
import WebSocket from 'ws';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { createTestDatabase } from '../support/pg.ts';
import { eventually, runOrch, startOrchNode } from '../support/node-process.ts';

const GATED = `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: gated
  version: 1.0.0
  input_schema: { type: object, required: [who], properties: { who: { type: string } } }
  output_template: { greeting: 'hello {{input.who}}', answer: '{{gate.response}}' }
spec:
  initial_state: prep
  states:
    prep:
      kind: System
      command: 'echo prepared'
      transitions: [{ target: gate }]
    gate:
      kind: Human
      prompt: 'Greet {{input.who}}?'
      transitions:
        - { condition: input_equals_yes, target: done }
        - { condition: input_equals_no, target: done }
        - { target: done }
    done:
      kind: System
      command: 'true'
      transitions: []
`;

test('workflow run and approval routes', async (t) => {
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-wf-routes-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const config = path.join(dir, 'node.yaml');
  await writeFile(config, `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: r }\nspec:\n  node: { id: r-${randomUUID().slice(0, 6)}, role: hybrid }\n`);
  const node = await startOrchNode({ ORCH_CONFIG: config, ORCH_DATA_DIR: path.join(dir, 'data'), DATABASE_URL: database.url, REDIS_URL: undefined });
  t.teardown(() => node.child.kill('SIGKILL'));
  const base = node.banner.http;
  const headers = { authorization: `Bearer ${node.banner.dev_token ?? ''}` };
  const api = async <T = Record<string, unknown>>(method: string, url: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: body !== undefined ? { ...headers, 'content-type': 'application/json' } : headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
  };
  const who = (await api<{ tenant_id?: string; subject?: string }>('GET', '/v1/whoami')).body;
  const db = await openDb({ url: database.url, dataDir: dir }, silentLogger());
  t.teardown(() => db.close());
  const defs = new WorkflowDefinitionService(db, silentLogger());
  const deployed = await defs.deploy({ tenant: who.tenant_id ?? 'orch-system', subject: who.subject ?? 'dev', yaml: GATED });

  t.is((await api('POST', '/v1/workflows/nope/run', {})).status, 404);
  const bad = await api<{ error: string; details: unknown[] }>('POST', '/v1/workflows/gated/run', { input: { who: 5 } });
  t.is(bad.status, 422);
  t.true(Array.isArray(bad.body.details) && bad.body.details.length > 0, JSON.stringify(bad.body));
  t.is((await api<{ executions: unknown[] }>('GET', '/v1/workflows/executions')).body.executions.length, 0, '422 wrote nothing');

  const run = await api<{ execution_id: string; status: string }>('POST', '/v1/workflows/gated/run', { input: { who: 'ann' }, intent: 'say hi', blackboard: { extra: 1 } });
  t.is(run.status, 201);
  t.is(run.body.status, 'started');
  const id = run.body.execution_id;
  await eventually(async () => ((await api<{ status: string }>('GET', `/v1/workflows/executions/${id}`)).body.status === 'waiting_for_human_input' ? true : undefined), 60_000, 'waiting');

  const detail = await api<Record<string, unknown>>('GET', `/v1/workflows/executions/${id}`);
  t.like(detail.body, { execution_id: id, workflow_id: deployed.workflow_id, status: 'waiting_for_human_input', current_state: 'gate', final_output: null, blackboard: { extra: 1, intent: 'say hi' } });
  t.is((await api('GET', '/v1/workflows/executions/not-a-uuid')).status, 400);
  t.is((await api('GET', `/v1/workflows/executions/${randomUUID()}`)).status, 404);
  const byName = await api<{ executions: { execution_id: string }[] }>('GET', '/v1/workflows/executions?workflow_id=gated');
  t.deepEqual(byName.body.executions.map((e) => e.execution_id), [id]);
  const byId = await api<{ executions: unknown[] }>('GET', `/v1/workflows/executions?workflow_id=${deployed.workflow_id}`);
  t.is(byId.body.executions.length, 1);
  t.is((await api<{ executions: unknown[] }>('GET', '/v1/workflows/executions?workflow_id=other')).body.executions.length, 0);
  t.is((await api('DELETE', `/v1/workflows/executions/${id}`)).status, 409);

  // Approvals.
  const pending = await api<{ pending_requests: { id: string; execution_id: string; prompt: string; created_at: string; timeout_seconds: number | null }[] }>('GET', '/v1/human-approvals');
  t.is(pending.status, 200);
  t.is(pending.body.pending_requests.length, 1);
  const req = pending.body.pending_requests[0]!;
  t.like(req, { execution_id: id, prompt: 'Greet ann?', timeout_seconds: null });
  t.truthy(req.created_at);
  t.deepEqual(await api('GET', '/v1/human-approvals/nope'), { status: 400, body: { error: 'Invalid request ID' } });
  t.like((await api('GET', `/v1/human-approvals/${req.id}`)).body, { request: { id: req.id } });
  t.deepEqual(await api('GET', `/v1/human-approvals/${randomUUID()}`), { status: 200, body: { error: 'Request not found or already completed' } });
  t.is((await api('POST', `/v1/human-approvals/${req.id}/reject`, {})).status, 400, 'reject needs a reason');
  t.is((await api('POST', `/v1/workflows/executions/${id}/signal`, {})).status, 400, 'signal needs a response');
  const approved = await api<{ status: string }>('POST', `/v1/human-approvals/${req.id}/approve`, { feedback: 'go', approved_by: 'bob' });
  t.is(approved.status, 200);
  t.is(approved.body.status, 'approved');
  t.deepEqual(await api('GET', `/v1/human-approvals/${req.id}`), { status: 200, body: { error: 'Request not found or already completed' } });

  const finished = await eventually(async () => {
    const d = await api<{ status: string; final_output: unknown }>('GET', `/v1/workflows/executions/${id}`);
    return d.body.status === 'completed' ? d.body : undefined;
  }, 60_000, 'completion');
  t.deepEqual(finished.final_output, { greeting: 'hello ann', answer: 'approved' });
  t.is((await api('POST', `/v1/workflows/executions/${id}/signal`, { response: 'yes' })).status, 409);

  // Logs and the SSE stream of a finished run: the whole history, ending with the terminal event.
  const logs = await api<{ execution_id: string; events: { sequence: number; event_type: string; state_name: string | null; iteration_number: number | null; recorded_at: string }[]; count: number; limit: number; offset: number }>(
    'GET',
    `/v1/workflows/executions/${id}/logs?limit=3&offset=1`,
  );
  t.like(logs.body, { execution_id: id, count: 3, limit: 3, offset: 1 });
  t.like(logs.body.events[0], { sequence: 2, event_type: 'WorkflowStateEntered', state_name: 'prep', iteration_number: 1 });
  t.is((await api<{ limit: number }>('GET', `/v1/workflows/executions/${id}/logs?limit=1000`)).body.limit, 200);
  const sse = await fetch(`${base}/v1/workflows/executions/${id}/stream`, { headers });
  t.is(sse.headers.get('content-type'), 'text/event-stream');
  const text = await sse.text();
  const types = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
  t.is(types[0], 'WorkflowExecutionStarted');
  t.is(types.at(-1), 'WorkflowExecutionCompleted');
  t.true(types.includes('WorkflowHumanInputReceived'));

  // A second run cancelled while it waits, then removed.
  const second = await api<{ execution_id: string }>('POST', '/v1/workflows/gated/run', { input: { who: 'bo' } });
  const id2 = second.body.execution_id;
  await eventually(async () => ((await api<{ status: string }>('GET', `/v1/workflows/executions/${id2}`)).body.status === 'waiting_for_human_input' ? true : undefined), 60_000, 'waiting');
  const live = fetch(`${base}/v1/workflows/executions/${id2}/stream`, { headers }).then((r) => r.text());
  // The WebSocket feed carries the same stream: history, then live.
  const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/ws`, { headers });
  const wsTypes: string[] = [];
  const wsDone = new Promise<void>((resolve, reject) => {
    ws.on('error', reject);
    ws.on('message', (data: Buffer) => {
      const msg = JSON.parse(data.toString()) as Record<string, unknown>;
      const type = Object.keys(msg).find((k) => k.startsWith('Workflow'));
      if (type) wsTypes.push(type);
      if (type === 'WorkflowExecutionCancelled') resolve();
    });
  });
  await new Promise<void>((resolve) => ws.on('open', () => resolve()));
  ws.send(JSON.stringify({ subscribe: `workflow:${id2}` }));
  await eventually(async () => (wsTypes.includes('WorkflowWaitingForHumanInput') ? true : undefined), 60_000, 'ws history');
  t.like((await api('POST', `/v1/workflows/executions/${id2}/cancel`)).body, { cancelled: true, execution_id: id2 });
  const liveText = await live;
  t.regex(liveText, /event: WorkflowExecutionCancelled/);
  await wsDone;
  ws.close();
  t.is(wsTypes[0], 'WorkflowExecutionStarted');
  t.is(wsTypes.at(-1), 'WorkflowExecutionCancelled');
  await eventually(async () => ((await api<{ status: string }>('GET', `/v1/workflows/executions/${id2}`)).body.status === 'cancelled' ? true : undefined), 60_000, 'cancelled');
  t.deepEqual(await api('DELETE', `/v1/workflows/executions/${id2}`), { status: 200, body: { removed: true, execution_id: id2 } });
  t.is((await api('GET', `/v1/workflows/executions/${id2}`)).status, 404);

  // The CLI over the same routes.
  const env = { ORCH_URL: base, ORCH_TOKEN: node.banner.dev_token ?? '' };
  const started = await runOrch(['workflow', 'run', 'gated', '--input', '{"who":"cy"}'], env);
  t.is(started.code, 0, started.stderr);
  const id3 = /started ([0-9a-f-]{36})/.exec(started.stdout)?.[1] ?? '';
  await eventually(async () => ((await api<{ status: string }>('GET', `/v1/workflows/executions/${id3}`)).body.status === 'waiting_for_human_input' ? true : undefined), 60_000, 'waiting');
  const ls = await runOrch(['--json', 'approvals', 'ls'], env);
  t.is(ls.code, 0, ls.stderr);
  const reqs = (JSON.parse(ls.stdout) as { pending_requests: { id: string; execution_id: string }[] }).pending_requests;
  const mine = reqs.find((r) => r.execution_id === id3);
  t.truthy(mine);
  const rejected = await runOrch(['approvals', 'reject', mine!.id, '--reason', 'not today'], env);
  t.is(rejected.code, 0, rejected.stderr);
  await eventually(async () => ((await api<{ status: string }>('GET', `/v1/workflows/executions/${id3}`)).body.status === 'completed' ? true : undefined), 60_000, 'completed');
  const status = await runOrch(['--json', 'workflow', 'status', id3], env);
  t.is(status.code, 0, status.stderr);
  t.like(JSON.parse(status.stdout), { status: 'completed', final_output: { greeting: 'hello cy', answer: 'rejected' } });
  const logsCli = await runOrch(['workflow', 'logs', id3, '--limit', '2'], env);
  t.is(logsCli.code, 0, logsCli.stderr);
  t.regex(logsCli.stdout, /WorkflowExecutionStarted/);
  const cancelDone = await runOrch(['workflow', 'cancel', id3], env);
  t.is(cancelDone.code, 1);
  t.regex(cancelDone.stderr, /already completed/);
  const following = runOrch(['workflow', 'run', 'gated', '--input', '{"who":"di"}', '--wait'], env, 120_000);
  const id4 = await eventually(async () => {
    const list = await api<{ executions: { execution_id: string; status: string; input: { who?: string } }[] }>('GET', '/v1/workflows/executions');
    return list.body.executions.find((e) => e.input.who === 'di' && e.status === 'waiting_for_human_input')?.execution_id;
  }, 60_000, 'the followed run to wait');
  t.is((await api('POST', `/v1/workflows/executions/${id4}/signal`, { response: 'yes' })).status, 200);
  const followed = await following;
  t.is(followed.code, 0, followed.stderr);
  t.regex(followed.stdout, /→ gate \(visit 1\)/);
  t.regex(followed.stdout, /completed/);
});
