// `npm run bench -- ws-fanout [--subscribers N] [--streams S] [--rate M] [--seconds T] [--clients C]`
//
// WebSocket fan-out of the live feed on one node: a real `orch up` process on PostgreSQL and Redis, S real
// executions (their rows and first events in the database), N WebSocket subscribers spread evenly over them
// (`execution:<id>`, N/S per stream) in C client processes, and M events per second published on Redis as another
// node would (consecutive seq per stream, each carrying its send time). Reports delivered messages per second, the
// delivery latency (publish → client's message handler) p50/p99/max, and the node's resident memory per subscriber
// (RSS after the subscribers joined minus before, over N).
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { startOrchNode } from '../test/support/node-process.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { redisUrl } from '../test/support/redis.ts';
import { percentile } from './stats.ts';

export interface FanoutOptions {
  subscribers: number;
  streams: number;
  rate: number;
  seconds: number;
  clients: number;
}

export interface FanoutFigures {
  delivered: number;
  expected: number;
  p50: number;
  p99: number;
  max: number;
  rssPerSubscriberKb: number;
  /** The node's CPU time per delivered message (user + system), and its CPU use during the window. */
  cpuUsPerMessage: number;
  nodeCpuPercent: number;
  /** The subscriber processes' CPU during the window, summed (100% = one core). */
  clientsCpuPercent: number;
  loadAverage: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  errors: number;
  closed: number;
}

const HERE = path.dirname(fileURLToPath(import.meta.url));
const now = (): number => performance.timeOrigin + performance.now();

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** User + system CPU seconds of a process so far. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function ask<T>(child: ChildProcess, msg: unknown, key: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const on = (m: Record<string, unknown>): void => {
      if ('error' in m) {
        child.off('message', on);
        reject(new Error(String(m.error)));
      } else if (key in m) {
        child.off('message', on);
        resolve(m as T);
      }
    };
    child.on('message', on);
    child.send(msg as never);
  });
}

