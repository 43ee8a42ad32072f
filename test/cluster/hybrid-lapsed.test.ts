// Lapsed execution leases in a hybrid cluster (issue 20, defect 3): two real `orch up` hybrids on one PostgreSQL
// database, each running executions itself. A is SIGKILLed with an execution in flight (its model call held); B,
// which never restarts, picks the execution up once A's claim lapsed — its lapsed-lease sweep — resumes it from its
// journal and completes it. Before the fix nothing swept lapsed execution leases on a hybrid: the execution sat
// `running` under the dead node until a restart (or an Agent state's timeout).
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { makeTestIdp } from '../support/jwks.ts';
import { eventually } from '../support/node-process.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { conversation, executionEnd, llmProviders, nodeStarter, scratch } from './processes.ts';
import { api, type Api } from './support.ts';

const agent = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: lapse-echo, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 300, iteration_timeout: 300, validation: [] }
  security: { resources: { timeout: 600 } }
`;

test('a killed hybrid\'s execution is picked up by the other hybrid once its lease lapsed, without a restart', async (t) => {
  t.timeout(8 * 60_000);
  // The model holds every request until the test releases it; each request is counted.
  const waiting: (() => void)[] = [];
  let asks = 0;
  const llm = await startScriptedLlm(async (body) => {
    if (conversation(body).includes('hold:lapse')) {
      asks++;
      await new Promise<void>((r) => waiting.push(r));
    }
    return { content: 'done' };
  });
  t.teardown(() => {
    for (const r of waiting) r();
    return llm.close();
  });
  const s = await scratch(t, 'orch-hybrid-lapse-');
  const idp = await makeTestIdp();
  const tenant = `t-${randomBytes(4).toString('hex')}`;
  const token = await idp.sign({ sub: 'alice', tenant_id: tenant, realm_access: { roles: ['tenant-admin'] } });
  const sfx = randomBytes(3).toString('hex');
  const leaseSeconds = 4;
  const start = nodeStarter(t, s, {
    specTail: `  auth: { issuer: ${idp.issuer}, audience: ${idp.audience}, jwks_file: ${idp.jwksFile} }\n` + llmProviders(llm.url) + '  runtime: { default_isolation: process }\n',
  });
  const cluster = `  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3, execution_lease_seconds: ${leaseSeconds} }\n`;
  const aId = `hyb-a-${sfx}`;
  const bId = `hyb-b-${sfx}`;
  const [a, b] = await Promise.all([aId, bId].map((id) => start(id, `  node: { id: ${id} }\n${cluster}`)));
  const A: Api = { http: a!.banner.http, token };
  const B: Api = { http: b!.banner.http, token };
  const diag = (): string => `\nA:\n${a!.stderr().slice(-1500)}\nB:\n${b!.stderr().slice(-2500)}`;

  const deployed = await api(A, 'POST', '/v1/agents', { manifest_yaml: agent });
  t.is(deployed.status, 201, JSON.stringify(deployed.body));
  const agentId = (deployed.body as { agent_id: string }).agent_id;
  const started = await api<{ execution_id: string }>(A, 'POST', '/v1/executions', { agent_id: agentId, input: 'hold:lapse' });
  t.is(started.status, 200, JSON.stringify(started.body));
  const id = started.body.execution_id;
  const owner = async (): Promise<{ owner_node: string | null; status: string; epoch: number }> =>
    (await s.db.query<{ owner_node: string | null; status: string; epoch: number }>('SELECT owner_node, status, epoch FROM executions WHERE id = $1', [id])).rows[0]!;
  await eventually(async () => ((await owner()).owner_node === aId && asks === 1 ? true : undefined), 90_000, `the execution running on A, its model call held${diag()}`);

  t.is(await a!.kill('SIGKILL'), 'SIGKILL');
  const killedAt = Date.now();
  // B takes it over by itself: A is dead and never comes back, B is never restarted.
  await eventually(async () => ((await owner()).owner_node === bId ? true : undefined), 90_000, `B to pick the execution up${diag()}`);
  const tookMs = Date.now() - killedAt;
  t.log(`B picked the execution up ${tookMs} ms after the kill (lease ${leaseSeconds} s; measured by polling on a loaded machine)`);
  t.regex(b!.stderr(), /picked up rows whose lease lapsed/);
  // Resumed from its journal on B: the model is asked again there; the answer completes it.
  await eventually(async () => (asks >= 2 ? true : undefined), 90_000, `B to ask the model again${diag()}`);
  for (const r of waiting.splice(0)) r();
  const done = await executionEnd(B, id, 120_000, `the execution to finish on B${diag()}`);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.final_output, 'done');
  t.is(b!.child.exitCode, null, 'B was never restarted');
});
