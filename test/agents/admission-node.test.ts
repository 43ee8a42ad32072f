// Admission control on a real node (`orch up`, its own process) whose agents run in podman containers (a container
// start takes a second or more, and one slot makes them one at a time), so the queue fills: starts sent at once beyond
// its bound are refused at once — 429 for a
// tenant over max_queued_per_tenant, 503 when the node's max_queued is reached, both with Retry-After and a clear
// body — nothing is written for them, /health/ready says "saturated" while the queue is full and "ready" once it
// drains, /health/live keeps answering, and every admitted execution completes.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { DEFAULT_DOCKER_HOST } from '../../src/agents/runtime/docker.ts';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { eventually, startOrchNode } from '../support/node-process.ts';
import { startScriptedLlm, textReply } from '../support/scripted-llm.ts';
import { api } from './execution-scenarios.ts';

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: admitted, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: docker, model: default }
  task: { instruction: Say ok. }
  execution: { mode: one-shot, validation: [] }
`;

async function podmanNode(t: import('ava').ExecutionContext, admission: string) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-admission-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const llm = await startScriptedLlm(() => textReply('ok'));
  t.teardown(() => llm.close());
  const config = path.join(dir, 'node.yaml');
  await writeFile(
    config,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: admission }
spec:
  node: { id: adm-${randomUUID().slice(0, 8)}, role: hybrid }
  runtime: { default_isolation: docker, docker_host: "${process.env.DOCKER_HOST || DEFAULT_DOCKER_HOST}" }
  llm_providers: [ { name: s, type: openai, endpoint: "${llm.url}", api_key: k, models: [ { alias: default, model: m } ] } ]
  admission: ${admission}
`,
  );
  const n = await startOrchNode({ ORCH_CONFIG: config, ORCH_DATA_DIR: path.join(dir, 'data'), DATABASE_URL: undefined, REDIS_URL: undefined, ORCH_LOG_LEVEL: 'warn' });
  t.teardown(() => n.child.kill('SIGKILL'));
  const s = { http: n.banner.http, token: n.banner.dev_token ?? '' };
  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT });
  t.is(dep.status, 201);
  return { s, agentId: dep.body.agent_id };
}

async function burst(s: { http: string; token: string }, agentId: string, n: number) {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const res = await fetch(`${s.http}/v1/executions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agent_id: agentId, input: 'go' }),
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { execution_id?: string; error?: string } };
    }),
  );
}

async function allEnded(t: import('ava').ExecutionContext, s: { http: string; token: string }, ids: string[]) {
  for (const id of ids) {
    const row = await eventually(async () => {
      const r = await api<{ status: string }>(s, 'GET', `/v1/executions/${id}`);
      return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
    }, 120_000, `execution ${id} to end`);
    t.is(row.status, 'completed');
  }
}

test('a tenant over max_queued_per_tenant gets 429 with Retry-After at once; the admitted ones complete', async (t) => {
  const { s, agentId } = await podmanNode(t, '{ max_concurrent_starts: 1, max_queued: 100, max_queued_per_tenant: 3, retry_after_seconds: 5 }');
  const answers = await burst(s, agentId, 8);
  const admitted = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status !== 200);
  t.is(admitted.length, 3, JSON.stringify(answers));
  for (const r of refused) {
    t.is(r.status, 429);
    t.is(r.retryAfter, '5');
    t.regex(r.body.error ?? '', /too many executions of this tenant waiting to start on this node \(3\)/);
  }
  const listed = await api<{ executions: { execution_id: string }[] }>(s, 'GET', `/v1/executions?agent_id=${agentId}&limit=100`);
  t.deepEqual(listed.body.executions.map((e) => e.execution_id).sort(), admitted.map((a) => a.body.execution_id!).sort(), 'no row for a refused start');
  await allEnded(t, s, admitted.map((a) => a.body.execution_id!));
});

test('a full node answers 503 and /health/ready says saturated until the queue drains; /health/live keeps answering', async (t) => {
  const { s, agentId } = await podmanNode(t, '{ max_concurrent_starts: 1, max_queued: 2, max_queued_per_tenant: 50 }');
  const answers = await burst(s, agentId, 5);
  const admitted = answers.filter((a) => a.status === 200);
  t.is(admitted.length, 2, JSON.stringify(answers));
  for (const r of answers.filter((a) => a.status !== 200)) {
    t.is(r.status, 503);
    t.truthy(r.retryAfter);
    t.regex(r.body.error ?? '', /execution start queue is full \(2\)/);
  }
  const ready = await fetch(`${s.http}/health/ready`);
  const body = (await ready.json()) as { status: string; load: { executions: { queued: number; saturated: boolean } } };
  t.is(ready.status, 503);
  t.is(body.status, 'saturated');
  t.true(body.load.executions.saturated);
  t.is((await fetch(`${s.http}/health/live`)).status, 200);
  await allEnded(t, s, admitted.map((a) => a.body.execution_id!));
  const after = await fetch(`${s.http}/health/ready`);
  const afterBody = (await after.json()) as { status: string; load: { executions: { queued: number }; event_loop_delay: { p99_ms: number } } };
  t.is(after.status, 200);
  t.is(afterBody.status, 'ready');
  t.is(afterBody.load.executions.queued, 0);
  t.is(typeof afterBody.load.event_loop_delay.p99_ms, 'number');
});
