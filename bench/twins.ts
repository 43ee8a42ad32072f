// The k6 scripts' twins (issue 16): `npm run bench -- twin <script> [--vus N] [--seconds S] ...` runs the same shape
// as bench/k6/<script>.ts — the same requests, the same closed-loop virtual users (each loops its request as a k6
// VU does), the same thresholds — against a fresh node here (bench/capacity/node.ts: `orch up` on PostgreSQL and
// Redis), so a k6 run on a production cluster and a Node run here can be compared. k6 cannot be installed from this
// machine's registries; the scripts are type-checked in `npm test`.
import os from 'node:os';
import WebSocket from 'ws';
import { startCapacityNode, type CapacityNode } from './capacity/node.ts';
import { bearer, deployWorkflow, executionOp, HOOK_WORKFLOW, runAndWaitOp, sealSession, webhookOp } from './capacity/surfaces.ts';
import { percentile } from './stats.ts';

export const TWINS = ['workflow-run-wait', 'webhooks', 'executions', 'seal-invoke', 'ws-subscribers'] as const;
export type TwinName = (typeof TWINS)[number];

export interface TwinOptions {
  vus?: number;
  seconds: number;
  /** seal-invoke: envelopes to send (shared-iterations); ws-subscribers: sockets and runs/s. */
  iterations?: number;
  subscribers?: number;
  runsPerSecond?: number;
}

interface Threshold {
  name: string;
  ok: boolean;
  value: string;
}

