// Executions over HTTP, gRPC and the CLI, on one real node: bad inputs get the seed's errors, a node with no model
// provider fails the execution with the CONTRACT sentence, one-shot agents take one iteration, remove/list/detail
// behave, ExecuteSystemCommand runs a shell command, and `orch agent run` streams and sets its exit code.
import test from 'ava';
import { credentials, Metadata, status } from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { OrchRuntimeClient, type ExecuteSystemCommandResponse } from '../../src/gen/orch/runtime/v1/runtime.js';
import { eventually, runOrch, startOrchNode, testNodeFlags, type NodeProcess } from '../support/node-process.ts';
import { startScriptedLlm, type ChatRequest, type ScriptedLlm, type ScriptFn } from '../support/scripted-llm.ts';
import { api, sseEvents } from './execution-scenarios.ts';

const ONE_SHOT = (name: string, model = 'default') => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: ${model} }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, validation: [ { type: json_schema, schema: { type: object, required: [answer] } } ] }
  tools: [ fs.read ]
`;

// One node for the whole file (its tests are independent: each deploys agents under its own names and looks only at
// its own executions), so the file pays for one `orch up` instead of six. Each test that needs a model gets its own
// alias, served by its own script through one scripted server that dispatches on the model name; the alias
// "default" is served by no provider (the CONTRACT sentence's test).
const MODELS = ['oneshot', 'slowpoke', 'judged'] as const;
type ModelName = (typeof MODELS)[number];
const scripts = new Map<string, ScriptFn>();
let llm: ScriptedLlm;
let shared: { node: NodeProcess; s: { http: string; token: string }; dir: string };

/** Serves `alias` with `script` (the model name the node sends is `m-<alias>`); the requests it saw are returned. */
function script(alias: ModelName, fn: ScriptFn): () => ChatRequest[] {
  scripts.set(`m-${alias}`, fn);
  return () => llm.requests.filter((r) => r.model === `m-${alias}`);
}

test.before(async () => {
  llm = await startScriptedLlm((body, index) => scripts.get(body.model)?.(body, index) ?? { status: 500, message: `no script for model ${body.model}` });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-exec-api-'));
  const config = path.join(dir, 'node.yaml');
  const models = MODELS.map((m) => `{ alias: ${m}, model: m-${m} }`).join(', ');
  await writeFile(
    config,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: api-node }
spec:
  node: { id: api-${randomUUID().slice(0, 8)}, role: hybrid }
  runtime: { default_isolation: process }
  llm_providers: [ { name: s, type: openai, endpoint: "${llm.url}", api_key: k, models: [ ${models} ] } ]
`,
  );
  const n = await startOrchNode({ ORCH_CONFIG: config, ORCH_DATA_DIR: path.join(dir, 'data'), DATABASE_URL: undefined, REDIS_URL: undefined });
  shared = { node: n, s: { http: n.banner.http, token: n.banner.dev_token ?? '' }, dir };
});

test.after.always(async () => {
  shared?.node.child.kill('SIGKILL');
  await llm?.close();
  if (shared) await rm(shared.dir, { recursive: true, force: true });
});

test('the test node runs with the flags ava gives test nodes (ORCH_TEST_NODE_FLAGS: --liftoff-only)', async (t) => {
  const flags = testNodeFlags();
  t.deepEqual(flags, ['--liftoff-only']);
  const cmdline = (await readFile(`/proc/${shared.node.child.pid}/cmdline`, 'utf8')).split('\0');
  t.deepEqual(cmdline.slice(1, 1 + flags.length), flags, cmdline.join(' '));
  t.true(process.execArgv.includes('--liftoff-only'), 'the ava worker too');
});

