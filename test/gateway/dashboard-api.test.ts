// The API routes behind the dashboard's newer actions and views (issue 22), on a real node over HTTP: undrain (operator
// only, 4xx for bad input), prefix search by id on both run lists (tenant-scoped, an index range scan, 400 for what
// cannot begin an id), tokens and cost per tenant and agent from the node's price table (GET /v1/stats/usage, the
// history's cost, queue depth and node samples; tenant-scoped, the cluster view for operators only), and an agent's
// manifest by version (the definitions view).
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { samplePass } from '../../src/stats/sampler.ts';
import { createTestDatabase } from '../support/pg.ts';
import { startTestNode, type Defer } from './ws-support.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
const defer: Defer = (fn) => void cleanups.push(fn);
test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

let shared: ReturnType<typeof start> | undefined;
function start() {
  return (async () => {
    const db = await createTestDatabase({ migrated: true });
    defer(() => db.drop());
    // alias default → provider model m (the harness's llm_providers; never called here). Prices: m by its provider
    // name (reached through the alias), `fancy` by its alias; `mystery` has none.
    const extra = `  pricing:
    currency: EUR
    models:
      - { model: m, input_per_1k: 0.5, output_per_1k: 1.5 }
      - { model: fancy, input_per_1k: 10, output_per_1k: 30 }
`;
    const n = await startTestNode(defer, { databaseUrl: db.url, llmUrl: 'http://127.0.0.1:9', extra });
    return n;
  })();
}
const node = (): NonNullable<typeof shared> => (shared ??= start());

test.serial('undrain: operator only, 4xx for bad input, ACTIVE again and routable; idempotent', async (t) => {
  const n = await node();
  const tenant = `ud-${randomUUID().slice(0, 6)}`;
  const user = await n.token(tenant);
  const op = await n.token(tenant, 'operator');
  const id = n.node.config.node.id;
  const url = `/v1/cluster/nodes/${encodeURIComponent(id)}/undrain`;

  const denied = await n.api<{ error: string }>('POST', url, {}, user);
  t.is(denied.status, 403);
  t.regex(denied.body.error, /operator/);
  t.is((await n.api('POST', url, { reason: 42 }, op)).status, 400);
  t.is((await n.api('POST', url, { reason: 'x'.repeat(501) }, op)).status, 400);
  t.is((await n.api('POST', url, [1, 2], op)).status, 400);
  t.is((await n.api('POST', `/v1/cluster/nodes/no-such-${randomUUID().slice(0, 6)}/undrain`, {}, op)).status, 404);

  const active = await n.api<{ already_active: boolean; status: string }>('POST', url, {}, op);
  t.is(active.status, 200, JSON.stringify(active.body));
  t.deepEqual(active.body, { node_id: id, status: 'ACTIVE', already_active: true });

  t.is((await n.api('POST', `/v1/cluster/nodes/${encodeURIComponent(id)}/drain`, { reason: 'maintenance' }, op)).status, 200);
  const listed = async (): Promise<string | undefined> =>
    (await n.api<{ nodes: Array<{ node_id: string; status: string }> }>('GET', '/v1/cluster/nodes', undefined, user)).body.nodes.find((x) => x.node_id === id)?.status;
  t.is(await listed(), 'DRAINING');
  const back = await n.api<Record<string, unknown>>('POST', url, { reason: 'back' }, op);
  t.is(back.status, 200);
  t.deepEqual(back.body, { node_id: id, status: 'ACTIVE', already_active: false });
  t.is(await listed(), 'ACTIVE');
  const row = await n.node.db.query<{ drain_requested_at: Date | null }>('SELECT drain_requested_at FROM cluster_nodes WHERE node_id = $1', [id]);
  t.is(row.rows[0]?.drain_requested_at, null);
});

