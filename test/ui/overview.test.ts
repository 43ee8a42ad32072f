// The overview's live charts and the page under load, in Chromium: GET /v1/stats/history (per-minute buckets of the
// caller's tenant, 400 on a bad window), the charts drawn from it and moved by the live feed as executions run, and
// the frame time while 1,000 feed messages a second arrive. Screenshots under test-output/ui/overview-*.png.
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

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: quick, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "Answer." }
  execution: { mode: one-shot }
  tools: [ fs.read ]
`;

interface Bucket {
  t: number;
  started: number;
  completed: number;
  failed: number;
  p50_ms: number | null;
  p99_ms: number | null;
  tokens: number;
}

let shared: Promise<{ n: Awaited<ReturnType<typeof startTestNode>>; token: string; tenant: string; agent: string }> | undefined;
function stack(): NonNullable<typeof shared> {
  shared ??= (async () => {
    const db = await createTestDatabase({ migrated: true });
    defer(() => db.drop());
    const llm = await startScriptedLlm(() => ({ content: 'fine', usage: { prompt_tokens: 30, completion_tokens: 5 } }));
    defer(() => llm.close());
    const n = await startTestNode(defer, { databaseUrl: db.url, llmUrl: llm.url });
    const tenant = `ov-${randomUUID().slice(0, 6)}`;
    const token = await n.token(tenant);
    const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: AGENT }, token);
    if (dep.status !== 201) throw new Error(JSON.stringify(dep.body));
    return { n, token, tenant, agent: dep.body.agent_id };
  })();
  return shared;
}

test.serial('GET /v1/stats/history: per-minute counts, p50/p99 duration and tokens of the caller tenant only', async (t) => {
  const { n } = await stack();
  const tenant = `st-${randomUUID().slice(0, 6)}`;
  const token = await n.token(tenant);
  // Ten executions 5 minutes ago: 8 completed in 1..8 s, 2 failed; 100 tokens each.
  await n.node.db.query(
    `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, status, iteration, created_at, started_at, completed_at, prompt_tokens, completion_tokens)
     SELECT gen_random_uuid(), $1, gen_random_uuid(), 'a', '1.0.0', '{}'::jsonb, 'x', CASE WHEN g > 8 THEN 'failed' ELSE 'completed' END, 1,
            date_trunc('minute', now()) - interval '5 minutes', date_trunc('minute', now()) - interval '5 minutes',
            date_trunc('minute', now()) - interval '5 minutes' + (g || ' seconds')::interval, 60, 40
     FROM generate_series(1, 10) AS g`,
    [tenant],
  );
  const res = await n.api<{ minutes: number; buckets: Bucket[] }>('GET', '/v1/stats/history?minutes=60', undefined, token);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.is(res.body.buckets.length, 60);
  const busy = res.body.buckets.filter((b) => b.started > 0 || b.completed > 0 || b.failed > 0);
  t.is(busy.length, 1, JSON.stringify(busy));
  t.like(busy[0], { started: 10, completed: 8, failed: 2, tokens: 1000 });
  t.true(busy[0]!.p50_ms! >= 5000 && busy[0]!.p50_ms! <= 6000, String(busy[0]!.p50_ms));
  t.true(busy[0]!.p99_ms! >= 9900 && busy[0]!.p99_ms! <= 10_000, String(busy[0]!.p99_ms));
  const other = await n.api<{ buckets: Bucket[] }>('GET', '/v1/stats/history', undefined, await n.token(`x-${randomUUID().slice(0, 6)}`));
  t.true(other.body.buckets.every((b) => b.started === 0 && b.completed === 0));
  t.is((await n.api('GET', '/v1/stats/history?minutes=0', undefined, token)).status, 400);
  t.is((await n.api('GET', '/v1/stats/history?minutes=abc', undefined, token)).status, 400);
  t.is((await n.api('GET', '/v1/stats/history', undefined, '')).status, 401);
});

test.serial('the overview charts the last hour and moves live as executions run', async (t) => {
  const { n, token, agent } = await stack();
  for (let i = 0; i < 2; i++) await n.api('POST', '/v1/executions', { agent_id: agent, input: `before ${i}` }, token);
  const browser = await launch(defer);
  const { page, errors, shot } = await openPage(browser, { http: n.http, token, prefix: 'overview' });
  await whenLive(page);
  await page.getByTestId('overview-tab').click();
  await page.getByTestId('chart-throughput').waitFor({ timeout: 60_000 });
  for (const id of ['chart-throughput', 'chart-latency', 'chart-tokens', 'chart-node-load', 'chart-heartbeat']) {
    t.true(Number(await page.getByTestId(id).getAttribute('data-points')) > 0, `${id} has points`);
    t.is(await page.getByTestId(id).locator('canvas').count(), 1, `${id} drawn on a canvas`);
  }
  const started = async (): Promise<number> => Number(((await page.getByTestId('kpi-started').textContent()) ?? '').replace(/\D.*$/, ''));
  const before = await started();
  // Three more, started through the API while the page is open: the feed moves the charts, no reload.
  for (let i = 0; i < 3; i++) await n.api('POST', '/v1/executions', { agent_id: agent, input: `live ${i}` }, token);
  const deadline = Date.now() + 60_000;
  while ((await started()) < before + 3 && Date.now() < deadline) await page.waitForTimeout(250);
  t.is(await started(), before + 3);
  const tokensDeadline = Date.now() + 60_000;
  const tokens = async (): Promise<number> => Number(((await page.getByTestId('kpi-tokens').textContent()) ?? '').replace(/\D.*$/, ''));
  while ((await tokens()) < 5 * 35 && Date.now() < tokensDeadline) await page.waitForTimeout(250);
  t.is(await tokens(), 5 * 35, 'tokens of all five executions (history + live)');
  await page.waitForTimeout(2500);
  console.log(`screenshot: ${await shot('1-charts')}`);
  t.deepEqual(errors, []);
});

test.serial('the page stays responsive with 1,000 feed events a second arriving', async (t) => {
  const { n, token, agent } = await stack();
  const ex = await n.api<{ execution_id: string }>('POST', '/v1/executions', { agent_id: agent, input: 'watched' }, token);
  const id = ex.body.execution_id;
  const stream = `execution:${id}`;
  const browser = await launch(defer);
  const { page, errors, shot } = await openPage(browser, { http: n.http, token, prefix: 'overview' });
  await whenLive(page);
  await page.locator(`[data-testid="exec-${id}"][data-status="completed"]`).waitFor({ timeout: 60_000 });
  await page.getByTestId(`exec-${id}`).click();
  await page.getByTestId('events-toggle').click();
  await page.getByTestId('event-stream').locator('[data-type="execution_completed"]').waitFor({ timeout: 60_000 });

  // A chatty execution: 1,000 output events a second published on the node's bus, after the execution's own events
  // (so its seq numbering continues), reaching the page through the node's real /v1/ws path. The page has the
  // execution open (timeline, raw event stream) and the live lists.
  const last = await n.node.db.query<{ n: number }>('SELECT max(seq)::INT4 AS n FROM execution_events WHERE execution_id = $1', [id]);
  let seq = last.rows[0]!.n;
  const inject = (): ReturnType<typeof setInterval> => {
    // Paced by the clock, not by the timer's ticks (late on a loaded machine): each tick publishes what is due.
    const t0 = Date.now();
    const first = seq;
    const timer = setInterval(() => {
      const due = first + Math.floor(Date.now() - t0) - seq;
      for (let i = 0; i < due; i++) {
        seq++;
        void n.node.bus.publish({ stream, seq, type: 'iteration_output', payload: { execution_id: id, iteration_number: 1, output: `chunk ${seq}`, emitted_at: new Date().toISOString() }, at: new Date().toISOString() });
      }
    }, 20);
    defer(() => clearInterval(timer));
    return timer;
  };

  let gen = 0;
  const measure = async (label: string): Promise<{ frames: number; p50: number; p95: number; max: number; seq: number; published: number; upTo: number }> => {
    gen++;
    await page.evaluate(`(() => {
      window.__gen = ${gen};
      window.__frames = [];
      let last = performance.now();
      const loop = (t) => { if (window.__gen !== ${gen}) return; window.__frames.push(t - last); last = t; requestAnimationFrame(loop); };
      requestAnimationFrame(loop);
    })()`);
    const from = seq;
    await page.waitForTimeout(5000);
    const r = (await page.evaluate(`(() => {
      const f = window.__frames.slice(3).sort((a, b) => a - b);
      const at = (p) => f[Math.min(f.length - 1, Math.floor(p * f.length))];
      const newest = document.querySelector('[data-testid="event-stream"] .event .seq');
      return { frames: f.length, p50: at(0.5), p95: at(0.95), max: f[f.length - 1], seq: newest ? Number(newest.textContent.slice(1)) : 0 };
    })()`)) as { frames: number; p50: number; p95: number; max: number; seq: number };
    console.log(`${label}: ${JSON.stringify({ ...r, published: seq - from })}`);
    // upTo: the newest event published when the page's newest was read (publishing goes on during the next phases).
    return { ...r, published: seq - from, upTo: seq };
  };
  const quiet = await measure('quiet');
  const timer = inject();
  await page.waitForTimeout(500);
  const loaded = await measure('1,000 events/s, execution open');
  const shown = loaded.seq;
  console.log(`screenshot: ${await shot('2-under-load')}`);
  await page.getByTestId('overview-tab').click();
  const charts = await measure('1,000 events/s, overview');
  console.log(`screenshot: ${await shot('3-overview-under-load')}`);
  clearInterval(timer);
  // Responsive: frames keep coming (at least 10 a second, 60 on an idle machine), the median frame at 30 fps or
  // better, the 95th percentile under 250 ms (the node, the test and Chromium share two loaded cores; 33-100 ms measured alone) and none
  // stalled for a second (a single long frame is the scheduler's on a loaded machine, not the page's); the stream kept up (the newest event shown is recent).
  for (const r of [loaded, charts]) {
    t.true(r.frames >= 50, `frames in 5 s: ${r.frames} (quiet: ${quiet.frames})`);
    t.true(r.p50 <= 34, `median frame time ${r.p50} ms`);
    t.true(r.p95 < 250, `p95 frame time ${r.p95} ms (quiet: ${quiet.p95})`);
    t.true(r.max < 1000, `longest frame ${r.max} ms`);
    t.true(r.published >= 4500, `events published in the 5 s: ${r.published}`);
  }
  // Kept up: when it was read, the newest event on the page was within 10 s of events of the newest published then
  // (compared with the final count, the overview phase and the screenshots, slow on a loaded machine, counted too).
  t.true(shown > loaded.upTo - 5000 * 2, `newest event shown #${shown}, published up to #${loaded.upTo} then`);
  t.deepEqual(errors, []);
});
