// GET /metrics on a real in-process node: no token needed, Prometheus text that a strict reader accepts, and the
// counters move as an execution and a workflow run: started/completed by agent (workflow) and tenant, durations,
// tool-call latency by tool, LLM tokens, cluster node status and heartbeats, event-bus lag.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import { loadNodeConfig } from '../../src/config/load.ts';
import { isLoopback, registerMetricsRoute } from '../../src/gateway/http/metrics-route.ts';
import WebSocket from 'ws';
import { startHarness, USAGE } from './harness.ts';
import { parsePrometheusText, valueOf, type Exposition } from './prometheus-text.ts';

async function scrape(http: string): Promise<{ text: string; e: Exposition; type: string | null }> {
  const res = await fetch(`${http}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  return { text, e: parsePrometheusText(text), type: res.headers.get('content-type') };
}

test('/metrics is Prometheus text and its counters move as an execution and a workflow run', async (t) => {
  const h = await startHarness(t);
  const agent = `metered-${randomBytes(3).toString('hex')}`;
  const workflow = `metered-wf-${randomBytes(3).toString('hex')}`;
  const tenant = h.tenant;
  const before = await scrape(h.http);
  t.regex(before.type ?? '', /^text\/plain; version=0\.0\.4/);
  t.is(valueOf(before.e, 'orch_executions_started_total', { agent, tenant }), 0);
  const tool = { tool: 'fs.write', origin: 'inner_loop', outcome: 'ok' };
  const toolBefore = valueOf(before.e, 'orch_tool_call_duration_seconds_count', tool);

  await h.runExecution(agent);
  await h.runWorkflow(workflow);
  // A live event through the node's bus: its delivery lag is recorded.
  const stream = `obstest:${randomBytes(3).toString('hex')}`;
  let delivered = 0;
  const sub = await h.node.bus.subscribe(stream, () => void delivered++);
  await h.node.bus.publish({ stream, seq: 1, type: 'probe', payload: {}, at: new Date().toISOString() });
  const deadline = Date.now() + 30_000;
  while (delivered === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await sub.close();
  t.is(delivered, 1);

  const after = await scrape(h.http);
  const e = after.e;
  if (process.env.OBS_DUMP) console.log(after.text);
  t.is(e.types.get('orch_executions_started_total'), 'counter');
  t.is(valueOf(e, 'orch_executions_started_total', { agent, tenant }), 1);
  t.is(e.types.get('orch_executions_finished_total'), 'counter');
  t.is(valueOf(e, 'orch_executions_finished_total', { agent, tenant, status: 'completed' }), 1);
  t.is(valueOf(e, 'orch_executions_finished_total', { agent, tenant, status: 'failed' }), 0);
  t.is(valueOf(e, 'orch_executions_completed_total', { agent, tenant }), 0, 'the per-status counters are gone (issue 19)');
  t.is(e.types.get('orch_execution_duration_seconds'), 'histogram');
  t.is(valueOf(e, 'orch_execution_duration_seconds_count', { agent, tenant, status: 'completed' }), 1);
  t.true(valueOf(e, 'orch_execution_duration_seconds_sum', { agent, tenant, status: 'completed' }) > 0);
  t.is(valueOf(e, 'orch_tool_call_duration_seconds_count', tool) - toolBefore, 1, 'one fs.write through the catalog');
  t.is(valueOf(e, 'orch_llm_tokens_total', { agent, tenant, type: 'prompt', model: 'default' }), 2 * USAGE.prompt_tokens);
  t.is(valueOf(e, 'orch_llm_tokens_total', { agent, tenant, type: 'completion', model: 'default' }), 2 * USAGE.completion_tokens);
  t.is(valueOf(e, 'orch_workflows_started_total', { workflow, tenant }), 1);
  t.is(valueOf(e, 'orch_workflows_finished_total', { workflow, tenant, status: 'completed' }), 1);
  t.is(valueOf(e, 'orch_workflows_finished_total', { workflow, tenant }), 1, 'one terminal status in all');
  t.is(valueOf(e, 'orch_workflow_duration_seconds_count', { workflow, tenant, status: 'completed' }), 1);
  const node = h.node.config.node.id;
  t.is(valueOf(e, 'orch_cluster_node_up', { node, status: 'ACTIVE', role: 'hybrid' }), 1);
  t.true(valueOf(e, 'orch_cluster_nodes', { status: 'ACTIVE' }) >= 1);
  t.true(valueOf(e, 'orch_node_heartbeats_total', { node }) >= 1);
  t.is(valueOf(e, 'orch_event_bus_lag_seconds_count', { stream_kind: 'obstest' }), 1);
  // WebSocket subscribers: the node's live feed counts in orch_ws_subscribers while a client is subscribed.
  t.is(valueOf(e, 'orch_ws_subscribers'), 0);
  const ws = new WebSocket(`${h.http.replace('http', 'ws')}/v1/ws`, { headers: { authorization: `Bearer ${h.token}` } });
  t.teardown(() => ws.close());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => ws.send(JSON.stringify({ subscribe: 'executions' })));
    ws.on('message', (m: Buffer) => {
      if (String(m).includes('"subscribed"')) resolve();
    });
    ws.once('error', reject);
  });
  t.is(valueOf((await scrape(h.http)).e, 'orch_ws_subscribers'), 1);
  ws.close();
  await new Promise((r) => ws.once('close', r));
  const deadline2 = Date.now() + 30_000;
  while (valueOf((await scrape(h.http)).e, 'orch_ws_subscribers') !== 0 && Date.now() < deadline2) await new Promise((r) => setTimeout(r, 50));
  t.is(valueOf((await scrape(h.http)).e, 'orch_ws_subscribers'), 0);
});

test('/metrics is served to loopback peers only unless spec.metrics.allow_remote', async (t) => {
  for (const allowRemote of [false, true]) {
    const app = Fastify();
    registerMetricsRoute(app, { allowRemote });
    const remote = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.1.2.3' });
    t.is(remote.statusCode, allowRemote ? 200 : 403);
    const local = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
    t.is(local.statusCode, 200);
    await app.close();
  }
  const yaml = (m: string) => `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: m }\nspec:\n  node: { id: m }\n${m}`;
  t.deepEqual(loadNodeConfig({ text: yaml('  metrics: { allow_remote: true }\n'), env: {} }).metrics, { allow_remote: true });
  t.is(loadNodeConfig({ text: yaml(''), env: {} }).metrics, undefined);
  t.throws(() => loadNodeConfig({ text: yaml('  metrics: { allow_remote: "yes" }\n'), env: {} }), { message: /allow_remote/ });

  t.true(isLoopback('127.0.0.1'));
  t.true(isLoopback('::1'));
  t.true(isLoopback('::ffff:127.0.0.1'));
  t.false(isLoopback('10.0.0.5'));
  t.false(isLoopback('::ffff:192.168.1.2'));
  t.false(isLoopback(undefined));
});

test('the strict reader refuses what is not Prometheus text', (t) => {
  t.throws(() => parsePrometheusText('orch_x{a="1"} 1'), { message: /newline/ });
  t.throws(() => parsePrometheusText('orch-x 1\n'), { message: /bad sample/ });
  t.throws(() => parsePrometheusText('orch_x{a=1} 1\n'), { message: /not quoted/ });
  t.throws(() => parsePrometheusText('orch_x{a="1"} one\n'), { message: /bad value/ });
  t.throws(() => parsePrometheusText('# TYPE orch_x gauge\n# TYPE orch_x gauge\norch_x 1\n'), { message: /twice/ });
  t.throws(() => parsePrometheusText('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\n'), { message: /cumulative/ });
  t.is(valueOf(parsePrometheusText('# TYPE orch_x counter\norch_x{a="q\\"x"} 3\n'), 'orch_x', { a: 'q"x' }), 3);
});
