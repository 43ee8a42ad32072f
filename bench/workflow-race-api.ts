// The workflow race through the public API (issue 16): the in-process race (bench/workflow-race.ts) runs orch's
// engine inside the bench process, which no user ever meets. Here orch is its own `orch up` process (PostgreSQL,
// a private database, default durability) and each workflow is one `POST /v1/workflows/race/run` with a bearer
// token and `Prefer: wait=60` (run-and-wait: the answer is the run's end), against Restate over its HTTP ingress —
// the same shape of call on both sides. Both (and the in-process engine, labelled as such) in one run, per
// concurrency. Reported: steps/s, p50/p99 of one workflow, the node's CPU per workflow, the ratio to Restate.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { credentials, Metadata } from '@grpc/grpc-js';
import pg from 'pg';
import { OrchRuntimeClient, RunWorkflowRequest } from '../src/gen/orch/runtime/v1/runtime.js';
import { startOrchNode, type NodeProcess } from '../test/support/node-process.ts';
import { startPrivatePg } from './private-pg.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { cpuSeconds } from './proc-cpu.ts';
import { median } from './stats.ts';
import { drive, raceManifest, raceOrch, raceRestate, type RaceFigures } from './workflow-race.ts';

export interface ApiFigures extends RaceFigures {
  /** CPU of the `orch up` process (user + system) per workflow, ms. */
  nodeCpuMsPerWorkflow: number;
  /** CPU of the PostgreSQL backends serving the node's database per workflow, ms (/proc of each backend). */
  pgCpuMsPerWorkflow: number;
}

const CONFIG = `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: bench-race-api }
spec:
  node: { id: bench-race-api }
`;

/** The public API paths raced: HTTP `POST /v1/workflows/race/run` with `Prefer: wait`, gRPC `RunWorkflow` with wait_seconds. */
export type ApiPath = 'http' | 'grpc';

/**
 * dist/ must be current: the node under test is what a user runs (`orch up` from the compiled build), not the
 * sources through tsx (whose module loading showed as 15 % of the node's CPU in short runs). Built here if stale.
 */
export async function ensureDist(out: (line: string) => void = () => undefined): Promise<void> {
  const entry = (await import('../bin/entry.js' as string)) as { buildState: () => { use: string; why?: string } };
  const before = entry.buildState();
  if (before.use === 'dist') return;
  out(`building dist/ (${before.why ?? 'stale'}): node scripts/build.mjs --no-check`);
  const res = spawnSync(process.execPath, ['scripts/build.mjs', '--no-check'], { cwd: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..'), stdio: 'inherit' });
  const after = entry.buildState();
  if (res.status !== 0 || after.use !== 'dist') throw new Error(`dist/ could not be built (${after.why ?? `exit ${res.status}`}); the bench runs orch only from dist/`);
}

/** CPU seconds per PostgreSQL backend connected to `database` (pids from pg_stat_activity, CPU from /proc). */
async function pgBackendCpu(admin: pg.Client, database: string): Promise<Map<number, number>> {
  const res = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
  const out = new Map<number, number>();
  for (const { pid } of res.rows) {
    const s = await cpuSeconds(pid).catch(() => undefined);
    if (s !== undefined) out.set(pid, s);
  }
  return out;
}

/** CPU seconds the backends used between two readings (a backend that left in between is lost; a new one counts whole). */
export function pgCpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, s] of after) sum += s - (before.get(pid) ?? 0);
  return sum;
}

export interface OrchApi {
  node: NodeProcess;
  invoke: Record<ApiPath, () => Promise<void>>;
  /** CPU seconds of each of the node's PostgreSQL backends so far (pgCpuDelta of two readings). */
  pgCpu: () => Promise<Map<number, number>>;
  close: () => Promise<void>;
}

/** An `orch up` (from dist/) on a fresh PostgreSQL database with the race workflow deployed over its API; `bin`:
 * another checkout's bin/orch.js (its own dist/, built beforehand), to race two builds in one window. */
