// End to end against a real `orch up` node (process isolation, scripted LLM): this test acts as the agent
// container of a running execution (the model keeps it running with `cmd_run sleep 30`). It attests over HTTP and
// gRPC, calls the fs.* tools, cmd.run (in the execution's own bubblewrap sandbox) and orch.tools.list through
// POST /v1/seal/invoke, /v1/invoke and gRPC InvokeTool, and each attack is refused: tampered payload, wrong key, 31 s old envelope, replay, another execution's token,
// `../` escape, symlink escape, a denied tool, a subcommand outside the allowlist, the token after the execution
// ended.
import test from 'ava';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { mkdir, mkdtemp, rm, symlink, writeFile, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { api, stepOf, type Started } from '../agents/execution-scenarios.ts';
import { eventually } from '../support/node-process.ts';
import { sandboxContainerId, secretOnCmdline, startSealNode } from './node-stack.ts';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.ts';
import { attestHttp, buildEnvelope, generateKeyPair, invokeHttp, SealGrpcClient, type SealKeyPair } from '../../src/seal/client.ts';
import type { JsonRpcResponse } from '../../src/seal/envelope.ts';

// The tool calls go through the node's real tool catalog (src/tools/catalog.ts).
const withCatalog = test.serial;

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: seal-agent, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Keep sleeping. }
  execution: { mode: iterative, max_iterations: 1, llm_timeout_seconds: 20, iteration_timeout: 600 }
  security:
    resources: { timeout: 600 }
  tools:
    - fs.write
    - fs.read
    - fs.edit
    - fs.multi_edit
    - fs.grep
    - fs.glob
    - fs.delete
    - orch.tools.list
    - name: cmd.run
      executor: builtin:cmd
      config: { subcommand_allowlist: { sleep: [], echo: [], cat: [], printenv: [], git: [status] } }
