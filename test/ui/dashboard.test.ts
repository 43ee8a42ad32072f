// The dashboard in headless Chromium (Debian's chromium driven by playwright-core): open /ui with a token, start an
// agent execution (scripted LLM server) and a workflow with a Human state through the API, see both appear and
// progress without reloading, approve in the page, see the workflow finish; then 1,000 executions listed without
// breaking the layout. Screenshots go to test-output/ui/.
import test from 'ava';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { createTestDatabase } from '../support/pg.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { humanWorkflow, startTestNode, type Defer } from '../gateway/ws-support.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { silentLogger } from '../../src/logging/logger.ts';

const OUT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test-output/ui');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
const defer: Defer = (fn) => void cleanups.push(fn);
test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ui-coder, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: Answer in JSON. }
  execution: { mode: iterative, max_iterations: 4, validation: [ { type: json_schema, schema: { type: object, required: [answer] } } ] }
  tools: [ fs.read ]
`;

test('the dashboard follows an execution and a workflow live, and approves', async (t) => {
  await mkdir(OUT, { recursive: true });
  const db = await createTestDatabase({ migrated: true });
  defer(() => db.drop());
  // The model gets it right on the third iteration; slow enough (3 s a call) that the page sees each step even when
  // a loaded machine renders late.
  const llm = await startScriptedLlm(
    (body) => {
      const users = body.messages.filter((m) => m.role === 'user').length;
      return { content: users >= 3 ? '{"answer": "done"}' : 'thinking, not JSON yet', usage: { prompt_tokens: 11, completion_tokens: 7 } };
    },
    { delayMs: 3000 },
  );
  defer(() => llm.close());
  const n = await startTestNode(defer, { databaseUrl: db.url, llmUrl: llm.url });
  const tenant = `ui-${randomUUID().slice(0, 6)}`;
  const token = await n.token(tenant);

  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  defer(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  await page.goto(`${n.http}/ui#token=${encodeURIComponent(token)}`);
  await page.getByTestId('connection').filter({ hasText: 'live' }).waitFor({ timeout: 60_000 });
  t.false(page.url().includes('token='), 'the token leaves the address bar');
  await page.getByTestId(`node-${n.node.config.node.id}`).waitFor({ timeout: 60_000 });

  // An execution started through the API appears and advances through its iterations, with no reload.
  const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: AGENT }, token);
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const ex = await n.api<{ execution_id: string }>('POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'build it' }, token);
  const row = page.getByTestId(`exec-${ex.body.execution_id}`);
  await row.waitFor({ timeout: 60_000 });
  await row.click();
  await page.getByTestId('events-toggle').click();
  await page.locator(`[data-testid="exec-${ex.body.execution_id}"][data-status="running"]`).waitFor({ timeout: 60_000 });
  await page.locator(`[data-testid="exec-${ex.body.execution_id}"][data-iteration="2"]`).waitFor({ timeout: 60_000 });
  await page.getByTestId('event-stream').locator('[data-type="refinement_applied"]').first().waitFor({ timeout: 60_000 });
  await page.screenshot({ path: path.join(OUT, '1-execution-running.png') });
  await page.locator(`[data-testid="exec-${ex.body.execution_id}"][data-status="completed"]`).waitFor({ timeout: 60_000 });
  t.is(await page.getByTestId('detail-iteration').textContent(), '3');
  await page.getByTestId('event-stream').locator('[data-type="execution_completed"]').waitFor();
  const types = await page.getByTestId('event-stream').locator('.event').evaluateAll((els) => els.map((e) => e.getAttribute('data-type')));
  t.is(types.at(-1), 'execution_started', 'newest first, the whole stream from the start');
  t.is(types.filter((x) => x === 'iteration_started').length, 3);
  await page.screenshot({ path: path.join(OUT, '2-execution-completed.png') });

  // A workflow with a Human state: it waits, the page shows the approval and the graph at the gate.
  await new WorkflowDefinitionService(n.node.db, silentLogger()).deploy({ tenant, subject: 'dev', yaml: humanWorkflow('release') });
  const run = await n.api<{ execution_id: string }>('POST', '/v1/workflows/release/run', { input: {} }, token);
  t.is(run.status, 201, JSON.stringify(run.body));
  const wf = run.body.execution_id;
  await page.locator(`[data-testid="wf-${wf}"][data-status="waiting_for_human_input"]`).waitFor({ timeout: 60_000 });
  await page.getByTestId(`wf-${wf}`).click();
  await page.locator('[data-testid="graph-state-gate"][data-current="true"]').waitFor({ timeout: 60_000 });
  const approval = page.locator(`[data-execution="${wf}"]`);
  await approval.waitFor({ timeout: 60_000 });
  t.is(await approval.locator('.prompt').textContent(), 'Ship it?');
  await page.screenshot({ path: path.join(OUT, '3-workflow-waiting.png') });

  await approval.getByRole('button', { name: 'Approve' }).click();
  await page.locator(`[data-testid="wf-${wf}"][data-status="completed"]`).waitFor({ timeout: 60_000 });
  await page.locator('[data-testid="graph-state-ship"][data-current="true"]').waitFor({ timeout: 60_000 });
  await approval.waitFor({ state: 'detached', timeout: 60_000 });
  await page.getByTestId('event-stream').locator('[data-type="WorkflowExecutionCompleted"]').waitFor({ timeout: 60_000 });
  const detail = await n.api<{ status: string; blackboard: Record<string, unknown> }>('GET', `/v1/workflows/executions/${wf}`, undefined, token);
  t.like(detail.body, { status: 'completed', blackboard: { shipped: true } });
  await page.screenshot({ path: path.join(OUT, '4-workflow-approved.png') });

  // 1,000 more executions (rows written straight to the table): the list stays virtualized and the page stays in
  // the viewport.
  await n.node.db.query(
    `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, status, iteration, created_at)
     SELECT gen_random_uuid(), $1, $2, 'bulk-agent-' || g, '1.0.0', '{}'::jsonb, 'bulk', CASE WHEN g % 7 = 0 THEN 'running' ELSE 'completed' END, g % 5,
            now() - (g || ' seconds')::interval
     FROM generate_series(1, 1000) AS g`,
    [tenant, dep.body.agent_id],
  );
  await page.reload();
  await page.getByTestId('connection').filter({ hasText: 'live' }).waitFor({ timeout: 60_000 });
  await page.locator('[data-testid="executions"][data-count="1000"]').waitFor({ timeout: 60_000 });
  // A string: the test is typechecked without the DOM library.
  const layout = (await page.evaluate(`({
    rows: document.querySelectorAll('[data-testid="executions"] .vrow').length,
    scrollW: document.documentElement.scrollWidth,
    scrollH: document.documentElement.scrollHeight,
    w: window.innerWidth,
    h: window.innerHeight,
  })`)) as { rows: number; scrollW: number; scrollH: number; w: number; h: number };
  t.true(layout.rows > 5 && layout.rows < 80, `rendered rows: ${layout.rows}`);
  t.true(layout.scrollW <= layout.w && layout.scrollH <= layout.h, JSON.stringify(layout));
  await page.getByTestId('executions').evaluate((el) => (el.scrollTop = el.scrollHeight));
  await page.getByText('bulk-agent-999', { exact: true }).waitFor({ timeout: 60_000 });
  await page.screenshot({ path: path.join(OUT, '5-thousand-executions.png') });
  t.deepEqual(pageErrors, []);
});
