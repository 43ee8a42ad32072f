// Every manifest under examples/workflows/ deployed as a user would (POST /v1/agents, POST /v1/workflows with the
// file's text) on one real `orch up` node and run to its end, so the examples never rot. Together they use all seven
// state kinds of seed 002: System (hello, every flow), Agent and ParallelAgents with consensus (review), Human
// (release-approval, approved over HTTP), ContainerRun and ParallelContainerRun (build, on podman with the local
// runtime image), Subworkflow (ship, which runs build as its child). The model is the scripted LLM server.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { createTestDatabase } from '../support/pg.ts';
import { eventually, startOrchNode, type NodeProcess } from '../support/node-process.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';

const EXAMPLES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/workflows');
const cleanups: Array<() => Promise<unknown> | unknown> = [];
let node: NodeProcess;

interface Run { status: string; error?: string | null; blackboard: Record<string, any>; final_output: Record<string, unknown> | null }

async function api<T>(method: string, url: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${node.banner.http}${url}`, {
    method,
    headers: { authorization: `Bearer ${node.banner.dev_token ?? ''}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
}

async function run(name: string, input: unknown): Promise<string> {
  const res = await api<{ execution_id: string }>('POST', `/v1/workflows/${name}/run`, { input });
  if (res.status !== 201) throw new Error(`run ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.execution_id;
}

async function finished(id: string): Promise<Run> {
  return eventually(async () => {
    const res = await api<Run>('GET', `/v1/workflows/executions/${id}`);
    return ['completed', 'failed', 'cancelled'].includes(res.body.status) ? res.body : undefined;
  }, 150_000, `workflow run ${id} to end`);
}

test.before(async () => {
  const llm = await startScriptedLlm((body) => {
    const all = body.messages.map((m) => String(m.content ?? '')).join('\n');
    if (all.includes('strict reviewer')) return { content: '{"score": 0.8, "confidence": 0.9, "reasoning": "clear, a little short"}' };
    if (all.includes('lenient reviewer')) return { content: '```json\n{"score": 0.95, "confidence": 0.8, "reasoning": "lovely and clear"}\n```' };
    return { content: `Tides rise and fall twice a day. (${/Topic: (\w+)/.exec(all)?.[1] ?? '?'})` };
  });
  cleanups.push(() => llm.close());
  const database = await createTestDatabase({ migrated: true });
  cleanups.push(() => database.drop());
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-examples-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const config = path.join(dir, 'node.yaml');
  await writeFile(config, `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: examples }
spec:
  node: { id: ex-${randomUUID().slice(0, 6)}, role: hybrid }
  runtime: { default_isolation: process }
  llm_providers: [ { name: s, type: openai, endpoint: "${llm.url}", api_key: k, models: [ { alias: default, model: m } ] } ]
`);
  node = await startOrchNode({
    ORCH_CONFIG: config,
    ORCH_DATA_DIR: path.join(dir, 'data'),
    DATABASE_URL: database.url,
    REDIS_URL: undefined,
    DOCKER_HOST: process.env.DOCKER_HOST ?? 'unix:///run/orch-podman/podman.sock',
  });
  cleanups.push(() => node.kill('SIGKILL'));

  for (const file of (await readdir(path.join(EXAMPLES, 'agents'))).sort()) {
    const res = await api('POST', '/v1/agents', { manifest_yaml: await readFile(path.join(EXAMPLES, 'agents', file), 'utf8') });
    if (res.status !== 201) throw new Error(`deploy agents/${file}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  for (const file of (await readdir(EXAMPLES)).filter((f) => f.endsWith('.yaml')).sort()) {
    const res = await api('POST', '/v1/workflows', { manifest_yaml: await readFile(path.join(EXAMPLES, file), 'utf8') });
    if (res.status !== 201) throw new Error(`deploy ${file}: ${res.status} ${JSON.stringify(res.body)}`);
  }
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch(() => undefined);
});

test('the examples together use all seven state kinds, and each is named after its file', async (t) => {
  const kinds = new Set<string>();
  for (const file of (await readdir(EXAMPLES)).filter((f) => f.endsWith('.yaml'))) {
    const doc = parse(await readFile(path.join(EXAMPLES, file), 'utf8')) as { metadata: { name: string }; spec: { states: Record<string, { kind: string }> } };
    t.is(`${doc.metadata.name}.yaml`, file);
    for (const state of Object.values(doc.spec.states)) kinds.add(state.kind);
  }
  t.deepEqual([...kinds].sort(), ['Agent', 'ContainerRun', 'Human', 'ParallelAgents', 'ParallelContainerRun', 'Subworkflow', 'System']);
});

test('hello: System states, an input schema and a final output', async (t) => {
  const row = await finished(await run('hello', { name: 'Ada' }));
  t.is(row.status, 'completed', row.error ?? '');
  t.deepEqual(row.final_output, { message: 'Hello, Ada', letters: '3' });
  const bad = await api<{ error: unknown }>('POST', '/v1/workflows/hello/run', { input: {} });
  t.is(bad.status, 422, 'the input schema requires a name');
});

test('review: an Agent writes, two judges agree by weighted consensus', async (t) => {
  const row = await finished(await run('review', { topic: 'tides' }));
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.judge.status, 'success', JSON.stringify(row.blackboard.judge));
  t.is(row.blackboard.judge.individual_results.length, 2);
  t.true(Math.abs(row.blackboard.judge.consensus.score - (2 * 0.8 + 0.95) / 3) < 1e-9, String(row.blackboard.judge.consensus.score));
  t.like(row.final_output, { verdict: 'accepted', text: 'Tides rise and fall twice a day. (tides)' });
});

test('release-approval: the run waits at the Human state until it is approved over HTTP', async (t) => {
  const id = await run('release-approval', { version: '1.4.0' });
  const pending = await eventually(async () => {
    const res = await api<{ pending_requests: Array<{ id: string; execution_id: string; prompt: string }> }>('GET', '/v1/human-approvals');
    return res.body.pending_requests?.find((r) => r.execution_id === id);
  }, 120_000, 'the approval request');
  t.is(pending.prompt, 'Release 1.4.0 (release 1.4.0)?');
  t.is((await api<Run>('GET', `/v1/workflows/executions/${id}`)).body.status, 'waiting_for_human_input');
  const approved = await api('POST', `/v1/human-approvals/${pending.id}/approve`, { feedback: 'ship it' });
  t.is(approved.status, 200, JSON.stringify(approved.body));
  const row = await finished(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.deepEqual(row.final_output, { released: 'true', feedback: 'ship it' });
});

test('build: a ContainerRun, then two steps in a ParallelContainerRun, in podman', async (t) => {
  const row = await finished(await run('build', { rev: 'abc123' }));
  t.is(row.status, 'completed', row.error ?? '');
  t.deepEqual(row.final_output, { artifact: 'built-abc123', checks: 'lint ok; tests 2' });
});

test('ship: a Subworkflow runs build as its child and gets its final output', async (t) => {
  const row = await finished(await run('ship', { rev: 'f00d' }));
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.build.status, 'success', JSON.stringify(row.blackboard.build));
  t.deepEqual(row.final_output, { shipped: 'built-f00d' });
});
