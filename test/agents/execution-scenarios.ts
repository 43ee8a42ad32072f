// Scenarios shared by the process-isolation and podman end-to-end tests (one implementation, two sandboxes).
import type { ExecutionContext } from 'ava';
import { credentials, Metadata } from '@grpc/grpc-js';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import WebSocket from 'ws';
import { OrchRuntimeClient, type ExecutionEvent } from '../../src/gen/orch/runtime/v1/runtime.js';
import { eventually, startOrchNode, type NodeProcess } from '../support/node-process.ts';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.ts';

export interface ScenarioEnv {
  dir: string;
  isolation: 'process' | 'docker';
  dockerHost?: string;
  databaseUrl?: string;
}

type JsonEvent = Record<string, Record<string, unknown>>;

interface ChatMessage {
  role: string;
  content?: string | null;
  tool_calls?: unknown[];
}

/** Where the model is in the task, from the conversation alone (so a replayed request maps to the same step). */
export function stepOf(body: { messages: ChatMessage[] }): { iteration: number; toolsDone: number; key: string } {
  const msgs = body.messages;
  const users = msgs.map((m, i) => (m.role === 'user' ? i : -1)).filter((i) => i >= 0);
  const lastUser = users[users.length - 1] ?? 0;
  const toolsDone = msgs.slice(lastUser + 1).filter((m) => m.role === 'tool').length;
  return { iteration: users.length, toolsDone, key: `${users.length}:${toolsDone}` };
}

const BROKEN = "require('fs').appendFileSync('runs.log', 'x\\n'); console.error('boom'); process.exit(2)";
const FIXED = "require('fs').appendFileSync('runs.log', 'x\\n'); console.log('hello from orch')";

/** The model of the acceptance scenario: write, run, answer; the first program fails, the second works. */
export function coderReply(body: { messages: ChatMessage[] }): { content?: string; tool_calls?: { name: string; arguments: Record<string, unknown> }[] } {
  const s = stepOf(body);
  const program = s.iteration <= 1 ? BROKEN : FIXED;
  if (s.toolsDone === 0) return { tool_calls: [{ name: 'fs_write', arguments: { path: 'main.js', content: program } }] };
  if (s.toolsDone === 1) return { tool_calls: [{ name: 'cmd_run', arguments: { command: 'node', args: ['main.js'] } }] };
  return { content: s.iteration <= 1 ? 'wrote main.js' : 'fixed main.js' };
}

const AGENT = (name: string, isolation: string): string => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: ${isolation}, model: default }
  task: { instruction: Write main.js that prints a greeting and run it with node. }
  execution:
    mode: iterative
    max_iterations: 3
    llm_timeout_seconds: 20
    iteration_timeout: 60
    validation: [ { type: exit_code, expected: 0 } ]
  security:
    resources: { timeout: 120 }
  tools:
    - fs.write
    - fs.read
    - name: cmd.run
      executor: builtin:cmd
      config: { subcommand_allowlist: { node: [], sleep: [] } }
`;

export interface Started {
  node: NodeProcess;
  llm: ScriptedLlm;
  token: string;
  http: string;
  configFile: string;
  nodeEnv: Record<string, string | undefined>;
}

export async function startStack(t: ExecutionContext, env: ScenarioEnv, llm: ScriptedLlm, nodeId = `n-${Math.random().toString(36).slice(2, 8)}`): Promise<Started> {
  const configFile = path.join(env.dir, 'node.yaml');
  await writeFile(
    configFile,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: ${nodeId} }
spec:
  node: { id: ${nodeId}, role: hybrid }
  llm_providers:
    - { name: scripted, type: openai, endpoint: "${llm.url}", api_key: test-key, models: [ { alias: default, model: scripted-1 } ] }
  runtime: { default_isolation: ${env.isolation}${env.dockerHost ? `, docker_host: "${env.dockerHost}"` : ''} }
`,
  );
  const nodeEnv = {
    ORCH_CONFIG: configFile,
    ORCH_DATA_DIR: path.join(env.dir, 'data'),
    DATABASE_URL: env.databaseUrl,
    REDIS_URL: undefined,
    DOCKER_HOST: env.dockerHost,
  };
  const node = await startOrchNode(nodeEnv);
  t.teardown(() => node.child.kill('SIGKILL'));
  return { node, llm, token: node.banner.dev_token ?? '', http: node.banner.http, configFile, nodeEnv };
}

