// Benchmarks (not tests): `npm run bench -- <startup|toolcalls|executions|density|llm-client|seal|http|db|workflow-race|workflow-race-api|workflow-race-interleaved|step-statement|race-breakdown|webhooks|soak|plan-cost|id-order-wal|hot-updates|observability|capacity|twin|all> [--seconds N] [--runs N]`.
// Each figure is the median of several runs; docs/BENCHMARKS.md records them with this command.
import { benchRateLimit, benchRateLimitInProcess } from './rate-limit.ts';
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
import { benchDensity } from './density.ts';
import { benchSeal } from './seal.ts';
import { reportFsal, reportFsalDd } from './fsal.ts';
import { benchWorkflowRace } from './workflow-race.ts';
import { benchWorkflowRaceApi } from './workflow-race-api.ts';
import { benchWorkflowRaceInterleaved } from './workflow-race-interleaved.ts';
import { benchStepStatement } from './step-statement.ts';
import { benchApiProfile } from './api-profile.ts';
import { benchRaceBreakdown } from './race-breakdown.ts';
import { benchWebhooks } from './webhooks.ts';
import { benchSoak } from './soak.ts';
import { benchPlanCost } from './plan-cost.ts';
import { benchIdOrderWal } from './id-order-wal.ts';
import { benchHotUpdates } from './hot-updates.ts';
import { benchClusterHeartbeats } from './cluster-heartbeats.ts';
import { benchEd25519Verify, benchServerFloor, type FloorServer } from './grpc-floor.ts';
import { benchHeartbeatHandler } from './heartbeat-handler.ts';
import { benchWsFanout } from './ws-fanout.ts';
import { benchCapacity, renderAgain } from './capacity/main.ts';
import { benchTwin, TWINS, type TwinName } from './twins.ts';
import { benchObservability } from './observability.ts';
import { benchControllerFailover } from './controller-failover.ts';
import { benchTell, benchWaitingRuns } from './tell.ts';
import { WORKFLOW_LEASE_MS } from '../src/workflow/engine/capability.ts';
import { benchRouteDecisions, benchWorkerLoss } from './routing.ts';
import { benchWorkerResume } from './worker-resume.ts';
import { createToolCatalog } from '../src/tools/catalog.ts';
import { loadNodeConfig } from '../src/config/load.ts';
import { median } from './stats.ts';
import { benchLlmClient } from './llm-client.ts';
import { benchStartupPaths, type Sample } from './startup.ts';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number.NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

const SECONDS = arg('seconds', 10);
const RUNS = arg('runs', 3);

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
  // --against <checkout>: that checkout's `orch up` too, alternating with this one's; --up-only: only `orch up`.
  const against = process.argv.find((a, i) => process.argv[i - 1] === '--against');
  const upOnly = process.argv.includes('--up-only');
  const f = await benchStartupPaths(Math.max(RUNS, 5), { ...(against ? { against } : {}), upOnly });
  const both = (name: string, samples: Sample[]): void => {
    report(name, samples.map((s) => s.ms), 'ms');
    report(`  the same, CPU (user + system)`, samples.map((s) => s.cpuMs), 'ms');
    if (samples.every((s) => s.mainThreadCpuMs !== undefined)) report(`  the same, CPU of the main thread`, samples.map((s) => s.mainThreadCpuMs!), 'ms');
  };
  if (against) both(`orch up to first /health 200, dist/ of ${against}`, f.upAgainst);
  if (upOnly) {
    both('orch up to first /health 200, compiled dist/ (this checkout)', f.upDist);
    return;
  }
  report('orch --help, compiled dist/', f.helpDist, 'ms');
  report('orch --help, sources through tsx', f.helpSource, 'ms');
  both('fresh PGlite to schema, migrations one by one', f.pgliteOneByOne);
  both('fresh PGlite to schema, from the schema template', f.pgliteSchemaTemplate);
  both('orch up to first /health 200, compiled dist/', f.upDist);
  both('orch up to first /health 200, sources (tsx)', f.upSource);
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
  // Replay record in Redis (a node with spec.redis.url; REDIS_URL, default the local one), then in the database.
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redisRuns = [];
  for (let i = 0; i < RUNS; i++) redisRuns.push(await benchSeal(2000, catalog, { redisUrl }));
  for (let i = 0; i < RUNS; i++) runs.push(await benchSeal(2000, catalog));
  const f = (x: number): string => x.toFixed(3);
  const line = (name: string, xs: number[]): void => {
    process.stdout.write(`${name.padEnd(52)} median ${f(median(xs)).padStart(8)} ms   runs: ${xs.map(f).join(', ')}\n`);
  };
  line('SEAL invoke in-process p50 (Redis replay record)', redisRuns.map((r) => r.inProcessP50));
  line('SEAL invoke in-process p99 (Redis replay record)', redisRuns.map((r) => r.inProcessP99));
  line('SEAL invoke over HTTP p50 (Redis replay record)', redisRuns.map((r) => r.httpP50));
  line('SEAL invoke over HTTP p99 (Redis replay record)', redisRuns.map((r) => r.httpP99));
  line('SEAL invoke in-process p50 (database replay record)', runs.map((r) => r.inProcessP50));
  line('SEAL invoke in-process p99 (database replay record)', runs.map((r) => r.inProcessP99));
  line('SEAL invoke over HTTP p50 (database replay record)', runs.map((r) => r.httpP50));
  line('SEAL invoke over HTTP p99 (database replay record)', runs.map((r) => r.httpP99));
}

