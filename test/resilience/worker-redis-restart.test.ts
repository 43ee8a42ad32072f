// A worker receives ForwardExecution while Redis is down (issue 20, defect 1), with real processes: a controller and
// a worker on a private Redis. Before the fix the worker's SUBSCRIBE failed after three reconnect attempts and the
// rejection nobody caught killed it about 4 s later. Now the worker waits Redis out, readiness says so meanwhile,
// and once Redis is back the execution runs to completion on the same worker process.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { makeTestIdp } from '../support/jwks.ts';
import { eventually } from '../support/node-process.ts';
import { startPrivateRedis } from '../support/private-services.ts';
import { executionEnd, llmProviders, nodeStarter, scratch, startHoldingLlm } from '../cluster/processes.ts';
import { api, type Api } from '../cluster/support.ts';

const agent = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: redis-echo, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 120, iteration_timeout: 120, validation: [] }
  security: { resources: { timeout: 300 } }
`;

async function ready(http: string): Promise<number> {
  return (await fetch(`${http}/health/ready`, { signal: AbortSignal.timeout(30_000) })).status;
}

test('Redis restarted while a worker receives ForwardExecution: the worker survives and the execution completes', async (t) => {
  t.timeout(6 * 60_000);
  const redis = await startPrivateRedis();
  t.teardown(() => redis.cleanup());
  const llm = await startHoldingLlm(t);
  const s = await scratch(t, 'orch-redis-restart-');
  const idp = await makeTestIdp();
  const tenant = `t-${randomBytes(4).toString('hex')}`;
  const token = await idp.sign({ sub: 'alice', tenant_id: tenant, realm_access: { roles: ['tenant-admin'] } });
  const sfx = randomBytes(3).toString('hex');
  const auth = `  auth: { issuer: ${idp.issuer}, audience: ${idp.audience}, jwks_file: ${idp.jwksFile} }\n`;
  const start = nodeStarter(t, s, { redisUrl: redis.url, specTail: auth });
  const cluster = 'heartbeat_interval_seconds: 1, missed_heartbeats: 5';
  const ctl = await start(`ctl-${sfx}`, `  node: { id: ctl-${sfx}, role: controller }\n  cluster: { ${cluster} }\n`);
  const workerId = `wrk-${sfx}`;
  const worker = await start(
    workerId,
    `  node: { id: ${workerId}, role: worker }\n  cluster: { controller: ["${ctl.banner.cluster}"], ${cluster} }\n` + llmProviders(llm.url) + `  runtime: { default_isolation: process }\n`,
  );
  const pid = worker.child.pid;
  const C: Api = { http: ctl.banner.http, token };
  const diag = (): string => `\ncontroller:\n${ctl.stderr().slice(-2000)}\nworker:\n${worker.stderr().slice(-4000)}`;
  await eventually(async () => {
    const r = await api<{ nodes: { node_id: string; status: string }[] }>(C, 'GET', '/v1/cluster/nodes');
    return r.body.nodes.find((n) => n.node_id === workerId)?.status === 'ACTIVE' ? true : undefined;
  }, 90_000, `worker ACTIVE${diag()}`);
  const deployed = await api(C, 'POST', '/v1/agents', { manifest_yaml: agent });
  t.is(deployed.status, 201, JSON.stringify(deployed.body));
  const agentId = (await api<{ agent_id: string }>(C, 'GET', '/v1/agents/lookup/redis-echo')).body.agent_id;
  t.is(await ready(C.http), 200);

  await redis.kill();
  const killedAt = Date.now();
  await eventually(async () => ((await ready(C.http)) === 503 ? true : undefined), 30_000, 'controller readiness false while Redis is down');
  // Started while Redis is down: the controller routes it and forwards it to the worker, which subscribes to its
  // events on the bus. The answer may wait for Redis; it is collected later.
  const started = api<{ execution_id: string }>(C, 'POST', '/v1/executions', { agent_id: agentId, input: 'hold:redis' });
  started.catch(() => undefined);
  await eventually(async () => (/ForwardExecution/.test(worker.stderr()) ? true : undefined), 60_000, `the worker to receive ForwardExecution${diag()}`);
  // The worker died 4 s after the forward before the fix; give it well over that.
  await new Promise((r) => setTimeout(r, 8_000));
  t.is(worker.child.exitCode, null, `the worker died while Redis was down${diag()}`);
  t.is(worker.child.signalCode, null);
  t.is(ctl.child.exitCode, null, `the controller died while Redis was down${diag()}`);

  await redis.start();
  const backAt = Date.now();
  const res = await started;
  t.true(res.status === 200 || res.status === 201, JSON.stringify(res.body));
  const id = res.body.execution_id;
  await eventually(async () => (llm.holds.has('redis') ? true : undefined), 90_000, `the execution to reach the model${diag()}`);
  llm.holds.get('redis')!();
  const done = await executionEnd(C, id, 120_000, `execution ${id} to finish${diag()}`);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(worker.child.pid, pid, 'the same worker process ran it');
  t.is(worker.child.exitCode, null);
  // The controller reconnects on its own backoff (at most about 2 s apart): the run may finish before that.
  await eventually(async () => ((await ready(C.http)) === 200 ? true : undefined), 30_000, 'readiness true again after Redis returned');
  t.notRegex(worker.stderr(), /giving up/);
  t.log(`Redis down ${backAt - killedAt} ms; execution ${done.status} ${done.completed_at ? Date.parse(done.completed_at) - backAt : '?'} ms after Redis answered again`);
});