export async function api<T>(s: { http: string; token: string }, method: string, url: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${s.http}${url}`, {
    method,
    headers: { authorization: `Bearer ${s.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

export async function deployAgent(t: ExecutionContext, s: Started, name: string, isolation: string): Promise<string> {
  const res = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT(name, isolation) });
  t.is(res.status, 201, JSON.stringify(res.body));
  return res.body.agent_id;
}

/** ExecuteAgent over gRPC: every event until the stream ends, as `{variant: value}` JSON. */
function executeOverGrpc(s: Started, agentId: string, input: string): Promise<JsonEvent[]> {
  const client = new OrchRuntimeClient(s.node.banner.grpc, credentials.createInsecure());
  const md = new Metadata();
  md.set('authorization', `Bearer ${s.token}`);
  return new Promise((resolve, reject) => {
    const events: JsonEvent[] = [];
    const stream = client.executeAgent({ agent_id: agentId, input, context_json: '', workflow_execution_id: undefined }, md);
    stream.on('data', (e: ExecutionEvent) => {
      // JSON round trip: proto3 optional fields decode as undefined, which JSON (SSE, WebSocket) does not carry.
      if (e.event) events.push(JSON.parse(JSON.stringify({ [e.event.$case]: e.event.value })) as JsonEvent);
    });
    stream.on('error', reject);
    stream.on('end', () => {
      client.close();
      resolve(events);
    });
  });
}

export async function sseEvents(s: { http: string; token: string }, executionId: string): Promise<JsonEvent[]> {
  const res = await fetch(`${s.http}/v1/executions/${executionId}/stream`, { headers: { authorization: `Bearer ${s.token}` } });
  if (res.status !== 200) throw new Error(`SSE ${res.status}: ${await res.text()}`);
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) throw new Error('SSE content type');
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as JsonEvent);
}

