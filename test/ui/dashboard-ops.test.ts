// The dashboard's newer actions and views in Chromium (issue 22), each driven through the page and checked by what
// the page then shows: undrain a drained node (operator token; a user token sees no button), find an execution and a
// workflow run by the first 8 characters of its id in the history lists, the definitions view (versions, each one's
// manifest, Start from there), and the overview's cost, queue, node memory and event-loop charts with the tokens and
// cost per agent (and per tenant for operators) priced by the node's price table. Screenshots under
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
    const db = await createTestDatabase({ migrated: true });
    defer(() => db.drop());
    const llm = await startScriptedLlm(() => ({ content: 'echoed', usage: { prompt_tokens: 1200, completion_tokens: 300 } }) as never);
    defer(() => llm.close());
    // alias default → provider model m: 1,200 input and 300 output tokens a call at 0.5 / 1.5 per 1,000 = 1.05 EUR.
    const extra = `  pricing:
    currency: EUR
    models:
      - { model: m, input_per_1k: 0.5, output_per_1k: 1.5 }
`;
    const n = await startTestNode(defer, { databaseUrl: db.url, llmUrl: llm.url, extra });
    const tenant = `ops-${randomUUID().slice(0, 6)}`;
    const token = await n.token(tenant);
    const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: ECHO }, token);
    if (dep.status !== 201) throw new Error(JSON.stringify(dep.body));
    return { n, token, tenant, echo: dep.body.agent_id };
  })();
  return shared;
}

