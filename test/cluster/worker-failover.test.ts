// A worker that knows two controllers (docs/CLUSTER.md "Several controllers"), with real processes on loopback: two
// `orch up --role controller` on one PostgreSQL database and one `--role worker` whose spec.cluster.controller lists
// both. It joins the first; SIGKILL of that controller makes it move to the second (after two unreachable 1 s
// heartbeat periods) without restarting — same pid, same node id, same registration — and the survivor sees it
// ACTIVE with fresh heartbeats and routes an execution started through it to that worker.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { redisUrl } from '../support/redis.ts';
import { makeTestIdp } from '../support/jwks.ts';
import { eventually } from '../support/node-process.ts';
import { executionEnd, llmProviders, nodeStarter, scratch, startHoldingLlm } from './processes.ts';
import { api, type Api } from './support.ts';

interface NodeJson {
  node_id: string;
  status: string;
  last_heartbeat_at: string | null;
  heartbeat_count: number;
}

const agent = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: failover-echo, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 120, iteration_timeout: 120, validation: [] }
  security: { resources: { timeout: 300 } }
`;

test('SIGKILL of the controller a worker heartbeats to: the worker moves to the other one without a restart and runs its executions', async (t) => {
  t.timeout(6 * 60_000);
  // `hold:<key>` in the input makes the model wait until the test releases it, so the execution's owner can be read.
  const llm = await startHoldingLlm(t);
  const { holds } = llm;
  const s = await scratch(t, 'orch-failover-');
  const db = s.db;
  const idp = await makeTestIdp();
  const tenant = `t-${randomBytes(4).toString('hex')}`;
  const token = await idp.sign({ sub: 'alice', tenant_id: tenant, realm_access: { roles: ['tenant-admin'] } });
  const sfx = randomBytes(3).toString('hex');
  const auth = `  auth: { issuer: ${idp.issuer}, audience: ${idp.audience}, jwks_file: ${idp.jwksFile} }\n`;
  const start = nodeStarter(t, s, { redisUrl: redisUrl(), specTail: auth });
  const cluster = 'heartbeat_interval_seconds: 1, missed_heartbeats: 3';
  const [a, b] = await Promise.all(
    ['ctl-a', 'ctl-b'].map((n) => start(`${n}-${sfx}`, `  node: { id: ${n}-${sfx}, role: controller }\n  cluster: { ${cluster}, workflow_lease_seconds: 6 }\n`)),
  );
  t.truthy(a!.banner.cluster);
  t.truthy(b!.banner.cluster);
  const workerId = `wrk-${sfx}`;
  const worker = await start(
    workerId,
    `  node: { id: ${workerId}, role: worker }\n` +
      `  cluster: { controller: ["${a!.banner.cluster}", "${b!.banner.cluster}"], ${cluster} }\n` +
      llmProviders(llm.url) +
      `  runtime: { default_isolation: process }\n`,
  );
  const pid = worker.child.pid;
  const A: Api = { http: a!.banner.http, token };
  const B: Api = { http: b!.banner.http, token };
  const diag = (): string => `\nctl-a:\n${a!.stderr().slice(-1200)}\nctl-b:\n${b!.stderr().slice(-1200)}\nworker:\n${worker.stderr().slice(-3000)}`;
  const member = async (s: Api): Promise<NodeJson | undefined> => {
    const r = await api<{ nodes: NodeJson[] }>(s, 'GET', '/v1/cluster/nodes');
    if (r.status !== 200) throw new Error(`GET /v1/cluster/nodes: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.nodes.find((n) => n.node_id === workerId);
  };

  // Joined through the first controller of its list.
  await eventually(async () => {
    const n = await member(A);
    return n?.status === 'ACTIVE' && n.heartbeat_count >= 2 ? n : undefined;
  }, 60_000, `worker ACTIVE${diag()}`);
  const joinedVia = /"controller":"([^"]+)"[^\n]*joined the cluster|joined the cluster[^\n]*"controller":"([^"]+)"/.exec(worker.stderr());
  t.is(joinedVia?.[1] ?? joinedVia?.[2], a!.banner.cluster, `joined the first controller of the list${diag()}`);
  const peerBefore = (await db.query<{ peer_id: string }>('SELECT peer_id FROM cluster_nodes WHERE node_id = $1', [workerId])).rows[0]?.peer_id;
  t.truthy(peerBefore);
  const deployed = await api(A, 'POST', '/v1/agents', { manifest_yaml: agent });
  t.is(deployed.status, 201, JSON.stringify(deployed.body));

  // The controller it heartbeats to dies.
  t.is(await a!.kill('SIGKILL'), 'SIGKILL');
  const killedAt = Date.now();

  // Seen from the survivor: ACTIVE with heartbeats written after the kill (only B can have received them).
  const after = await eventually(async () => {
    const n = await member(B);
    return n?.status === 'ACTIVE' && n.last_heartbeat_at && Date.parse(n.last_heartbeat_at) > killedAt + 1000 ? n : undefined;
  }, 90_000, `worker ACTIVE on the surviving controller${diag()}`);
  t.log(`first heartbeat seen by B after the kill at +${Date.parse(after.last_heartbeat_at!) - killedAt} ms (recorded by B; machine loaded)`);
  t.regex(worker.stderr(), /moving to the next controller/, 'the worker moved on by itself');
  t.is(worker.child.exitCode, null, 'the worker process is still running');
  t.is(worker.child.pid, pid, 'same process');
  const row = (await db.query<{ peer_id: string; node_id: string }>('SELECT peer_id, node_id FROM cluster_nodes WHERE node_id = $1', [workerId])).rows;
  t.is(row.length, 1, 'one member row for the node id');
  t.is(row[0]?.peer_id, peerBefore, 'the same registration: token and session live in the shared database, so B accepted them');

  // An execution started through the survivor runs on the worker.
  const agentId = (await api<{ agent_id: string }>(B, 'GET', '/v1/agents/lookup/failover-echo')).body.agent_id;
  const started = await api<{ execution_id: string }>(B, 'POST', '/v1/executions', { agent_id: agentId, input: 'hold:survivor' });
  t.is(started.status, 200, JSON.stringify(started.body));
  const id = started.body.execution_id;
  const owner = await eventually(async () => {
    const o = (await db.query<{ owner_node: string | null }>('SELECT owner_node FROM executions WHERE id = $1', [id])).rows[0]?.owner_node;
    return o && holds.has('survivor') ? o : undefined;
  }, 60_000, `execution ${id} running on a worker${diag()}`);
  t.is(owner, workerId, 'routed by the surviving controller to the worker');
  holds.get('survivor')!();
  const done = await executionEnd(B, id, 90_000, `execution ${id} to finish${diag()}`);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(worker.child.pid, pid);
  t.is(worker.child.exitCode, null, 'still the same worker process at the end');
});
