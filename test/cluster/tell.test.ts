// Messages to actors across controllers (issue 18; docs/CLUSTER.md "Messages to actors"): real `orch up` controller
// processes on one PostgreSQL database. A run started through A is held by A; its Human state is approved through B.
// B commits the approval, then wakes A's run with TellActor: the next state is entered well under a second after the
// approval (both times from the database: approvals.resolved_at → the WorkflowStateEntered row's recorded_at). On the
// old main A learned of it by polling its approval every 5 s. Then the holder is frozen and SIGKILLed with an
// approval committed and its message in flight: B takes the run over once A's claim lapsed and applies the approval
// exactly once.
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { eventually, type NodeProcess } from '../support/node-process.ts';
import { makeTestIdp } from '../support/jwks.ts';
import { nodeStarter, scratch, type Scratch } from './processes.ts';
import { api, type Api } from './support.ts';
import { TELL_LOOP_WORKFLOW as LOOP } from './tell-fixtures.ts';


interface Setup {
  s: Scratch;
  A: Api;
  B: Api;
  ids: { a: string; b: string };
  nodes: { a: NodeProcess; b: NodeProcess };
  diag: () => string;
}

async function twoControllers(t: ExecutionContext, extra = ''): Promise<Setup> {
  const s = await scratch(t, 'orch-tell-');
  const idp = await makeTestIdp();
  const tenant = `t-${randomBytes(4).toString('hex')}`;
  const token = await idp.sign({ sub: 'alice', tenant_id: tenant, realm_access: { roles: ['tenant-admin'] } });
  const start = nodeStarter(t, s, { env: { ORCH_LOG_LEVEL: process.env.TELL_DEBUG ? 'debug' : undefined }, specTail: `  auth: { issuer: ${idp.issuer}, audience: ${idp.audience}, jwks_file: ${idp.jwksFile} }\n` });
  const sfx = randomBytes(3).toString('hex');
  const ids = { a: `ctl-a-${sfx}`, b: `ctl-b-${sfx}` };
  // The old 5 s poll is what the default would be without the fix; the new default (30 s) is only a safety net.
  const spec = (id: string): string => `  node: { id: ${id}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1${extra} }\n`;
  const [a, b] = await Promise.all([start(ids.a, spec(ids.a)), start(ids.b, spec(ids.b))]);
  const A: Api = { http: a!.banner.http, token };
  const B: Api = { http: b!.banner.http, token };
  const deployed = await api(A, 'POST', '/v1/workflows', { manifest_yaml: LOOP });
  t.true(deployed.status === 201 || deployed.status === 200, JSON.stringify(deployed.body));
  const diag = (): string => `\nA:\n${a!.stderr().slice(-2000)}\nB:\n${b!.stderr().slice(process.env.TELL_DEBUG ? -20000 : -2000)}`;
  return { s, A, B, ids, nodes: { a: a!, b: b! }, diag };
}

async function pendingApproval(s: Scratch, run: string, visit: number): Promise<string> {
  return eventually(async () => {
    const r = await s.db.query<{ id: string }>(`SELECT id::TEXT AS id FROM approvals WHERE workflow_execution_id = $1 AND visit = $2 AND status = 'pending'`, [run, visit]);
    return r.rows[0]?.id;
  }, 60_000, `approval of visit ${visit}`);
}

/** Milliseconds from the approval's resolved_at to the entry of the next visit of `gate`, both database times. */
async function wakeLatency(s: Scratch, run: string, visit: number, timeoutMs: number): Promise<number> {
  return eventually(async () => {
    const r = await s.db.query<{ ms: number }>(
      `SELECT EXTRACT(EPOCH FROM (e.recorded_at - a.resolved_at)) * 1000 AS ms
       FROM approvals a JOIN workflow_events e ON e.execution_id = a.workflow_execution_id
       WHERE a.workflow_execution_id = $1 AND a.visit = $2 AND e.type = 'WorkflowStateEntered' AND e.state_name = 'gate' AND e.iteration_number = $3`,
      [run, visit, visit + 1],
    );
    return r.rows[0] ? Number(r.rows[0].ms) : undefined;
  }, timeoutMs, `visit ${visit + 1} to be entered`);
}