test.serial('undrain from the page: an operator drains, then undrains, and the node shows ACTIVE; a user sees neither button', async (t) => {
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
  t.true([201, 409].includes((await n.api('POST', '/v1/workflows', { manifest_yaml: FLOW }, token)).status), 'deployed (here or by the definitions test)');
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

test('definitions: agents and workflows with their versions and manifests; Start from a definition', async (t) => {
  const { n, token, echo } = await stack();
  const v2 = ECHO.replace('version: 1.0.0', 'version: 1.1.0').replace('ECHO: answer.', 'ECHO: answer twice.');
  const up = await n.api<{ version: string }>('POST', '/v1/agents', { manifest_yaml: v2 }, token);
  t.is(up.status, 201, JSON.stringify(up.body));
  await n.api('POST', '/v1/workflows', { manifest_yaml: FLOW }, token);
  const browser = await launch(defer);
  const { page, errors, shot } = await openPage(browser, { http: n.http, token, prefix: 'ops' });
  await whenLive(page);
  await page.getByTestId('definitions-tab').click();
  await page.getByTestId('def-agent-echo').click();
  await page.locator('[data-testid="def-versions"][data-count="2"]').waitFor({ timeout: 60_000 });
  await page.locator('[data-testid="def-manifest"][data-version="1.1.0"]').waitFor({ timeout: 60_000 });
  t.regex((await page.getByTestId('def-manifest').textContent()) ?? '', /ECHO: answer twice\./);
  t.regex((await page.getByTestId('def-version-1.1.0').textContent()) ?? '', /current/);
  await page.getByTestId('def-version-1.0.0').getByRole('button').click();
  await page.locator('[data-testid="def-manifest"][data-version="1.0.0"]').waitFor({ timeout: 60_000 });
  t.notRegex((await page.getByTestId('def-manifest').textContent()) ?? '', /twice/);
  console.log(`screenshot: ${await shot('4-definitions')}`);
  // The filter, then a workflow.
  await page.getByTestId('def-filter').fill('tin');
  await page.locator('[data-testid="def-agents"][data-count="0"]').waitFor({ timeout: 30_000 });
  await page.getByTestId('def-workflow-tiny').click();
  await page.locator('[data-testid="def-manifest"][data-version="1.0.0"]').filter({ hasText: 'update_blackboard' }).waitFor({ timeout: 60_000 });
  // Start from the agent's definition: the operate view opens with it chosen; the run starts.
  await page.getByTestId('def-filter').fill('');
  await page.getByTestId('def-agent-echo').click();
  await page.getByTestId('def-start').click();
  await page.getByTestId('start-panel').waitFor({ timeout: 30_000 });
  await until(async () => (await page.getByTestId('start-target').inputValue()) === `agent:${echo}`);
  await page.getByTestId('start-input').fill('from the definition');
  await page.getByTestId('start-button').click();
  await page.getByTestId('start-result').filter({ hasText: 'started' }).waitFor({ timeout: 60_000 });
  t.deepEqual(errors, []);
});

test('overview: cost, queue depth, node memory and event-loop charts; tokens and cost per agent and, for operators, per tenant', async (t) => {
  const { n, token, tenant, echo } = await stack();
  for (let i = 0; i < 3; i++) await n.api('POST', '/v1/executions', { agent_id: echo, input: `priced ${i}` }, token);
  type Usage = { agents: Array<{ agent_name: string; executions: number; cost: number | null }>; tenants: Array<{ tenant_id: string; cost: number | null }> };
  let api: Usage | undefined;
  await until(async () => {
    const r = await n.api<Usage>('GET', '/v1/stats/usage', undefined, token);
    api = r.body;
    return (r.body.agents.find((a) => a.agent_name === 'echo')?.executions ?? 0) >= 3;
  });
  const echoUsage = api!.agents.find((a) => a.agent_name === 'echo')!;
  t.is(echoUsage.cost, Math.round(echoUsage.executions * 1.05 * 1e6) / 1e6, 'priced by the table: 1.05 EUR an execution');

  const browser = await launch(defer);
  const op = await openPage(browser, { http: n.http, token: await n.token(tenant, 'operator'), prefix: 'ops' });
  await whenLive(op.page);
  await op.page.getByTestId('overview-tab').click();
  await op.page.getByTestId('chart-cost').waitFor({ timeout: 60_000 });
  for (const id of ['chart-cost', 'chart-queue', 'chart-node-load', 'chart-node-memory', 'chart-event-loop', 'chart-heartbeat']) {
    await until(async () => Number(await op.page.getByTestId(id).getAttribute('data-points')) > 0, 30_000);
    t.is(await op.page.getByTestId(id).locator('canvas').count(), 1, `${id} drawn`);
  }
  t.regex((await op.page.getByTestId('kpi-cost').textContent()) ?? '', /EUR cost/);
  const row = op.page.getByTestId('usage-agent-echo');
  await row.waitFor({ timeout: 60_000 });
  await until(async () => Number(await row.getAttribute('data-cost')) >= echoUsage.cost!, 60_000);
  t.regex((await row.textContent()) ?? '', /EUR/);
  t.regex((await op.page.getByTestId(`usage-tenant-${tenant}`).textContent()) ?? '', /EUR/);
  // The operator's cluster view lists every tenant (another tenant's usage appears).
  const other = `ops-other-${randomUUID().slice(0, 6)}`;
  const otherToken = await n.token(other);
  const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: ECHO }, otherToken);
  await n.api('POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'theirs' }, otherToken);
  await until(async () => ((await n.api<Usage>('GET', '/v1/stats/usage', undefined, otherToken)).body.tenants[0]?.cost ?? 0) > 0);
  await op.page.getByTestId('usage-all-tenants').check();
  await op.page.getByTestId(`usage-tenant-${other}`).waitFor({ timeout: 60_000 });
  await op.page.waitForTimeout(2500);
  console.log(`screenshot: ${await op.shot('5-overview-cost')}`);

  // A user's page: its own tenant only, no cluster toggle.
  const user = await openPage(browser, { http: n.http, token, prefix: 'ops' });
  await whenLive(user.page);
  await user.page.getByTestId('overview-tab').click();
  await user.page.getByTestId('usage-agent-echo').waitFor({ timeout: 60_000 });
  t.is(await user.page.getByTestId('usage-all-tenants').count(), 0);
  t.is(await user.page.getByTestId(`usage-tenant-${other}`).count(), 0);
  t.deepEqual([...op.errors, ...user.errors], []);
});

async function until(probe: () => Promise<boolean>, ms = 90_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 250));
  }
}