`;

/** The node's cmd ceiling: the model's own commands (sleep 1) stay under it; a SEAL `sleep 600` goes over. */
const CEILING_S = 3;

interface Running {
  executionId: string;
  agentId: string;
  containerId: string;
}

let s: Started;
let llm: ScriptedLlm;
let dir: string;
let agentId: string;
let a: Running;
let keys: SealKeyPair;
let token: string;
const cleanups: (() => unknown)[] = [];

async function startRunning(): Promise<Running> {
  const started = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: agentId, input: 'sleep' });
  if (started.status !== 200) throw new Error(JSON.stringify(started.body));
  const id = started.body.execution_id;
  const d = await eventually(async () => {
    const r = await api<{ status: string; container_id: string | null }>(s, 'GET', `/v1/executions/${id}`);
    return r.body.status === 'running' && r.body.container_id ? r.body : undefined;
  }, 30_000, 'the execution to run with a container id');
  if (d.container_id !== `process-${id}`) throw new Error(`unexpected container id ${d.container_id}`);
  return { executionId: id, agentId, containerId: await sandboxContainerId(id) };
}

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-seal-e2e-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  // The model asks for a short sleep every time (under the ceiling), so the execution stays running until it is
  // cancelled.
  llm = await startScriptedLlm((body) => (stepOf(body as { messages: { role: string }[] }).toolsDone < 600 ? { tool_calls: [{ name: 'cmd_run', arguments: { command: 'sleep', args: ['1'] } }] } : { content: 'done' }));
  cleanups.push(() => llm.close());
  s = await startSealNode({ dir, llm, ceilingSecs: CEILING_S, cleanups });
  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT });
  if (dep.status !== 201) throw new Error(JSON.stringify(dep.body));
  agentId = dep.body.agent_id;
  a = await startRunning();
  keys = generateKeyPair();
  token = (await attestHttp(s.http, keys, a)).security_token;
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const env = (name: string, args: Record<string, unknown>, o: { now?: number; key?: Uint8Array; tok?: string } = {}) =>
  buildEnvelope(name, args, { securityToken: o.tok ?? token, privateKey: o.key ?? keys.privateKey, ...(o.now !== undefined ? { now: o.now } : {}) });

function text(body: JsonRpcResponse): string {
  if (!('result' in body)) throw new Error(`not a result: ${JSON.stringify(body)}`);
  return body.result.content[0]?.text ?? '';
}

async function ok(name: string, args: Record<string, unknown>, route = '/v1/seal/invoke'): Promise<string> {
  const r = await invokeHttp(s.http, env(name, args), route);
  if (r.status !== 200 || !('result' in r.body) || r.body.result.isError) throw new Error(`${name}: ${r.status} ${JSON.stringify(r.body)}`);
  return text(r.body);
}

const workspace = () => path.join(dir, 'data', 'volumes', a.executionId, 'workspace');

test.serial('attestation: the sandbox holds its proof; the ids alone, a wrong container id and a zero key are refused', async (t) => {
  t.true(a.containerId.startsWith(`process-${a.executionId}:`), 'ORCH_SEAL_CONTAINER_ID is the id plus a secret');
  await t.throwsAsync(attestHttp(s.http, generateKeyPair(), { ...a, containerId: 'process-someone-else' }), { message: /403/ });
  // Issue 14: `process-<execution_id>` (what GET /v1/executions shows, and anyone can derive) proved the sandbox.
  await t.throwsAsync(attestHttp(s.http, generateKeyPair(), { ...a, containerId: `process-${a.executionId}` }), { message: /403/ });
  // And an all-zero (small-order) key was registered.
  await t.throwsAsync(attestHttp(s.http, { publicKey: new Uint8Array(32), privateKey: new Uint8Array(32) }, a), { message: /400.*not a valid Ed25519 key/ });
  // The secret is in no log line of the node.
  const secret = a.containerId.slice(`process-${a.executionId}:`.length);
  t.false(s.node.stderr().includes(secret), 'the attestation secret is never logged');
  // Nor on any host process's command line (bwrap got it as `--setenv ORCH_SEAL_CONTAINER_ID …`: a host `ps` showed
  // it to every local user, who could then attest as this execution's agent).
  const onCmdline = await secretOnCmdline(secret);
  t.deepEqual(onCmdline, [], `the attestation secret is on the command line of ${onCmdline.join('; ')}`);
});

withCatalog('fs tools and orch.tools.list over HTTP', async (t) => {
  await ok('fs.write', { path: 'notes/a.txt', content: 'alpha\nbeta\n' });
  t.is(await readFile(path.join(workspace(), 'notes/a.txt'), 'utf8'), 'alpha\nbeta\n');
  t.regex(await ok('fs.read', { path: 'notes/a.txt' }), /alpha/);
  await ok('fs.edit', { path: 'notes/a.txt', target_content: 'alpha', replacement_content: 'gamma' }, '/v1/invoke');
  await ok('fs.multi_edit', { path: 'notes/a.txt', edits: [{ target_content: 'gamma', replacement_content: 'delta' }, { target_content: 'beta', replacement_content: 'eps' }] });
  t.is(await readFile(path.join(workspace(), 'notes/a.txt'), 'utf8'), 'delta\neps\n');
  t.regex(await ok('fs.grep', { pattern: 'del+ta', path: 'notes' }), /a\.txt/);
  t.regex(await ok('fs.glob', { pattern: '**/*.txt', path: 'notes' }), /a\.txt/);
  const list = await ok('orch.tools.list', {});
  t.regex(list, /fs\.multi_edit/);
  t.notRegex(list, /orch\.agent\.delete/);
  await ok('fs.delete', { path: 'notes/a.txt' });
  await t.throwsAsync(readFile(path.join(workspace(), 'notes/a.txt')));
  const missing = await invokeHttp(s.http, env('fs.read', { path: null }));
  t.is(missing.status, 422);
  t.like(missing.body, { error: { code: -32602, data: null } });
  t.regex(JSON.stringify(missing.body), /path[\s\S]*fs\.read|fs\.read[\s\S]*path/);
});

withCatalog('gRPC: AttestAgent with a PEM key, then InvokeTool without a bearer', async (t) => {
  const g = new SealGrpcClient(s.node.banner.grpc);
  t.teardown(() => g.close());
  const k = generateKeyPair();
  const att = await g.attest(k, a);
  const call = (name: string, args: Record<string, unknown>) => g.invoke(buildEnvelope(name, args, { securityToken: att.security_token, privateKey: k.privateKey }));
  const w = await call('fs.write', { path: 'g/g.txt', content: 'via grpc' });
  t.is(w.code, 0, JSON.stringify(w));
  t.regex(text((await call('fs.read', { path: 'g/g.txt' })).body!), /via grpc/);
  t.is((await call('fs.edit', { path: 'g/g.txt', target_content: 'grpc', replacement_content: 'gRPC' })).code, 0);
  t.is((await call('fs.multi_edit', { path: 'g/g.txt', edits: [{ target_content: 'via', replacement_content: 'over' }] })).code, 0);
  t.regex(text((await call('fs.grep', { pattern: 'over gRPC', path: 'g' })).body!), /g\.txt/);
  t.regex(text((await call('fs.glob', { pattern: '*.txt', path: 'g' })).body!), /g\.txt/);
  t.regex(text((await call('orch.tools.list', {})).body!), /fs\.read/);
  t.is((await call('fs.delete', { path: 'g/g.txt' })).code, 0);
  const denied = await call('orch.agent.delete', { agent_id: '00000000-0000-4000-8000-000000000000' });
  t.is(denied.code, GrpcStatus.PERMISSION_DENIED);
  t.like(denied.body, { jsonrpc: '2.0', error: { code: -32000, data: null } });
  const bad = await g.invoke({ ...buildEnvelope('fs.read', { path: 'x' }, { securityToken: att.security_token, privateKey: keys.privateKey }) });
  t.is(bad.code, GrpcStatus.UNAUTHENTICATED);
});

test.serial('attack: tampered payload → 401', async (t) => {
  const e = env('fs.read', { path: 'a.txt' });
  const r = await invokeHttp(s.http, { ...e, payload: Buffer.from(e.payload.toString().replace('a.txt', 'b.txt')) });
  t.is(r.status, 401);
  t.like(r.body, { error: { code: -32000 } });
});

test.serial('attack: wrong key → 401', async (t) => {
  t.is((await invokeHttp(s.http, env('fs.read', { path: 'a.txt' }, { key: generateKeyPair().privateKey }))).status, 401);
});

withCatalog('attack: envelope 31 s old → 401; replayed envelope → 401', async (t) => {
  t.is((await invokeHttp(s.http, env('orch.tools.list', {}, { now: Date.now() - 31_000 }))).status, 401);
  const e = env('orch.tools.list', {});
  t.is((await invokeHttp(s.http, e)).status, 200);
  t.is((await invokeHttp(s.http, e, '/v1/invoke')).status, 401);
});

test.serial('attack: token of another execution → 401', async (t) => {
  const b = await startRunning();
  const other = await attestHttp(s.http, generateKeyPair(), b);
  // Our key cannot speak for the other execution's session.
  t.is((await invokeHttp(s.http, env('fs.read', { path: 'a.txt' }, { tok: other.security_token }))).status, 401);
  await api(s, 'POST', `/v1/executions/${b.executionId}/cancel`);
});

withCatalog('attack: ../ path escape → 403', async (t) => {
  const r = await invokeHttp(s.http, env('fs.read', { path: '../../../../etc/passwd' }));
  t.is(r.status, 403, JSON.stringify(r.body));
  t.like(r.body, { error: { code: -32000, data: null } });
});

withCatalog('attack: symlink escape → 403', async (t) => {
  const outside = path.join(dir, 'outside');
  await mkdir(outside, { recursive: true });
  await writeFile(path.join(outside, 'secret.txt'), 'top secret');
  await mkdir(workspace(), { recursive: true });
  await symlink(outside, path.join(workspace(), 'escape'));
  const r = await invokeHttp(s.http, env('fs.read', { path: 'escape/secret.txt' }));
  t.is(r.status, 403, JSON.stringify(r.body));
  t.notRegex(JSON.stringify(r.body), /top secret/);
  const w = await invokeHttp(s.http, env('fs.write', { path: 'escape/new.txt', content: 'x' }));
  t.is(w.status, 403, JSON.stringify(w.body));
});

withCatalog('attack: a denied tool → 403', async (t) => {
  const r = await invokeHttp(s.http, env('orch.agent.delete', { agent_id: '00000000-0000-4000-8000-000000000000' }));
  t.is(r.status, 403, JSON.stringify(r.body));
  t.regex(JSON.stringify(r.body), /ToolNotAllowed|not allowed/i);
});

withCatalog('cmd.run over HTTP runs in the execution\'s own sandbox (its /workspace, its environment)', async (t) => {
  const echo = JSON.parse(await ok('cmd.run', { command: 'echo', args: ['hi', 'there'] })) as { stdout: string; exit_code: number };
  t.is(echo.exit_code, 0);
  t.is(echo.stdout, 'hi there\n');
  // A file written with fs.write is read by cat at a relative path: the command runs in the sandbox's /workspace.
  await ok('fs.write', { path: 'cmd/in-sandbox.txt', content: 'from the volume' });
  const cat = JSON.parse(await ok('cmd.run', { command: 'cat', args: ['cmd/in-sandbox.txt'] }, '/v1/invoke')) as { stdout: string };
  t.is(cat.stdout, 'from the volume');
  // The sandbox's environment names this execution (ORCH_EXECUTION_ID is set inside the sandbox only).
  const envOut = JSON.parse(await ok('cmd.run', { command: 'printenv', args: ['ORCH_EXECUTION_ID'] })) as { stdout: string };
  t.is(envOut.stdout.trim(), a.executionId);
  const noShell = JSON.parse(await ok('cmd.run', { command: 'echo', args: ['$0'] })) as { stdout: string };
  t.is(noShell.stdout, '$0\n', 'no shell expands arguments');
  // A non-zero exit is a result, not an error.
  const missing = JSON.parse(await ok('cmd.run', { command: 'cat', args: ['no-such-file'] })) as { exit_code: number; stderr: string };
  t.not(missing.exit_code, 0);
  t.regex(missing.stderr, /no-such-file/);
});

withCatalog('cmd.run over gRPC InvokeTool gets stdout from the sandbox', async (t) => {
  const g = new SealGrpcClient(s.node.banner.grpc);
  t.teardown(() => g.close());
  const r = await g.invoke(env('cmd.run', { command: 'echo', args: ['hi'] }));
  t.is(r.code, 0, JSON.stringify(r));
  const out = JSON.parse(text(r.body!)) as { stdout: string; exit_code: number };
  t.is(out.stdout, 'hi\n');
  t.is(out.exit_code, 0);
});

withCatalog('cmd.run over the node\'s timeout_ceiling_secs → ExecTimeoutCeilingExceeded', async (t) => {
  const started = Date.now();
  const r = await invokeHttp(s.http, env('cmd.run', { command: 'sleep', args: ['600'] }));
  t.is(r.status, 200, JSON.stringify(r.body));
  t.true('result' in r.body && r.body.result.isError);
  t.regex(text(r.body), /ExecTimeoutCeilingExceeded/);
  t.true(Date.now() - started < 60_000, 'killed at the ceiling, not after 600 s');
});

withCatalog('attack: a subcommand outside the allowlist → 403', async (t) => {
  const r = await invokeHttp(s.http, env('cmd.run', { command: 'git', args: ['push'] }));
  t.is(r.status, 403, JSON.stringify(r.body));
  t.regex(JSON.stringify(r.body), /SubcommandNotAllowed/);
  const c = await invokeHttp(s.http, env('cmd.run', { command: 'rm', args: ['-rf', '/'] }));
  t.is(c.status, 403, JSON.stringify(c.body));
});

test.serial('attack: the token after the execution ended → 403 inactive session', async (t) => {
  const cancel = await api<{ cancelled: boolean }>(s, 'POST', `/v1/executions/${a.executionId}/cancel`);
  t.true(cancel.body.cancelled);
  await eventually(async () => ((await api<{ status: string }>(s, 'GET', `/v1/executions/${a.executionId}`)).body.status === 'cancelled' ? true : undefined), 60_000, 'cancelled');
  const r = await invokeHttp(s.http, env('orch.tools.list', {}));
  t.is(r.status, 403);
  t.regex(JSON.stringify(r.body), /inactive/);
  await t.throwsAsync(attestHttp(s.http, generateKeyPair(), a), { message: /403/ });
});