test('bad inputs: non-UUID agent 400, unknown agent 404, missing input 400, unknown execution 404', async (t) => {
  const { s } = shared;
  t.deepEqual(await api(s, 'POST', '/v1/executions', { agent_id: 'not-a-uuid', input: 'x' }), { status: 400, body: { error: 'Invalid agent ID' } });
  t.deepEqual(await api(s, 'POST', '/v1/executions', { agent_id: randomUUID(), input: 'x' }), { status: 404, body: { error: 'Agent not found' } });
  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: ONE_SHOT('asker') });
  t.is(dep.status, 201);
  t.is((await api(s, 'POST', '/v1/executions', { agent_id: dep.body.agent_id })).status, 400);
  t.is((await api(s, 'GET', `/v1/executions/${randomUUID()}`)).status, 404);
  t.is((await api(s, 'GET', '/v1/executions/nope')).status, 400);
  t.is((await api(s, 'GET', '/v1/executions?status=bogus')).status, 400);
  const bad = await api<{ error: string; errors: { field: string }[] }>(s, 'POST', '/v1/agents', { manifest_yaml: ONE_SHOT('asker').replace('node, version: "20"', 'cobol, version: "85"') });
  t.is(bad.status, 422);
  t.true(bad.body.errors.some((e) => e.field.startsWith('spec.runtime')), JSON.stringify(bad.body));
  const res = await fetch(`${s.http}/v1/executions`);
  t.is(res.status, 401, 'no token, no executions');
});

/** ExecuteAgent over a real gRPC client: the status it ends with and how long it took to answer. */
function executeAgentStatus(grpc: string, token: string, agentId: string): Promise<{ code: number; details: string; ms: number }> {
  const client = new OrchRuntimeClient(grpc, credentials.createInsecure());
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  const started = Date.now();
  return new Promise((resolve) => {
    const stream = client.executeAgent({ agent_id: agentId, input: 'x', context_json: '', workflow_execution_id: undefined }, md, { deadline: Date.now() + 60_000 });
    stream.on('data', () => undefined);
    stream.on('error', (err: { code: number; details: string }) => {
      client.close();
      resolve({ code: err.code, details: err.details, ms: Date.now() - started });
    });
    stream.on('end', () => {
      client.close();
      resolve({ code: status.OK, details: '', ms: Date.now() - started });
    });
  });
}

test('gRPC ExecuteAgent answers a non-UUID agent_id INVALID_ARGUMENT and an unknown one NOT_FOUND at once (issue 14 #8)', async (t) => {
  const { node: n, s } = shared;
  const bad = await executeAgentStatus(n.banner.grpc, s.token, 'not-a-uuid');
  t.like(bad, { code: status.INVALID_ARGUMENT, details: 'Invalid agent ID' });
  const unknown = await executeAgentStatus(n.banner.grpc, s.token, randomUUID());
  t.like(unknown, { code: status.NOT_FOUND, details: 'Agent not found' });
  // Before the fix both ran into the call's deadline (DEADLINE_EXCEEDED); an answer takes milliseconds, so 20 s
  // is a bound that load cannot break and the old behaviour cannot meet.
  t.true(bad.ms < 20_000 && unknown.ms < 20_000, `${bad.ms} ms, ${unknown.ms} ms`);
});

test('with no model provider for its alias the execution fails with the CONTRACT sentence', async (t) => {
  // The shared node serves other aliases, not "default": the same check (no provider for the agent's alias).
  const { s } = shared;
  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: ONE_SHOT('nomodel') });
  const started = await api<{ execution_id: string }>(s, 'POST', `/v1/agents/${dep.body.agent_id}/execute`, { input: 'hi' });
  t.is(started.status, 200);
  const events = await sseEvents(s, started.body.execution_id);
  t.deepEqual(events.map((e) => Object.keys(e)[0]), ['execution_started', 'execution_failed']);
  t.is(events[1]?.execution_failed?.reason, 'no LLM provider configured for alias "default"');
  const detail = await api<{ status: string; reason: string }>(s, 'GET', `/v1/executions/${started.body.execution_id}`);
  t.like(detail.body, { status: 'failed', reason: 'no LLM provider configured for alias "default"' });
});

