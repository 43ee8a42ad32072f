// The dashboard's newer actions and views in Chromium (issue 22), each driven through the page and checked by what
// the page then shows: undrain a drained node (operator token; a user token sees no button), find an execution and a
// workflow run by the first 8 characters of its id in the history lists. Screenshots under
// test-output/ui/ops-*.png.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '../support/pg.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { startTestNode, type Defer } from '../gateway/ws-support.ts';
import { launch, openPage, whenLive } from './browser.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
const defer: Defer = (fn) => void cleanups.push(fn);
test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const ECHO = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: echo, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "ECHO: answer." }
  execution: { mode: one-shot }
  tools: [ fs.read ]
`;
const FLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: tiny, version: 1.0.0 }
spec:
  initial_state: done
  states:
    done: { kind: System, command: 'update_blackboard {"ok": true}', transitions: [] }
`;

let shared: Promise<{ n: Awaited<ReturnType<typeof startTestNode>>; token: string; tenant: string; echo: string }> | undefined;
function stack(): NonNullable<typeof shared> {
  shared ??= (async () => {
    const db = await createTestDatabase();
    defer(() => db.drop());
    const llm = await startScriptedLlm(() => ({ content: 'echoed', usage: { prompt_tokens: 1200, completion_tokens: 300 } }) as never);
    defer(() => llm.close());
    const n = await startTestNode(defer, { databaseUrl: db.url, llmUrl: llm.url });
    const tenant = `ops-${randomUUID().slice(0, 6)}`;
    const token = await n.token(tenant);
    const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: ECHO }, token);
    if (dep.status !== 201) throw new Error(JSON.stringify(dep.body));
    return { n, token, tenant, echo: dep.body.agent_id };
  })();
  return shared;
}

test('undrain from the page: an operator drains, then undrains, and the node shows ACTIVE; a user sees neither button', async (t) => {
  const { n, token, tenant } = await stack();
  const browser = await launch(defer);
  const nodeId = n.node.config.node.id;
  const user = await openPage(browser, { http: n.http, token, prefix: 'ops' });
  await whenLive(user.page);
  await user.page.locator(`[data-testid="node-${nodeId}"]`).waitFor({ timeout: 60_000 });
  t.is(await user.page.getByTestId(`drain-${nodeId}`).count(), 0);

  const op = await openPage(browser, { http: n.http, token: await n.token(tenant, 'operator'), prefix: 'ops' });
  await whenLive(op.page);
  op.page.on('dialog', (d) => void d.accept());
  await op.page.getByTestId(`drain-${nodeId}`).click();
  await op.page.locator(`[data-testid="node-${nodeId}"][data-status="DRAINING"]`).waitFor({ timeout: 60_000 });
  // The user's page hears of it too, and still offers no undrain.
  await user.page.locator(`[data-testid="node-${nodeId}"][data-status="DRAINING"]`).waitFor({ timeout: 60_000 });
  t.is(await user.page.getByTestId(`undrain-${nodeId}`).count(), 0);
  console.log(`screenshot: ${await op.shot('1-draining')}`);
  await op.page.getByTestId(`undrain-${nodeId}`).click();
  await op.page.locator(`[data-testid="node-${nodeId}"][data-status="ACTIVE"]`).waitFor({ timeout: 60_000 });
  await op.page.getByTestId(`drain-${nodeId}`).waitFor({ timeout: 60_000 });
  console.log(`screenshot: ${await op.shot('2-undrained')}`);
  const row = await n.node.db.query<{ status: string }>('SELECT status FROM cluster_nodes WHERE node_id = $1', [nodeId]);
  t.is(row.rows[0]?.status, 'ACTIVE');
  t.deepEqual([...user.errors, ...op.errors], []);
});

test('prefix search: the first 8 characters of an execution id and of a workflow run id find them in the history lists', async (t) => {
  const { n, token, echo } = await stack();
  // 500 more rows of this tenant so the prefix has company; then one real execution and one real run.
  await n.node.db.query(
    `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, status, iteration, created_at)
     SELECT gen_random_uuid(), (SELECT tenant_id FROM agents WHERE id = $1), $1, 'echo', '1.0.0', '{}'::jsonb, 'filler ' || g, 'completed', 1, now() - (g || ' seconds')::interval
     FROM generate_series(1, 500) AS g`,
    [echo],
  );
  const ex = await n.api<{ execution_id: string }>('POST', '/v1/executions', { agent_id: echo, input: 'find me' }, token);
  t.is((await n.api('POST', '/v1/workflows', { manifest_yaml: FLOW }, token)).status, 201);
  const run = await n.api<{ execution_id: string }>('POST', '/v1/workflows/tiny/run', { input: {} }, token);
  t.is(run.status, 201, JSON.stringify(run.body));

  const browser = await launch(defer);
  const { page, errors, shot } = await openPage(browser, { http: n.http, token, prefix: 'ops' });
  await whenLive(page);
  await page.getByTestId('exec-history-tab').click();
  await page.locator('[data-testid="hx-rows"][data-count="50"]').waitFor({ timeout: 60_000 });
  const id = ex.body.execution_id;
  await page.getByTestId('hx-search').fill(id.slice(0, 8));
  await page.locator('[data-testid="hx-rows"][data-count="1"]').waitFor({ timeout: 60_000 });
  t.regex((await page.getByTestId(`hx-${id}`).textContent()) ?? '', /find me/);
  console.log(`screenshot: ${await shot('3-prefix-search')}`);
  await page.getByTestId(`hx-${id}`).click();
  await page.getByTestId('detail-id').filter({ hasText: id }).waitFor({ timeout: 60_000 });
  // Not an id: said so, no rows.
  await page.getByTestId('hx-search').fill('nothex!');
  await page.locator('[data-testid="history-execution"] .error-box').filter({ hasText: /start of an id/ }).waitFor({ timeout: 30_000 });

  await page.getByTestId('wf-history-tab').click();
  await page.getByTestId('hw-search').fill(run.body.execution_id.slice(0, 8));
  await page.locator('[data-testid="hw-rows"][data-count="1"]').waitFor({ timeout: 60_000 });
  await page.getByTestId(`hw-${run.body.execution_id}`).waitFor({ timeout: 30_000 });
  t.deepEqual(errors, []);
});
