// Human states over real PostgreSQL: the pending approval (list/get with the seed's exact bodies), approve →
// input_equals_yes with human.feedback, reject (reason required) → input_equals_no, signal with free text →
// input_equals, timeout with default_response (ApprovalActor), timeout without one (the state fails), and a Human
// state without a timeout that keeps waiting.
import test from 'ava';
import { OrchError } from '../../src/errors/catalog.ts';
import { manifest, startEngine, TENANT, type EngineHarness } from './engine-harness.ts';

function gate(name: string, extra = ''): string {
  return manifest(
    name,
    'gate',
    `    gate:
      kind: Human
      prompt: 'Deploy {{input.v}}?'
${extra}      transitions:
        - { condition: input_equals_yes, target: yes }
        - { condition: input_equals_no, target: no }
        - { condition: input_equals, value: maybe, target: maybe }
    yes:
      kind: System
      command: 'update_blackboard {"path": "yes", "fb": {{json human.feedback}} }'
      transitions: []
    no:
      kind: System
      command: 'update_blackboard {"path": "no", "fb": {{json human.feedback}} }'
      transitions: []
    maybe:
      kind: System
      command: 'update_blackboard {"path": "maybe", "fb": {{json human.feedback}} }'
      transitions: []
`,
  );
}

async function pendingOf(h: EngineHarness, id: string): Promise<string> {
  await h.waitFor(id, 'waiting_for_human_input');
  const { pending_requests } = await h.cap.approvals.list(TENANT);
  const req = pending_requests.find((r) => r.execution_id === id);
  if (!req) throw new Error('no pending request');
  return req.id;
}

test('approve: pending request listed and shown, approve follows input_equals_yes with human.feedback', async (t) => {
  const h = await startEngine(t);
  await h.deploy(gate('appr'));
  const id = await h.run('appr', { input: { v: '1.2' } });
  const reqId = await pendingOf(h, id);
  const shown = await h.cap.approvals.get(TENANT, reqId);
  t.like(shown, { request: { id: reqId, execution_id: id, prompt: 'Deploy 1.2?', timeout_seconds: null } });
  t.is((await h.cap.runs.get(TENANT, id)).status, 'waiting_for_human_input');
  t.deepEqual(await h.cap.approvals.get('other-tenant', reqId), { error: 'Request not found or already completed' });
  const bad = await t.throwsAsync(() => h.cap.approvals.get(TENANT, 'nope'));
  t.is((bad as OrchError).spec.http, 400);
  t.is((bad as OrchError).message, 'Invalid request ID');
  t.like(await h.cap.approvals.approve(TENANT, reqId, { feedback: 'ship it', approved_by: 'bob' }), { status: 'approved' });
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.path, 'yes');
  t.is(row.blackboard.fb, 'ship it');
  t.like(row.blackboard.gate as object, { status: 'success', response: 'approved' });
  t.deepEqual(await h.cap.approvals.get(TENANT, reqId), { error: 'Request not found or already completed' });
  const again = await t.throwsAsync(() => h.cap.approvals.approve(TENANT, reqId, {}));
  t.is((again as OrchError).spec.http, 404);
  const types = (await h.events(id)).map((e) => e.type);
  t.true(types.includes('WorkflowWaitingForHumanInput'));
  t.true(types.includes('WorkflowHumanInputReceived'));
});

test('reject needs a reason; it follows input_equals_no with the reason as human.feedback', async (t) => {
  const h = await startEngine(t);
  await h.deploy(gate('rej'));
  const id = await h.run('rej', { input: { v: '2' } });
  const reqId = await pendingOf(h, id);
  const noReason = await t.throwsAsync(() => h.cap.approvals.reject(TENANT, reqId, {}));
  t.is((noReason as OrchError).spec.http, 400);
  t.like(await h.cap.approvals.reject(TENANT, reqId, { reason: 'tests are red' }), { status: 'rejected' });
  const row = await h.waitFor(id);
  t.is(row.blackboard.path, 'no');
  t.is(row.blackboard.fb, 'tests are red');
});

test('signal delivers free text (input_equals); a run that is not waiting answers signalled false', async (t) => {
  const h = await startEngine(t);
  await h.deploy(gate('sig'));
  const id = await h.run('sig', { input: { v: '3' } });
  await pendingOf(h, id);
  t.deepEqual(await h.cap.runs.signal(TENANT, id, 'maybe'), { signalled: true });
  const row = await h.waitFor(id);
  t.is(row.blackboard.path, 'maybe');
  t.is(row.blackboard.fb, 'maybe');
  const late = await h.cap.runs.signal(TENANT, id, 'yes');
  t.false(late.signalled);
  t.regex(late.error ?? '', /not waiting_for_human_input/);
});

test('timeout with default_response applies it automatically at the deadline', async (t) => {
  const h = await startEngine(t);
  // 5 s: long enough that the request is still pending when the test reads it on a loaded machine.
  await h.deploy(gate('tmo', "      timeout: 5s\n      default_response: 'no'\n"));
  const started = Date.now();
  const id = await h.run('tmo', { input: { v: '4' } });
  const reqId = await pendingOf(h, id);
  t.like(await h.cap.approvals.get(TENANT, reqId), { request: { timeout_seconds: 5 } });
  const row = await h.waitFor(id);
  const took = Date.now() - started;
  t.true(took >= 4900, `took ${took} ms`);
  // Promptness is measured on what the node recorded (the row's deadline and resolved_at), not on when this test's
  // polling saw the run end: on a loaded machine the polling alone can add seconds.
  const rec = (await h.db.query<{ deadline: Date; resolved_at: Date; created_at: Date; status: string }>(
    'SELECT deadline, resolved_at, created_at, status FROM approvals WHERE id = $1', [reqId],
  )).rows[0]!;
  t.is(rec.status, 'expired');
  t.is(rec.deadline.getTime() - rec.created_at.getTime(), 5000);
  const late = rec.resolved_at.getTime() - rec.deadline.getTime();
  t.true(late >= 0 && late < 3000, `resolved ${late} ms after the deadline`);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.path, 'no');
  t.is(row.blackboard.fb, 'no');
  t.deepEqual(await h.cap.approvals.get(TENANT, reqId), { error: 'Request not found or already completed' });
});

test('timeout without default_response fails the state; without a timeout the run keeps waiting', async (t) => {
  const h = await startEngine(t);
  await h.deploy(gate('tmofail', '      timeout: 1s\n'));
  const id = await h.run('tmofail');
  const row = await h.waitFor(id);
  t.is(row.status, 'failed');
  t.regex(row.error ?? '', /timed out after 1 s waiting for human input/);

  await h.deploy(gate('forever'));
  const id2 = await h.run('forever');
  await pendingOf(h, id2);
  await new Promise((r) => setTimeout(r, 1500));
  t.is((await h.cap.runs.get(TENANT, id2)).status, 'waiting_for_human_input');
  t.deepEqual(await h.cap.runs.cancel(TENANT, id2), { cancelled: true, status: 'cancelling' });
  t.is((await h.waitFor(id2)).status, 'cancelled');
  t.is((await h.cap.approvals.list(TENANT)).pending_requests.length, 0, 'a cancelled run leaves no pending request');
});