const what = process.argv[2] ?? 'all';
process.stdout.write(`orch bench ${what}: ${SECONDS}s per run, ${RUNS} runs, node ${process.version}, ${os.cpus().length} cpus\n`);
if (what === 'startup' || what === 'all') await benchStartup();
if (what === 'toolcalls' || what === 'all') await benchToolCalls();
if (what === 'executions' || what === 'all') await benchAgentExecutions();
if (what === 'llm-client') await benchLlmClient(arg('calls', 2000), (l) => process.stdout.write(`${l}\n`));
if (what === 'density') {
  // Issue 24: N executions at once through the API (--count, --delay-ms model delay), node from dist/ on PostgreSQL.
  const i = process.argv.indexOf('--cpu-prof');
  const figures = await benchDensity({
    count: arg('count', 100),
    modelDelayMs: arg('delay-ms', 1000),
    cpuProfile: i >= 0 ? path.resolve(process.argv[i + 1] ?? 'density.cpuprofile') : undefined,
    privatePg: process.argv.includes('--private-pg'),
    observe: process.argv.includes('--observe-api') ? 'api' : 'db',
    log: (l) => process.stdout.write(`${l}\n`),
  });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
if (what === 'seal' || what === 'all') await benchSealInvoke();
if (what === 'http' || what === 'all') await benchHttp();
if (what === 'db' || what === 'all') await benchDb();
if (what === 'fsal' || what === 'all') await (process.argv.includes('--dd-only') ? reportFsalDd : reportFsal)(RUNS, (l) => process.stdout.write(`${l}\n`));
if (what === 'workflow-race' || what === 'all') await benchWorkflowRace(RUNS, arg('workflows', 2000), (l) => process.stdout.write(`${l}\n`));
if (what === 'workflow-race-api' || what === 'all') {
  // Issue 16: the race through orch's public API (`orch up` from dist/, HTTP run-and-wait and gRPC RunWorkflow)
  // beside Restate and the in-process engine (--no-engine skips it); --concurrency 1,4,16,64,256,1024 for the curve.
  const cs = (process.argv.find((a, i) => process.argv[i - 1] === '--concurrency') ?? '1,64').split(',').map(Number).filter((n) => n > 0);
  await benchWorkflowRaceApi(RUNS, arg('workflows', 1000), cs, (l) => process.stdout.write(`${l}\n`), { engine: !process.argv.includes('--no-engine'), privatePg: process.argv.includes('--private-pg') });
}
if (what === 'workflow-race-interleaved') {
  // Issue 16: the API race with every contestant up at once, taking turns at each concurrency (a ratio of
  // measurements seconds apart); --against <checkout> races that checkout's dist/ too (builds compared in one window).
  const cs = (process.argv.find((a, i) => process.argv[i - 1] === '--concurrency') ?? '1,64').split(',').map(Number).filter((n) => n > 0);
  const against = process.argv.find((a, i) => process.argv[i - 1] === '--against');
  await benchWorkflowRaceInterleaved(RUNS, arg('workflows', 500), cs, (l) => process.stdout.write(`${l}\n`), { privatePg: process.argv.includes('--private-pg'), ...(against ? { against } : {}) });
}
if (what === 'step-statement') {
  // Issue 16: PostgreSQL's CPU per step of the step writer's statement alone, this checkout against --against's.
  const against = process.argv.find((a, i) => process.argv[i - 1] === '--against');
  if (!against) throw new Error('step-statement needs --against <checkout>');
  await benchStepStatement(against, RUNS, arg('workflows', 256), arg('steps', 80), (l) => process.stdout.write(`${l}\n`));
}
if (what === 'api-profile') {
  // Issue 16: the node's CPU profile, PostgreSQL CPU and statements per workflow of the API race (private PostgreSQL).
  const flag = (name: string): string | undefined => process.argv.find((a, i) => process.argv[i - 1] === `--${name}`);
  await benchApiProfile({ path: flag('path') === 'grpc' ? 'grpc' : 'http', workflows: arg('workflows', 2000), concurrency: Number(flag('concurrency') ?? 64) }, (l) => process.stdout.write(`${l}\n`));
}
if (what === 'race-breakdown') {
  // Issue 16: where one workflow's wall time and CPU go at low concurrency (statements, gaps, threads, WAL syncs).
  const flag = (name: string): string | undefined => process.argv.find((a, i) => process.argv[i - 1] === `--${name}`);
  await benchRaceBreakdown(
    { path: flag('path') === 'grpc' ? 'grpc' : 'http', workflows: arg('workflows', 300), concurrency: Number(flag('concurrency') ?? 1), profile: process.argv.includes('--profile') },
    (l) => process.stdout.write(`${l}\n`),
  );
}
if (what === 'routing' || what === 'all') {
  // Issue 7: RouteExecution decisions/s with 10 and 1,000 registered workers (--seconds per measurement).
  for (const workers of [10, 1000]) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await benchRouteDecisions(workers, SECONDS));
    report(`RouteExecution in-process, ${workers} workers`, runs.map((r) => r.inProcess), 'decisions/s');
    report(`RouteExecution over gRPC (sealed), ${workers} workers`, runs.map((r) => r.grpc), 'decisions/s');
    report(`RouteExecution over gRPC, Redis nonces, ${workers} w.`, runs.map((r) => r.grpcRedis), 'decisions/s');
    report(`  rotation alone over ${workers} candidates`, runs.map((r) => r.pickOnly), 'picks/s');
  }
}
if (what === 'worker-loss' || what === 'all') {
  // Issue 7: SIGKILL a worker mid-execution; time until the controller records it failed (worker_lost).
  const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0;
  const xs = await benchWorkerLoss(Math.max(RUNS, 5), (l) => process.stdout.write(`${l}\n`));
  process.stdout.write(`${'worker loss (SIGKILL) to worker_lost recorded p50 / p99'.padEnd(52)} ${Math.round(pct(xs, 50))} / ${Math.round(pct(xs, 99))} ms (${xs.length} kills)\n`);
  // With a survivor: the execution is resumed there from its journal (bench/worker-resume.ts).
  const rs = await benchWorkerResume(Math.max(RUNS, 5), (l) => process.stdout.write(`${l}\n`));
  const line = (what: string, ys: number[]): void => void process.stdout.write(`${what.padEnd(52)} ${Math.round(pct(ys, 50))} / ${Math.round(pct(ys, 99))} ms (${ys.length} kills)\n`);
  line('SIGKILL to loss recorded p50 / p99', rs.map((r) => r.detectedMs));
  line('SIGKILL to handed to the survivor p50 / p99', rs.map((r) => r.handedMs));
  line('SIGKILL to survivor resumed (asks the model) p50 / p99', rs.map((r) => r.resumedMs));
  line('loss recorded to survivor resumed p50 / p99', rs.map((r) => r.resumedMs - r.detectedMs));
}
if (what === 'controller-failover' || what === 'all') {
  // Issue 7: SIGKILL a controller running workflows; the other resumes them (--runs kills, --lease seconds).
  const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0;
  const lease = arg('lease', WORKFLOW_LEASE_MS / 1000);
  const f = await benchControllerFailover(Math.max(RUNS, 5), lease, 3, (l) => process.stdout.write(`${l}\n`));
  process.stdout.write(`${`controller failover, lease ${lease} s: claim p50 / p99`.padEnd(52)} ${Math.round(pct(f.claimMs, 50))} / ${Math.round(pct(f.claimMs, 99))} ms (${f.claimMs.length} runs)\n`);
  process.stdout.write(`${`controller failover, lease ${lease} s: resumed p50 / p99`.padEnd(52)} ${Math.round(pct(f.resumeMs, 50))} / ${Math.round(pct(f.resumeMs, 99))} ms (${f.resumeMs.length} runs)\n`);
}
if (what === 'tell' || what === 'all') {
  // Issue 18: approval through the other controller → next state, and cancel of an execution on a worker.
  await benchTell({ approvals: arg('approvals', 100), cancels: arg('cancels', 20) }, (l) => process.stdout.write(`${l}\n`));
}
if (what === 'waiting-runs') {
  // Issue 18: what a run waiting on a Human state costs its controller (RSS, idle CPU); not in `all` (minutes).
  // --park-after: spec.workflow.park_after_seconds (86400: never parked, the runs stay in memory as before);
  // --via-api: how many are started through the API (the rest are set-based copies, parked); --wakes: approvals timed.
  const n = arg('waiting', 5000);
  await benchWaitingRuns(
    { n, idleSeconds: arg('idle-seconds', 30), parkAfter: arg('park-after', 1), viaApi: arg('via-api', Math.min(n, 500)), wakes: arg('wakes', 200) },
    (l) => process.stdout.write(`${l}\n`),
  );
}
if (what === 'rate-limit' || what === 'all') {
  // Issue 19: the cost of the HTTP rate limits per request (bench/rate-limit.ts).
  const figures = await benchRateLimit(RUNS, SECONDS, process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', (l) => process.stdout.write(`${l}\n`));
  const inProcess = await benchRateLimitInProcess(RUNS, 2000, process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  for (const f of inProcess) {
    report(`in process, limits ${f.variant}: CPU per request`, f.cpuUs, 'µs');
    report(`in process, limits ${f.variant}: wall per request`, f.wallUs, 'µs');
  }
  for (const f of figures) report(`HTTP GET /v1/whoami, rate limits ${f.variant}`, f.reqPerSecond, 'req/s');
  const off = median(figures[0]!.reqPerSecond);
  for (const f of figures.slice(1)) {
    const on = median(f.reqPerSecond);
    process.stdout.write(`${`  cost per request, ${f.variant} (1/on − 1/off, 50 connections)`.padEnd(52)} ${((1 / on - 1 / off) * 1e6).toFixed(1)} µs of node time; ratio ${(on / off).toFixed(2)}\n`);
  }
}
if (what === 'webhooks' || what === 'all') {
  const figures = await benchWebhooks(RUNS, SECONDS, (l) => process.stdout.write(`${l}\n`));
  report('Webhooks on PostgreSQL (verified, deduplicated, workflow started)', figures.map((f) => f.perSecond), 'webhooks/s');
  report('  their workflows run to completion, end to end', figures.map((f) => f.completedPerSecond), 'runs/s');
  report('  floor: POST /v1/workflows/{name}/run alone', figures.map((f) => f.directRunsPerSecond), 'runs/s');
}
if (what === 'soak') {
  // Issue 23: throughput over time through the public API; not part of `all` (it runs for minutes).
  const i = process.argv.indexOf('--orch-root');
  const orchRoot = i >= 0 ? process.argv[i + 1] : undefined;
  // --pg name=value (repeatable): a setting of the private PostgreSQL server.
  const pgSettings = Object.fromEntries(process.argv.flatMap((a, j) => (a === '--pg' && process.argv[j + 1]?.includes('=') ? [process.argv[j + 1]!.split('=', 2) as [string, string]] : [])));
  await benchSoak({ minutes: arg('minutes', 10), clients: arg('clients', 16), preload: arg('preload', 0), orchRoot, sharedPg: process.argv.includes('--shared-pg'), ...(Object.keys(pgSettings).length ? { pgSettings } : {}) }, (l) => process.stdout.write(`${l}\n`));
}
if (what === 'plan-cost') {
  // Issue 23: the step writer's statement under each plan cache mode, server-side costs (in-process bench).
  await benchPlanCost(arg('steps', 4), arg('batches', 300), (l) => process.stdout.write(`${l}\n`));
}
if (what === 'id-order-wal') {
  // Issue 23: WAL per run written into a large history, random (v4) against time-ordered (v7) ids (in-process).
  await benchIdOrderWal(arg('history', 1_000_000), arg('rounds', 2), (l) => process.stdout.write(`${l}\n`));
}
if (what === 'hot-updates') {
  // Issue 23: the HOT share of updates with and without 022's fillfactor.
  // --tables a,b: only these tables' cases.
  const t = process.argv.indexOf('--tables');
  await benchHotUpdates(arg('rows', 5000), arg('rounds', 20), (l) => process.stdout.write(`${l}\n`), t >= 0 ? process.argv[t + 1]?.split(',') : undefined);
}
if (what === 'observability' || what === 'all') {
  // Issue 9: the cost of tracing on the Db hot path and of rendering /metrics (docs/OBSERVABILITY.md).
  const figures = [];
  for (let i = 0; i < RUNS; i++) figures.push(await benchObservability(SECONDS));
  report('PostgreSQL SELECT 1 (8 concurrent), tracing off', figures.map((f) => f.queriesOff), 'queries/s');
  report('PostgreSQL SELECT 1 (8 concurrent), tracing on, OTLP export', figures.map((f) => f.queriesOn), 'queries/s');
  report('  same, 10% of traces sampled (traceidratio 0.1)', figures.map((f) => f.queriesSampled), 'queries/s');
  report('/metrics rendering, 1,000 series', figures.map((f) => f.scrapeMs * 1000), 'µs');
}
if (what === 'ws-fanout') {
  // Issue 9: N WebSocket subscribers on one node, M events/s spread over S execution streams (docs/BENCHMARKS.md).
  const o = { subscribers: arg('subscribers', 10_000), streams: arg('streams', 1000), rate: arg('rate', 1000), seconds: SECONDS, clients: arg('clients', 4) };
  for (let i = 0; i < RUNS; i++) {
    const f = await benchWsFanout(o, (l) => process.stdout.write(`${l}\n`));
    process.stdout.write(
      `ws-fanout ${o.subscribers} subs, ${o.streams} streams, ${o.rate} ev/s: delivered ${Math.round(f.delivered)}/s of ${Math.round(f.expected)}/s, ` +
        `latency p50 ${f.p50.toFixed(1)} ms p99 ${f.p99.toFixed(1)} ms max ${f.max.toFixed(1)} ms, node RSS ${Math.round(f.rssBeforeMb)} -> ${Math.round(f.rssAfterMb)} MB ` +
        `(${f.rssPerSubscriberKb.toFixed(1)} KiB/subscriber), node CPU ${Math.round(f.nodeCpuPercent)}% = ${f.cpuUsPerMessage.toFixed(1)} µs/message, clients CPU ${Math.round(f.clientsCpuPercent)}%, ` +
        `load average ${f.loadAverage.toFixed(1)}, errors ${f.errors}, closed ${f.closed}\n`,
    );
  }
}
if (what === 'grpc-floor' || what === 'all') {
  // Issue 7: the per-call CPU of a bare unary server at N connections x 1 call/s, under the heartbeat figures.
  const connections = arg('workers', 1000);
  for (const kind of ['http2', 'grpc-channelz', 'grpc'] as FloorServer[]) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await benchServerFloor(kind, connections, Math.max(SECONDS, 10)));
    process.stdout.write(`  ${kind}: ${runs.map((r) => `${r.usPerCall.toFixed(0)} µs/call (${r.cpuPercent.toFixed(1)}%, load ${r.loadAverage.toFixed(1)})`).join(', ')}\n`);
    report(`Unary call floor, ${kind}, ${connections} connections x 1/s`, runs.map((r) => r.usPerCall), 'µs/call');
  }
  report('Ed25519 verify, node:crypto (OpenSSL), 1.1 kB', Array.from({ length: RUNS }, () => benchEd25519Verify('openssl')), 'µs');
  report('Ed25519 verify, libsodium (orch), 1.1 kB', Array.from({ length: RUNS }, () => benchEd25519Verify('libsodium')), 'µs');
}
if (what === 'heartbeat-handler' || what === 'all') {
  // Issue 7: the controller's own CPU per heartbeat (handler, checks, batched write), in process, no network.
  const members = arg('workers', 1000);
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await benchHeartbeatHandler(members, SECONDS));
  report(`Heartbeat handler path, ${members} members, in process`, runs.map((r) => r.usPerHeartbeat), 'µs CPU/heartbeat');
}
if (what === 'cluster-heartbeats' || what === 'all') {
  // Issue 7: heartbeats/s one controller process absorbs from N simulated workers at a 1 s period, and its CPU.
  const workers = arg('workers', 1000);
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await benchClusterHeartbeats(workers, Math.max(SECONDS, 10), { procs: arg('procs', 2), log: (l) => process.stdout.write(`${l}\n`) }));
  for (const r of runs) {
    process.stdout.write(
      `  run: offered ${Math.round(r.offeredPerSecond)}/s, answered ${Math.round(r.heartbeatsPerSecond)} heartbeats/s, controller CPU ${r.controllerCpuPercent.toFixed(1)}% of one core (idle ${r.idleCpuPercent.toFixed(1)}%, ${r.systemCpuShare.toFixed(0)}% of it system time) = ` +
        `${r.cpuMsPerHeartbeat.toFixed(3)} ms per heartbeat, p50 ${r.p50Ms.toFixed(1)} ms p99 ${r.p99Ms.toFixed(1)} ms, errors ${r.errors}, join ${r.joinSeconds.toFixed(1)} s, ` +
        `load processes' CPU ${r.workersCpuPercent.toFixed(0)}% (busiest), mass recovery ${r.recovered} members in ${r.recoverySeconds.toFixed(2)} s, load average ${r.loadAverage.toFixed(1)}\n`,
    );
  }
  report(`Heartbeats absorbed, ${workers} workers at 1 s`, runs.map((r) => r.heartbeatsPerSecond), 'heartbeats/s');
  report(`  controller CPU, ${workers} workers at 1 s (% of one core)`, runs.map((r) => r.controllerCpuPercent), '%');
  report(`  controller CPU per heartbeat (idle subtracted)`, runs.map((r) => r.cpuMsPerHeartbeat * 1000), 'µs');
  report(`  mass recovery, ${workers} members UNHEALTHY at once`, runs.map((r) => r.recovered / r.recoverySeconds), 'members/s');
}
if (what === 'capacity') {
  // Issue 16: one node driven through its API with rising offered load per surface; writes docs/CAPACITY.md, its
  // SVG charts and capacity.json (--out DIR instead of docs/; --quick: two short steps per surface, ≤ 60 s;
  // --only runs,steps,...: a subset; --render: the report again from capacity.json). Not in `all` (minutes).
  const opt = (name: string): string | undefined => process.argv.find((_, i) => process.argv[i - 1] === `--${name}`);
  const quick = process.argv.includes('--quick');
  // --render: only write the report and charts again from --out's capacity.json (no run).
  if (process.argv.includes('--render')) await renderAgain(opt('out') ?? path.resolve('docs'));
  else await benchCapacity({
    quick,
    ...(process.argv.includes('--seconds') ? { seconds: SECONDS } : {}),
    outDir: opt('out') ?? path.resolve('docs'),
    ...(opt('only') ? { only: opt('only')!.split(',') } : {}),
    log: (l) => process.stdout.write(`${l}\n`),
  });
}
if (what === 'twin') {
  // Issue 16: the twin of a k6 script (bench/k6/<script>.ts) against a fresh node here: same requests, same VUs,
  // same thresholds. `npm run bench -- twin <workflow-run-wait|webhooks|executions|seal-invoke|ws-subscribers|all>
  // [--vus N] [--seconds S] [--iterations N] [--subscribers N] [--rate runs/s]`. Exits 1 when a threshold failed.
  const name = process.argv[3] ?? 'all';
  if (name !== 'all' && !(TWINS as readonly string[]).includes(name)) throw new Error(`twin: one of ${TWINS.join(', ')}, all`);
  const has = (flag: string): boolean => process.argv.includes(`--${flag}`);
  const held = await benchTwin(name as TwinName | 'all', {
    seconds: SECONDS,
    ...(has('vus') ? { vus: arg('vus', 1) } : {}),
    ...(has('iterations') ? { iterations: arg('iterations', 2000) } : {}),
    ...(has('subscribers') ? { subscribers: arg('subscribers', 200) } : {}),
    ...(has('rate') ? { runsPerSecond: arg('rate', 10) } : {}),
  }, (l) => process.stdout.write(`${l}\n`));
  if (!held) process.exitCode = 1;
}
