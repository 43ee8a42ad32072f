// /health/live on the health port (issue 24), on a real node (`orch up`, its own process, PostgreSQL): the liveness
// thread answers in milliseconds while the main event loop is busy (a preload spins the main thread on SIGUSR2, as a
// burst of synchronous work or a long synchronous call would), where the main port's probe waits for the whole
// block; a main loop silent for longer than http.live_stall_seconds reads as not live (503), and live again once it
// turns.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually, startOrchNode, type NodeProcess } from '../support/node-process.ts';
import { createTestDatabase } from '../support/pg.ts';
import { loadNodeConfig } from '../../src/config/load.ts';

const BLOCK_LOOP = path.join(path.dirname(fileURLToPath(import.meta.url)), '../support/block-loop.cjs');
const STALL_SECONDS = 2;

let node: NodeProcess;
let healthUrl: string;
let blockFile: string;
let dir: string;
let dropDb: () => Promise<void>;

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-liveness-'));
  const db = await createTestDatabase();
  dropDb = () => db.drop();
  blockFile = path.join(dir, 'block-ms');
  const config = path.join(dir, 'node.yaml');
  await writeFile(config, `apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  http: { bind: 127.0.0.1, port: 0, live_stall_seconds: ${STALL_SECONDS} }\n`);
  node = await startOrchNode({
    ORCH_CONFIG: config,
    ORCH_DATA_DIR: path.join(dir, 'data'),
    DATABASE_URL: db.url,
    REDIS_URL: undefined,
    ORCH_HEALTH_PORT: '0',
    ORCH_LOG_LEVEL: 'warn',
    NODE_OPTIONS: `--require ${BLOCK_LOOP}`,
    BLOCK_LOOP_FILE: blockFile,
  });
  healthUrl = node.banner.health!;
});

test.after.always(async () => {
  await node?.kill('SIGTERM');
  await dropDb?.().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

async function probe(url: string): Promise<{ status: number; ms: number; body: { status?: string; error?: string; main_loop_silent_ms?: number } }> {
  const t = performance.now();
  const r = await fetch(url, { signal: AbortSignal.timeout(20_000) });
  const body = (await r.json()) as { status?: string };
  return { status: r.status, ms: performance.now() - t, body };
}

/** Spins the node's main thread for `ms` (test/support/block-loop.cjs). */
async function blockMainLoop(ms: number): Promise<void> {
  await writeFile(blockFile, String(ms));
  node.child.kill('SIGUSR2');
}

test.serial('the banner names the health port; it serves /health/live and nothing else', async (t) => {
  t.regex(healthUrl, /^http:\/\/127\.0\.0\.1:\d+\/health\/live$/);
  const live = await probe(healthUrl);
  t.is(live.status, 200);
  t.is(live.body.status, 'ok');
  const other = await fetch(new URL('/v1/executions', healthUrl));
  t.is(other.status, 404);
  t.regex(((await other.json()) as { error: string }).error, /serves only GET \/health\/live/);
});

test.serial('a busy main loop does not delay /health/live on the health port; the main port probe waits for it', async (t) => {
  const main = `${node.banner.http}/health/live`;
  await blockMainLoop(1500);
  // Let the signal reach the loop, then probe both ports while it spins.
  await new Promise((r) => setTimeout(r, 100));
  const mainProbe = probe(main);
  const fast: { status: number; ms: number }[] = [];
  const until = performance.now() + 1000;
  while (performance.now() < until) {
    fast.push(await probe(healthUrl));
    await new Promise((r) => setTimeout(r, 50));
  }
  const slow = await mainProbe;
  t.true(slow.ms >= 900, `the main loop really was busy: its own probe took ${Math.round(slow.ms)} ms`);
  t.true(fast.length >= 5, `${fast.length} probes`);
  t.true(fast.every((p) => p.status === 200), JSON.stringify(fast));
  const sorted = fast.map((p) => p.ms).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  t.true(median <= 100, `health port probes during the block: ${sorted.map(Math.round).join(', ')} ms`);
  t.true(sorted[sorted.length - 1]! < 500, `slowest health port probe ${Math.round(sorted[sorted.length - 1]!)} ms`);
});

test.serial('a main loop silent past live_stall_seconds is reported not live, and live again once it turns', async (t) => {
  await blockMainLoop(5000);
  const dead = await eventually(async () => {
    const p = await probe(healthUrl);
    return p.status === 503 ? p : undefined;
  }, 4_500, 'the health port to report the wedged loop');
  t.is(dead.body.status, 'not live');
  t.regex(dead.body.error ?? '', /the main event loop has not turned for \d+ ms \(limit 2000 ms\)/);
  t.true(dead.body.main_loop_silent_ms! > STALL_SECONDS * 1000);
  t.true(dead.ms < 500, `answered in ${Math.round(dead.ms)} ms while the loop was wedged`);
  const back = await eventually(async () => {
    const p = await probe(healthUrl);
    return p.status === 200 ? p : undefined;
  }, 15_000, 'the health port to report the loop live again');
  t.is(back.body.status, 'ok');
});

test('http.health_port and ORCH_HEALTH_PORT are checked like every port', (t) => {
  const bad = t.throws(() => loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  http: { health_port: 70000 }\n', env: {}, cwd: '/', hostname: 'h' }));
  t.regex(bad!.message, /spec\.http\.health_port/);
  const env = t.throws(() => loadNodeConfig({ env: { ORCH_HEALTH_PORT: 'abc' }, cwd: '/', hostname: 'h' }));
  t.regex(env!.message, /ORCH_HEALTH_PORT/);
  const stall = t.throws(() => loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  http: { live_stall_seconds: 0 }\n', env: {}, cwd: '/', hostname: 'h' }));
  t.regex(stall!.message, /spec\.http\.live_stall_seconds/);
  const ok = loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  http: { health_port: 8081, live_stall_seconds: 5 }\n', env: {}, cwd: '/', hostname: 'h' });
  t.is(ok.http.health_port, 8081);
  t.is(ok.http.live_stall_seconds, 5);
});
