// An Agent state with no worker to run it (issue 20, defect 5), real processes: a controller keeps the state's
// execution pending while no ACTIVE worker meets its request, up to `spec.cluster.worker_wait_seconds`. A worker that
// joins within the bound runs it and the run completes; with none past the bound the execution fails with a reason
// that says so, and so does the run. Before the fix the execution failed at once ("no ACTIVE worker meets the
// request") and the run with it.
import test from 'ava';
import { ANSWERER_AGENT, ASKS_WORKFLOW } from '../support/agent-workflow.ts';
import { eventually } from '../support/node-process.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { allActive, conversation, executionEnd, llmProviders, nodeStarter, scratch } from './processes.ts';
import { api, type Api } from './support.ts';

interface RunJson {
  status: string;
  blackboard: Record<string, unknown>;
  error?: string;
}

test('an Agent state started with no worker waits for one; a worker that joins within the bound runs it', async (t) => {
  t.timeout(5 * 60_000);
  const llm = await startScriptedLlm(async () => ({ content: 'forty-two' }));
  t.teardown(() => llm.close());
  const s = await scratch(t, 'orch-worker-wait-');
  const start = nodeStarter(t, s);
  const sfx = Math.random().toString(36).slice(2, 7);
  const ctl = await start(`ctl-${sfx}`, `  node: { id: ctl-${sfx}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, worker_wait_seconds: 120 }\n`);
  const C: Api = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };
  t.is((await api(C, 'POST', '/v1/agents', { manifest_yaml: ANSWERER_AGENT })).status, 201);
  t.is((await api(C, 'POST', '/v1/workflows', ASKS_WORKFLOW, 'application/yaml')).status, 201);
  const run = await api<{ execution_id: string }>(C, 'POST', '/v1/workflows/asks/run', { input: { topic: 'numbers' } });
  t.is(run.status, 201, JSON.stringify(run.body));
  // The state's execution exists and waits, pending, on the controller.
  await eventually(async () => (/waiting for one/.test(ctl.stderr()) ? true : undefined), 60_000, `the controller to wait for a worker\n${ctl.stderr().slice(-2000)}`);
  const pending = await s.db.query<{ status: string; owner_node: string }>('SELECT status, owner_node FROM executions WHERE workflow_execution_id = $1', [run.body.execution_id]);
  t.like(pending.rows[0], { status: 'pending', owner_node: `ctl-${sfx}` });
  t.is((await api<RunJson>(C, 'GET', `/v1/workflows/executions/${run.body.execution_id}`)).body.status, 'running');

  const wid = `w-${sfx}`;
  const worker = await start(wid, `  node: { id: ${wid}, role: worker }\n  cluster: { controller: "${ctl.banner.cluster}", heartbeat_interval_seconds: 1 }\n${llmProviders(llm.url)}`);
  await allActive(C, [wid], 60_000, 'the worker to join');
  const done = await eventually(async () => {
    const r = await api<RunJson>(C, 'GET', `/v1/workflows/executions/${run.body.execution_id}`);
    return r.body.status === 'completed' || r.body.status === 'failed' ? r.body : undefined;
  }, 120_000, `the workflow to finish\n${ctl.stderr().slice(-2000)}\n${worker.stderr().slice(-2000)}`);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.blackboard.asked, true);
  const ex = await s.db.query<{ owner_node: string; status: string; final_output: string }>(
    'SELECT owner_node, status, final_output FROM executions WHERE workflow_execution_id = $1',
    [run.body.execution_id],
  );
  t.like(ex.rows[0], { owner_node: wid, status: 'completed', final_output: 'forty-two' });
});

