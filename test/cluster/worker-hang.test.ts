// Worker loss noticed by missed heartbeats alone (issue 7 part 5): the worker process is frozen with SIGSTOP in the
// middle of an execution, so its TCP connections stay open and the ForwardExecution stream does not break — as with a
// network cut. After `missed_heartbeats` periods the controller marks it UNHEALTHY and its loss sweep ends the
// execution `failed` (`worker_lost`). When the worker is thawed (SIGCONT) its execution's row has moved on (a new
// epoch): whatever it tries to write is fenced off, the execution stays failed, and the worker rejoins ACTIVE.
import test from 'ava';
import { eventually } from '../support/node-process.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { allActive, llmProviders, nodeStarter, nodeStatus, scratch } from './processes.ts';
import { api, type Api } from './support.ts';

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: frozen, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 120, iteration_timeout: 120, validation: [] }
  security: { resources: { timeout: 300 } }
`;

test('a frozen worker (no RST, heartbeats stop) is found by the heartbeat deadline: worker_lost, fenced, rejoins', async (t) => {
  t.timeout(240_000);
  let release: (() => void) | undefined;
  let asked = false;
  const llm = await startScriptedLlm(async () => {
    asked = true;
    await new Promise<void>((r) => (release = r));
    return { content: 'late answer' };
  });
  t.teardown(() => {
    release?.();
    return llm.close();
  });
  const s = await scratch(t, 'orch-hang-');
  const db = s.db;
  const start = nodeStarter(t, s);
  const sfx = Math.random().toString(36).slice(2, 7);
  // worker_wait_seconds 0: the lone worker's loss fails its execution at once rather than waiting for it to return.
  const ctl = await start(`ctl-${sfx}`, `  node: { id: ctl-${sfx}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3, worker_wait_seconds: 0 }\n`);
  const C: Api = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };
  const wid = `w-${sfx}`;
  const worker = await start(
    wid,
    `  node: { id: ${wid}, role: worker }\n  cluster: { controller: "${ctl.banner.cluster}", heartbeat_interval_seconds: 1, missed_heartbeats: 3 }\n${llmProviders(llm.url)}`,
  );
  const statusOf = (): Promise<string | undefined> => nodeStatus(C, wid);
  await allActive(C, [wid], 30_000, 'the worker to join');
  const dep = await api<{ agent_id: string }>(C, 'POST', '/v1/agents', { manifest_yaml: AGENT });
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const ex = await api<{ execution_id: string }>(C, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'wait' });
  const id = ex.body.execution_id;
  await eventually(async () => (asked ? true : undefined), 30_000, 'the execution to ask the model');
  const before = (await db.query<{ epoch: number; owner_node: string }>('SELECT epoch, owner_node FROM executions WHERE id = $1', [id])).rows[0]!;
  t.is(before.owner_node, wid);

  t.true(worker.child.kill('SIGSTOP'));
  const frozenAt = Date.now();
  const lost = await eventually(async () => {
    const d = await api<{ status: string; reason: string | null; completed_at: string | null }>(C, 'GET', `/v1/executions/${id}`);
    return d.body.status === 'failed' ? d.body : undefined;
  }, 60_000, 'the execution to fail');
  // Measured on what the controller recorded (completed_at, written with the failure), not on this test's polling.
  const detectedMs = Date.parse(lost.completed_at ?? '') - frozenAt;
  t.log(`frozen worker: worker_lost recorded ${detectedMs} ms after SIGSTOP (heartbeat 1 s, 3 missed; seen after ${Date.now() - frozenAt} ms)`);
  t.is(lost.reason, 'worker_lost');
  t.true(detectedMs < 8000, `within the heartbeat deadline plus a sweep: ${detectedMs} ms`);
  t.is(await statusOf(), 'UNHEALTHY');
  const after = (await db.query<{ epoch: number; owner_node: string | null }>('SELECT epoch, owner_node FROM executions WHERE id = $1', [id])).rows[0]!;
  t.true(after.epoch > before.epoch, 'the row moved to a new epoch: the frozen worker is fenced');

  // Thaw: the model answers the old request; the worker's late writes change nothing.
  t.true(worker.child.kill('SIGCONT'));
  release?.();
  await eventually(async () => ((await statusOf()) === 'ACTIVE' ? true : undefined), 30_000, 'the worker to rejoin ACTIVE without a restart');
  await new Promise((r) => setTimeout(r, 2000));
  const final = await api<{ status: string; reason: string | null; final_output: string | null }>(C, 'GET', `/v1/executions/${id}`);
  t.is(final.body.status, 'failed');
  t.is(final.body.reason, 'worker_lost');
  t.is(final.body.final_output, null, 'the late answer was not recorded');
  const terminals = await db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM execution_events WHERE execution_id = $1 AND type IN ('execution_completed', 'execution_failed')`, [id]);
  t.is(terminals.rows[0]!.n, 1, 'one terminal event');
});
