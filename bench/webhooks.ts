// Webhook ingestion per second on PostgreSQL: a real `orch up` process (its own process, so the load generator and
// the node each get a core) with one direct route, loaded by autocannon over 50 connections. Every request has its
// own body and X-Idempotency-Key and a valid X-Orch-Signature, so each one is verified (HMAC over the raw bytes),
// takes its key (the unique-constraint claim), is recorded, and starts a workflow run (one update_blackboard System
// state, run to completion by the node meanwhile). A run counts only 200s; afterwards the database must hold exactly
// as many routed stimuli and workflow runs as there were 200s, else the run fails.
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { silentLogger } from '../src/logging/logger.ts';
import { openDb } from '../src/storage/open.ts';
import { WorkflowDefinitionService } from '../src/workflow/registry/service.ts';
import { startOrchNode } from '../test/support/node-process.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { HOOK_WORKFLOW } from './capacity/surfaces.ts';
import { BackendCpu, procCpuMs } from './proc-cpu.ts';

const SECRET = 'bench-webhook-secret';

// The workflow the capacity bench's webhook surface drives too: one System state writing the hook's input.
const WORKFLOW = HOOK_WORKFLOW;

const CONFIG = `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: bench-webhooks }
spec:
  node: { id: bench-webhooks }
  stimuli:
    routes:
      - { source: bench, workflow: on-hook, input_template: '{"n": {{content.n}} }' }
`;

export interface WebhookFigures {
  perSecond: number;
  /** The floor under it: POST /v1/workflows/on-hook/run alone (bearer, no stimulus), same node, same load. */
  directRunsPerSecond: number;
  /** Workflows of the accepted webhooks that ran to completion, per second from the load's start to the last one's end. */
  completedPerSecond: number;
  accepted: number;
  non2xx: number;
  p50ms: number;
  p99ms: number;
  /** Load-independent costs: the node process's CPU (user + system) and the database's committed transactions, per
   * accepted webhook (the transactions include the bench's own few count reads). */
  cpuMsPerWebhook: number;
  commitsPerWebhook: number;
  cpuMsPerDirectRun: number;
  commitsPerDirectRun: number;
  /** PostgreSQL's CPU (user + system of the backends serving the bench database, from /proc) per accepted webhook and
   * per direct run: the database's share of the cost, which the node's CPU figure leaves out. */
  pgCpuMsPerWebhook: number;
  pgCpuMsPerDirectRun: number;
  /** The load generator's own CPU (this process: autocannon, and signing each webhook) per accepted request: on a
   * 2-core machine it competes with the node and PostgreSQL, so a webhook that costs the client more is slower. */
  clientCpuMsPerWebhook: number;
  clientCpuMsPerDirectRun: number;
}

