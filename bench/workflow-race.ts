// The workflow race (issue 5): orch and Restate side by side, in one run, on this machine. Each runs W workflows
// of 10 sequential durable steps at concurrency 1 and 64:
//   orch    — a deployed workflow of 10 `update_blackboard` System states on PostgreSQL, run through the real
//             WorkflowExecutionService in this process (every transition committed before the next state starts);
//   Restate — @restatedev/restate-server (its own process, default durability) and a service (its own process,
//             bench/restate/service.ts) whose handler does 10 `ctx.run` steps, invoked over the HTTP ingress.
// Reported: completed workflows/s, durable steps/s, p50/p99 latency of one workflow (start to terminal), the ratio.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/private-services.ts';
import { median, percentile } from './stats.ts';

export const STEPS = 10;

export interface RaceFigures {
  workflows: number;
  concurrency: number;
  workflowsPerSecond: number;
  stepsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** Runs `total` workflows, `concurrency` in flight; `one` resolves when its workflow is terminal and successful. */
export async function drive(total: number, concurrency: number, one: (i: number) => Promise<void>): Promise<RaceFigures> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      for (let i = next++; i < total; i = next++) {
        const t0 = performance.now();
        await one(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    workflows: total,
    concurrency,
    workflowsPerSecond: total / seconds,
    stepsPerSecond: (total * STEPS) / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

async function waitFor(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** A Restate server and the race service, registered and warmed up; `invoke` runs one workflow to its end. */
export async function startRestate(): Promise<{ invoke: (id: string) => Promise<void>; close: () => Promise<void>; version: string }> {
  const root = path.dirname(fileURLToPath(import.meta.url));
  const repo = path.resolve(root, '..');
  const binary = path.join(repo, 'node_modules/@restatedev/restate-server-linux-x64/bin/restate-server');
  const { createRequire } = await import('node:module');
  const version = (createRequire(import.meta.url)('@restatedev/restate-server/package.json') as { version: string }).version;
  const baseDir = await mkdtemp(path.join(os.tmpdir(), 'orch-race-restate-'));
  const [ingress, admin, fabric, svcPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const server = spawn(binary, ['--no-logo', '--base-dir', baseDir, '--listen-mode', 'tcp'], {
    env: {
      ...process.env,
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingress}`,
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${admin}`,
      RESTATE_BIND_ADDRESS: `127.0.0.1:${fabric}`,
      RESTATE_DISABLE_TELEMETRY: 'true',
      // octocrab: the server's release check, which fails without internet; not a bench error.
      RESTATE_LOG_FILTER: 'error,octocrab=off',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const service = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'restate/service.ts'), String(svcPort)], {
    cwd: repo,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const close = async (): Promise<void> => {
    await Promise.all([stop(service), stop(server)]);
    await rm(baseDir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('the Restate service did not start within 60 s')), 60_000);
      service.stdout?.on('data', (d: Buffer) => {
        if (d.toString().includes('listening')) {
          clearTimeout(t);
          resolve();
        }
      });
      service.once('exit', (code) => reject(new Error(`the Restate service exited with ${code}`)));
    });
    await waitFor('restate-server admin API', 60_000, async () => (await fetch(`http://127.0.0.1:${admin}/health`)).ok);
    await waitFor('restate deployment registration', 60_000, async () => {
      const res = await fetch(`http://127.0.0.1:${admin}/deployments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ uri: `http://127.0.0.1:${svcPort}`, force: true }),
      });
      return res.ok;
    });
    const invoke = async (id: string): Promise<void> => {
      const res = await fetch(`http://127.0.0.1:${ingress}/race/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id }),
      });
      const body = (await res.json()) as { steps?: number };
      if (!res.ok || body.steps !== STEPS) throw new Error(`restate invocation ${id} answered ${res.status} ${JSON.stringify(body)}`);
    };
    // The ingress accepts requests a little before the partitions are leaders: retry the first one.
    await waitFor('restate ingress', 60_000, async () => {
      await invoke('warm-0');
      return true;
    });
    return { invoke, close, version };
  } catch (e) {
    await close();
    throw e;
  }
}

/** Workflows per measurement at concurrency c (default: min(W, 200) at c=1, else W). */
export type WorkflowCount = (workflows: number, c: number) => number;
const defaultCount: WorkflowCount = (workflows, c) => (c === 1 ? Math.min(workflows, 200) : workflows);

export async function raceRestate(workflows: number, concurrencies: number[], count: WorkflowCount = defaultCount): Promise<{ version: string; figures: RaceFigures[] }> {
  const restate = await startRestate();
  try {
    await drive(50, 8, (i) => restate.invoke(`warm-${i}`)); // warm-up
    const figures: RaceFigures[] = [];
    for (const c of concurrencies) {
      const tag = `${Date.now()}-${c}`;
      figures.push(await drive(count(workflows, c), c, (i) => restate.invoke(`${tag}-${i}`)));
    }
    return { version: restate.version, figures };
  } finally {
    await restate.close();
  }
}

/** The orch workflow of the race: 10 System states, each an `update_blackboard` built-in (a durable step). */
export function raceManifest(name = 'race'): string {
  const states = Array.from({ length: STEPS }, (_, i) => {
    const next = i + 1 < STEPS ? `[{ target: s${i + 1} }]` : '[]';
    return `    s${i}:\n      kind: System\n      command: 'update_blackboard {"v${i}": ${i}}'\n      transitions: ${next}`;
  }).join('\n');
  return `apiVersion: orch.dev/v1\nkind: Workflow\nmetadata:\n  name: ${name}\n  version: 1.0.0\nspec:\n  initial_state: s0\n  max_total_transitions: 50\n  states:\n${states}\n`;
}

/**
 * orch's engine as a node wires it (registry, actor runtime, in-process bus, the workflow capability with its group
 * commit writer) on a throwaway PostgreSQL database. `invoke` starts a run through WorkflowExecutionService.run and
 * waits until it is terminal (the service's own in-process terminal wake-up, the same path as the wait tool).
 */
export async function startOrch(o: { databaseUrl?: string } = {}): Promise<{ invoke: (id: string) => Promise<void>; close: () => Promise<void>; stats: { transactions: number; steps: number } }> {
  const [{ ActorRuntime }, { MemoryBus }, { silentLogger }, { migrate }, { openPg }, { startWorkflowCapability }, { WorkflowDefinitionService }, { createTestDatabase }, repo] =
    await Promise.all([
      import('../src/actors/runtime.ts'),
      import('../src/bus/memory.ts'),
      import('../src/logging/logger.ts'),
      import('../src/storage/migrate.ts'),
      import('../src/storage/pg.ts'),
      import('../src/workflow/engine/capability.ts'),
      import('../src/workflow/registry/service.ts'),
      import('../test/support/pg.ts'),
      import('../src/workflow/engine/repo.ts'),
    ]);
  const logger = silentLogger();
  const database = o.databaseUrl ? { url: o.databaseUrl, drop: async () => undefined } : await createTestDatabase();
  const db = await openPg(database.url, { logger });
  await migrate(db, logger);
  const bus = new MemoryBus();
  const actors = new ActorRuntime(logger, 'race-node');
  const defs = new WorkflowDefinitionService(db, logger);
  const cap = startWorkflowCapability({ db, bus, actors, nodeId: 'race-node', workflows: defs, logger });
  await defs.deploy({ tenant: 'race', subject: 'bench', yaml: raceManifest(), force: true });
  const invoke = async (_id: string): Promise<void> => {
    const { execution_id } = await cap.runs.run({ tenant: 'race', workflow: 'race' });
    const done = await cap.runs.waitTerminal(execution_id, new AbortController().signal);
    if (done.status !== 'completed') {
      const row = await repo.getWorkflowExecution(db, execution_id);
      throw new Error(`orch run ${execution_id} ended ${done.status}: ${row?.error ?? ''}`);
    }
    if (done.blackboard[`v${STEPS - 1}`] !== STEPS - 1) throw new Error(`orch run ${execution_id} completed without its last step`);
  };
  const close = async (): Promise<void> => {
    await actors.shutdown(5000);
    await bus.close();
    await db.close();
    await database.drop();
  };
  return { invoke, close, stats: cap.writer.stats };
}

export interface OrchFigures extends RaceFigures {
  /** Workflow steps (row writes) per committed transaction: the group commit's batch size. */
  stepsPerCommit: number;
  /** CPU time of this process (the engine, pg client, load driver) per workflow, ms. */
  cpuMsPerWorkflow: number;
}

export async function raceOrch(workflows: number, concurrencies: number[], count: WorkflowCount = defaultCount, o: { databaseUrl?: string } = {}): Promise<OrchFigures[]> {
  const orch = await startOrch(o);
  try {
    await drive(50, 8, (i) => orch.invoke(`warm-${i}`)); // warm-up
    const figures: OrchFigures[] = [];
    for (const c of concurrencies) {
      const before = { ...orch.stats };
      const cpu = process.cpuUsage();
      const f = await drive(count(workflows, c), c, (i) => orch.invoke(String(i)));
      const used = process.cpuUsage(cpu);
      const tx = orch.stats.transactions - before.transactions;
      figures.push({
        ...f,
        stepsPerCommit: tx > 0 ? (orch.stats.steps - before.steps) / tx : 0,
        cpuMsPerWorkflow: (used.user + used.system) / 1000 / f.workflows,
      });
    }
    return figures;
  } finally {
    await orch.close();
  }
}

/**
 * `npm run bench -- workflow-race [--runs N] [--workflows W]`: per run, Restate then orch (each started fresh, the
 * other one stopped), at concurrency 1 (min(W, 200) workflows) and 64 (W workflows). Prints every run and the medians.
 */
export async function benchWorkflowRace(runs: number, workflows: number, out: (line: string) => void): Promise<void> {
  const concurrencies = [1, 64];
  const restateRuns: RaceFigures[][] = [];
  const orchRuns: OrchFigures[][] = [];
  let version = '';
  for (let r = 0; r < runs; r++) {
    const rs = await raceRestate(workflows, concurrencies);
    version = rs.version;
    restateRuns.push(rs.figures);
    orchRuns.push(await raceOrch(workflows, concurrencies));
    // The 1-minute load average after the run: the machine is shared, and both engines slow down when it is loaded.
    const load = os.loadavg()[0] ?? 0;
    for (const [i, c] of concurrencies.entries()) {
      const a = orchRuns[r]?.[i];
      const b = restateRuns[r]?.[i];
      if (a && b) {
        out(`run ${r + 1} c=${c}: orch engine in-process ${a.stepsPerSecond.toFixed(0)} steps/s p50 ${a.p50Ms.toFixed(1)} p99 ${a.p99Ms.toFixed(1)} ms ` +
          `(${a.stepsPerCommit.toFixed(1)} steps/commit, ${a.cpuMsPerWorkflow.toFixed(2)} cpu ms/workflow) | ` +
          `restate ${b.stepsPerSecond.toFixed(0)} steps/s p50 ${b.p50Ms.toFixed(1)} p99 ${b.p99Ms.toFixed(1)} ms | ` +
          `ratio ${(a.stepsPerSecond / b.stepsPerSecond).toFixed(2)}x, load ${load.toFixed(1)}`);
      }
    }
  }
  out(`medians of ${runs} runs (Restate ${version}; W=${workflows} at c=64, ${Math.min(workflows, 200)} at c=1):`);
  out('| concurrency | engine | workflows/s | steps/s | p50 ms | p99 ms | orch/Restate steps/s |');
  out('|---|---|---|---|---|---|---|');
  for (const [i, c] of concurrencies.entries()) {
    const pick = (xs: RaceFigures[][], f: (x: RaceFigures) => number): number => median(xs.map((x) => (x[i] ? f(x[i]) : 0)));
    const o = { w: pick(orchRuns, (x) => x.workflowsPerSecond), s: pick(orchRuns, (x) => x.stepsPerSecond), p50: pick(orchRuns, (x) => x.p50Ms), p99: pick(orchRuns, (x) => x.p99Ms) };
    const rr = { w: pick(restateRuns, (x) => x.workflowsPerSecond), s: pick(restateRuns, (x) => x.stepsPerSecond), p50: pick(restateRuns, (x) => x.p50Ms), p99: pick(restateRuns, (x) => x.p99Ms) };
    out(`| ${c} | orch engine in-process (PostgreSQL, no HTTP) | ${o.w.toFixed(1)} | ${o.s.toFixed(0)} | ${o.p50.toFixed(1)} | ${o.p99.toFixed(1)} | ${(o.s / rr.s).toFixed(2)}x |`);
    out(`| ${c} | Restate ${version} | ${rr.w.toFixed(1)} | ${rr.s.toFixed(0)} | ${rr.p50.toFixed(1)} | ${rr.p99.toFixed(1)} | |`);
  }
}
