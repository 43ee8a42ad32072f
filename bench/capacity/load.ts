// Open-loop load at a fixed offered rate (the capacity bench's load step): request i is due at t0 + i/rate whether
// or not earlier ones were answered, as independent clients would send them, so a slow node meets a queue instead
// of a politely waiting client. Latency is measured from the DUE time, not the send time (no coordinated omission:
// time a request waited behind the generator's in-flight cap counts). When `maxInFlight` requests are out, a due
// request is shed and counted as a failure: the offered rate is then not being carried.
import { percentile } from '../stats.ts';

export interface StepResult {
  /** Offered load (operations/s as scheduled). */
  offered: number;
  /** Successful operations per second, over the span from the first completion to the last (plus one interval). */
  achieved: number;
  ok: number;
  failed: number;
  shed: number;
  p50Ms: number;
  p99Ms: number;
  /** The first failure's message, for the report. */
  firstError?: string;
  seconds: number;
}

export interface OpenLoopOptions {
  rate: number;
  seconds: number;
  /** One operation; resolves when it has succeeded, throws otherwise. */
  fire: () => Promise<void>;
  maxInFlight?: number;
  /** How long to wait for the last operations after the window, ms (then they count as failed). */
  drainMs?: number;
}

export async function openLoop(o: OpenLoopOptions): Promise<StepResult> {
  const maxInFlight = o.maxInFlight ?? 512;
  const total = Math.max(1, Math.round(o.rate * o.seconds));
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let shed = 0;
  let inFlight = 0;
  let firstEnd = Number.POSITIVE_INFINITY;
  let lastEnd = 0;
  let firstError: string | undefined;
  const pending = new Set<Promise<void>>();
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / o.rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    if (inFlight >= maxInFlight) {
      shed++;
      continue;
    }
    inFlight++;
    const p = o.fire().then(
      () => {
        const end = performance.now();
        latencies.push(end - due);
        firstEnd = Math.min(firstEnd, end);
        lastEnd = Math.max(lastEnd, end);
        ok++;
      },
      (err: unknown) => {
        failed++;
        firstError ??= (err as Error)?.message ?? String(err);
      },
    );
    const tracked = p.finally(() => {
      inFlight--;
      pending.delete(tracked);
    });
    pending.add(tracked);
  }
  const drained = Promise.all([...pending]).then(() => true);
  const timedOut = new Promise<boolean>((r) => setTimeout(() => r(false), o.drainMs ?? 30_000).unref());
  if (!(await Promise.race([drained, timedOut]))) {
    failed += pending.size;
    firstError ??= `${pending.size} operations still open ${o.drainMs ?? 30_000} ms after the window`;
  }
  latencies.sort((a, b) => a - b);
  // Carried rate: completions over the span in which they came (plus one interval), never shorter than the span
  // they were offered over (total/rate), so a step's latency does not count against its rate at either end and a
  // few completions bunched together do not read as more than was offered; a node that falls behind stretches the
  // span and the rate drops.
  const span = Math.max(total / o.rate, ok > 0 ? (lastEnd - firstEnd) / 1000 + 1 / o.rate : 0);
  const window = Math.max(o.seconds, (lastEnd - t0) / 1000);
  return {
    offered: o.rate,
    achieved: ok / span,
    ok,
    failed,
    shed,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    ...(firstError !== undefined ? { firstError } : {}),
    seconds: window,
  };
}
