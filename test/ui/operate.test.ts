// The dashboard's operator actions and execution detail in Chromium, each through the page and checked by what the
// page then shows: start an agent from the page, read its timeline (iterations with durations, the tool call with
// its arguments and result, model turns with tokens, the validation failure and refinement; raw JSON on demand),
// re-run it (two "hello" rows told apart by id), cancel a slow one, deploy a manifest (422 problems inline, then a
// good one), open an Agent state's execution from the workflow graph, the blackboard as a tree, reject with
// feedback, and drain a node with an operator token (a user token gets no drain button). Also the timeline API
// itself (tenant-scoped). Screenshots under test-output/ui/operate-*.png.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '../support/pg.ts';
import { startScriptedLlm, type ChatRequest } from '../support/scripted-llm.ts';
import { startTestNode, type Defer } from '../gateway/ws-support.ts';
import { launch, openPage, whenLive } from './browser.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
const defer: Defer = (fn) => void cleanups.push(fn);
test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const TOOLY = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: tooly, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "TOOLY: answer in JSON." }
  execution: { mode: iterative, max_iterations: 3, validation: [ { type: json_schema, schema: { type: object, required: [answer] } } ] }
  tools: [ orch.system.info ]
`;
const SLOW = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: slowpoke, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "SLOW: take your time." }
  execution: { mode: one-shot }
  tools: [ fs.read ]
`;
const WRITER = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: writer, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "WRITER: write." }
  execution: { mode: one-shot }
  tools: [ fs.read ]
`;
const FLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: drafting, version: 1.0.0 }
spec:
  initial_state: write
  states:
    write:
      kind: Agent
      agent: writer
      input: 'Write about {{input.topic}}'
      transitions: [{ target: review }]
    review:
      kind: Human
      prompt: 'Publish the draft?'
      transitions:
        - { condition: input_equals_yes, target: publish }
        - { condition: input_equals_no, target: shelve }
    publish: { kind: System, command: 'update_blackboard {"published": true, "meta": {"by": "dashboard", "tags": ["a", "b"]}}', transitions: [] }
    shelve: { kind: System, command: 'update_blackboard {"published": false}', transitions: [] }
`;

function script(body: ChatRequest): Promise<{ content?: string; tool_calls?: Array<{ name: string; arguments: Record<string, unknown> }>; usage: { prompt_tokens: number; completion_tokens: number } }> | { content?: string; tool_calls?: Array<{ name: string; arguments: Record<string, unknown> }>; usage: { prompt_tokens: number; completion_tokens: number } } {
  const system = body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
  const users = body.messages.filter((m) => m.role === 'user').length;
  const tools = body.messages.filter((m) => m.role === 'tool').length;
  const usage = { prompt_tokens: 40 + users, completion_tokens: 9 };
  if (system.includes('SLOW:')) return new Promise((resolve) => setTimeout(() => resolve({ content: 'late', usage }), 60_000).unref());
  if (system.includes('WRITER:')) return { content: 'a draft about tides', usage };
  if (users === 1 && tools === 0) return { tool_calls: [{ name: 'orch_system_info', arguments: { detail: 'brief' } }], usage };
  if (users === 1) return { content: 'not JSON yet', usage };
  return { content: '{"answer": "ok"}', usage };
}

test('the execution timeline API: iterations, model turns with tokens, the tool call, the failure and refinement; other tenants get 404', async (t) => {
  const { n, token, tooly } = await stack();
  const ex = await n.api<{ execution_id: string }>('POST', '/v1/executions', { agent_id: tooly, input: 'hello' }, token);
  const id = ex.body.execution_id;
  await until(async () => (await n.api<{ status: string }>('GET', `/v1/executions/${id}`, undefined, token)).body.status === 'completed');
  const tl = await n.api<{
    iterations: Array<{ number: number; status: string; duration_ms: number | null; error: { error_type: string } | null; refinement: string | null; steps: Array<Record<string, unknown>> }>;
    usage: { prompt_tokens: number; completion_tokens: number };
  }>('GET', `/v1/executions/${id}/timeline`, undefined, token);
  t.is(tl.status, 200, JSON.stringify(tl.body));
  const [one, two] = tl.body.iterations;
  t.is(tl.body.iterations.length, 2);
  t.like(one, { number: 1, status: 'failed', error: { error_type: 'ValidationFailed' } });
  t.regex(one!.refinement ?? '', /failed validation/);
  t.true(typeof one!.duration_ms === 'number' && one!.duration_ms >= 0);
  t.deepEqual(
    one!.steps.map((s) => `${String(s.kind)}:${String(s.kind === 'tool' ? s.name : s.completion_tokens)}`),
    ['model:9', 'tool:orch_system_info', 'model:9'],
  );
  const tool = one!.steps[1]!;
  t.deepEqual(tool.arguments, { detail: 'brief' });
  t.is(tool.ok, true);
  t.truthy(tool.result);
  t.like(two, { number: 2, status: 'completed' });
  t.deepEqual(tl.body.usage, { prompt_tokens: 41 + 41 + 42, completion_tokens: 27 });
  const other = await n.token(`other-${randomUUID().slice(0, 6)}`);
  t.is((await n.api('GET', `/v1/executions/${id}/timeline`, undefined, other)).status, 404);
});

