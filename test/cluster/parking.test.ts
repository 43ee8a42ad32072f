// Parked (passivated) workflow runs (issue 18; docs/WORKFLOWS.md "Idle runs are parked"): real `orch up` controller
// processes on one PostgreSQL database, with spec.workflow.park_after_seconds 0 so a run waiting on a Human state
// leaves memory at once (its row says parked = TRUE, owner_node = the controller). An approval (through the other
// controller), a signal, a cancel and a timeout each bring it back from its row and move it exactly once. Then the
// holder is killed with -9 while runs are parked: the other controller adopts them once the holder's parking lease
// lapsed, applies the approvals, a signal and a cancel committed meanwhile exactly once, and keeps the rest parked
// (and wakes them later).
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { eventually, type NodeProcess } from '../support/node-process.ts';
import { makeTestIdp } from '../support/jwks.ts';
import { nodeStarter, scratch, type Scratch } from './processes.ts';
import { api, type Api } from './support.ts';
import { TELL_LOOP_WORKFLOW as LOOP } from './tell-fixtures.ts';

/** A Human state that times out after 2 s with a default answer, then ends. */
const TIMEOUT_WORKFLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: park-timeout, version: 1.0.0 }
spec:
  initial_state: gate
  states:
    gate:
      kind: Human
      prompt: 'Answer within 2 s'
      timeout: 2s
      default_response: 'no'
      transitions:
        - { condition: always, target: done }
    done:
      kind: Human
      prompt: 'Never answered'
      transitions: []
`;

/** A parent whose Subworkflow state waits on a child that waits on a Human state (issue 18: both park). */
const KID_WORKFLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: park-kid, version: 1.0.0 }
spec:
  initial_state: ask
  states:
    ask:
      kind: Human
      prompt: 'Go?'
      transitions: []
`;
const DAD_WORKFLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: park-dad, version: 1.0.0 }
spec:
  initial_state: call
  states:
    call:
      kind: Subworkflow
      workflow_id: park-kid
      transitions:
        - { condition: on_success, target: done }
    done:
      kind: Human
      prompt: 'Never answered'
      transitions: []
`;

interface Setup {
  s: Scratch;
  A: Api;
  B: Api;
  ids: { a: string; b: string };
  nodes: { a: NodeProcess; b: NodeProcess };
  diag: () => string;
}

async function twoControllers(t: ExecutionContext): Promise<Setup> {
  const s = await scratch(t, 'orch-park-');
  const idp = await makeTestIdp();
  const tenant = `t-${randomBytes(4).toString('hex')}`;
  const token = await idp.sign({ sub: 'alice', tenant_id: tenant, realm_access: { roles: ['tenant-admin'] } });
  const start = nodeStarter(t, s, { env: { ORCH_LOG_LEVEL: process.env.PARK_DEBUG ? 'debug' : undefined }, specTail: `  auth: { issuer: ${idp.issuer}, audience: ${idp.audience}, jwks_file: ${idp.jwksFile} }\n` });
  const sfx = randomBytes(3).toString('hex');
  const ids = { a: `ctl-a-${sfx}`, b: `ctl-b-${sfx}` };
  // A long safety-net poll: what moves a parked run in these tests is the message, not the scan.
  const spec = (id: string): string => `  node: { id: ${id}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1 }\n  workflow: { park_after_seconds: 0, poll_seconds: 600 }\n`;
  const [a, b] = await Promise.all([start(ids.a, spec(ids.a)), start(ids.b, spec(ids.b))]);
  const A: Api = { http: a!.banner.http, token };
  const B: Api = { http: b!.banner.http, token };
  for (const m of [LOOP, TIMEOUT_WORKFLOW, KID_WORKFLOW, DAD_WORKFLOW]) {
    const deployed = await api(A, 'POST', '/v1/workflows', { manifest_yaml: m });
    t.true(deployed.status === 201 || deployed.status === 200, JSON.stringify(deployed.body));
  }
  const diag = (): string => `\nA:\n${a!.stderr().slice(-3000)}\nB:\n${b!.stderr().slice(-3000)}`;
  return { s, A, B, ids, nodes: { a: a!, b: b! }, diag };
}

async function startRun(c: Api, workflow: string): Promise<string> {
  const r = await api<{ execution_id: string }>(c, 'POST', `/v1/workflows/${workflow}/run`, { input: {} });
  if (r.status >= 300) throw new Error(`run: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.execution_id;
}

/** Waits until the run is parked on `node` and answers its pending approval of `visit`. */
async function parkedOn(s: Scratch, run: string, node: string, visit = 1): Promise<string> {
  return eventually(async () => {
    const r = await s.db.query<{ id: string }>(
      `SELECT a.id::TEXT AS id FROM approvals a JOIN workflow_executions w ON w.id = a.workflow_execution_id
       WHERE a.workflow_execution_id = $1 AND a.visit = $2 AND a.status = 'pending' AND w.parked AND w.owner_node = $3`,
      [run, visit, node],
    );
    return r.rows[0]?.id;
  }, 60_000, `run ${run} parked on ${node} at visit ${visit}`);
}