test('an approval given through controller B moves the run controller A holds in well under a second', async (t) => {
  t.timeout(5 * 60_000);
  const { s, A, B, ids, diag } = await twoControllers(t);
  const started = await api<{ execution_id: string }>(A, 'POST', '/v1/workflows/tell-loop/run', { input: {} });
  t.true(started.status < 300, JSON.stringify(started.body));
  const run = started.body.execution_id;
  const samples: number[] = [];
  // Visit 1 is the first message from B to A: it also sets up B's connection to A (and warms both processes' code
  // paths), which on this loaded machine has taken up to 2 s. It is reported, not held to the bound.
  let first = 0;
  for (let visit = 1; visit <= 5; visit++) {
    const approval = await pendingApproval(s, run, visit);
    const holder = (await s.db.query<{ owner_node: string }>('SELECT owner_node FROM workflow_executions WHERE id = $1', [run])).rows[0]?.owner_node;
    t.is(holder, ids.a, 'A holds the run');
    const res = await api(B, 'POST', `/v1/human-approvals/${approval}/approve`, {});
    t.is(res.status, 200, JSON.stringify(res.body));
    const ms = await wakeLatency(s, run, visit, 30_000);
    if (visit === 1) first = ms;
    else samples.push(ms);
  }
  t.log(`approval through B → next state on A (ms): first ${first.toFixed(1)}, then ${samples.map((m) => m.toFixed(1)).join(', ')}`);
  if (process.env.TELL_DEBUG) t.log(diag());
  for (const ms of samples) t.true(ms < 1000, `next state entered ${ms.toFixed(0)} ms after the approval${diag()}`);
});

test('kill -9 of the holder with a committed approval in flight: the approval takes effect exactly once, on B', async (t) => {
  t.timeout(5 * 60_000);
  const { s, A, B, ids, nodes, diag } = await twoControllers(t);
  const started = await api<{ execution_id: string }>(A, 'POST', '/v1/workflows/tell-loop/run', { input: {} });
  const run = started.body.execution_id;
  const approval = await pendingApproval(s, run, 1);
  // Frozen: B's TellActor to A cannot be answered (it keeps retrying while A is killed).
  nodes.a.child.kill('SIGSTOP');
  const res = await api(B, 'POST', `/v1/human-approvals/${approval}/approve`, {});
  t.is(res.status, 200, JSON.stringify(res.body));
  await new Promise((r) => setTimeout(r, 200));
  nodes.a.child.kill('SIGKILL');
  // B's sweep takes the lapsed run over, reads the committed approval and moves on.
  await pendingApproval(s, run, 2);
  t.is((await s.db.query<{ owner_node: string }>('SELECT owner_node FROM workflow_executions WHERE id = $1', [run])).rows[0]?.owner_node, ids.b, `B holds the run${diag()}`);
  await api(B, 'GET', `/v1/workflows/executions/${run}`);
  const counts = await s.db.query<{ type: string; iteration_number: number; n: number }>(
    `SELECT type, iteration_number, count(*)::INT4 AS n FROM workflow_events WHERE execution_id = $1 AND state_name = 'gate' GROUP BY type, iteration_number ORDER BY iteration_number, type`,
    [run],
  );
  const byKey = new Map(counts.rows.map((r) => [`${r.type}:${r.iteration_number}`, r.n]));
  t.is(byKey.get('WorkflowHumanInputReceived:1'), 1, 'the approval was applied once');
  t.is(byKey.get('WorkflowStateEntered:2'), 1, 'visit 2 was entered once');
  t.is(byKey.get('WorkflowHumanInputReceived:2'), undefined, 'nothing else was applied');
  const approvals = await s.db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM approvals WHERE workflow_execution_id = $1`, [run]);
  t.is(approvals.rows[0]?.n, 2, 'one approval per visit');
  void A;
});
