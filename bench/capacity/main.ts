// `npm run bench -- capacity [--quick] [--seconds S] [--out DIR]`: one node (bench/capacity/node.ts) driven through
// its API with rising offered load per surface (bench/capacity/surfaces.ts), each step open-loop for S seconds with
// its costs metered; per surface the knee (bench/capacity/knee.ts); then docs/CAPACITY.md, one SVG per surface
// and capacity.json (every step's figures) under --out (default docs/). --quick (the test's mode, ≤ 60 s): two
// short steps per surface. Then the density scenario (bench/density.ts: N executions started at once, each two model
// turns and one sandboxed command) on a node of its own; `--only density` runs just it and keeps the surfaces of the
// capacity.json already under --out.
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { StepResult } from './load.ts';
import { failureReason, knee, ladder, stepPasses } from './knee.ts';
import { meter, startCapacityNode, type CapacityNode, type StepCost } from './node.ts';
import { renderReport } from './report.ts';
import { executions, heartbeats, runsStarted, sealInvokes, steps, webhooks, wsSubscribers, type Surface } from './surfaces.ts';
import { twoPanels } from './svg.ts';
import { benchDensity, type DensityFigures } from '../density.ts';

export interface MeasuredStep extends StepResult {
  cost: StepCost;
  passes: boolean;
  why: string;
}

export interface SurfaceFigures {
  key: string;
  title: string;
  operation: string;
  unit: string;
  boundMs: number;
  steps: MeasuredStep[];
  /** First runs of steps that failed and were run once more (the second run is in `steps`). */
  retried: MeasuredStep[];
  knee?: MeasuredStep;
  error?: string;
}

export interface CapacityFigures {
  quick: boolean;
  secondsPerStep: number;
  startedAt: string;
  endedAt: string;
  machine: { cpus: number; cpuModel: string; memoryGb: number; node: string; postgres: string; redis: string; loadBefore: number[]; loadAfter: number[] };
  /** Single-row INSERT commits/s on the node's PostgreSQL with 8 writers, measured in the same run. */
  pgCommitsPerSecond: number;
  /** PUBLISH/s to a channel nobody hears, one connection, 8 in flight: a floor for the Redis server here. */
  redisCommandsPerSecond: number;
  /** The idle node with the meters running, per second: subtracted from each step's cost in the report. */
  idle: StepCost;
  surfaces: SurfaceFigures[];
  /** Agents at density (issue 24): a burst of executions at once, measured on a node of its own. */
  density?: DensityRun;
}

export interface DensityRun {
  at: string;
  loadBefore: number[];
  figures: DensityFigures;
}

/** The density scenario of the report: issue 24's (100 at once, 1 s model turns); quick: 5 at once, 200 ms. */
export const DENSITY_SCENARIO = { full: { count: 100, modelDelayMs: 1000 }, quick: { count: 5, modelDelayMs: 200 } };

export interface CapacityOptions {
  quick: boolean;
  seconds?: number;
  /** Where docs/CAPACITY.md's files go: CAPACITY.md and capacity/*.svg, capacity/capacity.json. */
  outDir: string;
  /** Only these surfaces (keys); default all. */
  only?: string[];
  log?: (line: string) => void;
}

async function redisProbe(n: CapacityNode, seconds: number): Promise<number> {
  const channel = `capacity-probe-${randomUUID()}`;
  let count = 0;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (performance.now() < deadline) {
        await n.redis.publish(channel, 'x');
        count++;
      }
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}

