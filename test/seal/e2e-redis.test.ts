// End to end against a real `orch up` node configured with Redis (127.0.0.1:6379, REDIS_URL): the SEAL replay
// record is a Redis SET NX and "execution still running" comes from the Redis bus. This test acts as the agent
// container: attests, calls cmd.run and orch.tools.list, a replayed envelope is refused (401) with no row in
// seal_seen_signatures, and the token stops working (403) once the execution is cancelled.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { api, stepOf, type Started } from '../agents/execution-scenarios.ts';
import { eventually } from '../support/node-process.ts';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.ts';
import { attestHttp, buildEnvelope, generateKeyPair, invokeHttp, type SealKeyPair } from '../../src/seal/client.ts';
import { REPLAY_KEY_PREFIX } from '../../src/seal/replay.ts';
import { sandboxContainerId, startSealNode } from './node-stack.ts';

const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: seal-redis-agent, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Keep sleeping. }
  execution: { mode: iterative, max_iterations: 1, llm_timeout_seconds: 20, iteration_timeout: 600 }
  security:
    resources: { timeout: 600 }
  tools:
    - orch.tools.list
    - name: cmd.run
      executor: builtin:cmd
      config: { subcommand_allowlist: { sleep: [], echo: [] } }
`;

let s: Started;
let llm: ScriptedLlm;
let dir: string;
const cleanups: (() => unknown)[] = [];

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-seal-redis-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  llm = await startScriptedLlm((body) => (stepOf(body as { messages: { role: string }[] }).toolsDone < 600 ? { tool_calls: [{ name: 'cmd_run', arguments: { command: 'sleep', args: ['1'] } }] } : { content: 'done' }));
  cleanups.push(() => llm.close());
  s = await startSealNode({ dir, llm, ceilingSecs: 5, redisUrl: REDIS, cleanups });
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

test('Redis replay record and bus liveness on a real node', async (t) => {
  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT });
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const started = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'sleep' });
  const executionId = started.body.execution_id;
  const detail = await eventually(async () => {
    const r = await api<{ status: string; container_id: string | null }>(s, 'GET', `/v1/executions/${executionId}`);
    return r.body.status === 'running' && r.body.container_id ? r.body : undefined;
  }, 30_000, 'the execution to run');
  const keys: SealKeyPair = generateKeyPair();
  t.is(detail.container_id, `process-${executionId}`);
  const att = await attestHttp(s.http, keys, { agentId: dep.body.agent_id, executionId, containerId: await sandboxContainerId(executionId) });
  const env = (name: string, args: Record<string, unknown>) => buildEnvelope(name, args, { securityToken: att.security_token, privateKey: keys.privateKey });

  const e = env('cmd.run', { command: 'echo', args: ['over redis'] });
  const first = await invokeHttp(s.http, e);
  t.is(first.status, 200, JSON.stringify(first.body));
  t.regex(JSON.stringify(first.body), /over redis/);
  // The record is in Redis, under this session.
  const redis = new Redis(REDIS);
  t.teardown(() => redis.disconnect());
  t.is((await redis.keys(`${REPLAY_KEY_PREFIX}${att.session_id}:*`)).length, 1);
  const replay = await invokeHttp(s.http, e, '/v1/invoke');
  t.is(replay.status, 401);
  t.regex(JSON.stringify(replay.body), /replay/);

  t.is((await invokeHttp(s.http, env('orch.tools.list', {}))).status, 200);
  await api(s, 'POST', `/v1/executions/${executionId}/cancel`);
  await eventually(async () => ((await api<{ status: string }>(s, 'GET', `/v1/executions/${executionId}`)).body.status === 'cancelled' ? true : undefined), 60_000, 'cancelled');
  const after = await invokeHttp(s.http, env('orch.tools.list', {}));
  t.is(after.status, 403, JSON.stringify(after.body));
  t.regex(JSON.stringify(after.body), /inactive/);
});