test('one-shot: one iteration; json_schema validation; list, detail, remove; ExecuteSystemCommand; orch agent run', async (t) => {
  script('oneshot', (body) => {
    const user = body.messages.find((m) => m.role === 'user')?.content ?? '';
    return { content: String(user).includes('bad') ? 'not json' : '{"answer": "yes"}' };
  });
  const { s, node: n } = shared;
  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: ONE_SHOT('oneshot', 'oneshot') });
  const ok = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'good' });
  const okEvents = await sseEvents(s, ok.body.execution_id);
  t.deepEqual(okEvents.map((e) => Object.keys(e)[0]), ['execution_started', 'iteration_started', 'iteration_output', 'iteration_completed', 'execution_completed']);
  const bad = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'bad' });
  const badEvents = await sseEvents(s, bad.body.execution_id);
  t.deepEqual(badEvents.map((e) => Object.keys(e)[0]), ['execution_started', 'iteration_started', 'iteration_output', 'iteration_failed', 'execution_failed'], 'one-shot: no refinement');
  t.regex(String(badEvents[4]?.execution_failed?.reason), /not valid JSON/);

  const list = await api<{ executions: { execution_id: string; status: string }[] }>(s, 'GET', `/v1/executions?agent_id=${dep.body.agent_id}&status=completed`);
  t.deepEqual(list.body.executions.map((e) => e.execution_id), [ok.body.execution_id]);
  t.is((await api(s, 'DELETE', `/v1/executions/${ok.body.execution_id}`)).status, 200);
  t.is((await api(s, 'GET', `/v1/executions/${ok.body.execution_id}`)).status, 404);

  // ExecuteSystemCommand over gRPC with env, workdir and timeout.
  const client = new OrchRuntimeClient(n.banner.grpc, credentials.createInsecure());
  t.teardown(() => client.close());
  const md = new Metadata();
  md.set('authorization', `Bearer ${s.token}`);
  const out = await new Promise<ExecuteSystemCommandResponse>((resolve, reject) =>
    client.executeSystemCommand({ command: 'echo "$GREETING from $(pwd)"; echo err >&2; exit 7', env: { GREETING: 'hi' }, workdir: '/tmp', timeout_seconds: 10 }, md, (err, res) => (err ? reject(err) : resolve(res))),
  );
  t.like(out, { exit_code: 7, stdout: 'hi from /tmp\n', stderr: 'err\n' });
  const slow = await new Promise<ExecuteSystemCommandResponse>((resolve, reject) =>
    client.executeSystemCommand({ command: 'sleep 20', env: {}, workdir: undefined, timeout_seconds: 1 }, md, (err, res) => (err ? reject(err) : resolve(res))),
  );
  t.is(slow.exit_code, 124, 'timed out');
  const denied = await new Promise<{ code?: number }>((resolve) =>
    client.executeSystemCommand({ command: 'true', env: {}, workdir: undefined, timeout_seconds: 1 }, new Metadata(), (err) => resolve(err ?? {})),
  );
  t.is(denied.code, status.UNAUTHENTICATED);

  // The CLI: `orch agent run` streams and exits 0 on completion, non-zero on failure.
  const env = { ORCH_URL: s.http, ORCH_TOKEN: s.token };
  const run = await runOrch(['agent', 'run', 'oneshot', '--input', 'good'], env);
  t.is(run.code, 0, run.stderr);
  t.regex(run.stdout, /completed after 1 iteration/);
  const failed = await runOrch(['agent', 'run', 'oneshot', '--input', 'bad'], env);
  t.is(failed.code, 1);
  t.regex(failed.stderr, /did not complete/);
  const ls = await runOrch(['--json', 'agent', 'ls'], env);
  t.is(ls.code, 0, ls.stderr);
  t.true((JSON.parse(ls.stdout) as { agents: { name: string }[] }).agents.some((a) => a.name === 'oneshot'));
  // This agent's executions only (the node is shared): the one left of the two above and the CLI's two.
  await eventually(async () => ((await api<{ executions: unknown[] }>(s, 'GET', `/v1/executions?agent_id=${dep.body.agent_id}`)).body.executions.length >= 3 ? true : undefined));
});