export async function startOrchApi(o: { databaseUrl?: string; bin?: string } = {}): Promise<OrchApi> {
  await ensureDist();
  const database = o.databaseUrl ? { url: o.databaseUrl, drop: async () => undefined } : await createTestDatabase();
  const dbName = new URL(database.url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-race-api-'));
  const config = path.join(dir, 'node.yaml');
  await writeFile(config, CONFIG);
  const node = await startOrchNode({
    ORCH_CONFIG: config,
    ORCH_DATA_DIR: path.join(dir, 'data'),
    ORCH_LOG_LEVEL: 'warn',
    ORCH_FROM_SOURCE: undefined,
    DATABASE_URL: database.url,
    REDIS_URL: undefined,
    // Profiling the node (node refuses --cpu-prof in NODE_OPTIONS, so a preload starts the profiler):
    // BENCH_NODE_OPTIONS='--require ./bench/cpu-profile.cjs' CPU_PROFILE=/tmp/node.cpuprofile (written at exit).
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
  }, [], undefined, [], o.bin);
  const token = node.banner.dev_token ?? '';
  const grpc = new OrchRuntimeClient(node.banner.grpc, credentials.createInsecure());
  const close = async (): Promise<void> => {
    grpc.close();
    await node.kill('SIGTERM');
    await admin.end().catch(() => undefined);
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const deployed = await fetch(`${node.banner.http}/v1/workflows`, { method: 'POST', headers: auth, body: JSON.stringify({ manifest_yaml: raceManifest(), force: true }) });
    if (deployed.status !== 201) throw new Error(`deploy answered ${deployed.status} ${await deployed.text()}`);
    const url = `${node.banner.http}/v1/workflows/race/run`;
    const headers = { ...auth, prefer: 'wait=60' };
    const http = async (): Promise<void> => {
      const res = await fetch(url, { method: 'POST', headers, body: '{}' });
      const body = (await res.json()) as { status?: string; execution_id?: string; error?: string };
      if (res.status !== 200 || body.status !== 'completed') throw new Error(`orch run answered ${res.status} ${JSON.stringify(body)}`);
    };
    const md = new Metadata();
    md.set('authorization', `Bearer ${token}`);
    const request = RunWorkflowRequest.fromPartial({ workflow: 'race', wait_seconds: 60 });
    const grpcRun = (): Promise<void> =>
      new Promise((resolve, reject) =>
        grpc.runWorkflow(request, md, (err, res) => {
          if (err) reject(err);
          else if (res.status !== 'completed') reject(new Error(`orch RunWorkflow answered ${JSON.stringify(res)}`));
          else resolve();
        }),
      );
    return { node, invoke: { http, grpc: grpcRun }, pgCpu: () => pgBackendCpu(admin, dbName), close };
  } catch (e) {
    await close();
    throw e;
  }
}

export async function raceOrchApi(workflows: number, concurrencies: number[], o: { databaseUrl?: string } = {}): Promise<Record<ApiPath, ApiFigures[]>> {
  const orch = await startOrchApi(o);
  const pid = orch.node.child.pid ?? 0;
  try {
    const figures: Record<ApiPath, ApiFigures[]> = { http: [], grpc: [] };
    for (const p of ['http', 'grpc'] as const) await drive(50, 8, () => orch.invoke[p]()); // warm-up (JIT, pool, plan cache)
    for (const c of concurrencies) {
      for (const p of ['http', 'grpc'] as const) {
        const [cpu0, pg0] = [await cpuSeconds(pid), await orch.pgCpu()];
        const f = await drive(workflowsAt(workflows, c), c, () => orch.invoke[p]());
        const [cpu1, pg1] = [await cpuSeconds(pid), await orch.pgCpu()];
        figures[p].push({ ...f, nodeCpuMsPerWorkflow: ((cpu1 - cpu0) * 1000) / f.workflows, pgCpuMsPerWorkflow: (pgCpuDelta(pg0, pg1) * 1000) / f.workflows });
      }
    }
    return figures;
  } finally {
    await orch.close();
  }
}

/** Workflows per measurement: min(W, 200) at c=1 (one at a time is slow), else max(W, 4c) so each of c callers runs a few. */
export function workflowsAt(workflows: number, c: number): number {
  return c === 1 ? Math.min(workflows, 200) : Math.max(workflows, 4 * c);
}

/**
 * `npm run bench -- workflow-race-api [--runs N] [--workflows W] [--concurrency 1,64] [--no-engine]`: per run Restate
 * (ingress), orch through its API (`orch up` from dist/, HTTP run-and-wait and gRPC RunWorkflow on the same node) and
 * orch's engine in-process (labelled; skipped with --no-engine), each started fresh with the others stopped; odd runs
 * race orch before Restate. Prints every run, then the medians, with the median and range of the runs' own ratios.
 */
export async function benchWorkflowRaceApi(
  runs: number,
  workflows: number,
  concurrencies: number[],
  out: (line: string) => void,
  o: { engine?: boolean; privatePg?: boolean } = {},
): Promise<void> {
  await ensureDist(out);
  const withEngine = o.engine !== false;
  // --private-pg: orch's PostgreSQL is a server of its own (bench/private-pg.ts: default durability, its own WAL and
  // fsyncs), as Restate has its own log; else a throwaway database on the shared server at 127.0.0.1:5432.
  const server = o.privatePg ? await startPrivatePg() : undefined;
  let dbs = 0;
  const fresh = async (): Promise<{ databaseUrl?: string }> => (server ? { databaseUrl: await server.createDatabase(`race_${process.pid}_${dbs++}`) } : {});
  try {
    await raceAll();
  } finally {
    await server?.close();
  }
  async function raceAll(): Promise<void> {
    const all: { restate: RaceFigures[]; api: Record<ApiPath, ApiFigures[]>; engine: RaceFigures[] }[] = [];
    let version = '';
    for (let r = 0; r < runs; r++) {
      // Odd runs race orch first: on a machine whose speed drifts within minutes (this VM: Restate alone 305-638
      // steps/s at c = 1 in one morning, nothing else running), whichever engine always went first would always
      // meet the earlier machine; alternating the order spreads the drift over both.
      const orchFirst = r % 2 === 1;
      const api0 = orchFirst ? await raceOrchApi(workflows, concurrencies, await fresh()) : undefined;
      const rs = await raceRestate(workflows, concurrencies, workflowsAt);
      version = rs.version;
      const api = api0 ?? (await raceOrchApi(workflows, concurrencies, await fresh()));
      const engine = withEngine ? await raceOrch(workflows, concurrencies, workflowsAt, await fresh()) : [];
      all.push({ restate: rs.figures, api, engine });
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
      for (const [i, c] of concurrencies.entries()) {
        const h = api.http[i];
        const g = api.grpc[i];
        const e = engine[i];
        const b = rs.figures[i];
        if (!h || !g || !b) continue;
        const one = (label: string, a: ApiFigures): string =>
          `${label} ${a.stepsPerSecond.toFixed(0)} steps/s p50 ${a.p50Ms.toFixed(1)} p99 ${a.p99Ms.toFixed(1)} ms (node ${a.nodeCpuMsPerWorkflow.toFixed(2)}, pg ${a.pgCpuMsPerWorkflow.toFixed(2)} cpu ms/workflow)`;
        out(`run ${r + 1} c=${c}: ${one('orch HTTP', h)} | ${one('orch gRPC', g)} | ` +
          (e ? `orch engine in-process ${e.stepsPerSecond.toFixed(0)} steps/s | ` : '') +
          `restate ${b.stepsPerSecond.toFixed(0)} steps/s p50 ${b.p50Ms.toFixed(1)} p99 ${b.p99Ms.toFixed(1)} ms | ` +
          `HTTP/restate ${(h.stepsPerSecond / b.stepsPerSecond).toFixed(2)}x, gRPC/restate ${(g.stepsPerSecond / b.stepsPerSecond).toFixed(2)}x` +
          (e ? `, in-process/restate ${(e.stepsPerSecond / b.stepsPerSecond).toFixed(2)}x` : '') + `, load ${load}` + (orchFirst ? ' (orch first)' : ''));
      }
    }
    out(`medians of ${runs} runs (Restate ${version}; orch up from dist/ on ${server ? 'a private PostgreSQL server' : 'the shared PostgreSQL'}; W=${workflows}: min(W,200) at c=1, max(W,4c) above):`);
    out('| concurrency | path | workflows/s | steps/s | p50 ms | p99 ms | node cpu ms/wf | pg cpu ms/wf | vs Restate steps/s | median of the runs\' ratios (min–max) |');
    out('|---|---|---|---|---|---|---|---|---|---|');
    for (const [i, c] of concurrencies.entries()) {
      type Run = (typeof all)[number];
      const pick = <T extends RaceFigures>(f: (x: Run) => T | undefined, g: (x: T) => number): number => median(all.map((x) => { const v = f(x); return v ? g(v) : 0; }));
      const rs = pick((x) => x.restate[i], (x) => x.stepsPerSecond);
      const row = (label: string, f: (x: Run) => RaceFigures | undefined, ratio: boolean, cpu?: (x: Run) => ApiFigures | undefined): string => {
        const s = pick(f, (x) => x.stepsPerSecond);
        const cpus = cpu ? `${pick(cpu, (x) => x.nodeCpuMsPerWorkflow).toFixed(2)} | ${pick(cpu, (x) => x.pgCpuMsPerWorkflow).toFixed(2)}` : ' | ';
        // Each run's own ratio (its orch against its Restate, minutes apart at most), then their median and range.
        const ratios = all.map((x) => (f(x)?.stepsPerSecond ?? 0) / (x.restate[i]?.stepsPerSecond || Infinity)).sort((a, b) => a - b);
        const spread = ratio ? `${median(ratios).toFixed(2)}x (${ratios[0]!.toFixed(2)}–${ratios[ratios.length - 1]!.toFixed(2)})` : '';
        return `| ${c} | ${label} | ${pick(f, (x) => x.workflowsPerSecond).toFixed(1)} | ${s.toFixed(0)} | ${pick(f, (x) => x.p50Ms).toFixed(1)} | ${pick(f, (x) => x.p99Ms).toFixed(1)} | ${cpus} | ${ratio ? `${(s / rs).toFixed(2)}x` : ''} | ${spread} |`;
      };
      out(row('orch API: `orch up`, HTTP run-and-wait', (x) => x.api.http[i], true, (x) => x.api.http[i]));
      out(row('orch API: `orch up`, gRPC RunWorkflow', (x) => x.api.grpc[i], true, (x) => x.api.grpc[i]));
      if (withEngine) out(row('orch engine in-process (no HTTP, no auth)', (x) => x.engine[i], true));
      out(row(`Restate ${version} ingress`, (x) => x.restate[i], false));
    }
  }
}
