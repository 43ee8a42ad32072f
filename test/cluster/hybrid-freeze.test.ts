// A hybrid node frozen long enough for its peer to take its membership row (issue 20, defect 4): two real `orch up`
// hybrids on one PostgreSQL database. SIGSTOP of A lets B claim A's row and mark it UNHEALTHY (and take A's workflow
// run over); after SIGCONT, A takes its own row back — ACTIVE again, owned by A, heartbeats written after the thaw —
// and keeps it, and work started on A runs to its end. Before the fix A logged `lease lost; stopping this actor` and
// its row stayed UNHEALTHY under B for good.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { makeTestIdp } from '../support/jwks.ts';
import { eventually } from '../support/node-process.ts';
import { nodeStarter, scratch } from './processes.ts';
import { api, expectedAcc, workflowYaml, type Api } from './support.ts';

interface Row {
  status: string;
  owner_node: string | null;
  last_heartbeat_at: Date | null;
  heartbeat_count: number;
}

test('a frozen hybrid takes its membership row back after SIGCONT, whoever marked it UNHEALTHY, and its work proceeds', async (t) => {
  t.timeout(8 * 60_000);
  const s = await scratch(t, 'orch-hybrid-freeze-');
  const idp = await makeTestIdp();
  const tenant = `t-${randomBytes(4).toString('hex')}`;
  const token = await idp.sign({ sub: 'alice', tenant_id: tenant, realm_access: { roles: ['tenant-admin'] } });
  const sfx = randomBytes(3).toString('hex');
  const start = nodeStarter(t, s, { specTail: `  auth: { issuer: ${idp.issuer}, audience: ${idp.audience}, jwks_file: ${idp.jwksFile} }\n` });
  const cluster = '  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3 }\n';
  const aId = `hyb-a-${sfx}`;
  const bId = `hyb-b-${sfx}`;
  const [a, b] = await Promise.all([aId, bId].map((id) => start(id, `  node: { id: ${id} }\n${cluster}`)));
  const A: Api = { http: a!.banner.http, token };
  const B: Api = { http: b!.banner.http, token };
  const diag = (): string => `\nA:\n${a!.stderr().slice(-2500)}\nB:\n${b!.stderr().slice(-1500)}`;
  const row = async (id: string): Promise<Row> =>
    (await s.db.query<Row>('SELECT status, owner_node, last_heartbeat_at, heartbeat_count FROM cluster_nodes WHERE node_id = $1', [id])).rows[0]!;
  await eventually(async () => {
    const [ra, rb] = [await row(aId), await row(bId)];
    return ra?.status === 'ACTIVE' && ra.owner_node === aId && rb?.status === 'ACTIVE' && rb.owner_node === bId ? true : undefined;
  }, 60_000, `both hybrids ACTIVE on their own rows${diag()}`);

  // A run on A, slow enough to be running through the freeze.
  const deployed = await api(A, 'POST', '/v1/workflows', workflowYaml('thaw', 2), 'application/yaml');
  t.is(deployed.status, 201, JSON.stringify(deployed.body));
  const run = await api<{ execution_id: string }>(A, 'POST', '/v1/workflows/thaw/run', { input: { seed: 'x' } });
  t.is(run.status, 201, JSON.stringify(run.body));
  const runId = run.body.execution_id;
  await eventually(async () => {
    const r = (await s.db.query<{ owner_node: string; status: string }>('SELECT owner_node, status FROM workflow_executions WHERE id = $1', [runId])).rows[0];
    return r?.owner_node === aId && r.status === 'running' ? true : undefined;
  }, 60_000, `the run running on A${diag()}`);

  t.true(a!.child.kill('SIGSTOP'));
  const taken = await eventually(async () => {
    const r = await row(aId);
    return r.status === 'UNHEALTHY' && r.owner_node === bId ? r : undefined;
  }, 90_000, `B to take A's row and mark it UNHEALTHY${diag()}`);
  t.is(taken.owner_node, bId);
  // B also takes the frozen node's run over (its workflow lease lapsed).
  await eventually(async () => {
    const r = (await s.db.query<{ owner_node: string }>('SELECT owner_node FROM workflow_executions WHERE id = $1', [runId])).rows[0];
    return r?.owner_node === bId ? true : undefined;
  }, 90_000, `B to take the run over${diag()}`);

  const thawedAt = (await s.db.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;
  t.true(a!.child.kill('SIGCONT'));
  const back = await eventually(async () => {
    const r = await row(aId);
    return r.status === 'ACTIVE' && r.owner_node === aId && r.last_heartbeat_at && r.last_heartbeat_at > thawedAt ? r : undefined;
  }, 60_000, `A's row ACTIVE again, owned by A, with a heartbeat after the thaw${diag()}`);
  t.regex(a!.stderr(), /own membership row was taken over by another node; taking it back/);
  // The status change is recorded on the node's stream like any other.
  const changes = await s.db.query<{ payload: { status?: string; previous?: string } }>(
    `SELECT payload FROM event_log WHERE stream = $1 AND type = 'status_changed' ORDER BY seq`,
    [`node:${aId}`],
  );
  t.deepEqual(changes.rows.map((r) => r.payload.status), ['UNHEALTHY', 'ACTIVE'], 'marked UNHEALTHY by B, then ACTIVE by A, each with its event');

  // It keeps the row: B's stale actor lets go rather than claiming it again, and the heartbeats go on.
  await new Promise((r) => setTimeout(r, 6000));
  const later = await row(aId);
  t.is(later.status, 'ACTIVE', `still ACTIVE${diag()}`);
  t.is(later.owner_node, aId, 'still A\'s');
  t.true(later.heartbeat_count > back.heartbeat_count, 'A heartbeats on');
  t.is(a!.child.exitCode, null, 'the same A process, never restarted');

  // A second freeze is handled like the first: B let go of its actor over A's row when A took the row back, so it
  // can claim the row again (a stale actor left behind would keep B from ever watching A again).
  t.true(a!.child.kill('SIGSTOP'));
  await eventually(async () => {
    const r = await row(aId);
    return r.status === 'UNHEALTHY' && r.owner_node === bId ? r : undefined;
  }, 90_000, `B to take A's row again on the second freeze${diag()}`);
  const thawedAgain = (await s.db.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;
  t.true(a!.child.kill('SIGCONT'));
  await eventually(async () => {
    const r = await row(aId);
    return r.status === 'ACTIVE' && r.owner_node === aId && r.last_heartbeat_at && r.last_heartbeat_at > thawedAgain ? r : undefined;
  }, 60_000, `A's row ACTIVE again after the second thaw${diag()}`);

  // Work proceeds: the run frozen on A ends, and a new run started on A runs to its end.
  const ended = await eventually(async () => {
    const r = await api<{ status: string; blackboard: { acc?: string } }>(A, 'GET', `/v1/workflows/executions/${runId}`);
    return r.body.status === 'running' ? undefined : r.body;
  }, 180_000, `the frozen run to end${diag()}`);
  t.is(ended.status, 'completed', JSON.stringify(ended));
  t.is(ended.blackboard.acc, expectedAcc('x'));
  const fresh = await api<{ execution_id: string }>(A, 'POST', '/v1/workflows/thaw/run', { input: { seed: 'y' } });
  t.is(fresh.status, 201, JSON.stringify(fresh.body));
  const freshEnd = await eventually(async () => {
    const r = await api<{ status: string }>(A, 'GET', `/v1/workflows/executions/${fresh.body.execution_id}`);
    return r.body.status === 'running' ? undefined : r.body;
  }, 180_000, `the new run on A to end${diag()}`);
  t.is(freshEnd.status, 'completed', JSON.stringify(freshEnd));
});