async function eventCounts(s: Scratch, run: string): Promise<Map<string, number>> {
  const r = await s.db.query<{ type: string; state_name: string | null; iteration_number: number | null; n: number }>(
    `SELECT type, state_name, iteration_number, count(*)::INT4 AS n FROM workflow_events WHERE execution_id = $1 GROUP BY type, state_name, iteration_number`,
    [run],
  );
  return new Map(r.rows.map((x) => [`${x.type}:${x.state_name ?? ''}:${x.iteration_number ?? ''}`, x.n]));
}

test('a parked run is woken by an approval through the other controller, a signal, a cancel and a timeout', async (t) => {
  t.timeout(5 * 60_000);
  const { s, A, B, ids, diag } = await twoControllers(t);

  // Approval through B of a run parked on A: B commits it and tells A, which brings the run back and moves it.
  const r1 = await startRun(A, 'tell-loop');
  const ap1 = await parkedOn(s, r1, ids.a);
  const res1 = await api(B, 'POST', `/v1/human-approvals/${ap1}/approve`, {});
  t.is(res1.status, 200, JSON.stringify(res1.body));
  await parkedOn(s, r1, ids.a, 2);
  const lat = await s.db.query<{ ms: number }>(
    `SELECT EXTRACT(EPOCH FROM (e.recorded_at - a.resolved_at)) * 1000 AS ms FROM approvals a JOIN workflow_events e ON e.execution_id = a.workflow_execution_id
     WHERE a.id = $1 AND e.type = 'WorkflowStateEntered' AND e.state_name = 'gate' AND e.iteration_number = 2`,
    [ap1],
  );
  t.log(`approval through B → parked run on A entered its next state in ${Number(lat.rows[0]?.ms).toFixed(1)} ms`);
  t.true(Number(lat.rows[0]?.ms) < 5000, `woken by the message, not a poll${diag()}`);
  const c1 = await eventCounts(s, r1);
  t.is(c1.get('WorkflowHumanInputReceived:gate:1'), 1, 'the approval was applied once');
  t.is(c1.get('WorkflowStateEntered:gate:2'), 1, 'visit 2 entered once');

  // A signal (a response) through A, the holder itself, to a parked run.
  const r2 = await startRun(A, 'tell-loop');
  await parkedOn(s, r2, ids.a);
  const sig = await api(A, 'POST', `/v1/workflows/executions/${r2}/signal`, { response: 'no' });
  t.is(sig.status, 200, JSON.stringify(sig.body));
  await eventually(async () => ((await eventCounts(s, r2)).get('WorkflowStateEntered:done:1') === 1 ? true : undefined), 30_000, `run ${r2} to enter done${diag()}`);

  // A cancel through B of a run parked on A.
  const r3 = await startRun(A, 'tell-loop');
  await parkedOn(s, r3, ids.a);
  const can = await api(B, 'POST', `/v1/workflows/executions/${r3}/cancel`);
  t.true(can.status < 300, JSON.stringify(can.body));
  const end3 = await eventually(async () => {
    const r = await s.db.query<{ status: string; parked: boolean }>('SELECT status, parked FROM workflow_executions WHERE id = $1', [r3]);
    return r.rows[0]?.status === 'cancelled' ? r.rows[0] : undefined;
  }, 30_000, `run ${r3} cancelled${diag()}`);
  t.false(end3.parked);
  t.is((await eventCounts(s, r3)).get('WorkflowExecutionCancelled::') ?? (await eventCounts(s, r3)).get('WorkflowExecutionCancelled:gate:'), 1, 'cancelled once');

  // A timeout: the approval's timer (started by the sweep as the deadline nears) expires it and wakes the parked run.
  const r4 = await startRun(A, 'park-timeout');
  await parkedOn(s, r4, ids.a);
  await eventually(async () => ((await eventCounts(s, r4)).get('WorkflowStateEntered:done:1') === 1 ? true : undefined), 30_000, `run ${r4} to time out into done${diag()}`);
  const ap4 = await s.db.query<{ status: string; resolved_by: string }>(`SELECT status, resolved_by FROM approvals WHERE workflow_execution_id = $1 AND state_name = 'gate'`, [r4]);
  t.deepEqual(ap4.rows, [{ status: 'expired', resolved_by: 'timeout' }]);
  t.is((await eventCounts(s, r4)).get('WorkflowHumanInputReceived:gate:1'), 1, 'the timeout was applied once');
});