test('timeouts: iteration_timeout kills a stuck command, llm_timeout_seconds a slow model, then the loop refines on', async (t) => {
  // Generous limits (20 s, 10 s), a far longer command (300 s) and a far slower model (60 s): with a 1 s model timeout
  // a loaded CI machine made an ordinary answer time out too, and 4 s left little margin under a loaded suite.
  script('slowpoke', async (body) => {
    const users = body.messages.filter((m) => m.role === 'user').length;
    const toolsDone = body.messages.slice(body.messages.map((m) => m.role).lastIndexOf('user') + 1).filter((m) => m.role === 'tool').length;
    if (users === 1 && toolsDone === 0) return { tool_calls: [{ name: 'cmd_run', arguments: { command: 'sleep', args: ['300'] } }] };
    // Much slower than llm_timeout_seconds. The timer is unref'd: the node gives up on this answer after 10 s, and a
    // pending 60 s timer kept this file's ava worker alive ~40 s after its last test (issue 15: the suite's wall time).
    if (users === 2) await new Promise((r) => setTimeout(r, 60_000).unref());
    return { content: 'done' };
  });
  const { s } = shared;
  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', {
    manifest_yaml: `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: slowpoke, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: slowpoke }
  task: { instruction: Sleep. }
  execution: { mode: iterative, max_iterations: 3, iteration_timeout: 20, llm_timeout_seconds: 10 }
  tools: [ { name: cmd.run, config: { subcommand_allowlist: { sleep: [] } } } ]
`,
  });
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const started = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'x' });
  const events = await sseEvents(s, started.body.execution_id);
  const failures = events.filter((e) => 'iteration_failed' in e).map((e) => (e.iteration_failed?.error as { error_type: string }).error_type);
  t.deepEqual(failures, ['IterationTimeout', 'LlmError']);
  t.deepEqual(events.filter((e) => 'refinement_applied' in e).length, 2);
  t.like(events.at(-1)?.execution_completed, { final_output: 'done', total_iterations: 3 });
});

test('POST /v1/dispatch-gateway speaks the protocol to loopback callers and refuses malformed messages', async (t) => {
  const { s } = shared;
  const res = await fetch(`${s.http}/v1/dispatch-gateway`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'generate' }) });
  t.is(res.status, 400);
  t.deepEqual(await res.json(), { error: 'execution_id is required' });
  const unknown = await fetch(`${s.http}/v1/dispatch-gateway`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'generate', execution_id: randomUUID(), iteration_number: 1 }),
  });
  t.is(unknown.status, 404);
});

test('tool_validation: the inner-loop judge blocks a proposed call under min_score; skip_judge tools bypass it', async (t) => {
  const isJudge = (body: { messages: { role: string; content?: string | null }[] }) => body.messages.some((m) => m.role === 'system' && String(m.content).includes('Answer only with JSON'));
  const requests = script('judged', (body) => {
    if (isJudge(body)) {
      const proposal = String(body.messages.at(-1)?.content);
      return { content: proposal.includes('evil.txt') ? '{"score": 0.1, "confidence": 0.9, "reasoning": "writes a file the task does not need"}' : '{"score": 0.9, "confidence": 0.9, "reasoning": "a reasonable call for this task"}' };
    }
    const tools = body.messages.filter((m) => m.role === 'tool').length;
    if (tools === 0) return { tool_calls: [{ name: 'fs_write', arguments: { path: 'evil.txt', content: 'x' } }] };
    if (tools === 1) return { tool_calls: [{ name: 'fs_write', arguments: { path: 'good.txt', content: 'hello' } }] };
    if (tools === 2) return { tool_calls: [{ name: 'fs_read', arguments: { path: 'good.txt' } }] };
    return { content: 'done' };
  });
  const { s, dir } = shared;
  const guard = await api(s, 'POST', '/v1/agents', {
    manifest_yaml: `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: guard, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: judged }
  task: { instruction: You review tool calls proposed by another agent. }
`,
  });
  t.is(guard.status, 201, JSON.stringify(guard.body));
  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', {
    manifest_yaml: `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: guarded, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: judged }
  task: { instruction: Write good.txt. }
  execution: { mode: one-shot, tool_validation: [ { judge_agent: guard, min_score: 0.5 } ] }
  tools: [ fs.write, fs.read ]
`,
  });
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const started = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'x' });
  const events = await sseEvents(s, started.body.execution_id);
  t.truthy(events.at(-1)?.execution_completed, JSON.stringify(events.at(-1)));
  const judgeCalls = requests().filter((r) => isJudge(r));
  t.is(judgeCalls.length, 2, 'fs.write twice judged; fs.read (skip_judge) not');
  const workspace = path.join(dir, 'data', 'volumes', started.body.execution_id, 'workspace');
  const { existsSync } = await import('node:fs');
  t.false(existsSync(path.join(workspace, 'evil.txt')), 'the rejected call did not run');
  t.true(existsSync(path.join(workspace, 'good.txt')));
  const rejected = requests().find((r) => !isJudge(r) && r.messages.filter((m) => m.role === 'tool').length === 1);
  t.regex(String(rejected?.messages.at(-1)?.content), /ToolCallRejected.*guard scored 0.1/);
});
