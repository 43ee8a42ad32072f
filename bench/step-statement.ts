// PostgreSQL's CPU for the step writer's statement alone, two builds alternated (issue 16). The API race's figures on
// this shared 2-core VM move ±20 % from run to run, more than a change to one statement; here nothing else of orch
// runs: R runs (each `steps` race-like steps of 2 events) go through a StepWriter of each build, batch after
// batch of R steps, and the CPU of the database's backends (/proc of each) is read around each build's turn.
//   npm run bench -- step-statement --against /work/wt/base [--runs N] [--workflows R] [--steps S]
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { silentLogger } from '../src/logging/logger.ts';
import { migrate } from '../src/storage/migrate.ts';
import { openPg } from '../src/storage/pg.ts';
import { insertWorkflowExecution } from '../src/workflow/engine/repo.ts';
import type { StepWriter as Writer, StepWrite } from '../src/workflow/engine/writer.ts';
import { parseWorkflowManifest } from '../src/workflow/manifest/parse.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { cpuSeconds } from './proc-cpu.ts';
import { median } from './stats.ts';
import { raceManifest } from './workflow-race.ts';


async function backendsCpu(admin: pg.Client, database: string): Promise<number> {
  const res = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
  let sum = 0;
  for (const { pid } of res.rows) sum += await cpuSeconds(pid).catch(() => 0);
  return sum;
}

/** One build's turn: R fresh runs, STEPS batches of R steps through a fresh StepWriter; PostgreSQL CPU ms per step. */
async function turn(WriterOf: typeof Writer, runs: number, STEPS: number): Promise<{ cpuMsPerStep: number; wallMsPerBatch: number; statements: number }> {
  const tdb = await createTestDatabase({ migrated: true });
  const db = await openPg(tdb.url, { logger: silentLogger() });
  const admin = new pg.Client({ connectionString: tdb.url });
  await admin.connect();
  try {
    await migrate(db, silentLogger());
    const parsed = parseWorkflowManifest(raceManifest());
    if (!parsed.ok) throw new Error('the race manifest does not parse');
    const ids = Array.from({ length: runs }, () => randomUUID());
    for (const id of ids) {
      await insertWorkflowExecution(
        db,
        { id, tenantId: 't', workflowId: randomUUID(), workflowName: 'race', workflowVersion: '1.0.0', manifest: parsed.manifest, input: {}, blackboard: {}, context: {}, depth: 0, ancestry: [], ownerNode: 'node-a', leaseMs: 600_000 },
        [{ type: 'WorkflowExecutionStarted', key: 'started', payload: {} }],
      );
    }
    const writer = new WriterOf(db, undefined, silentLogger(), { maxInFlight: 1 });
    const blackboard: Record<string, unknown> = {};
    const step = (id: string, k: number): StepWrite => ({
      fence: { table: 'workflow_executions', keyColumn: 'id', key: id, nodeId: 'node-a', epoch: 0 },
      snapshot: { status: k === STEPS ? 'completed' : 'running', current_state: `s${k}`, blackboard: { ...blackboard, [`v${k}`]: k }, context: {}, visits: { [`s${k}`]: 1 }, total_transitions: k, feedback: null, human_feedback: null, final_output: null, error: null },
      firstSeq: 2 * k,
      transition: true,
      events: [
        { type: 'WorkflowStateCompleted', key: `completed:s${k - 1}:1`, state_name: `s${k - 1}`, iteration_number: 1, payload: { output: { [`v${k - 1}`]: k - 1 }, transition: `s${k}` } },
        { type: 'WorkflowStateEntered', key: `entered:s${k}:1`, state_name: `s${k}`, iteration_number: 1, payload: { entered_at: new Date().toISOString() } },
      ],
    });
    // Warm: each pooled connection prepares the statement on its first call.
    await Promise.all(ids.map((id) => writer.write(step(id, 1))));
    const cpu0 = await backendsCpu(admin, new URL(tdb.url).pathname.slice(1));
    const t0 = performance.now();
    for (let k = 2; k <= STEPS; k++) await Promise.all(ids.map((id) => writer.write(step(id, k))));
    const wall = performance.now() - t0;
    const cpu1 = await backendsCpu(admin, new URL(tdb.url).pathname.slice(1));
    return { cpuMsPerStep: ((cpu1 - cpu0) * 1000) / (runs * (STEPS - 1)), wallMsPerBatch: wall / (STEPS - 1), statements: writer.stats.transactions };
  } finally {
    await admin.end();
    await db.close();
    await tdb.drop();
  }
}

/** `steps` per run: CPU is read in 10 ms ticks, so a turn needs thousands of steps (256 runs x 80: ~20,000). */
export async function benchStepStatement(against: string, rounds: number, runs: number, steps: number, out: (line: string) => void): Promise<void> {
  const mine = (await import('../src/workflow/engine/writer.ts')).StepWriter;
  const theirs = ((await import(path.resolve(against, 'src/workflow/engine/writer.ts'))) as { StepWriter: typeof Writer }).StepWriter;
  const builds = [
    { label: `against (${path.basename(against)})`, writer: theirs, figures: [] as { cpuMsPerStep: number; wallMsPerBatch: number }[] },
    { label: 'this checkout', writer: mine, figures: [] as { cpuMsPerStep: number; wallMsPerBatch: number }[] },
  ];
  for (let r = 0; r < rounds; r++) {
    // Alternated, the first of each round swapping: neither build always meets the earlier machine.
    for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
      const f = await turn(b.writer, runs, steps);
      b.figures.push(f);
      out(`round ${r + 1} ${b.label}: ${f.cpuMsPerStep.toFixed(4)} ms PostgreSQL CPU per step, ${f.wallMsPerBatch.toFixed(1)} ms per batch of ${runs} (${f.statements} statements)`);
    }
  }
  out(`medians of ${rounds} rounds, ${runs} runs x ${steps - 1} measured steps each:`);
  for (const b of builds) out(`| ${b.label} | ${median(b.figures.map((f) => f.cpuMsPerStep)).toFixed(4)} ms CPU/step | ${median(b.figures.map((f) => f.wallMsPerBatch)).toFixed(1)} ms/batch |`);
  // The machine drifts between rounds more than the builds differ: each round's own ratio, then their median.
  const ratios = builds[1]!.figures.map((f, i) => f.cpuMsPerStep / builds[0]!.figures[i]!.cpuMsPerStep).sort((a, b) => a - b);
  out(`this checkout / against, CPU per step, per round: ${ratios.map((r) => r.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)}`);
}