/** Durable single-row commits per second with 8 writers for `seconds`: the database's commit ceiling here. */
async function commitProbe(n: CapacityNode, seconds: number): Promise<number> {
  const table = `capacity_probe_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  await n.db.query(`CREATE TABLE ${table} (id UUID PRIMARY KEY, at TIMESTAMPTZ NOT NULL DEFAULT now())`);
  let count = 0;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (performance.now() < deadline) {
        await n.db.query(`INSERT INTO ${table} (id) VALUES ($1)`, [randomUUID()]);
        count++;
      }
    }),
  );
  const rate = count / ((performance.now() - t0) / 1000);
  await n.db.query(`DROP TABLE ${table}`);
  return rate;
}

export async function benchCapacity(o: CapacityOptions): Promise<CapacityFigures> {
  const log = o.log ?? (() => undefined);
  const seconds = o.seconds ?? (o.quick ? 1.5 : 8);
  const startedAt = new Date().toISOString();
  const loadBefore = os.loadavg();
  const all: Surface[] = [runsStarted, steps, webhooks, executions, sealInvokes, wsSubscribers, heartbeats];
  const chosen = o.only ? all.filter((s) => o.only!.includes(s.key)) : all;
  const runDensity = !o.only || o.only.includes('density');
  if (chosen.length === 0 && runDensity) return densityOnly(o, log);
  const n = await startCapacityNode();
  const surfaces: SurfaceFigures[] = [];
  let pgCommitsPerSecond = 0;
  let redisCommandsPerSecond = 0;
  let idle: StepCost = { nodeCpuMs: 0, childCpuMs: 0, redisCommands: 0, pgCpuMs: 0, commits: 0, rowsWritten: 0, walSyncs: 0, seconds: 1, load: 0 };
  let postgres = '';
  let redis = '';
  try {
    postgres = (await n.db.query<{ v: string }>("SELECT current_setting('server_version') AS v").catch(() => ({ rows: [] as { v: string }[] }))).rows[0]?.v ?? '';
    redis = /redis_version:(\S+)/.exec(await n.redis.info('server'))?.[1] ?? '';
    pgCommitsPerSecond = await commitProbe(n, o.quick ? 1 : 5);
    redisCommandsPerSecond = await redisProbe(n, 1);
    const idleMeter = await meter(n);
    await new Promise((r) => setTimeout(r, (o.quick ? 1.5 : 5) * 1000));
    idle = await idleMeter();
    log(`idle node per second: ${(idle.nodeCpuMs / idle.seconds).toFixed(1)} ms CPU, ${(idle.commits / idle.seconds).toFixed(1)} transactions, ${(idle.rowsWritten / idle.seconds).toFixed(1)} rows written; Redis ${Math.round(redisCommandsPerSecond)} PUBLISH/s from one connection`);
    log(`PostgreSQL ${postgres}: ${Math.round(pgCommitsPerSecond)} single-row commits/s with 8 writers (load ${os.loadavg()[0]!.toFixed(1)})`);
    for (const s of chosen) {
      const f: SurfaceFigures = { key: s.key, title: s.title, operation: s.operation, unit: s.unit, boundMs: s.boundMs, steps: [], retried: [] };
      surfaces.push(f);
      let driver;
      try {
        driver = await s.prepare(n);
        const rates = s.rates[o.quick ? 'quick' : 'full'];
        // A short warm-up at the first rate (JIT, pools, plan caches), not recorded.
        const warm = o.quick ? 1 : 2;
        await driver.setup?.(rates[0]!, warm);
        await driver.step(rates[0]!, warm);
        const kept = await ladder(
          rates,
          s.boundMs,
          async (rate) => {
            await driver!.setup?.(rate, seconds);
            const stop = await meter(n);
            const r = await driver!.step(rate, seconds);
            const cost = await stop();
            const attempt: MeasuredStep = { ...r, cost, passes: stepPasses(r, s.boundMs), why: failureReason(r, s.boundMs) };
            log(
              `${s.key.padEnd(10)} offered ${fmt(rate)} ${s.unit}: carried ${fmt(r.achieved)}, p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms, ` +
                `ok ${r.ok} failed ${r.failed} shed ${r.shed}; node ${cost.nodeCpuMs} ms CPU (+${cost.childCpuMs} children), PostgreSQL ${cost.pgCpuMs} ms, ${cost.commits} transactions, ${cost.rowsWritten} rows written, ≤ ${cost.walSyncs} WAL syncs, load ${cost.load.toFixed(1)}${attempt.passes ? '' : ` — over: ${attempt.why}`}`,
            );
            return attempt;
          },
          {
            ...(o.quick ? {} : { budgetMs: 150_000 }),
            retryFailed: !o.quick,
            onRetry: (first) => {
              f.retried.push({ ...(first as MeasuredStep) });
              log(`${s.key.padEnd(10)} offered ${fmt(first.offered)}: over the bound, run once more`);
            },
          },
        );
        f.steps.push(...(kept as MeasuredStep[]));
        const k = knee(f.steps, s.boundMs);
        if (k) f.knee = k as MeasuredStep;
      } catch (err) {
        f.error = (err as Error).message;
        log(`${s.key}: ${f.error}`);
      } finally {
        await driver?.close().catch(() => undefined);
      }
    }
  } finally {
    await n.close();
  }
  const density = runDensity ? await densityRun(o.quick, log) : undefined;
  const figures: CapacityFigures = {
    quick: o.quick,
    secondsPerStep: seconds,
    startedAt,
    endedAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? '', memoryGb: Math.round(os.totalmem() / 2 ** 30), node: process.version, postgres, redis, loadBefore, loadAfter: os.loadavg() },
    pgCommitsPerSecond,
    redisCommandsPerSecond,
    idle,
    surfaces,
    ...(density ? { density } : {}),
  };
  await writeReport(figures, o.outDir);
  return figures;
}

async function densityRun(quick: boolean, log: (line: string) => void): Promise<DensityRun> {
  const scenario = DENSITY_SCENARIO[quick ? 'quick' : 'full'];
  const at = new Date().toISOString();
  const loadBefore = os.loadavg();
  const figures = await benchDensity({ ...scenario, log });
  log(`density   ${figures.count} at once, ${figures.modelDelayMs} ms model turns: ${figures.completed} completed, ${figures.executionsPerSecond} executions/s, node CPU ${figures.nodeCpuMsPerExecution} ms per execution, /health/live p99 ${figures.healthLiveMs.p99} ms`);
  return { at, loadBefore, figures };
}

/** `--only density`: the scenario alone, written into the report beside the surfaces of the capacity.json there. */
async function densityOnly(o: CapacityOptions, log: (line: string) => void): Promise<CapacityFigures> {
  const file = path.join(o.outDir, 'capacity', 'capacity.json');
  const before = JSON.parse(await readFile(file, 'utf8').catch(() => {
    throw new Error(`--only density adds to an existing report: no ${file} (run the full bench first)`);
  })) as CapacityFigures;
  const figures: CapacityFigures = { ...before, density: await densityRun(o.quick, log) };
  await writeReport(figures, o.outDir);
  return figures;
}

function fmt(v: number): string {
  return v >= 100 ? v.toFixed(0) : v.toFixed(1);
}

/** Writes the report and charts again from a run's capacity.json (a change to the rendering, no new run). */
export async function renderAgain(outDir: string): Promise<void> {
  const f = JSON.parse(await readFile(path.join(outDir, 'capacity', 'capacity.json'), 'utf8')) as CapacityFigures;
  await writeReport(f, outDir);
}

export async function writeReport(f: CapacityFigures, outDir: string): Promise<void> {
  await mkdir(path.join(outDir, 'capacity'), { recursive: true });
  for (const s of f.surfaces) {
    if (s.steps.length === 0) continue;
    const svg = twoPanels(
      `${s.title}${f.quick ? ' (quick mode)' : ''}`,
      { title: 'carried vs offered', xLabel: `offered (${s.unit})`, yLabel: `carried (${s.unit})`, points: s.steps.map((x) => ({ x: x.offered, y: x.achieved })), diagonal: true, ...(s.knee ? { mark: { x: s.knee.offered, label: 'knee' } } : {}) },
      { title: 'p99 latency vs offered', xLabel: `offered (${s.unit})`, yLabel: 'p99 (ms)', points: s.steps.map((x) => ({ x: x.offered, y: x.p99Ms })), hline: { y: s.boundMs, label: `bound ${s.boundMs} ms` }, ...(s.knee ? { mark: { x: s.knee.offered, label: 'knee' } } : {}) },
    );
    await writeFile(path.join(outDir, 'capacity', `${s.key}.svg`), svg);
  }
  await writeFile(path.join(outDir, 'capacity', 'capacity.json'), `${JSON.stringify(f, null, 2)}\n`);
  await writeFile(path.join(outDir, 'CAPACITY.md'), renderReport(f));
}