export async function benchWebhooks(runs: number, seconds: number, out: (line: string) => void, connections = 50): Promise<WebhookFigures[]> {
  const database = await createTestDatabase();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-webhooks-'));
  const config = path.join(dir, 'node.yaml');
  await writeFile(config, CONFIG);
  const node = await startOrchNode({
    ORCH_CONFIG: config,
    ORCH_DATA_DIR: path.join(dir, 'data'),
    ORCH_LOG_LEVEL: 'warn',
    DATABASE_URL: database.url,
    REDIS_URL: undefined,
    ORCH_WEBHOOK_SECRET_BENCH: SECRET,
    // Profiling the node under this load (node refuses --cpu-prof in NODE_OPTIONS, so a preload starts the profiler):
    // BENCH_NODE_OPTIONS='--require ./bench/cpu-profile.cjs' CPU_PROFILE=/tmp/node.cpuprofile (written at exit).
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
  });
  const db = await openDb({ url: database.url, dataDir: dir }, silentLogger());
  const figures: WebhookFigures[] = [];
  try {
    await new WorkflowDefinitionService(db, silentLogger()).deploy({ tenant: 'orch-system', subject: 'bench', yaml: WORKFLOW });
    const url = `${node.banner.http}/v1/webhooks/bench`;
    const prefix = randomUUID();
    let n = 0;
    const load = async (duration: number): Promise<WebhookFigures> => {
      const result = await autocannon({
        url,
        method: 'POST',
        connections,
        pipelining: 1,
        duration,
        requests: [
          {
            setupRequest: (req) => {
              const i = n++;
              const body = JSON.stringify({ n: i, event: 'bench', at: Date.now() });
              return {
                ...req,
                body,
                headers: {
                  'content-type': 'application/json',
                  'x-orch-signature': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
                  'x-idempotency-key': `${prefix}-${i}`,
                },
              };
            },
          },
        ],
      });
      const accepted = result['2xx'];
      return {
        perSecond: accepted / duration,
        directRunsPerSecond: 0,
        completedPerSecond: 0,
        accepted,
        non2xx: result.non2xx + result.errors,
        p50ms: result.latency.p50,
        p99ms: result.latency.p99,
        cpuMsPerWebhook: 0,
        commitsPerWebhook: 0,
        cpuMsPerDirectRun: 0,
        commitsPerDirectRun: 0,
        pgCpuMsPerWebhook: 0,
        pgCpuMsPerDirectRun: 0,
        clientCpuMsPerWebhook: 0,
        clientCpuMsPerDirectRun: 0,
      };
    };
    await load(Math.min(3, seconds)); // warm-up (JIT, pool, plan cache)
    for (let r = 0; r < runs; r++) {
      // Counted when the node is quiet: requests still in flight when autocannon stops (at most one per connection)
      // finish on the node first, also those of the previous load.
      const before = await settled(db);
      const cost0 = await costs(db, node.child.pid);
      const pg0 = new BackendCpu(db);
      await pg0.start();
      const client0 = process.cpuUsage();
      const loadStart = Date.now();
      const f = await load(seconds);
      const client1 = process.cpuUsage(client0);
      const after = await settled(db);
      const cost1 = await costs(db, node.child.pid);
      const pgWebhooks = await pg0.total();
      const stimuli = after.routed - before.routed;
      const workflows = after.workflows - before.workflows;
      const completed = after.completed - before.completed;
      if (completed !== workflows) throw new Error(`webhook bench run ${r + 1}: ${workflows} workflow runs started but ${completed} completed`);
      // End to end: every accepted webhook's workflow has run to completion, counted up to when the last one ended.
      f.completedPerSecond = completed / Math.max(seconds, (after.at - loadStart) / 1000);
      if (f.non2xx > 0) throw new Error(`webhook bench run ${r + 1}: ${f.non2xx} non-2xx answers or errors`);
      if (stimuli !== workflows || stimuli < f.accepted || stimuli > f.accepted + connections) {
        throw new Error(`webhook bench run ${r + 1}: ${f.accepted} accepted but ${stimuli} routed stimuli and ${workflows} workflow runs recorded`);
      }
      const pg1 = new BackendCpu(db);
      await pg1.start();
      const client2 = process.cpuUsage();
      const direct = await autocannon({
        url: `${node.banner.http}/v1/workflows/on-hook/run`,
        method: 'POST',
        connections,
        pipelining: 1,
        duration: seconds,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${node.banner.dev_token ?? ''}` },
        body: JSON.stringify({ input: { n: 1 } }),
      });
      const client3 = process.cpuUsage(client2);
      if (direct.non2xx > 0 || direct.errors > 0) throw new Error(`direct workflow runs: ${direct.non2xx} non-2xx, ${direct.errors} errors`);
      f.directRunsPerSecond = direct['2xx'] / seconds;
      await settled(db);
      const cost2 = await costs(db, node.child.pid);
      const pgDirect = await pg1.total();
      f.cpuMsPerWebhook = (cost1.cpuMs - cost0.cpuMs) / stimuli;
      f.commitsPerWebhook = (cost1.commits - cost0.commits) / stimuli;
      f.cpuMsPerDirectRun = (cost2.cpuMs - cost1.cpuMs) / direct['2xx'];
      f.commitsPerDirectRun = (cost2.commits - cost1.commits) / direct['2xx'];
      f.pgCpuMsPerWebhook = pgWebhooks / stimuli;
      f.pgCpuMsPerDirectRun = pgDirect / direct['2xx'];
      f.clientCpuMsPerWebhook = (client1.user + client1.system) / 1000 / f.accepted;
      f.clientCpuMsPerDirectRun = (client3.user + client3.system) / 1000 / direct['2xx'];
      await new Promise((r) => setTimeout(r, 1000));
      figures.push(f);
      out(`  run ${r + 1}: direct POST /v1/workflows/on-hook/run ${Math.round(f.directRunsPerSecond)} runs/s`);
      out(
        `  run ${r + 1}: per webhook ${f.cpuMsPerWebhook.toFixed(2)} ms node CPU, ${f.pgCpuMsPerWebhook.toFixed(2)} ms PostgreSQL CPU, ${f.commitsPerWebhook.toFixed(2)} commits; ` +
          `per direct run ${f.cpuMsPerDirectRun.toFixed(2)} ms node, ${f.pgCpuMsPerDirectRun.toFixed(2)} ms PostgreSQL, ${f.commitsPerDirectRun.toFixed(2)} commits`,
      );
      out(`  run ${r + 1}: ${Math.round(f.perSecond)} webhooks/s (${f.accepted} in ${seconds}s; p50 ${f.p50ms} ms, p99 ${f.p99ms} ms; ${stimuli} stimuli and ${workflows} workflow runs recorded, all completed: ${Math.round(f.completedPerSecond)} runs/s end to end)`);
    }
    // Load-independent costs (medians of the runs): what to compare across commits on a shared, loaded machine.
    const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const line = (what: string, xs: number[]): void => out(`${what.padEnd(52)} median ${med(xs).toFixed(2)} (runs: ${xs.map((x) => x.toFixed(2)).join(', ')})`);
    line('per webhook: node CPU ms', figures.map((f) => f.cpuMsPerWebhook));
    line('per webhook: PostgreSQL backend CPU ms', figures.map((f) => f.pgCpuMsPerWebhook));
    line('per webhook: commits', figures.map((f) => f.commitsPerWebhook));
    line('per direct run: node CPU ms', figures.map((f) => f.cpuMsPerDirectRun));
    line('per direct run: PostgreSQL backend CPU ms', figures.map((f) => f.pgCpuMsPerDirectRun));
    line('per direct run: commits', figures.map((f) => f.commitsPerDirectRun));
    line('load generator CPU ms per webhook', figures.map((f) => f.clientCpuMsPerWebhook));
    line('load generator CPU ms per direct run', figures.map((f) => f.clientCpuMsPerDirectRun));
  } finally {
    await db.close();
    await node.kill('SIGTERM');
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  }
  return figures;
}

/** The node process's CPU time so far (Linux /proc: utime + stime in clock ticks of 10 ms) and the database's
 * committed transactions (pg_stat_database, after the statistics flush that settled() waited for). */
async function costs(db: Querier, pid: number | undefined): Promise<{ cpuMs: number; commits: number }> {
  const cpuMs = pid === undefined ? 0 : ((await procCpuMs(pid)) ?? 0);
  await db.query('SELECT pg_stat_force_next_flush()').catch(() => undefined);
  const r = await db.query<{ n: string }>('SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()');
  return { cpuMs, commits: Number(r.rows[0]?.n ?? 0) };
}

type Querier = { query: <R extends object>(sql: string) => Promise<{ rows: R[] }> };

/** The counts once two reads 500 ms apart agree (the node has finished what was in flight), at most 30 s. */
async function settled(db: Querier): Promise<{ routed: number; workflows: number; completed: number; at: number }> {
  let prev = { ...(await counts(db)), at: Date.now() };
  for (let i = 0; i < 60; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const cur = { ...(await counts(db)), at: Date.now() };
    // Settled when nothing moved for 500 ms; `at` is when the last change was first seen (when the runs had ended).
    if (cur.routed === prev.routed && cur.workflows === prev.workflows && cur.completed === prev.completed) return prev;
    prev = cur;
  }
  return prev;
}

async function counts(db: Querier): Promise<{ routed: number; workflows: number; completed: number }> {
  const s = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM stimuli WHERE status = 'routed'");
  const w = await db.query<{ n: number; c: number }>("SELECT count(*)::int AS n, (count(*) FILTER (WHERE status = 'completed'))::int AS c FROM workflow_executions");
  return { routed: s.rows[0]?.n ?? 0, workflows: w.rows[0]?.n ?? 0, completed: w.rows[0]?.c ?? 0 };
}
