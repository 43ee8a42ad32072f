// The API routes behind the dashboard's newer actions and views (issue 22), on a real node over HTTP: undrain (operator
// only, 4xx for bad input), prefix search by id on both run lists (tenant-scoped, an index range scan, 400 for what
// cannot begin an id).
import test from 'ava';
import { randomUUID } from 'node:crypto';
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
    const db = await createTestDatabase();
    defer(() => db.drop());
    const n = await startTestNode(defer, { databaseUrl: db.url });
    return n;
  })();
}
const node = (): NonNullable<typeof shared> => (shared ??= start());

test('undrain: operator only, 4xx for bad input, ACTIVE again and routable; idempotent', async (t) => {
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
