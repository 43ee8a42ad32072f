// Start-up figures of issue 15 item 4, each pair interleaved run by run so that a noisy machine weighs on both alike:
// `orch --help` and `orch up` (fresh PGlite data dir, to the first /health 200) from the compiled dist/ and from the
// sources through tsx (ORCH_FROM_SOURCE=1), and a fresh PGlite brought to the schema with the migrations applied one
// by one vs from the schema template. dist/ must be current (`npm run build:dist`).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ORCH_BIN, startOrchNode } from '../test/support/node-process.ts';

const run = promisify(execFile);
const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Wall ms, and CPU ms beside it (less sensitive to a loaded machine). */
export interface Sample {
  ms: number;
  cpuMs: number;
  /**
   * CPU ms of the process's main thread alone (the node's own JavaScript; PGlite runs on a worker thread since
   * stop 31): on a loaded machine the least noisy figure of the work on the start's critical thread.
   */
  mainThreadCpuMs?: number;
}

export interface StartupFigures {
  helpDist: number[];
  helpSource: number[];
  upDist: Sample[];
  upSource: Sample[];
  /** `orch up` from another checkout's dist/ (--against), interleaved run by run with upDist. */
  upAgainst: Sample[];
  pgliteOneByOne: Sample[];
  pgliteSchemaTemplate: Sample[];
}

/** CPU ms (user + system) a live process (or with `tid`, one of its threads) has used so far, from /proc (clock ticks of 10 ms). */
async function cpuOf(pid: number, tid?: number): Promise<number> {
  const stat = await readFile(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Wall ms only (Node does not report a child's CPU); `hyperfine -N` gives the CPU of `orch --help`. */
async function timeHelp(fromSource: boolean): Promise<number> {
  const started = performance.now();
  await run(process.execPath, [ORCH_BIN, '--help'], { env: { ...process.env, ORCH_FROM_SOURCE: fromSource ? '1' : '' } });
  return performance.now() - started;
}

async function timeUp(fromSource: boolean, bin = ORCH_BIN): Promise<Sample> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-up-'));
  const started = performance.now();
  const env = { ORCH_DATA_DIR: dir, DATABASE_URL: undefined, REDIS_URL: undefined, DOCKER_HOST: undefined, ORCH_FROM_SOURCE: fromSource ? '1' : '' };
  const node = await startOrchNode(env, [], 180_000, [], bin);
  try {
    const res = await fetch(`${node.banner.http}/health`);
    if (res.status !== 200) throw new Error(`/health answered ${res.status}`);
    const ms = performance.now() - started;
    return { ms, cpuMs: await cpuOf(node.child.pid!), mainThreadCpuMs: await cpuOf(node.child.pid!, node.child.pid!) };
  } finally {
    await node.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}

async function timePglite(mode: 'one-by-one' | 'schema-template'): Promise<Sample> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-pglite-'));
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(HERE, 'pglite-open.ts'), mode, dir]);
    const [ms, cpuMs] = stdout.trim().split(' ').map(Number);
    return { ms: ms!, cpuMs: cpuMs! };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * `against`: another checkout (its dist/ current and its PGlite templates primed), whose `orch up` is timed beside
 * this one's, alternating run by run (a before/after figure from one run). `upOnly`: just the `orch up` figures.
 */
export async function benchStartupPaths(runs: number, opts: { against?: string; upOnly?: boolean } = {}): Promise<StartupFigures> {
  const f: StartupFigures = { helpDist: [], helpSource: [], upDist: [], upSource: [], upAgainst: [], pgliteOneByOne: [], pgliteSchemaTemplate: [] };
  if (opts.upOnly) {
    const otherBin = opts.against ? path.join(path.resolve(opts.against), 'bin/orch.js') : undefined;
    // One of each first, unrecorded: the OS file cache is warm for every recorded run.
    await timeUp(false);
    if (otherBin) await timeUp(false, otherBin);
    for (let i = 0; i < runs; i++) {
      if (otherBin) f.upAgainst.push(await timeUp(false, otherBin));
      f.upDist.push(await timeUp(false));
    }
    return f;
  }
  // One of each first, unrecorded: the templates and the OS file cache are warm for every recorded run.
  await timePglite('schema-template');
  await timeHelp(false);
  for (let i = 0; i < runs; i++) {
    f.helpDist.push(await timeHelp(false));
    f.helpSource.push(await timeHelp(true));
  }
  for (let i = 0; i < runs; i++) {
    f.pgliteOneByOne.push(await timePglite('one-by-one'));
    f.pgliteSchemaTemplate.push(await timePglite('schema-template'));
  }
  for (let i = 0; i < runs; i++) {
    f.upDist.push(await timeUp(false));
    f.upSource.push(await timeUp(true));
  }
  return f;
}