test('kill -9 of the controller holding parked runs: the other adopts them, applies committed approvals, a signal and a cancel once, keeps the rest parked', async (t) => {
  t.timeout(5 * 60_000);
  const { s, A, B, ids, nodes, diag } = await twoControllers(t);
  const runs = await Promise.all(Array.from({ length: 6 }, () => startRun(A, 'tell-loop')));
  const approvals = await Promise.all(runs.map((r) => parkedOn(s, r, ids.a)));
  nodes.a.child.kill('SIGKILL');
  // Approved through B while A is dead: B's message finds no live holder (or an unreachable one); the fact waits.
  for (const ap of approvals.slice(0, 3)) {
    const res = await api(B, 'POST', `/v1/human-approvals/${ap}/approve`, {});
    t.is(res.status, 200, JSON.stringify(res.body));
  }
  // A signal and a cancel through B while A is dead: committed, then applied by whoever holds the run next.
  const sig = await api(B, 'POST', `/v1/workflows/executions/${runs[4]}/signal`, { response: 'no' });
  t.is(sig.status, 200, JSON.stringify(sig.body));
  const can = await api(B, 'POST', `/v1/workflows/executions/${runs[5]}/cancel`);
  t.true(can.status < 300, JSON.stringify(can.body));
  // B adopts A's parked runs once A's parking lease lapsed; the answered ones move, the others stay parked on B.
  for (const r of runs.slice(0, 3)) await parkedOn(s, r, ids.b, 2);
  await parkedOn(s, runs[3]!, ids.b, 1);
  for (const r of runs.slice(0, 3)) {
    const c = await eventCounts(s, r);
    t.is(c.get('WorkflowHumanInputReceived:gate:1'), 1, `the approval of ${r} was applied once${diag()}`);
    t.is(c.get('WorkflowStateEntered:gate:2'), 1, `visit 2 of ${r} entered once`);
  }
  await eventually(async () => ((await eventCounts(s, runs[4]!)).get('WorkflowStateEntered:done:1') === 1 ? true : undefined), 60_000, `the signalled run to enter done${diag()}`);
  const c4 = await eventCounts(s, runs[4]!);
  t.is(c4.get('WorkflowHumanInputReceived:gate:1'), 1, 'the signal was applied once');
  t.is(c4.get('WorkflowStateEntered:done:1'), 1, 'done entered once');
  const end5 = await eventually(async () => {
    const r = await s.db.query<{ status: string; parked: boolean }>('SELECT status, parked FROM workflow_executions WHERE id = $1', [runs[5]]);
    return r.rows[0]?.status === 'cancelled' ? r.rows[0] : undefined;
  }, 60_000, `the run cancelled while its holder was dead${diag()}`);
  t.false(end5.parked);
  const c5 = await eventCounts(s, runs[5]!);
  t.is((c5.get('WorkflowExecutionCancelled::') ?? 0) + (c5.get('WorkflowExecutionCancelled:gate:') ?? 0), 1, 'cancelled once');
  // The rest, now parked on B, are still woken by an approval.
  const res = await api(B, 'POST', `/v1/human-approvals/${approvals[3]}/approve`, {});
  t.is(res.status, 200);
  await parkedOn(s, runs[3]!, ids.b, 2);
  t.is((await eventCounts(s, runs[3]!)).get('WorkflowHumanInputReceived:gate:1'), 1);
  void A;
});

test('a run parked on a child: kill -9 of its holder, the other adopts it and the child answered there brings it back once', async (t) => {
  t.timeout(5 * 60_000);
  const { s, B, ids, nodes, A, diag } = await twoControllers(t);
  const dad = await startRun(A, 'park-dad');
  const kid = await eventually(async () => {
    const r = await s.db.query<{ id: string }>('SELECT id::TEXT AS id FROM workflow_executions WHERE parent_execution_id = $1', [dad]);
    return r.rows[0]?.id;
  }, 60_000, 'the child run');
  const answer = await parkedOn(s, kid, ids.a);
  await eventually(async () => {
    const r = await s.db.query<{ parked: boolean; status: string; owner_node: string }>('SELECT parked, status, owner_node FROM workflow_executions WHERE id = $1', [dad]);
    return r.rows[0]?.parked && r.rows[0].owner_node === ids.a ? r.rows[0] : undefined;
  }, 60_000, `the parent parked on A${diag()}`);
  nodes.a.child.kill('SIGKILL');
  // B adopts both once A's parking lease lapsed (the parent stays parked: its child has not ended).
  await eventually(async () => {
    const r = await s.db.query<{ n: number }>('SELECT count(*)::INT4 AS n FROM workflow_executions WHERE id = ANY($1::UUID[]) AND parked AND owner_node = $2', [[dad, kid], ids.b]);
    return r.rows[0]?.n === 2 ? true : undefined;
  }, 60_000, `B to adopt the parked parent and child${diag()}`);
  const res = await api(B, 'POST', `/v1/human-approvals/${answer}/approve`, {});
  t.is(res.status, 200, JSON.stringify(res.body));
  // The child ends on B and tells its parent, parked on B: the parent's visit runs again, finds the same child, moves on.
  await eventually(async () => ((await eventCounts(s, dad)).get('WorkflowStateEntered:done:1') === 1 ? true : undefined), 60_000, `the parent to enter done${diag()}`);
  const c = await eventCounts(s, dad);
  t.is(c.get('WorkflowStateCompleted:call:1'), 1, 'the Subworkflow visit completed once');
  const children = await s.db.query<{ n: number }>('SELECT count(*)::INT4 AS n FROM workflow_executions WHERE parent_execution_id = $1', [dad]);
  t.is(children.rows[0]!.n, 1, 'one child, found again after the adoption');
});