test('prefix search by id: the first 8 characters find the row, tenant-scoped, on the primary key; 400 for non-ids', async (t) => {
  const n = await node();
  const mine = `px-${randomUUID().slice(0, 6)}`;
  const other = `px-${randomUUID().slice(0, 6)}`;
  const token = await n.token(mine);
  const otherToken = await n.token(other);
  // Two ids that share their first 8 characters, one per tenant, and 300 more rows of mine.
  const target = randomUUID();
  const twin = `${target.slice(0, 8)}-${randomUUID().slice(9)}`;
  const agent = randomUUID();
  const insert = (id: string, tenant: string, input: string) =>
    n.node.db.query(
      `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, status)
       VALUES ($1, $2, $3, 'a', '1.0.0', '{}'::jsonb, $4, 'completed')`,
      [id, tenant, agent, input],
    );
  await insert(target, mine, 'the target');
  await insert(twin, other, 'not yours');
  for (let i = 0; i < 300; i++) await insert(randomUUID(), mine, `filler ${i}`);

  const find = async (prefix: string, tok = token) =>
    n.api<{ executions: Array<{ execution_id: string; input: string }>; error?: string }>('GET', `/v1/executions?id_prefix=${encodeURIComponent(prefix)}&limit=200`, undefined, tok);
  const eight = await find(target.slice(0, 8));
  t.is(eight.status, 200, JSON.stringify(eight.body));
  t.deepEqual(
    eight.body.executions.map((e) => e.execution_id),
    [target],
  );
  t.deepEqual((await find(target.slice(0, 8), otherToken)).body.executions.map((e) => e.execution_id), [twin], 'the other tenant sees only its own');
  t.deepEqual((await find(target.toUpperCase().slice(0, 13))).body.executions.map((e) => e.execution_id), [target], 'any case, with its hyphen');
  t.deepEqual((await find(target)).body.executions.map((e) => e.execution_id), [target], 'the whole id');
  const one = await find(target.slice(0, 1));
  t.true(one.body.executions.every((e) => e.execution_id.startsWith(target.slice(0, 1))) && one.body.executions.some((e) => e.execution_id === target));
  for (const bad of ['xyz', `${target.slice(0, 7)}-`, `${target}0`, '0a1b2c3d--', 'drop table']) {
    const r = await find(bad);
    t.is(r.status, 400, `${bad}: ${JSON.stringify(r.body)}`);
    t.truthy(r.body.error);
  }

  // Workflow runs: the same parameter; bad input answers 400, a prefix of nothing answers an empty page.
  t.is((await n.api('GET', '/v1/workflows/executions?id_prefix=zz', undefined, token)).status, 400);
  const none = await n.api<{ executions: unknown[] }>('GET', `/v1/workflows/executions?id_prefix=${target.slice(0, 8)}`, undefined, token);
  t.is(none.status, 200);
  t.deepEqual(none.body.executions, []);

  // The range is served by the primary key: with statistics, the planner reads the few ids in the range rather than
  // the tenant's rows.
  await n.node.db.query('ANALYZE executions');
  const plan = await n.node.db.tx(async (tx) => {
    const r = await tx.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT * FROM executions WHERE tenant_id = $1 AND id BETWEEN $2::UUID AND $3::UUID ORDER BY created_at DESC, id LIMIT 50`,
      [mine, `${target.slice(0, 8)}-0000-0000-0000-000000000000`, `${target.slice(0, 8)}-ffff-ffff-ffff-ffffffffffff`],
    );
    return r.rows.map((x) => x['QUERY PLAN']).join('\n');
  });
  t.regex(plan, /executions_pkey/, plan);
});

test('cost: tokens and cost per tenant and per agent from the price table; tenant-scoped; the cluster view for operators', async (t) => {
  const n = await node();
  const mine = `cost-${randomUUID().slice(0, 6)}`;
  const other = `cost-${randomUUID().slice(0, 6)}`;
  const token = await n.token(mine);
  const insert = (tenant: string, agent: string, model: string, prompt: number, completion: number, status = 'completed') =>
    n.node.db.query(
      `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, status, prompt_tokens, completion_tokens, created_at, started_at, completed_at)
       VALUES ($1, $2, $3, $4, '1.0.0', $5::jsonb, 'x', $6, $7, $8, now(), now(), CASE WHEN $6 = 'pending' THEN NULL ELSE now() END)`,
      [randomUUID(), tenant, randomUUID(), agent, JSON.stringify({ spec: { runtime: { model } } }), status, prompt, completion],
    );
  await insert(mine, 'writer', 'default', 1000, 2000); // 0.5 + 3 = 3.5
  await insert(mine, 'writer', 'default', 3000, 0); // 1.5
  await insert(mine, 'judge', 'fancy', 100, 100); // 1 + 3 = 4
  await insert(mine, 'odd', 'mystery', 500, 500); // unpriced
  await insert(mine, 'waiting', 'default', 0, 0, 'pending');
  await insert(mine, 'waiting', 'default', 0, 0, 'pending');
  await insert(other, 'writer', 'default', 1000, 1000); // 0.5 + 1.5 = 2

  const usage = await n.api<{
    scope: string;
    currency: string;
    priced: boolean;
    tenants: Array<{ tenant_id: string; executions: number; prompt_tokens: number; completion_tokens: number; cost: number | null; unpriced_tokens: number }>;
    agents: Array<{ tenant_id: string; agent_name: string; model: string; executions: number; cost: number | null }>;
    unpriced_models: string[];
  }>('GET', '/v1/stats/usage?minutes=60', undefined, token);
  t.is(usage.status, 200, JSON.stringify(usage.body));
  t.like(usage.body, { scope: 'tenant', currency: 'EUR', priced: true, unpriced_models: ['mystery'] });
  t.deepEqual(usage.body.tenants, [{ tenant_id: mine, executions: 4, prompt_tokens: 4600, completion_tokens: 2600, cost: 9, unpriced_tokens: 1000 }]);
  const byAgent = Object.fromEntries(usage.body.agents.map((a) => [a.agent_name, a]));
  t.like(byAgent.writer, { tenant_id: mine, model: 'default', executions: 2, cost: 5 });
  t.like(byAgent.judge, { model: 'fancy', executions: 1, cost: 4 });
  t.like(byAgent.odd, { model: 'mystery', cost: null });
  t.false(usage.body.agents.some((a) => a.tenant_id === other), 'another tenant is not listed');

  // The cluster view: operators only; every tenant.
  t.is((await n.api('GET', '/v1/stats/usage?scope=cluster', undefined, token)).status, 403);
  const all = await n.api<{ tenants: Array<{ tenant_id: string; cost: number }> }>('GET', '/v1/stats/usage?scope=cluster', undefined, await n.token(mine, 'operator'));
  t.is(all.status, 200);
  t.is(all.body.tenants.find((x) => x.tenant_id === other)?.cost, 2);
  t.is(all.body.tenants.find((x) => x.tenant_id === mine)?.cost, 9);
  for (const q of ['scope=everyone', 'minutes=0', 'minutes=abc', 'minutes=1441']) {
    const r = await n.api<{ error?: string }>('GET', `/v1/stats/usage?${q}`, undefined, token);
    t.is(r.status, 400, q);
    t.truthy(r.body.error);
  }

  // The history: this minute's cost, the queue depth the sampler saw, and this node's samples.
  await samplePass(n.node.db);
  const h = await n.api<{
    currency: string;
    priced: boolean;
    buckets: Array<{ t: number; tokens: number; cost: number | null; queue_depth: number | null }>;
    nodes: Array<{ node_id: string; samples: Array<{ cpu_percent: number | null; memory_percent: number | null; heartbeat_age_s: number | null; status: string }> }>;
  }>('GET', '/v1/stats/history?minutes=5', undefined, token);
  t.is(h.status, 200, JSON.stringify(h.body));
  t.like(h.body, { currency: 'EUR', priced: true });
  // Summed over the window's buckets: the minute may have turned between the inserts and the read.
  const sum = (b: Array<{ tokens: number; cost: number | null }>) => ({ tokens: b.reduce((x, y) => x + y.tokens, 0), cost: b.reduce((x, y) => x + (y.cost ?? 0), 0) });
  t.deepEqual(sum(h.body.buckets), { tokens: 7200, cost: 9 });
  t.is(Math.max(...h.body.buckets.map((b) => b.queue_depth ?? -1)), 2);
  const self = h.body.nodes.find((x) => x.node_id === n.node.config.node.id);
  t.truthy(self, JSON.stringify(h.body.nodes));
  const sample = self!.samples.at(-1)!;
  t.is(sample.status, 'ACTIVE');
  t.true(typeof sample.memory_percent === 'number' && sample.memory_percent > 0, JSON.stringify(sample));
  t.true(typeof sample.heartbeat_age_s === 'number' && sample.heartbeat_age_s >= 0);
  const otherH = await n.api<{ buckets: Array<{ tokens: number; cost: number | null; queue_depth: number | null }> }>('GET', '/v1/stats/history?minutes=5', undefined, await n.token(other));
  t.deepEqual(sum(otherH.body.buckets), { tokens: 2000, cost: 2 });
  t.is(Math.max(...otherH.body.buckets.map((b) => b.queue_depth ?? -1)), 0, 'sampled, nothing waiting');
});

test('GET /v1/agents/{id}?version=: the manifest of that version; 404 for a version it does not have or another tenant', async (t) => {
  const n = await node();
  const tenant = `def-${randomUUID().slice(0, 6)}`;
  const token = await n.token(tenant);
  const yaml = (v: string, text: string) => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: versioned, version: ${v} }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "${text}" }
  execution: { mode: one-shot }
  tools: [ fs.read ]
`;
  const one = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: yaml('1.0.0', 'first') }, token);
  t.is(one.status, 201, JSON.stringify(one.body));
  t.is((await n.api('POST', '/v1/agents', { manifest_yaml: yaml('2.0.0', 'second') }, token)).status, 201);
  const id = one.body.agent_id;
  const get = (q: string, tok = token) => n.api<{ version: string; manifest_yaml: string; error?: string }>('GET', `/v1/agents/${id}${q}`, undefined, tok);
  const current = await get('');
  t.is(current.body.version, '2.0.0');
  t.regex(current.body.manifest_yaml, /second/);
  const old = await get('?version=1.0.0');
  t.is(old.status, 200);
  t.is(old.body.version, '1.0.0');
  t.regex(old.body.manifest_yaml, /first/);
  t.is((await get('?version=9.9.9')).status, 404);
  t.is((await get('?version=')).status, 400);
  t.is((await get('?version=1.0.0', await n.token(`def-other-${randomUUID().slice(0, 6)}`))).status, 404);
});