export function wsEvents(s: Started, executionId: string): Promise<JsonEvent[]> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${s.http.replace(/^http/, 'ws')}/v1/ws`, { headers: { authorization: `Bearer ${s.token}` } });
    const events: JsonEvent[] = [];
    ws.on('open', () => ws.send(JSON.stringify({ subscribe: `execution:${executionId}` })));
    ws.on('message', (data: Buffer) => {
      const msg = JSON.parse(data.toString()) as Record<string, unknown>;
      if ('error' in msg) return reject(new Error(String(msg.error)));
      if ('subscribed' in msg) return;
      const { stream: _s, seq: _q, ...event } = msg;
      events.push(event as JsonEvent);
      if ('execution_completed' in event || 'execution_failed' in event) {
        ws.close();
        resolve(events);
      }
    });
    ws.on('error', reject);
  });
}

const variants = (events: JsonEvent[]): string[] => events.map((e) => Object.keys(e)[0] ?? '');

/** Timestamps differ per rendering only if they were made per rendering; they must not be. Compare whole events. */
export async function runIterativeScenario(t: ExecutionContext, env: ScenarioEnv): Promise<void> {
  const llm = await startScriptedLlm((body) => coderReply(body as { messages: ChatMessage[] }));
  t.teardown(() => llm.close());
  const s = await startStack(t, env, llm);
  const agentId = await deployAgent(t, s, 'coder', env.isolation);

  const grpcEvents = await executeOverGrpc(s, agentId, 'please greet');
  t.deepEqual(variants(grpcEvents), [
    'execution_started',
    'iteration_started',
    'iteration_output', // the command's stderr (boom)
    'iteration_output', // the model's answer
    'iteration_failed',
    'refinement_applied',
    'iteration_started',
    'iteration_output', // hello from orch
    'iteration_output',
    'iteration_completed',
    'execution_completed',
  ]);
  const executionId = String(grpcEvents[0]?.execution_started?.execution_id);
  const failed = grpcEvents[4]?.iteration_failed as { error: { error_type: string; message: string } };
  t.is(failed.error.error_type, 'ValidationFailed');
  t.regex(failed.error.message, /exited with 2, expected 0[\s\S]*boom/);
  t.regex(String(grpcEvents[5]?.refinement_applied?.code_diff), /boom/);
  t.is(grpcEvents[7]?.iteration_output?.output, 'hello from orch\n');
  t.like(grpcEvents[10]?.execution_completed, { final_output: 'fixed main.js', total_iterations: 2 });

  // The same events, field for field, over SSE (replayed from history) and the WebSocket feed.
  t.deepEqual(await sseEvents(s, executionId), grpcEvents);
  t.deepEqual(await wsEvents(s, executionId), grpcEvents);

  // The model got the failure of iteration 1 in its prompt for iteration 2.
  const second = llm.requests.find((r) => stepOf(r as { messages: ChatMessage[] }).key === '2:0') as { messages: ChatMessage[] } | undefined;
  t.regex(String(second?.messages.at(-1)?.content), /exited with 2/);
  const detail = await api<{ status: string; iteration: number; usage: { prompt_tokens: number } }>(s, 'GET', `/v1/executions/${executionId}`);
  t.is(detail.body.status, 'completed');
  t.is(detail.body.iteration, 2);
  const logs = await api<{ events: { event_type: string }[] }>(s, 'GET', `/v1/executions/${executionId}/logs`);
  t.deepEqual([...new Set(logs.body.events.map((e) => e.event_type))], ['ExecutionStarted', 'ExecutionOutputReceived', 'ExecutionCompleted']);
}

/** Host pids of the `sleep <secs>` processes (a sandboxed or containerised process is visible on the host too). */
async function sleepPids(secs: string): Promise<string[]> {
  const pids = (await readdir('/proc')).filter((p) => /^\d+$/.test(p));
  const found: string[] = [];
  for (const pid of pids) {
    const argv = await readFile(`/proc/${pid}/cmdline`, 'utf8').then((c) => c.split('\0'), (): string[] => []);
    const i = argv.indexOf(secs);
    if (i > 0 && /(^|\/)sleep$/.test(argv[i - 1] ?? '')) found.push(pid);
  }
  return found;
}

/** When the node received a request, from its own log line (`time` is written at the response, `ms` is the elapsed). */
export function requestReceivedAt(stderr: string, method: string, url: string): number | undefined {
  for (const line of stderr.split('\n')) {
    if (!line.includes(url)) continue;
    try {
      const l = JSON.parse(line) as { msg?: string; method?: string; url?: string; time?: number; ms?: number };
      if (l.msg === 'request' && l.method === method && l.url === url && typeof l.time === 'number' && typeof l.ms === 'number') return l.time - l.ms;
    } catch {
      // not a log line of ours
    }
  }
  return undefined;
}

export async function runCancelScenario(t: ExecutionContext, env: ScenarioEnv): Promise<{ executionId: string; s: Started }> {
  // A unique duration, so this test finds its own sleep among the machine's processes.
  const secs = String(3600 + Math.floor(Math.random() * 100_000));
  let asked = false;
  const llm = await startScriptedLlm((body) => {
    const st = stepOf(body as { messages: ChatMessage[] });
    if (st.toolsDone === 0) {
      asked = true;
      return { tool_calls: [{ name: 'cmd_run', arguments: { command: 'sleep', args: [secs] } }] };
    }
    return { content: 'slept' };
  });
  t.teardown(() => llm.close());
  const s = await startStack(t, env, llm);
  const agentId = await deployAgent(t, s, 'sleeper', env.isolation);
  const started = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: agentId, input: 'sleep' });
  t.is(started.status, 200, JSON.stringify(started.body));
  const id = started.body.execution_id;
  await eventually(async () => (asked ? true : undefined), 60_000, 'the model to ask for sleep');
  // Cancel while the command really runs in the sandbox (seen on the host), not after a guessed delay.
  const running = await eventually(async () => {
    const pids = await sleepPids(secs);
    return pids.length > 0 ? pids : undefined;
  }, 60_000, `sleep ${secs} to run in the sandbox`);
  const t0 = Date.now();
  const cancelUrl = `/v1/executions/${id}/cancel`;
  const cancel = await api<{ cancelled: boolean }>(s, 'POST', cancelUrl);
  t.is(cancel.status, 200);
  t.true(cancel.body.cancelled);
  const final = await eventually(async () => {
    const d = await api<{ status: string; container_id: string | null; completed_at: string | null }>(s, 'GET', `/v1/executions/${id}`);
    return d.body.status === 'cancelled' ? d.body : undefined;
  }, 30_000, 'cancelled status');
  // The bound is on what the node recorded: from its receipt of the cancel request (its request log line) to the
  // cancelled status (completed_at, written with it). Neither the HTTP round trip nor this test's polling counts:
  // on a loaded machine those alone have taken seconds.
  const received = await eventually(async () => requestReceivedAt(s.node.stderr(), 'POST', cancelUrl), 30_000, 'the node\'s log line of the cancel request');
  t.true(received >= t0 - 1000, 'the log line is of this cancel request');
  const ms = Date.parse(final.completed_at ?? '') - received;
  t.log(`cancel: recorded ${ms} ms, seen by the test after ${Date.now() - t0} ms`);
  t.true(ms < 2000, `cancelled ${ms} ms after the node received the request (seen by the test after ${Date.now() - t0} ms)`);
  await eventually(async () => ((await sleepPids(secs)).length === 0 ? true : undefined), 30_000, 'the sandboxed sleep to be killed').catch(() => undefined);
  t.deepEqual(await sleepPids(secs), [], `sleep ${secs} (pids ${running.join(', ')}) was killed`);
  t.is(final.container_id, null);
  const events = await sseEvents(s, id);
  t.deepEqual(events.at(-1)?.execution_failed?.reason, 'cancelled');
  // Cancelling again is refused in the result, not an error; a removed terminal execution is gone.
  t.false((await api<{ cancelled: boolean }>(s, 'POST', `/v1/executions/${id}/cancel`)).body.cancelled);
  return { executionId: id, s };
}

export async function runResumeScenario(t: ExecutionContext, env: ScenarioEnv): Promise<void> {
  const HELD = '2:1'; // iteration 2, after the fixed file was written: the model is asked to run it
  let release: (() => void) | undefined;
  let heldSeen = 0;
  const llm = await startScriptedLlm(async (body) => {
    const st = stepOf(body as { messages: ChatMessage[] });
    if (st.key === HELD && heldSeen++ === 0) {
      // The first time, never answer: the test kills the node while this request is in flight.
      await new Promise<void>((r) => (release = r));
    }
    return coderReply(body as { messages: ChatMessage[] });
  });
  t.teardown(() => {
    release?.();
    return llm.close();
  });
  const s = await startStack(t, env, llm);
  const agentId = await deployAgent(t, s, 'coder', env.isolation);
  const started = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: agentId, input: 'greet' });
  const id = started.body.execution_id;
  await eventually(async () => (heldSeen > 0 ? true : undefined), 30_000, 'the held step to be asked');
  t.is(await s.node.kill('SIGKILL'), 'SIGKILL');
  release?.();

  const again = await startOrchNode(s.nodeEnv);
  t.teardown(() => again.child.kill('SIGKILL'));
  const s2 = { ...s, node: again, http: again.banner.http, token: again.banner.dev_token ?? '' };
  const done = await eventually(async () => {
    const d = await api<{ status: string; reason: string | null }>(s2, 'GET', `/v1/executions/${id}`);
    return d.body.status === 'completed' || d.body.status === 'failed' ? d.body : undefined;
  }, 60_000, 'the resumed execution to finish');
  t.is(done.status, 'completed', `reason: ${done.reason}`);

  // No step the model had answered was asked again; only the one in flight at the kill was.
  const counts = new Map<string, number>();
  for (const r of llm.requests) {
    const k = stepOf(r as { messages: ChatMessage[] }).key;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  for (const [k, n] of counts) t.is(n, k === HELD ? 2 : 1, `step ${k} asked ${n} time(s)`);
  // The iteration-1 command ran once (its result came from the journal on resume); iteration 2's once.
  const workspace = path.join(env.dir, 'data', 'volumes', id, 'workspace');
  t.is(await readFile(path.join(workspace, 'runs.log'), 'utf8'), 'x\nx\n');
  // The stream has each event once, in order, across both incarnations.
  const events = await sseEvents(s2, id);
  t.deepEqual(variants(events).filter((v) => v === 'execution_started' || v === 'iteration_started'), [
    'execution_started',
    'iteration_started',
    'iteration_started',
  ]);
  t.truthy(events.at(-1)?.execution_completed);
}
