// Issue 15 item 12 in the browser: the first paint says "loading" (never "live" and zeros before the lists arrive),
// /favicon.ico is an icon (not 404), and a five-state workflow's graph fits its panel (nothing clipped on the right),
// with zoom and fit. Screenshots under test-output/ui/first-paint-*.png.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { startTestNode, type Defer } from '../gateway/ws-support.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { launch, openPage, whenLive } from './browser.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
const defer: Defer = (fn) => void cleanups.push(fn);
test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const FIVE = (name: string): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: ${name}, version: 1.0.0 }
spec:
  initial_state: collect_inputs
  states:
    collect_inputs: { kind: System, command: 'update_blackboard {"a": 1}', transitions: [{ target: transform_data }] }
    transform_data: { kind: System, command: 'update_blackboard {"b": 2}', transitions: [{ target: check_results }] }
    check_results: { kind: System, command: 'update_blackboard {"c": 3}', transitions: [{ target: release_gate }] }
    release_gate:
      kind: Human
      prompt: 'Release?'
      transitions: [{ condition: input_equals_yes, target: publish_release }]
    publish_release: { kind: System, command: 'update_blackboard {"done": true}', transitions: [] }
`;

interface Ctx {
  n: Awaited<ReturnType<typeof startTestNode>>;
  token: string;
  wf: string;
  browser: Awaited<ReturnType<typeof launch>>;
}
let ctx!: Ctx;

test.before(async () => {
  const n = await startTestNode(defer, { databaseUrl: await dbUrl() });
  const tenant = `fp-${randomUUID().slice(0, 6)}`;
  const token = await n.token(tenant);
  await new WorkflowDefinitionService(n.node.db, silentLogger()).deploy({ tenant, subject: 'dev', yaml: FIVE('five') });
  const run = await n.api<{ execution_id: string }>('POST', '/v1/workflows/five/run', { input: {} }, token);
  if (run.status !== 201) throw new Error(JSON.stringify(run.body));
  ctx = { n, token, wf: run.body.execution_id, browser: await launch(defer) };
});

test.serial('first paint says loading, not "live" and zeros, until the lists arrive', async (t) => {
  const { n, token } = ctx;
  const { page, errors, shot } = await openPage(ctx.browser, { http: n.http, token, prefix: 'first-paint', go: false });
  // Hold the list snapshots back (the feed authenticates, the rows have not come yet): what the page shows then is
  // its first paint on a slow link.
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  await page.routeWebSocket(/\/v1\/ws$/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((m) => server.send(m));
    server.onMessage((m) => {
      const text = typeof m === 'string' ? m : m.toString();
      if (text.includes('"snapshot"')) void released.then(() => ws.send(text));
      else ws.send(text);
    });
  });
  await page.goto(`${n.http}/ui#token=${encodeURIComponent(token)}`);
  // The feed answers `authenticated` quickly; give it the time to, then look.
  await page.waitForTimeout(2000);
  t.not(await page.getByTestId('connection').textContent(), 'live', 'not "live" before any list has arrived');
  const stats = (await page.locator('header').textContent()) ?? '';
  t.notRegex(stats, /\b0 executions|\b0 nodes/, 'no zeros before the data');
  t.true(await page.getByTestId('loading-executions').isVisible(), 'the executions list says it is loading');
  console.log(`screenshot: ${await shot('1-loading')}`);
  release();
  await whenLive(page);
  t.regex((await page.getByTestId('stats').textContent()) ?? '', /1 workflows · 1 pending approvals · 1 nodes/);
  t.is(await page.getByTestId('loading-executions').count(), 0);
  t.deepEqual(errors, []);
  await page.close();
});

test.serial('/favicon.ico is an icon, and the page links one that loads', async (t) => {
  const { n, token } = ctx;
  const { page } = await openPage(ctx.browser, { http: n.http, token, prefix: 'first-paint' });
  await page.locator('#app *').first().waitFor({ timeout: 60_000 });
  const icons = (await page.evaluate(`(async () => {
    const root = await fetch('/favicon.ico');
    const link = document.querySelector('link[rel="icon"]');
    const linked = link ? await fetch(link.getAttribute('href')) : undefined;
    return { root: root.status, type: root.headers.get('content-type'), linked: linked ? linked.status : 0 };
  })()`)) as { root: number; type: string; linked: number };
  t.deepEqual(icons, { root: 200, type: 'image/x-icon', linked: 200 });
  await page.close();
});

test.serial('a five-state workflow graph fits its panel (nothing clipped), zooms in and fits again', async (t) => {
  const { n, token, wf } = ctx;
  const { page, errors, shot } = await openPage(ctx.browser, { http: n.http, token, prefix: 'first-paint' });
  await page.locator(`[data-testid="wf-${wf}"][data-status="waiting_for_human_input"]`).waitFor({ timeout: 60_000 });
  await page.getByTestId(`wf-${wf}`).click();
  await page.locator('[data-testid="graph-state-release_gate"][data-current="true"]').waitFor({ timeout: 60_000 });
  type Rect = { l: number; r: number; t: number; b: number };
  // The states' boxes against what is visible of the graph (the svg within the detail panel and its scroller).
  const box = async (): Promise<{ box: Rect; states: Record<string, Rect> }> =>
    (await page.evaluate(`(() => {
      const r = (el) => { const b = el.getBoundingClientRect(); return { l: b.left, r: b.right, t: b.top, b: b.bottom }; };
      const svg = document.querySelector('[data-testid="wf-graph"]');
      const states = {};
      for (const g of svg.querySelectorAll('[data-testid^="graph-state-"]')) states[g.getAttribute('data-testid').slice(12)] = r(g);
      let vis = r(svg);
      for (let el = svg.parentElement; el; el = el.parentElement) {
        const st = getComputedStyle(el);
        if (st.overflowX !== 'visible') { const p = r(el); vis = { l: Math.max(vis.l, p.l), r: Math.min(vis.r, p.r), t: Math.max(vis.t, p.t), b: Math.min(vis.b, p.b) }; }
      }
      return { box: vis, states };
    })()`)) as never;
  const fitted = await box();
  t.deepEqual(Object.keys(fitted.states).sort(), ['check_results', 'collect_inputs', 'publish_release', 'release_gate', 'transform_data']);
  for (const [name, s] of Object.entries(fitted.states)) {
    t.true(s.l >= fitted.box.l - 0.5 && s.r <= fitted.box.r + 0.5 && s.t >= fitted.box.t - 0.5 && s.b <= fitted.box.b + 0.5, `${name} inside the graph: ${JSON.stringify({ s, box: fitted.box })}`);
  }
  console.log(`screenshot: ${await shot('2-five-state-graph')}`);

  // Zoom in: states grow; fit brings the whole machine back.
  const widthOf = (b: { l: number; r: number }): number => b.r - b.l;
  await page.getByTestId('graph-zoom-in').click();
  await page.getByTestId('graph-zoom-in').click();
  const zoomed = await box();
  t.true(widthOf(zoomed.states.release_gate!) > widthOf(fitted.states.release_gate!) * 1.5, 'zoom in makes states larger');
  await page.getByTestId('graph-fit').click();
  const again = await box();
  t.true(Math.abs(widthOf(again.states.release_gate!) - widthOf(fitted.states.release_gate!)) < 1, 'fit shows the whole machine again');
  t.deepEqual(errors, []);
  await page.close();
});

async function dbUrl(): Promise<string> {
  const { createTestDatabase } = await import('../support/pg.ts');
  const db = await createTestDatabase({ migrated: true });
  defer(() => db.drop());
  return db.url;
}