export async function benchWsFanout(o: FanoutOptions, log: (line: string) => void): Promise<FanoutFigures> {
  const database = await createTestDatabase();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-ws-'));
  const node = await startOrchNode({ ORCH_DATA_DIR: dir, ORCH_LOG_LEVEL: 'warn', DATABASE_URL: database.url, REDIS_URL: redisUrl() });
  const children: ChildProcess[] = [];
  const redis = new Redis(redisUrl());
  try {
    const base = node.banner.http;
    const token = node.banner.dev_token ?? '';
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const post = async <T>(url: string, body: unknown): Promise<T> => {
      const res = await fetch(`${base}${url}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    // No model is configured, so each execution fails at once: a real row with two events (seq 1 and 2).
    const agent = await post<{ agent_id: string }>('/v1/agents', {
      manifest_yaml: 'apiVersion: orch.dev/v1\nkind: Agent\nmetadata: { name: fan, version: 1.0.0 }\nspec:\n  runtime: { language: node, version: "20", model: default }\n  task: { instruction: x }\n',
    });
    const ids: string[] = [];
    for (let i = 0; i < o.streams; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, o.streams - i) }, () => post<{ execution_id: string }>('/v1/executions', { agent_id: agent.agent_id, input: 'x' })),
      );
      ids.push(...batch.map((b) => b.execution_id));
    }
    const pgc = new pg.Client({ connectionString: database.url });
    await pgc.connect();
    for (;;) {
      const res = await pgc.query<{ n: number }>(`SELECT count(*)::int AS n FROM executions WHERE status = 'failed'`);
      if ((res.rows[0]?.n ?? 0) >= o.streams) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await pgc.end();
    const nextSeq = new Map(ids.map((id) => [id, 3]));
    await new Promise((r) => setTimeout(r, 1000));
    const before = await rssMb(node.child.pid!);

    // Subscribers: subscriber i follows stream i mod S, spread over the client processes.
    const streamsOf: string[][] = Array.from({ length: o.clients }, () => []);
    for (let i = 0; i < o.subscribers; i++) streamsOf[i % o.clients]!.push(`execution:${ids[i % o.streams]}`);
    const t0 = Date.now();
    for (let c = 0; c < streamsOf.length; c++) {
      const child = fork(path.join(HERE, 'ws-fanout-client.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      children.push(child);
    }
    await Promise.all(children.map((c, i) => ask(c, { job: { url: `${base.replace(/^http/, 'ws')}/v1/ws`, token, streams: streamsOf[i] } }, 'ready')));
    log(`  ${o.subscribers} subscribers joined in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    await new Promise((r) => setTimeout(r, 2000));
    const after = await rssMb(node.child.pid!);

    // Publisher: every 10 ms, rate/100 events round-robin over the streams.
    let cursor = 0;
    let carry = 0;
    const perTick = o.rate / 100;
    const publishTick = async (): Promise<void> => {
      carry += perTick;
      const n = Math.floor(carry);
      carry -= n;
      if (n === 0) return;
      const p = redis.pipeline();
      for (let k = 0; k < n; k++) {
        const id = ids[cursor++ % ids.length]!;
        const seq = nextSeq.get(id)!;
        nextSeq.set(id, seq + 1);
        const at = new Date().toISOString();
        p.publish(`orch:events:execution:${id}`, `{"stream":"execution:${id}","seq":${seq},"type":"iteration_output","at":"${at}","payload":{"execution_id":"${id}","iteration":1,"output":"tick","sent_at":${now()}}}`);
      }
      await p.exec();
    };
    let running = true;
    const pump = (async () => {
      let next = now();
      while (running) {
        await publishTick();
        next += 10;
        const wait = next - now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    })();
    await new Promise((r) => setTimeout(r, 2000)); // warm-up
    await Promise.all(children.map((c) => ask(c, { reset: true, report: true }, 'latencies')));
    const start = now();
    const cpu0 = await cpuSeconds(node.child.pid!);
    const clients0 = (await Promise.all(children.map((c) => cpuSeconds(c.pid!)))).reduce((a, b) => a + b, 0);
    await new Promise((r) => setTimeout(r, o.seconds * 1000));
    const cpu1 = await cpuSeconds(node.child.pid!);
    const clients1 = (await Promise.all(children.map((c) => cpuSeconds(c.pid!)))).reduce((a, b) => a + b, 0);
    const reports = await Promise.all(children.map((c) => ask<{ latencies: number[]; live: number; errors: number; closedEarly: number }>(c, { report: true }, 'latencies')));
    const elapsed = (now() - start) / 1000;
    running = false;
    await pump;
    const all = reports.flatMap((r) => r.latencies).sort((a, b) => a - b);
    const delivered = reports.reduce((s, r) => s + r.live, 0) / elapsed;
    const cpu = cpu1 - cpu0;
    return {
      delivered,
      expected: o.rate * (o.subscribers / o.streams),
      p50: percentile(all, 50),
      p99: percentile(all, 99),
      max: all.at(-1) ?? 0,
      rssBeforeMb: before,
      rssAfterMb: after,
      rssPerSubscriberKb: ((after - before) * 1024) / o.subscribers,
      cpuUsPerMessage: (cpu * 1e6) / Math.max(1, delivered * elapsed),
      nodeCpuPercent: (cpu / elapsed) * 100,
      clientsCpuPercent: ((clients1 - clients0) / elapsed) * 100,
      loadAverage: os.loadavg()[0] ?? 0,
      errors: reports.reduce((s, r) => s + r.errors, 0),
      closed: reports.reduce((s, r) => s + r.closedEarly, 0),
    };
  } finally {
    for (const c of children) c.send({ close: true });
    await new Promise((r) => setTimeout(r, 300));
    for (const c of children) c.kill('SIGKILL');
    redis.disconnect();
    node.child.kill('SIGTERM');
    await node.exited.catch(() => undefined);
    await database.drop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}
