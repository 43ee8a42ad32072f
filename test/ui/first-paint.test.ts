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

test('first paint: loading until the lists arrive, a favicon, a five-state graph that fits and zooms', async (t) => {
  const n = await startTestNode(defer, { databaseUrl: await dbUrl() });
  const tenant = `fp-${randomUUID().slice(0, 6)}`;
  const token = await n.token(tenant);
  await new WorkflowDefinitionService(n.node.db, silentLogger()).deploy({ tenant, subject: 'dev', yaml: FIVE('five') });
  const run = await n.api<{ execution_id: string }>('POST', '/v1/workflows/five/run', { input: {} }, token);
  t.is(run.status, 201, JSON.stringify(run.body));

  const browser = await launch(defer);
  const { page, errors, shot } = await openPage(browser, { http: n.http, token, prefix: 'first-paint', go: false });

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
  await page.getByTestId('loading-executions').waitFor({ timeout: 60_000 });
  // The feed has answered `authenticated` by now or soon; give it the time to, then look.
  await page.waitForTimeout(1500);
  t.not(await page.getByTestId('connection').textContent(), 'live', 'not "live" before any list has arrived');
  const stats = (await page.getByTestId('stats').textContent()) ?? '';
  t.notRegex(stats, /\b0 executions|\b0 nodes/, 'no zeros before the data');
  t.regex(stats, /loading/);
  console.log(`screenshot: ${await shot('1-loading')}`);
  release();
  await whenLive(page);
  t.regex((await page.getByTestId('stats').textContent()) ?? '', /1 workflows · 1 pending approvals · 1 nodes/);
  t.is(await page.getByTestId('loading-executions').count(), 0);

  // The favicon: the root path every browser asks for, and the one the page links.
  const icons = (await page.evaluate(`(async () => {
    const root = await fetch('/favicon.ico');
    const link = document.querySelector('link[rel="icon"]');
    const linked = link ? await fetch(link.getAttribute('href')) : undefined;
    return { root: root.status, type: root.headers.get('content-type'), linked: linked ? linked.status : 0 };
  })()`)) as { root: number; type: string; linked: number };
  t.deepEqual(icons, { root: 200, type: 'image/x-icon', linked: 200 });

  // The five-state machine: every state inside the graph box, nothing scrolled or clipped.
  const wf = run.body.execution_id;
  await page.locator(`[data-testid="wf-${wf}"][data-status="waiting_for_human_input"]`).waitFor({ timeout: 60_000 });
  await page.getByTestId(`wf-${wf}`).click();
  await page.locator('[data-testid="graph-state-release_gate"][data-current="true"]').waitFor({ timeout: 60_000 });
  const box = async (): Promise<{ box: { l: number; r: number; t: number; b: number }; states: Record<string, { l: number; r: number; t: number; b: number }> }> =>
    (await page.evaluate(`(() => {
      const r = (el) => { const b = el.getBoundingClientRect(); return { l: b.left, r: b.right, t: b.top, b: b.bottom }; };
      const svg = document.querySelector('[data-testid="wf-graph"]');
      const states = {};
      for (const g of svg.querySelectorAll('[data-testid^="graph-state-"]')) states[g.getAttribute('data-testid').slice(12)] = r(g);
      const panel = document.querySelector('[data-testid="detail"]');
      const pb = r(panel);
      const sb = r(svg);
      return { box: { l: Math.max(pb.l, sb.l), r: Math.min(pb.r, sb.r), t: sb.t, b: sb.b }, states };
    })()`)) as never;
  const fitted = await box();
  t.deepEqual(Object.keys(fitted.states).sort(), ['check_results', 'collect_inputs', 'publish_release', 'release_gate', 'transform_data']);
  for (const [name, s] of Object.entries(fitted.states)) {
    t.true(s.l >= fitted.box.l - 0.5 && s.r <= fitted.box.r + 0.5 && s.t >= fitted.box.t - 0.5 && s.b <= fitted.box.b + 0.5, `${name} inside the graph: ${JSON.stringify({ s, box: fitted.box })}`);
  }
  const detailScroll = (await page.evaluate(`(() => { const d = document.querySelector('[data-testid="detail"]'); return d.scrollWidth - d.clientWidth; })()`)) as number;
  t.true(detailScroll <= 0, `the detail panel does not scroll sideways (${detailScroll} px)`);
  console.log(`screenshot: ${await shot('2-five-state-graph')}`);

  // Zoom in: states grow (some now outside the view); fit brings every one back.
  const widthOf = (b: { l: number; r: number }): number => b.r - b.l;
  await page.getByTestId('graph-zoom-in').click();
  await page.getByTestId('graph-zoom-in').click();
  const zoomed = await box();
  t.true(widthOf(zoomed.states.release_gate!) > widthOf(fitted.states.release_gate!) * 1.5, 'zoom in makes states larger');
  await page.getByTestId('graph-fit').click();
  const again = await box();
  t.true(Math.abs(widthOf(again.states.release_gate!) - widthOf(fitted.states.release_gate!)) < 1, 'fit shows the whole machine again');
  t.deepEqual(errors, []);
});

async function dbUrl(): Promise<string> {
  const { createTestDatabase } = await import('../support/pg.ts');
  const db = await createTestDatabase();
  defer(() => db.drop());
  return db.url;
}
