// Benchmarks (not tests): `npm run bench -- <startup|toolcalls|executions|seal|http|db|all> [--seconds N] [--runs N]`.
// Each figure is the median of several runs; docs/BENCHMARKS.md records them with this command.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { openDb } from '../src/storage/open.ts';
import type { Db } from '../src/storage/db.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { startOrchNode } from '../test/support/node-process.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { benchGateway, type GatewayFigures } from './gateway.ts';
import { benchExecutions, type ExecutionFigures } from './executions.ts';
import { benchSeal } from './seal.ts';
import { createToolCatalog } from '../src/tools/catalog.ts';
import { loadNodeConfig } from '../src/config/load.ts';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number.NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

const SECONDS = arg('seconds', 10);
const RUNS = arg('runs', 3);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

function report(name: string, samples: number[], unit: string): void {
  const line = `${name.padEnd(52)} median ${Math.round(median(samples)).toString().padStart(7)} ${unit}   runs: ${samples.map((x) => Math.round(x)).join(', ')}`;
  process.stdout.write(`${line}\n`);
}

async function loadHttp(url: string, headers: Record<string, string>): Promise<number> {
  const result = await autocannon({ url, connections: 50, pipelining: 1, duration: SECONDS, headers });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result.requests.average;
}

async function benchHttp(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-'));
  // The node runs in its own process, so the load generator and the server each have a core.
  const node = await startOrchNode({ ORCH_DATA_DIR: dir, ORCH_LOG_LEVEL: 'warn', DATABASE_URL: undefined, REDIS_URL: undefined });
  try {
    await loadHttp(`${node.banner.http}/health`, {}); // warm-up
    const health: number[] = [];
    for (let i = 0; i < RUNS; i++) health.push(await loadHttp(`${node.banner.http}/health`, {}));
    report('HTTP GET /health (50 connections)', health, 'req/s');
    const auth = { authorization: `Bearer ${node.banner.dev_token ?? ''}` };
    const whoami: number[] = [];
    for (let i = 0; i < RUNS; i++) whoami.push(await loadHttp(`${node.banner.http}/v1/whoami`, auth));
    report('HTTP GET /v1/whoami, RS256 JWT verified per request', whoami, 'req/s');
  } finally {
    await node.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}

/** Durable single-row writes: each INSERT is its own committed transaction, `workers` at a time. */
async function writeRate(db: Db, workers: number): Promise<number> {
  await db.query('CREATE TABLE IF NOT EXISTS bench_writes (id UUID PRIMARY KEY, payload JSONB NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT now())');
  const deadline = Date.now() + SECONDS * 1000;
  let count = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (Date.now() < deadline) {
        await db.tx(async (tx) => {
          await tx.query('INSERT INTO bench_writes (id, payload) VALUES ($1, $2)', [crypto.randomUUID(), JSON.stringify({ n: count })]);
        });
        count++;
      }
    }),
  );
  return count / ((Date.now() - started) / 1000);
}

async function benchDb(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-db-'));
  const pglite = await openDb({ dataDir: dir }, silentLogger());
  try {
    const samples: number[] = [];
    for (let i = 0; i < RUNS; i++) samples.push(await writeRate(pglite, 1));
    report('Db.tx single-row INSERT, PGlite (file), 1 writer', samples, 'writes/s');
  } finally {
    await pglite.close();
    await rm(dir, { recursive: true, force: true });
  }
  const database = await createTestDatabase();
  const pg = await openDb({ url: database.url, dataDir: os.tmpdir() }, silentLogger());
  try {
    for (const workers of [1, 8]) {
      const samples: number[] = [];
      for (let i = 0; i < RUNS; i++) samples.push(await writeRate(pg, workers));
      report(`Db.tx single-row INSERT, PostgreSQL, ${workers} writer(s)`, samples, 'writes/s');
    }
  } finally {
    await pg.close();
    await database.drop();
  }
}

/** `orch up` on a fresh data dir, no services: process spawn until the first `GET /health` answers 200. */
async function benchStartup(): Promise<void> {
  const samples: number[] = [];
  for (let i = 0; i < Math.max(RUNS, 5); i++) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-up-'));
    const started = Date.now();
    const node = await startOrchNode({ ORCH_DATA_DIR: dir, DATABASE_URL: undefined, REDIS_URL: undefined, DOCKER_HOST: undefined });
    try {
      const res = await fetch(`${node.banner.http}/health`);
      if (res.status !== 200) throw new Error(`/health answered ${res.status}`);
      samples.push(Date.now() - started);
    } finally {
      await node.kill('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    }
  }
  report('orch up (fresh data dir, PGlite) to first /health 200', samples, 'ms');
}

async function benchToolCalls(): Promise<void> {
  const samples: GatewayFigures[] = [];
  for (let i = 0; i < RUNS; i++) samples.push(await benchGateway(1000));
  const sandbox = samples[0]?.sandbox ?? '';
  const f = (x: number): string => x.toFixed(3);
  const line = (name: string, pick: (g: GatewayFigures) => number): void => {
    process.stdout.write(`${name.padEnd(52)} median ${f(median(samples.map(pick))).padStart(8)} ms   runs: ${samples.map((g) => f(pick(g))).join(', ')}\n`);
  };
  line(`tool call overhead p50 (gateway, ${sandbox})`, (g) => g.overheadP50);
  line(`tool call overhead p99 (gateway, ${sandbox})`, (g) => g.overheadP99);
  line('tool call round trip p50 incl. spawning `true`', (g) => g.roundTripP50);
  line('tool call round trip p99 incl. spawning `true`', (g) => g.roundTripP99);
}

async function benchAgentExecutions(): Promise<void> {
  for (const isolation of ['process', 'docker'] as const) {
    const runs: ExecutionFigures[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await benchExecutions(isolation, 40, 4));
    const firsts = runs.map((r) => median(r.firstGenerateMs));
    report(`ExecuteAgent → first generate, ${isolation} (median of 10)`, firsts, 'ms');
    report(`one-shot executions/s, ${isolation}, 4 in flight`, runs.map((r) => r.executionsPerSecond), 'exec/s');
  }
}

async function benchSealInvoke(): Promise<void> {
  const runs = [];
  // The node's real catalog, as `orch up` with default settings builds it.
  const catalog = createToolCatalog({ config: loadNodeConfig({ env: {} }), logger: silentLogger() });
  for (let i = 0; i < RUNS; i++) runs.push(await benchSeal(2000, catalog));
  const f = (x: number): string => x.toFixed(3);
  const line = (name: string, xs: number[]): void => {
    process.stdout.write(`${name.padEnd(52)} median ${f(median(xs)).padStart(8)} ms   runs: ${xs.map(f).join(', ')}\n`);
  };
  line('SEAL invoke in-process p50', runs.map((r) => r.inProcessP50));
  line('SEAL invoke in-process p99', runs.map((r) => r.inProcessP99));
  line('SEAL invoke over HTTP p50', runs.map((r) => r.httpP50));
  line('SEAL invoke over HTTP p99', runs.map((r) => r.httpP99));
}

const what = process.argv[2] ?? 'all';
process.stdout.write(`orch bench ${what}: ${SECONDS}s per run, ${RUNS} runs, node ${process.version}, ${os.cpus().length} cpus\n`);
if (what === 'startup' || what === 'all') await benchStartup();
if (what === 'toolcalls' || what === 'all') await benchToolCalls();
if (what === 'executions' || what === 'all') await benchAgentExecutions();
if (what === 'seal' || what === 'all') await benchSealInvoke();
if (what === 'http' || what === 'all') await benchHttp();
if (what === 'db' || what === 'all') await benchDb();
