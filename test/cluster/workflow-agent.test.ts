// A workflow on a controller whose Agent state runs on a worker (real processes): the controller's WorkflowActor
// starts the state's execution through the controller's ExecutionService, which routes and forwards it to the only
// worker; the run completes with the model's answer, and the execution row says the worker ran it. The execution's end
// wakes the run at once (issue 18: the controller that relays the worker's stream tells the run; the state re-reads
// the execution only every 5 s as a safety net): the Agent state completes well under a second after the execution.
import test from 'ava';
import { ANSWERER_AGENT, ASKS_WORKFLOW } from '../support/agent-workflow.ts';
import { eventually } from '../support/node-process.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { allActive, llmProviders, nodeStarter, scratch } from './processes.ts';
import { api, type Api } from './support.ts';

test('a workflow on a controller runs its Agent state on a worker', async (t) => {
  t.timeout(180_000);
  const llm = await startScriptedLlm(async () => ({ content: 'forty-two' }));
  t.teardown(() => llm.close());
  const s = await scratch(t, 'orch-wf-agent-');
  const db = s.db;
  const start = nodeStarter(t, s);
  const sfx = Math.random().toString(36).slice(2, 7);
  const ctl = await start(`ctl-${sfx}`, `  node: { id: ctl-${sfx}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1 }\n`);
  const C: Api = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };
  const wid = `w-${sfx}`;
  await start(
    wid,
    `  node: { id: ${wid}, role: worker }\n  cluster: { controller: "${ctl.banner.cluster}", heartbeat_interval_seconds: 1 }\n${llmProviders(llm.url)}`,
  );
  await allActive(C, [wid], 30_000, 'the worker to join');
  t.is((await api(C, 'POST', '/v1/agents', { manifest_yaml: ANSWERER_AGENT })).status, 201);
  const dep = await api(C, 'POST', '/v1/workflows', ASKS_WORKFLOW, 'application/yaml');
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const run = await api<{ execution_id: string }>(C, 'POST', '/v1/workflows/asks/run', { input: { topic: 'numbers' } });
  t.is(run.status, 201, JSON.stringify(run.body));
  const done = await eventually(async () => {
    const r = await api<{ status: string; blackboard: Record<string, unknown>; error?: string }>(C, 'GET', `/v1/workflows/executions/${run.body.execution_id}`);
    return r.body.status === 'completed' || r.body.status === 'failed' ? r.body : undefined;
  }, 90_000, 'the workflow to finish');
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.blackboard.asked, true);
  const ex = await db.query<{ owner_node: string; status: string; final_output: string }>(
    'SELECT owner_node, status, final_output FROM executions WHERE workflow_execution_id = $1',
    [run.body.execution_id],
  );
  t.is(ex.rows.length, 1);
  t.like(ex.rows[0], { owner_node: wid, status: 'completed', final_output: 'forty-two' });
  const lag = await db.query<{ ms: number }>(
    `SELECT EXTRACT(EPOCH FROM (min(e.recorded_at) - x.completed_at)) * 1000 AS ms
     FROM executions x JOIN workflow_events e ON e.execution_id::TEXT = x.workflow_execution_id
     WHERE x.workflow_execution_id = $1 AND e.type = 'WorkflowStateCompleted' AND e.recorded_at >= x.completed_at
     GROUP BY x.completed_at`,
    [run.body.execution_id],
  );
  const ms = Number(lag.rows[0]?.ms);
  t.log(`execution completed → Agent state completed: ${ms.toFixed(1)} ms`);
  t.true(ms < 1000, `the Agent state completed ${ms} ms after its execution`);
});
