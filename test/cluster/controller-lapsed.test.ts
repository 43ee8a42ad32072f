// Lapsed execution leases on controllers (issue 20, defect 3, "in every topology"): real processes, two controllers
// on one database and no worker yet. An execution started through A waits, pending and A's, for a worker; A is
// SIGKILLed. B — never restarted — takes the execution over once A's claim lapsed (its lapsed-lease sweep), keeps
// waiting, and routes it to the worker that joins it; the execution completes. Before the fix only a controller's
// start-up recovery looked at executions a dead controller held: the row stayed A's until some controller restarted.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { eventually } from '../support/node-process.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { makeTestIdp } from '../support/jwks.ts';
import { allActive, executionEnd, llmProviders, nodeStarter, scratch } from './processes.ts';
import { api, type Api } from './support.ts';

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: lapse-answerer, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 60, iteration_timeout: 60, validation: [] }
  security: { resources: { timeout: 120 } }
`;

test('an execution a killed controller held is taken over by the other controller once its lease lapsed, and runs', async (t) => {
  t.timeout(6 * 60_000);
  const llm = await startScriptedLlm(async () => ({ content: 'forty-two' }));
  t.teardown(() => llm.close());
  const s = await scratch(t, 'orch-ctl-lapse-');
  const idp = await makeTestIdp();
  const tenant = `t-${randomBytes(4).toString('hex')}`;
  const token = await idp.sign({ sub: 'alice', tenant_id: tenant, realm_access: { roles: ['tenant-admin'] } });
  const start = nodeStarter(t, s, { specTail: `  auth: { issuer: ${idp.issuer}, audience: ${idp.audience}, jwks_file: ${idp.jwksFile} }\n` });
  const sfx = randomBytes(3).toString('hex');
  const leaseSeconds = 4;
  const cluster = `heartbeat_interval_seconds: 1, execution_lease_seconds: ${leaseSeconds}, worker_wait_seconds: 300`;
  const [a, b] = await Promise.all(['ctl-a', 'ctl-b'].map((n) => start(`${n}-${sfx}`, `  node: { id: ${n}-${sfx}, role: controller }\n  cluster: { ${cluster} }\n`)));
  const A: Api = { http: a!.banner.http, token };
  const B: Api = { http: b!.banner.http, token };
  const diag = (): string => `\nA:\n${a!.stderr().slice(-1500)}\nB:\n${b!.stderr().slice(-2500)}`;
  const deployed = await api<{ agent_id: string }>(A, 'POST', '/v1/agents', { manifest_yaml: AGENT });
  t.is(deployed.status, 201, JSON.stringify(deployed.body));
  const started = await api<{ execution_id: string }>(A, 'POST', '/v1/executions', { agent_id: deployed.body.agent_id, input: 'hello' });
  t.is(started.status, 200, JSON.stringify(started.body));
  const id = started.body.execution_id;
  const row = async (): Promise<{ owner_node: string | null; status: string }> =>
    (await s.db.query<{ owner_node: string | null; status: string }>('SELECT owner_node, status FROM executions WHERE id = $1', [id])).rows[0]!;
  await eventually(async () => (/waiting for one/.test(a!.stderr()) ? true : undefined), 60_000, `A to wait for a worker${diag()}`);
  t.like(await row(), { owner_node: `ctl-a-${sfx}`, status: 'pending' });

  t.is(await a!.kill('SIGKILL'), 'SIGKILL');
  await eventually(async () => {
    const r = await row();
    return r.owner_node === `ctl-b-${sfx}` && r.status === 'pending' ? true : undefined;
  }, 90_000, `B to take the execution over${diag()}`);
  t.is(b!.child.exitCode, null, 'B was never restarted');

  // A worker joins B; the execution B holds goes to it and completes.
  const wid = `w-${sfx}`;
  await start(wid, `  node: { id: ${wid}, role: worker }\n  cluster: { controller: "${b!.banner.cluster}", heartbeat_interval_seconds: 1 }\n${llmProviders(llm.url)}`);
  await allActive(B, [wid], 60_000, 'the worker to join B');
  const done = await executionEnd(B, id, 120_000, `the execution to finish${diag()}`);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.final_output, 'forty-two');
  t.is((await row()).owner_node, wid);
});