test('operate from the page: start, timeline, re-run, cancel, deploy with inline errors, Agent state link, blackboard tree, reject with feedback, drain', async (t) => {
  const { n, token, tenant, tooly } = await stack();
  const browser = await launch(defer);
  const { page, errors, shot } = await openPage(browser, { http: n.http, token, prefix: 'operate' });
  await whenLive(page);

  // Start tooly with "hello" from the start panel; the page selects the new execution and its timeline fills in.
  await page.getByTestId('start-target').selectOption(`agent:${tooly}`);
  await page.getByTestId('start-input').fill('hello');
  await page.getByTestId('start-button').click();
  await page.getByTestId('start-result').filter({ hasText: 'started' }).waitFor({ timeout: 60_000 });
  const first = ((await page.getByTestId('detail-id').textContent()) ?? '').trim();
  t.regex(first, /^[0-9a-f-]{36}$/);
  await page.locator('[data-testid="iteration-2"][data-status="completed"]').waitFor({ timeout: 90_000 });
  const it1 = page.getByTestId('iteration-1');
  t.is(await it1.getAttribute('data-status'), 'failed');
  t.regex((await it1.getByTestId('iteration-duration').textContent()) ?? '', /\d+(\.\d)? (ms|s)/);
  t.is(await it1.getByTestId('model-turn').count(), 2);
  t.regex((await it1.getByTestId('turn-tokens').first().textContent()) ?? '', /41 in · 9 out/);
  t.regex((await it1.getByTestId('iteration-error').textContent()) ?? '', /ValidationFailed/);
  const call = it1.locator('[data-testid="tool-call"][data-tool="orch_system_info"]');
  t.regex((await call.textContent()) ?? '', /\{"detail":"brief"\}/);
  await call.locator('.step-head').click();
  t.regex((await call.getByTestId('tool-call-body').textContent()) ?? '', /result/);
  console.log(`screenshot: ${await shot('1-timeline')}`);
  await page.getByTestId('raw-toggle').click();
  t.regex((await page.getByTestId('raw-json').textContent()) ?? '', /"name": "orch_system_info"/);
  await page.getByTestId('raw-toggle').click();

  // Re-run: a second "hello"; both rows are told apart by their ids.
  await page.getByTestId('rerun-execution').click();
  await until(async () => ((await page.getByTestId('detail-id').textContent()) ?? first).trim() !== first, 60_000);
  const second = ((await page.getByTestId('detail-id').textContent()) ?? '').trim();
  for (const id of [first, second]) {
    const row = page.getByTestId(`exec-${id}`);
    await row.waitFor({ timeout: 60_000 });
    const text = (await row.textContent()) ?? '';
    t.true(text.includes(id.slice(0, 8)) && text.includes('hello'), text);
  }

  // Cancel a slow one from its detail.
  const slow = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: SLOW }, token);
  const running = await n.api<{ execution_id: string }>('POST', '/v1/executions', { agent_id: slow.body.agent_id, input: 'wait' }, token);
  await page.getByTestId(`exec-${running.body.execution_id}`).click();
  await page.locator(`[data-testid="exec-${running.body.execution_id}"][data-status="running"]`).waitFor({ timeout: 60_000 });
  await page.getByTestId('cancel-execution').click();
  await page.locator(`[data-testid="exec-${running.body.execution_id}"][data-status="cancelled"]`).waitFor({ timeout: 60_000 });

  // Deploy: a broken manifest shows its problems inline; then the real ones deploy.
  await page.getByTestId('deploy-tab').click();
  await page.getByTestId('deploy-yaml').fill(FLOW.replace('initial_state: write', 'initial_state: nowhere'));
  await page.getByTestId('deploy-button').click();
  const bad = page.locator('[data-testid="deploy-result"][data-ok="false"]');
  await bad.waitFor({ timeout: 60_000 });
  t.regex((await bad.textContent()) ?? '', /422/);
  t.regex((await bad.textContent()) ?? '', /nowhere/);
  console.log(`screenshot: ${await shot('2-deploy-422')}`);
  await page.getByTestId('deploy-yaml').fill(WRITER);
  await page.getByTestId('deploy-button').click();
  await page.locator('[data-testid="deploy-result"][data-ok="true"]').waitFor({ timeout: 60_000 });
  await page.getByTestId('deploy-yaml').fill(FLOW);
  await page.getByTestId('deploy-button').click();
  await page.locator('[data-testid="deploy-result"][data-ok="true"]').waitFor({ timeout: 60_000 });

  // Start the workflow from the page; at the Human gate, the Agent state links to its execution.
  await page.getByTestId('start-tab').click();
  await page.getByTestId('start-target').focus();
  await page.locator('[data-testid="start-target"] option[value="workflow:drafting"]').waitFor({ state: 'attached', timeout: 30_000 });
  await page.getByTestId('start-target').selectOption('workflow:drafting');
  await page.getByTestId('start-input').fill('{"topic": "tides"}');
  await page.getByTestId('start-button').click();
  await page.getByTestId('detail-state').filter({ hasText: 'review' }).waitFor({ timeout: 90_000 });
  const runId = ((await page.getByTestId('detail-id').textContent()) ?? '').trim();
  await page.getByTestId('graph-state-write').click();
  const link = page.getByTestId('state-execution-link');
  await link.waitFor({ timeout: 30_000 });
  t.regex((await page.getByTestId('state-panel').textContent()) ?? '', /a draft about tides/);
  console.log(`screenshot: ${await shot('3-agent-state')}`);
  await link.click();
  await page.locator('[data-testid="detail"] h2').filter({ hasText: 'writer' }).waitFor({ timeout: 30_000 });
  await page.getByTestId('timeline').waitFor({ timeout: 30_000 });

  // Reject with feedback: the approval goes, the run takes the "no" branch, the blackboard shows it as a tree.
  const approval = page.locator(`[data-execution="${runId}"]`);
  await approval.locator('input.feedback').fill('not today, needs sources');
  await approval.getByRole('button', { name: 'Reject' }).click();
  await approval.waitFor({ state: 'detached', timeout: 60_000 });
  const rejected = await n.api<{ approvals?: unknown }>('GET', `/v1/workflows/executions/${runId}`, undefined, token);
  t.is((rejected.body as { status?: string }).status !== undefined, true);
  await page.getByTestId(`wf-${runId}`).click();
  await page.locator(`[data-testid="wf-${runId}"][data-status="completed"]`).waitFor({ timeout: 60_000 });
  await page.locator('[data-testid="blackboard"] [data-key="published"]').filter({ hasText: 'false' }).waitFor({ timeout: 30_000 });
  console.log(`screenshot: ${await shot('4-blackboard')}`);

  // A user token gets no drain button; an operator's page drains the node and shows it DRAINING.
  const nodeId = n.node.config.node.id;
  t.is(await page.getByTestId(`drain-${nodeId}`).count(), 0, 'no drain for a user token');
  const op = await openPage(browser, { http: n.http, token: await n.token(tenant, 'operator'), prefix: 'operate' });
  await whenLive(op.page);
  op.page.on('dialog', (d) => void d.accept());
  await op.page.getByTestId(`drain-${nodeId}`).click();
  await op.page.locator(`[data-testid="node-${nodeId}"][data-status="DRAINING"]`).waitFor({ timeout: 60_000 });
  console.log(`screenshot: ${await op.shot('5-drained')}`);
  t.deepEqual([...errors, ...op.errors], []);
});

