// The capacity bench (issue 16): its open-loop step and knee against real HTTP servers, and its quick mode against a
// real `orch up` (PostgreSQL, Redis, every surface through the API), checking the report files it writes.
import test from 'ava';
import http from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openLoop, type StepResult } from '../../bench/capacity/load.ts';
import { knee, ladder, stepPasses } from '../../bench/capacity/knee.ts';
import { benchCapacity, type CapacityFigures } from '../../bench/capacity/main.ts';

/** A real server that answers one request at a time, each after `serviceMs`: capacity 1000/serviceMs per second. */
async function serialServer(serviceMs: number): Promise<{ url: string; close: () => Promise<void> }> {
  let queue = Promise.resolve();
  const server = http.createServer((_req, res) => {
    queue = queue.then(() => new Promise<void>((r) => setTimeout(() => (res.end('ok'), r()), serviceMs)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((r) => server.close(() => r())) };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
function get(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
    }).on('error', reject);
  });
}

test.serial('an open-loop step under capacity carries what is offered; over capacity the latency from the due time grows and the step fails', async (t) => {
  const s = await serialServer(20); // 50 requests/s at most
  try {
    const under = await openLoop({ rate: 20, seconds: 1.5, fire: () => get(s.url) });
    t.is(under.ok, 30);
    t.is(under.failed + under.shed, 0);
    t.true(under.achieved > 15 && under.achieved < 25, `carried ${under.achieved}/s of 20`);
    t.true(under.p50Ms >= 19, `p50 ${under.p50Ms} ms covers the 20 ms service time`);
    t.true(stepPasses(under, 1000));
    // 150/s offered to a 50/s server: the queue grows through the step; measured from the due time (not from when
    // the generator got round to sending), the last requests waited about a second.
    const over = await openLoop({ rate: 150, seconds: 1.5, fire: () => get(s.url) });
    t.true(over.achieved < 0.9 * 150, `carried ${over.achieved}/s of 150`);
    t.true(over.p99Ms > 1000, `p99 ${over.p99Ms} ms shows the queue`);
    t.false(stepPasses(over, 250));
  } finally {
    await s.close();
  }
});

test.serial('the ladder stops at the first failing step and the knee is the last passing step before it', async (t) => {
  // The ladder's own logic, over step results given per rate. It ran real 1 s steps against a 20 ms server, which
  // failed at load ~18 (the 25/s step did not pass: a stall of ~0.1 s in a 1 s step already carries < 90 %); the
  // real open loop, under and over capacity, is the test above and the quick mode below.
  const result = (rate: number, p99Ms: number): StepResult => ({ offered: rate, achieved: rate, ok: rate, failed: 0, shed: 0, p50Ms: p99Ms / 2, p99Ms, seconds: 1 });
  const ran: number[] = [];
  const steps = await ladder([10, 25, 200, 30], 1000, async (rate) => (ran.push(rate), result(rate, rate >= 200 ? 3000 : 50)));
  t.deepEqual(ran, [10, 25, 200], '30 never runs: the knee is behind the failure');
  t.deepEqual(steps.map((x) => x.offered), [10, 25, 200]);
  t.is(knee(steps, 1000)?.offered, 25);
  const failing: StepResult = { offered: 10, achieved: 10, ok: 10, failed: 0, shed: 0, p50Ms: 1400, p99Ms: 1500, seconds: 1 };
  t.is(knee([failing, ...steps], 1000), undefined); // a pass after a failure is not capacity
  // retryFailed: a step that fails once is run again and its second figures kept; failing twice stops the ladder.
  const attempts = new Map<number, number>();
  const retried: number[] = [];
  const again = await ladder(
    [10, 25, 200, 30],
    1000,
    async (rate) => {
      const n = (attempts.get(rate) ?? 0) + 1;
      attempts.set(rate, n);
      return result(rate, rate === 25 && n === 1 ? 5000 : rate >= 200 ? 3000 : 50);
    },
    { retryFailed: true, onRetry: (first) => retried.push(first.offered) },
  );
  t.deepEqual(retried, [25, 200]);
  t.deepEqual(again.map((x) => [x.offered, x.p99Ms]), [[10, 50], [25, 50], [200, 3000]]);
  t.is(knee(again, 1000)?.offered, 25);
});

test.serial('capacity --quick: every surface driven through a real node, then the density burst, report, charts and figures written with sane numbers', async (t) => {
  t.timeout(240_000);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-capacity-test-'));
  try {
    const f = await benchCapacity({ quick: true, outDir: dir });
    const json = JSON.parse(await readFile(path.join(dir, 'capacity', 'capacity.json'), 'utf8')) as CapacityFigures;
    t.deepEqual(json.surfaces.map((s) => s.key), ['runs', 'steps', 'webhooks', 'executions', 'seal', 'ws', 'heartbeats']);
    t.true(f.pgCommitsPerSecond > 10, `PostgreSQL probe ${f.pgCommitsPerSecond} commits/s`);
    const md = await readFile(path.join(dir, 'CAPACITY.md'), 'utf8');
    t.regex(md, /## Summary/);
    t.regex(md, /## Model: N controllers, M workers/);
    for (const s of json.surfaces) {
      t.is(s.error, undefined, `${s.key}: ${s.error}`);
      t.true(s.steps.length >= 1, `${s.key} ran no step`);
      const first = s.steps[0]!;
      // The first (lowest) step is far under any node's capacity: it must carry its load with answers.
      t.true(first.ok > 0, `${s.key}: no operation succeeded`);
      t.true(first.achieved > 0.5 * first.offered && first.achieved < 1.5 * first.offered, `${s.key}: carried ${first.achieved} of ${first.offered}`);
      for (const x of s.steps) {
        t.true(x.p50Ms > 0 && x.p99Ms >= x.p50Ms && x.p99Ms < 60_000, `${s.key}: p50 ${x.p50Ms} p99 ${x.p99Ms}`);
        t.true(x.cost.nodeCpuMs >= 0 && x.cost.pgCpuMs >= 0 && x.cost.commits > 0, `${s.key}: costs ${JSON.stringify(x.cost)}`);
      }
      if (s.knee) t.true(s.knee.passes && s.knee.p99Ms <= s.boundMs);
      t.true(md.includes(`## ${s.title}`), `${s.key} has no section`);
      const svg = await readFile(path.join(dir, 'capacity', `${s.key}.svg`), 'utf8');
      t.regex(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      t.is((svg.match(/<circle /g) ?? []).length, 2 * s.steps.length, `${s.key}: one point per step in each panel`);
      t.true(md.includes(`capacity/${s.key}.svg`));
    }
    // The node's CPU over the whole run was metered (the first surface's steps cost it something).
    t.true(json.surfaces[0]!.steps.some((x) => x.cost.nodeCpuMs > 0));
    // The density scenario ran on a node of its own and has its section, with real figures.
    const d = json.density?.figures;
    if (!d) return t.fail('no density figures');
    t.is(d.count, 5);
    t.is(d.completed, 5, `density: ${d.failed} failed, ${d.rejected} refused`);
    t.true(d.nodeCpuMsPerExecution > 0 && d.executionsPerSecond > 0 && d.healthLiveMs.probes > 0, JSON.stringify(d));
    t.regex(md, /## Agents at density: 5 executions started at once/);
    t.true(md.includes(`| node CPU per execution | ${d.nodeCpuMsPerExecution} ms |`));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
