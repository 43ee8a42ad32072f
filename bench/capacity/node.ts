// The node the capacity bench drives: one `orch up` (its own process, compiled dist/ when current) on PostgreSQL (a
// random database, dropped afterwards) and Redis (the bus, the SEAL replay record and the rate-limit counters, as a
// cluster node has them), hybrid role (workflows, agent executions and the cluster port for worker heartbeats), a
// scripted model server for the agent executions (a real HTTP server on loopback), and a webhook route. Also the
// cost meters read around each load step: the node's CPU from /proc, PostgreSQL's backends' CPU from /proc, and the
// database's committed transactions from pg_stat_database.
import http from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import type { Db } from '../../src/storage/db.ts';
import { startOrchNode, type NodeProcess } from '../../test/support/node-process.ts';
import { createTestDatabase } from '../../test/support/pg.ts';
import { redisUrl } from '../../test/support/redis.ts';
import { startScriptedLlm } from '../../test/support/scripted-llm.ts';
import { BackendCpu, procCpuMs } from '../proc-cpu.ts';

export const WEBHOOK_SECRET = 'capacity-webhook-secret';

export interface CapacityNode {
  base: string;
  token: string;
  pid: number;
  /** The cluster gRPC address (worker heartbeats). */
  cluster: string;
  /** The bench's own connection to the node's database (set-up and cost meters only, never the load). */
  db: Db;
  /** The bench's own Redis connection (the meters' INFO reads). */
  redis: Redis;
  /** One keep-alive agent for every HTTP request of the load. */
  agent: http.Agent;
  request(method: string, p: string, body?: string, headers?: Record<string, string>): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

export async function startCapacityNode(): Promise<CapacityNode> {
  const database = await createTestDatabase();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-capacity-'));
  const llm = await startScriptedLlm(() => ({ content: 'ok' }));
  const config = path.join(dir, 'node.yaml');
  await writeFile(
    config,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: capacity }
spec:
  node: { id: capacity, role: hybrid }
  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 10 }
  llm_providers: [ { name: s, type: openai, endpoint: "${llm.url}", api_key: k, models: [ { alias: default, model: m } ] } ]
  runtime: { default_isolation: process }
  stimuli:
    routes:
      - { source: bench, workflow: on-hook, input_template: '{"n": {{content.n}} }' }
`,
  );
  let node: NodeProcess | undefined;
  let db: Db | undefined;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
  const redis = new Redis(redisUrl(), { lazyConnect: true, maxRetriesPerRequest: 2 });
  redis.on('error', () => undefined); // a Redis hiccup costs one meter reading, never the bench
  const close = async (): Promise<void> => {
    agent.destroy();
    redis.disconnect();
    await db?.close().catch(() => undefined);
    await node?.kill('SIGTERM').catch(() => undefined);
    await llm.close().catch(() => undefined);
    await database.drop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    node = await startOrchNode({
      ORCH_CONFIG: config,
      ORCH_DATA_DIR: path.join(dir, 'data'),
      ORCH_LOG_LEVEL: 'warn',
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl(),
      ORCH_WEBHOOK_SECRET_BENCH: WEBHOOK_SECRET,
      ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
    });
    db = await openDb({ url: database.url, dataDir: dir }, silentLogger());
    const base = node.banner.http;
    const url = new URL(base);
    const request = (method: string, p: string, body?: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        const req = http.request(
          { host: url.hostname, port: url.port, path: p, method, agent, headers: { ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}), ...headers } },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    if (!node.banner.cluster) throw new Error('the capacity node opened no cluster port');
    await redis.connect();
    return { base, token: node.banner.dev_token ?? '', pid: node.child.pid!, cluster: node.banner.cluster, db, redis, agent, request, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** What one load step cost: the node's CPU, PostgreSQL's backends' CPU and the database's commits. */
export interface StepCost {
  nodeCpuMs: number;
  /** CPU of the node's children reaped during the step (sandboxes, their commands): cutime + cstime. */
  childCpuMs: number;
  /** Commands the Redis server processed during the step: an upper bound for the node's (the server is shared). */
  redisCommands: number;
  pgCpuMs: number;
  /** Transactions committed in the node's database (pg_stat_database.xact_commit: read-only ones included). */
  commits: number;
  /** Rows written in the node's database (tup_inserted + tup_updated + tup_deleted). */
  rowsWritten: number;
  /** WAL syncs of the whole server (pg_stat_wal.wal_sync): shared with other databases, so an upper bound. */
  walSyncs: number;
  /** Seconds the meters ran. */
  seconds: number;
  /** 1-minute load average at the step's end. */
  load: number;
}

/** cutime + cstime of a process (its reaped children's CPU), ms. */
async function childCpuMs(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13] ?? 0) + Number(f[14] ?? 0)) * 10;
}

async function redisCommands(redis: Redis): Promise<number> {
  const info = await redis.info('stats').catch(() => '');
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
}

async function dbCounters(db: Db): Promise<{ commits: number; rows: number; walSyncs: number }> {
  await db.query('SELECT pg_stat_force_next_flush()').catch(() => undefined);
  const r = await db.query<{ c: string; w: string; s: string }>(
    `SELECT xact_commit::text AS c, (tup_inserted + tup_updated + tup_deleted)::text AS w, (SELECT wal_sync::text FROM pg_stat_wal) AS s
       FROM pg_stat_database WHERE datname = current_database()`,
  );
  return { commits: Number(r.rows[0]?.c ?? 0), rows: Number(r.rows[0]?.w ?? 0), walSyncs: Number(r.rows[0]?.s ?? 0) };
}

/** Starts the meters; the returned function stops them and answers the step's cost. */
export async function meter(n: CapacityNode): Promise<() => Promise<StepCost>> {
  const cpu0 = (await procCpuMs(n.pid)) ?? 0;
  const child0 = (await childCpuMs(n.pid)) ?? 0;
  const redis0 = await redisCommands(n.redis);
  const c0 = await dbCounters(n.db);
  const t0 = performance.now();
  const pg = new BackendCpu(n.db);
  await pg.start();
  return async () => {
    const pgCpuMs = await pg.total();
    const cpu1 = (await procCpuMs(n.pid)) ?? cpu0;
    const child1 = (await childCpuMs(n.pid)) ?? child0;
    // The meters' own statements (a few per 250 ms) are in the transaction count, as are the node's background
    // polls: the idle node's rates (measured with the same meters) are subtracted in the report.
    const c1 = await dbCounters(n.db);
    return {
      nodeCpuMs: cpu1 - cpu0,
      childCpuMs: child1 - child0,
      redisCommands: (await redisCommands(n.redis)) - redis0,
      pgCpuMs,
      commits: c1.commits - c0.commits,
      rowsWritten: c1.rows - c0.rows,
      walSyncs: c1.walSyncs - c0.walSyncs,
      seconds: (performance.now() - t0) / 1000,
      load: os.loadavg()[0] ?? 0,
    };
  };
}
