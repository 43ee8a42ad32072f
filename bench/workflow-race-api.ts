// The workflow race through the public API (issue 16): the in-process race (bench/workflow-race.ts) runs orch's
// engine inside the bench process, which no user ever meets. Here orch is its own `orch up` process (PostgreSQL,
// a private database, default durability) and each workflow is one `POST /v1/workflows/race/run` with a bearer
// token and `Prefer: wait=60` (run-and-wait: the answer is the run's end), against Restate over its HTTP ingress —
// the same shape of call on both sides. Both (and the in-process engine, labelled as such) in one run, per
// concurrency. Reported: steps/s, p50/p99 of one workflow, the node's CPU per workflow, the ratio to Restate.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startOrchNode, type NodeProcess } from '../test/support/node-process.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { cpuSeconds } from './proc-cpu.ts';
import { median } from './stats.ts';
import { drive, raceManifest, raceOrch, raceRestate, type RaceFigures } from './workflow-race.ts';

export interface ApiFigures extends RaceFigures {
  /** CPU of the `orch up` process (user + system) per workflow, ms. */
  nodeCpuMsPerWorkflow: number;
}

const CONFIG = `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: bench-race-api }
spec:
  node: { id: bench-race-api }
`;

/** An `orch up` on a fresh PostgreSQL database with the race workflow deployed over its API. */
export async function startOrchApi(): Promise<{ node: NodeProcess; invoke: () => Promise<void>; close: () => Promise<void> }> {
  const database = await createTestDatabase();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-race-api-'));
  const config = path.join(dir, 'node.yaml');
  await writeFile(config, CONFIG);
  const node = await startOrchNode({
    ORCH_CONFIG: config,
    ORCH_DATA_DIR: path.join(dir, 'data'),
    ORCH_LOG_LEVEL: 'warn',
    DATABASE_URL: database.url,
    REDIS_URL: undefined,
    // Profiling the node (node refuses --cpu-prof in NODE_OPTIONS, so a preload starts the profiler):
    // BENCH_NODE_OPTIONS='--require ./bench/cpu-profile.cjs' CPU_PROFILE=/tmp/node.cpuprofile (written at exit).
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
  });
  const close = async (): Promise<void> => {
    await node.kill('SIGTERM');
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const auth = { authorization: `Bearer ${node.banner.dev_token ?? ''}`, 'content-type': 'application/json' };
    const deployed = await fetch(`${node.banner.http}/v1/workflows`, { method: 'POST', headers: auth, body: JSON.stringify({ manifest_yaml: raceManifest(), force: true }) });
    if (deployed.status !== 201) throw new Error(`deploy answered ${deployed.status} ${await deployed.text()}`);
    const url = `${node.banner.http}/v1/workflows/race/run`;
    const headers = { ...auth, prefer: 'wait=60' };
    const invoke = async (): Promise<void> => {
      const res = await fetch(url, { method: 'POST', headers, body: '{}' });
      const body = (await res.json()) as { status?: string; execution_id?: string; error?: string };
      if (res.status !== 200 || body.status !== 'completed') throw new Error(`orch run answered ${res.status} ${JSON.stringify(body)}`);
    };
    return { node, invoke, close };
  } catch (e) {
    await close();
    throw e;
  }
}

export async function raceOrchApi(workflows: number, concurrencies: number[]): Promise<ApiFigures[]> {
  const orch = await startOrchApi();
  const pid = orch.node.child.pid ?? 0;
  try {
    await drive(50, 8, () => orch.invoke()); // warm-up (JIT, pool, plan cache)
    const figures: ApiFigures[] = [];
    for (const c of concurrencies) {
      const cpu0 = await cpuSeconds(pid);
      const f = await drive(c === 1 ? Math.min(workflows, 200) : workflows, c, () => orch.invoke());
      figures.push({ ...f, nodeCpuMsPerWorkflow: ((await cpuSeconds(pid)) - cpu0) * 1000 / f.workflows });
    }
    return figures;
  } finally {
    await orch.close();
  }
}

/**
 * `npm run bench -- workflow-race-api [--runs N] [--workflows W] [--concurrency 1,64]`: per run Restate (ingress),
 * orch through its API (`orch up`, HTTP run-and-wait) and orch's engine in-process, each started fresh with the
 * others stopped. Prints every run, then the medians.
 */
export async function benchWorkflowRaceApi(runs: number, workflows: number, concurrencies: number[], out: (line: string) => void): Promise<void> {
  const all: { restate: RaceFigures[]; api: ApiFigures[]; engine: RaceFigures[] }[] = [];
  let version = '';
  for (let r = 0; r < runs; r++) {
    const rs = await raceRestate(workflows, concurrencies);
    version = rs.version;
    const api = await raceOrchApi(workflows, concurrencies);
    const engine = await raceOrch(workflows, concurrencies);
    all.push({ restate: rs.figures, api, engine });
    const load = os.loadavg()[0] ?? 0;
    for (const [i, c] of concurrencies.entries()) {
      const a = api[i];
      const e = engine[i];
      const b = rs.figures[i];
      if (!a || !e || !b) continue;
      out(`run ${r + 1} c=${c}: orch API (HTTP run-and-wait) ${a.stepsPerSecond.toFixed(0)} steps/s p50 ${a.p50Ms.toFixed(1)} p99 ${a.p99Ms.toFixed(1)} ms ` +
        `(node ${a.nodeCpuMsPerWorkflow.toFixed(2)} cpu ms/workflow) | orch engine in-process ${e.stepsPerSecond.toFixed(0)} steps/s | ` +
        `restate ${b.stepsPerSecond.toFixed(0)} steps/s p50 ${b.p50Ms.toFixed(1)} p99 ${b.p99Ms.toFixed(1)} ms | ` +
        `API/restate ${(a.stepsPerSecond / b.stepsPerSecond).toFixed(2)}x, in-process/restate ${(e.stepsPerSecond / b.stepsPerSecond).toFixed(2)}x, load ${load.toFixed(1)}`);
    }
  }
  out(`medians of ${runs} runs (Restate ${version}; W=${workflows}, ${Math.min(workflows, 200)} at c=1):`);
  out('| concurrency | path | workflows/s | steps/s | p50 ms | p99 ms | vs Restate steps/s |');
  out('|---|---|---|---|---|---|---|');
  for (const [i, c] of concurrencies.entries()) {
    const pick = (f: (x: typeof all[number]) => RaceFigures | undefined, g: (x: RaceFigures) => number): number => median(all.map((x) => { const v = f(x); return v ? g(v) : 0; }));
    const row = (label: string, f: (x: typeof all[number]) => RaceFigures | undefined, ratio: boolean): string => {
      const s = pick(f, (x) => x.stepsPerSecond);
      const rs = pick((x) => x.restate[i], (x) => x.stepsPerSecond);
      return `| ${c} | ${label} | ${pick(f, (x) => x.workflowsPerSecond).toFixed(1)} | ${s.toFixed(0)} | ${pick(f, (x) => x.p50Ms).toFixed(1)} | ${pick(f, (x) => x.p99Ms).toFixed(1)} | ${ratio ? `${(s / rs).toFixed(2)}x` : ''} |`;
    };
    out(row('orch API: `orch up`, HTTP run-and-wait', (x) => x.api[i], true));
    out(row('orch engine in-process (no HTTP, no auth)', (x) => x.engine[i], true));
    out(row(`Restate ${version} ingress`, (x) => x.restate[i], false));
  }
}