test('with no worker past the bound, the Agent state fails with a reason that says so', async (t) => {
  t.timeout(5 * 60_000);
  const s = await scratch(t, 'orch-worker-wait-none-');
  const start = nodeStarter(t, s);
  const sfx = Math.random().toString(36).slice(2, 7);
  const waitSeconds = 4;
  const ctl = await start(`ctl-${sfx}`, `  node: { id: ctl-${sfx}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, worker_wait_seconds: ${waitSeconds} }\n`);
  const C: Api = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };
  t.is((await api(C, 'POST', '/v1/agents', { manifest_yaml: ANSWERER_AGENT })).status, 201);
  t.is((await api(C, 'POST', '/v1/workflows', ASKS_WORKFLOW, 'application/yaml')).status, 201);
  const run = await api<{ execution_id: string }>(C, 'POST', '/v1/workflows/asks/run', { input: { topic: 'numbers' } });
  t.is(run.status, 201, JSON.stringify(run.body));
  const done = await eventually(async () => {
    const r = await api<RunJson>(C, 'GET', `/v1/workflows/executions/${run.body.execution_id}`);
    return r.body.status === 'completed' || r.body.status === 'failed' ? r.body : undefined;
  }, 120_000, 'the workflow to finish');
  // The state failed with the reason (this workflow goes on to `record` whatever the state's outcome).
  const ask = done.blackboard.ask as { status?: string; error?: string } | undefined;
  t.is(ask?.status, 'failed', JSON.stringify(done));
  const ex = (await s.db.query<{ status: string; reason: string; created_at: Date; completed_at: Date }>(
    'SELECT status, reason, created_at, completed_at FROM executions WHERE workflow_execution_id = $1',
    [run.body.execution_id],
  )).rows[0]!;
  t.is(ex.status, 'failed');
  t.regex(ex.reason, new RegExp(`no ACTIVE worker meets the request \\(any\\); none came within ${waitSeconds} s \\(spec\\.cluster\\.worker_wait_seconds\\)`));
  // It waited the bound out (measured on the row), and not much longer.
  const waited = ex.completed_at.getTime() - ex.created_at.getTime();
  t.true(waited >= waitSeconds * 1000, `failed after ${waited} ms, before the ${waitSeconds} s bound`);
  t.true(waited < waitSeconds * 1000 + 30_000, `failed ${waited} ms after it was created`);
  t.regex(ask?.error ?? '', /no ACTIVE worker meets the request \(any\); none came within/);
});

test('the only worker killed mid-execution: the execution waits for a worker and resumes on the restarted one instead of failing worker_lost', async (t) => {
  t.timeout(6 * 60_000);
  // The first model call is held (the worker dies in it); any later one is answered at once.
  const held: (() => void)[] = [];
  let asks = 0;
  const llm = await startScriptedLlm(async (body) => {
    if (conversation(body).includes('hold:lone')) {
      asks++;
      if (asks === 1) await new Promise<void>((r) => held.push(r));
    }
    return { content: 'forty-two' };
  });
  t.teardown(() => {
    for (const r of held) r();
    return llm.close();
  });
  const s = await scratch(t, 'orch-worker-wait-lost-');
  const start = nodeStarter(t, s);
  const sfx = Math.random().toString(36).slice(2, 7);
  const ctl = await start(`ctl-${sfx}`, `  node: { id: ctl-${sfx}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3, worker_wait_seconds: 120 }\n`);
  const C: Api = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };
  const wid = `w-${sfx}`;
  const workerSpec = `  node: { id: ${wid}, role: worker }\n  cluster: { controller: "${ctl.banner.cluster}", heartbeat_interval_seconds: 1 }\n${llmProviders(llm.url)}`;
  const worker = await start(wid, workerSpec);
  await allActive(C, [wid], 60_000, 'the worker to join');
  const deployed = await api<{ agent_id: string }>(C, 'POST', '/v1/agents', { manifest_yaml: ANSWERER_AGENT });
  t.is(deployed.status, 201);
  const started = await api<{ execution_id: string }>(C, 'POST', '/v1/executions', { agent_id: deployed.body.agent_id, input: 'hold:lone' });
  t.is(started.status, 200, JSON.stringify(started.body));
  const id = started.body.execution_id;
  await eventually(async () => (asks === 1 ? true : undefined), 60_000, 'the execution to ask the model on the worker');
  t.is(await worker.kill('SIGKILL'), 'SIGKILL');
  // The controller notices the loss and keeps the execution, waiting (no survivor now).
  await eventually(async () => (/waiting for one/.test(ctl.stderr()) ? true : undefined), 60_000, `the controller to wait for a worker\n${ctl.stderr().slice(-2000)}`);
  t.is((await api<{ status: string }>(C, 'GET', `/v1/executions/${id}`)).body.status, 'running', 'not failed worker_lost');
  // The worker comes back (same node id and data); the execution resumes there from its journal and completes.
  const again = await start(wid, workerSpec);
  const done = await executionEnd(C, id, 120_000, `the execution to finish\n${ctl.stderr().slice(-2000)}\n${again.stderr().slice(-2000)}`);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.final_output, 'forty-two');
  t.true(asks >= 2, 'the model was asked again after the resume');
});