/** k6's `vus` + `duration` executor: each VU runs `op` back to back until the time is up. */
async function closedLoop<T>(vus: number, seconds: number, op: (i: number) => Promise<T>): Promise<{ latencies: number[]; results: T[]; failed: number; firstError?: string; elapsed: number }> {
  const latencies: number[] = [];
  const results: T[] = [];
  let failed = 0;
  let firstError: string | undefined;
  let n = 0;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: vus }, async () => {
      while (performance.now() < deadline) {
        const s = performance.now();
        try {
          results.push(await op(n++));
          latencies.push(performance.now() - s);
        } catch (err) {
          failed++;
          firstError ??= (err as Error).message;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { latencies, results, failed, ...(firstError ? { firstError } : {}), elapsed: (performance.now() - t0) / 1000 };
}

function summary(out: (l: string) => void, name: string, lines: string[], thresholds: Threshold[]): boolean {
  out(`twin ${name} (load ${os.loadavg()[0]!.toFixed(1)}):`);
  for (const l of lines) out(`  ${l}`);
  for (const t of thresholds) out(`  ${t.ok ? '✓' : '✗'} ${t.name}: ${t.value}`);
  return thresholds.every((t) => t.ok);
}

const p = (xs: number[], q: number): string => `${percentile(xs, q).toFixed(1)} ms`;

async function httpTwin(out: (l: string) => void, name: string, vus: number, seconds: number, boundMs: number, op: () => Promise<void>, per = 1): Promise<boolean> {
  const r = await closedLoop(vus, seconds, op);
  const total = r.latencies.length + r.failed;
  return summary(
    out,
    name,
    [`${vus} VUs for ${seconds} s: ${r.latencies.length} ok, ${r.failed} failed${r.firstError ? ` (${r.firstError.slice(0, 120)})` : ''}; ${(r.latencies.length / r.elapsed).toFixed(1)} iterations/s${per > 1 ? ` = ${((per * r.latencies.length) / r.elapsed).toFixed(0)} steps/s` : ''}; p50 ${p(r.latencies, 50)}, p99 ${p(r.latencies, 99)}`],
    [
      { name: 'checks rate>0.999', ok: total > 0 && r.latencies.length / total > 0.999, value: `${((r.latencies.length / Math.max(1, total)) * 100).toFixed(2)} %` },
      { name: `http_req_duration p(99)<${boundMs}`, ok: percentile(r.latencies, 99) < boundMs, value: p(r.latencies, 99) },
    ],
  );
}

async function executionsTwin(out: (l: string) => void, n: CapacityNode, vus: number, seconds: number): Promise<boolean> {
  const op = await executionOp(n);
  const r = await closedLoop(vus, seconds, () => op());
  const starts = [...r.results].sort((a, b) => a - b);
  const total = r.latencies.length + r.failed;
  return summary(
    out,
    'executions',
    [`${vus} VUs for ${seconds} s: ${r.latencies.length} executions completed, ${r.failed} failed${r.firstError ? ` (${r.firstError.slice(0, 120)})` : ''}; ${(r.latencies.length / r.elapsed).toFixed(2)} executions/s; start → end p50 ${p(r.latencies, 50)}, p99 ${p(r.latencies, 99)}; the start call p99 ${p(starts, 99)}`],
    [
      { name: 'checks rate>0.999', ok: total > 0 && r.latencies.length / total > 0.999, value: `${((r.latencies.length / Math.max(1, total)) * 100).toFixed(2)} %` },
      { name: 'execution_end_to_end p(99)<5000', ok: percentile(r.latencies, 99) < 5000, value: p(r.latencies, 99) },
      { name: 'http_req_duration{call:start} p(99)<250', ok: percentile(starts, 99) < 250, value: p(starts, 99) },
    ],
  );
}

async function sealTwin(out: (l: string) => void, n: CapacityNode, vus: number, iterations: number): Promise<boolean> {
  const session = await sealSession(n);
  const signed = await session.sign(iterations);
  // shared-iterations: the VUs take envelopes until none are left; each is sent once.
  let next = 0;
  const latencies: number[] = [];
  let failed = 0;
  let firstError: string | undefined;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: vus }, async () => {
      for (let i = next++; i < iterations; i = next++) {
        const s = performance.now();
        try {
          await session.invoke(signed, i);
          latencies.push(performance.now() - s);
        } catch (err) {
          failed++;
          firstError ??= (err as Error).message;
        }
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return summary(
    out,
    'seal-invoke',
    [`${vus} VUs, ${iterations} presigned envelopes each sent once: ${latencies.length} ok, ${failed} failed${firstError ? ` (${firstError.slice(0, 120)})` : ''}; ${(latencies.length / elapsed).toFixed(0)} invokes/s; p50 ${p(latencies, 50)}, p99 ${p(latencies, 99)}`],
    [
      { name: 'checks rate>0.999', ok: latencies.length / iterations > 0.999, value: `${((latencies.length / iterations) * 100).toFixed(2)} %` },
      { name: 'http_req_duration p(99)<50', ok: percentile(latencies, 99) < 50, value: p(latencies, 99) },
    ],
  );
}

async function wsTwin(out: (l: string) => void, n: CapacityNode, subscribers: number, hold: number, runsPerSecond: number): Promise<boolean> {
  await deployWorkflow(n, HOOK_WORKFLOW);
  const url = `${n.base.replace(/^http/, 'ws')}/v1/ws`;
  const joinTimes: number[] = [];
  let subscribed = 0;
  let messages = 0;
  let closedByServer = 0;
  let leaving = false;
  const sockets: WebSocket[] = [];
  const joins: Promise<void>[] = [];
  for (let i = 0; i < subscribers; i++) {
    const t0 = performance.now();
    const ws = new WebSocket(url, { headers: bearer(n), perMessageDeflate: false });
    sockets.push(ws);
    let joined = false;
    joins.push(
      new Promise<void>((resolve) => {
        ws.on('open', () => ws.send(JSON.stringify({ subscribe: 'workflows' })));
        ws.on('message', (data: Buffer) => {
          if (!joined && data.toString().startsWith('{"subscribed"')) {
            joined = true;
            subscribed++;
            joinTimes.push(performance.now() - t0);
            resolve();
          } else if (joined) messages++;
        });
        ws.on('error', () => resolve());
        ws.on('close', () => {
          if (!leaving) closedByServer++;
          resolve();
        });
      }),
    );
    if (i % 200 === 199) await Promise.all(joins.slice(i - 199));
  }
  await Promise.all(joins);
  // Runs started at a constant arrival rate while the sockets hold.
  let runs = 0;
  let runFailures = 0;
  const body = JSON.stringify({ input: { n: 1 } });
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < runsPerSecond * hold; i++) {
    const wait = t0 + (i * 1000) / runsPerSecond - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      n.request('POST', '/v1/workflows/on-hook/run', body, bearer(n)).then(
        (r) => void (r.status === 201 ? runs++ : runFailures++),
        () => void runFailures++,
      ),
    );
  }
  await Promise.all(pending);
  await new Promise((r) => setTimeout(r, 1000));
  leaving = true;
  for (const s of sockets) s.close();
  joinTimes.sort((a, b) => a - b);
  return summary(
    out,
    'ws-subscribers',
    [`${subscribers} sockets on the \`workflows\` stream for ${hold} s, ${runsPerSecond} runs/s started: ${subscribed} subscribed (open → snapshot p50 ${p(joinTimes, 50)}, p99 ${p(joinTimes, 99)}), ${messages} feed messages delivered (${(messages / Math.max(1, subscribed)).toFixed(1)} per socket), ${runs} runs started, ${runFailures} failed`],
    [
      { name: 'ws_subscribed rate>0.999', ok: subscribed / subscribers > 0.999, value: `${((subscribed / subscribers) * 100).toFixed(2)} %` },
      { name: 'ws_subscribe_time p(99)<1000', ok: percentile(joinTimes, 99) < 1000, value: p(joinTimes, 99) },
      { name: 'ws_closed_by_server count==0', ok: closedByServer === 0, value: String(closedByServer) },
      { name: 'http_req_failed{scenario:runs} rate<0.001', ok: runFailures / Math.max(1, runs + runFailures) < 0.001, value: `${runFailures} of ${runs + runFailures}` },
      { name: 'feed messages delivered > 0', ok: messages > 0, value: String(messages) },
    ],
  );
}

/** Runs one twin (or all) against a fresh node; answers whether every threshold held. */
export async function benchTwin(which: TwinName | 'all', o: TwinOptions, out: (l: string) => void): Promise<boolean> {
  const n = await startCapacityNode();
  let ok = true;
  try {
    for (const name of which === 'all' ? TWINS : [which]) {
      if (name === 'workflow-run-wait') ok = (await httpTwin(out, name, o.vus ?? 64, o.seconds, 1000, await runAndWaitOp(n), 10)) && ok;
      if (name === 'webhooks') ok = (await httpTwin(out, name, o.vus ?? 50, o.seconds, 250, await webhookOp(n))) && ok;
      if (name === 'executions') ok = (await executionsTwin(out, n, o.vus ?? 8, o.seconds)) && ok;
      if (name === 'seal-invoke') ok = (await sealTwin(out, n, o.vus ?? 16, o.iterations ?? 2000)) && ok;
      if (name === 'ws-subscribers') ok = (await wsTwin(out, n, o.subscribers ?? 200, o.seconds, o.runsPerSecond ?? 10)) && ok;
    }
  } finally {
    await n.close();
  }
  return ok;
}