test('history pages through 10,000 executions with filters and search by id', async (t) => {
  const { n, tooly } = await stack();
  const tenant = `bulk-${randomUUID().slice(0, 6)}`;
  const token = await n.token(tenant);
  // 10,000 rows written straight to the table (an agent of this tenant for the agent filter): every 10th failed.
  const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: SLOW }, token);
  await n.node.db.query(
    `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, status, iteration, created_at)
     SELECT gen_random_uuid(), $1, $2, 'slowpoke', '1.0.0', '{}'::jsonb, 'bulk ' || g, CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'completed' END, 1,
            now() - (g || ' seconds')::interval
     FROM generate_series(1, 10000) AS g`,
    [tenant, dep.body.agent_id],
  );
  void tooly;
  const pick = await n.node.db.query<{ id: string }>(`SELECT id FROM executions WHERE tenant_id = $1 AND input = 'bulk 7777'`, [tenant]);
  const target = pick.rows[0]!.id;
  const browser = await launch(defer);
  const { page, errors, shot } = await openPage(browser, { http: n.http, token, prefix: 'operate' });
  await whenLive(page);
  await page.getByTestId('exec-history-tab').click();
  const rows = page.getByTestId('hx-rows');
  await page.locator('[data-testid="hx-rows"][data-count="50"][data-page="0"]').waitFor({ timeout: 60_000 });
  t.is(await page.getByTestId('hx-range').textContent(), '1–50');
  t.is(await rows.locator('.hrow .input').first().textContent(), 'bulk 1');
  // Page forward three times.
  for (let i = 0; i < 3; i++) await page.getByTestId('hx-older').click();
  await page.locator('[data-testid="hx-rows"][data-page="3"]').waitFor({ timeout: 60_000 });
  await page.getByTestId('hx-range').filter({ hasText: '151–200' }).waitFor({ timeout: 60_000 });
  // The range label moves with the page number; the rows follow when that page's fetch answers (the full suite saw
  // 'bulk 101' still shown for a moment), so wait for the row itself.
  await rows.locator('.hrow .input').first().filter({ hasText: /^bulk 151$/ }).waitFor({ timeout: 60_000 });
  t.is(await rows.locator('.hrow .input').first().textContent(), 'bulk 151');
  // Filter: failed only (every 10th), newest first.
  await page.getByTestId('hx-status').selectOption('failed');
  await page.getByTestId('hx-range').filter({ hasText: /^1–50$/ }).waitFor({ timeout: 60_000 });
  await rows.locator('.hrow .input').first().filter({ hasText: /^bulk 10$/ }).waitFor({ timeout: 60_000 });
  const statuses = await rows.locator('.hrow').evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
  t.is(statuses.length, 50);
  t.true(statuses.every((s) => s === 'failed'));
  t.is(await rows.locator('.hrow .input').first().textContent(), 'bulk 10');
  await page.getByTestId('hx-owner').selectOption(dep.body.agent_id);
  await page.locator('[data-testid="hx-rows"][data-count="50"]').waitFor({ timeout: 60_000 });
  // Search by id: exactly that row; clicking it opens its detail.
  await page.getByTestId('hx-search').fill(target);
  await page.locator('[data-testid="hx-rows"][data-count="1"]').waitFor({ timeout: 60_000 });
  await page.getByTestId(`hx-${target}`).click();
  await page.getByTestId('detail-id').filter({ hasText: target }).waitFor({ timeout: 60_000 });
  t.regex((await page.getByTestId('detail').textContent()) ?? '', /bulk 7777/);
  const scroll = (await page.evaluate('({ w: document.documentElement.scrollWidth, iw: innerWidth, h: document.documentElement.scrollHeight, ih: innerHeight })')) as { w: number; iw: number; h: number; ih: number };
  t.true(scroll.w <= scroll.iw && scroll.h <= scroll.ih, JSON.stringify(scroll));
  console.log(`screenshot: ${await shot('6-history-10000')}`);
  t.deepEqual(errors, []);
});

let shared: Promise<{ n: Awaited<ReturnType<typeof startTestNode>>; token: string; tenant: string; tooly: string }> | undefined;
function stack(): NonNullable<typeof shared> {
  shared ??= (async () => {
    const db = await createTestDatabase({ migrated: true });
    defer(() => db.drop());
    const llm = await startScriptedLlm((body) => script(body as ChatRequest) as never);
    defer(() => llm.close());
    const n = await startTestNode(defer, { databaseUrl: db.url, llmUrl: llm.url });
    const tenant = `op-${randomUUID().slice(0, 6)}`;
    const token = await n.token(tenant);
    const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: TOOLY }, token);
    if (dep.status !== 201) throw new Error(JSON.stringify(dep.body));
    return { n, token, tenant, tooly: dep.body.agent_id };
  })();
  return shared;
}

async function until(probe: () => Promise<boolean>, ms = 90_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 250));
  }
}
