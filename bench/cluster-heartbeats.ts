// Heartbeats absorbed by one controller (issue 7): a real `orch up --role controller` process on PostgreSQL (and
// Redis for the envelope replay record, as a cluster deployment has it), N simulated workers spread over several
// load processes (bench/heartbeat-load.ts) — each worker with its own Ed25519 key, its own attested token and its own
// gRPC connection — heartbeating every second, open-loop (on schedule whether or not the last answer came), so the
// controller is offered the full N heartbeats/s. Measured over the window: heartbeats answered per second, their
// latency, and the controller process's CPU time (utime + stime from /proc/<pid>/stat) as a percentage of one core,
// and per heartbeat; an idle controller's CPU is measured first as the baseline. Signing is the workers' cost and
// happens in the load processes, not in the controller.
// Then mass recovery: every member is marked UNHEALTHY in the database at once (as after a partition), and the time
// until the controller has brought all of them back from their next heartbeats is measured.
// Run: `npm run bench -- cluster-heartbeats [--workers 1000] [--seconds 20] [--runs 3] [--procs 2]`.
// With ORCH_BENCH_CPU_PROF=<dir> the controller runs under `node --cpu-prof` and writes its profile there.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../src/logging/logger.ts';
import { openDb } from '../src/storage/open.ts';
import { eventually, startOrchNode } from '../test/support/node-process.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { redisUrl } from '../test/support/redis.ts';
import { percentile } from './stats.ts';
import { cpuSeconds, cpuTimes } from './proc-cpu.ts';
export interface HeartbeatFigures {
  workers: number;
  seconds: number;
  heartbeatsPerSecond: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  controllerCpuPercent: number;
  idleCpuPercent: number;
  /** CPU of the load processes (the simulated workers) over the window, % of one core each (the highest). */
  workersCpuPercent: number;
  joinSeconds: number;
  /** Heartbeats sent per second over the window (the offered load). */
  offeredPerSecond: number;
  /** The part of the controller's CPU over the window spent in the kernel (system time), % of its CPU. */
  systemCpuShare: number;
  /** Controller CPU per answered heartbeat, ms (idle baseline subtracted). */
  cpuMsPerHeartbeat: number;
  /** Mass recovery: members marked UNHEALTHY at once, seconds until all were back, and so members/s. */
  recovered: number;
  recoverySeconds: number;
  loadAverage: number;
}

const HERE = path.dirname(fileURLToPath(import.meta.url));

interface LoadReport {
  type: 'report';
  sent: number;
  ok: number;
  errors: number;
  latencies: number[];
  cpu: NodeJS.CpuUsage;
}

function nextMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string; error?: string }): void => {
      if (m.type === 'error') {
        cleanup();
        reject(new Error(`load process: ${m.error}`));
      } else if (m.type === type) {
        cleanup();
        resolve(m as T);
      }
    };
    const onExit = (code: number | null): void => {
      cleanup();
      reject(new Error(`load process exited (${code}) before '${type}'`));
    };
    const cleanup = (): void => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

export async function benchClusterHeartbeats(
  workers: number,
  seconds: number,
  o: { redis?: boolean; procs?: number; log?: (l: string) => void } = {},
): Promise<HeartbeatFigures> {
  const log = o.log ?? (() => undefined);
  const procs = Math.max(1, Math.min(o.procs ?? 2, workers));
  const database = await createTestDatabase();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-hb-'));
  const cfg = path.join(dir, 'ctl.yaml');
  // A long deadline: a simulated worker that is late under load must not flap to UNHEALTHY mid-measurement.
  await writeFile(cfg, 'apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: bench-ctl }\nspec:\n  node: { id: bench-ctl, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 10 }\n');
  const profDir = process.env.ORCH_BENCH_CPU_PROF;
  const controller = await startOrchNode(
    { DATABASE_URL: database.url, REDIS_URL: o.redis === false ? undefined : redisUrl(), ORCH_CONFIG: cfg, ORCH_DATA_DIR: path.join(dir, 'data'), ORCH_LOG_LEVEL: 'warn' },
    [],
    90_000,
    // --cpu-prof is refused in NODE_OPTIONS: a shell that execs node with it (the pid stays the node's).
    profDir ? ['sh', '-c', `exec "$0" --cpu-prof --cpu-prof-dir=${profDir} "$@"`] : [],
  );
  const pid = controller.child.pid!;
  const db = await openDb({ url: database.url, dataDir: dir }, silentLogger());
  const children: ChildProcess[] = [];
  try {
    const address = controller.banner.cluster!;
    // Idle baseline: the controller with no members.
    await new Promise((r) => setTimeout(r, 2000));
    const idle0 = await cpuSeconds(pid);
    const idleT0 = Date.now();
    await new Promise((r) => setTimeout(r, 5000));
    const idleCpuPercent = (((await cpuSeconds(pid)) - idle0) / ((Date.now() - idleT0) / 1000)) * 100;

    const joinStart = Date.now();
    const per = Math.ceil(workers / procs);
    const joined: Promise<unknown>[] = [];
    for (let p = 0; p < procs; p++) {
      const count = Math.min(per, workers - p * per);
      if (count <= 0) break;
      const child = fork(path.join(HERE, 'heartbeat-load.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      children.push(child);
      joined.push(nextMessage(child, 'joined'));
      child.send({ address, from: p * per, count, periodMs: 1000 });
    }
    const rejoins = ((await Promise.all(joined)) as { rejoins: number }[]).reduce((a, j) => a + j.rejoins, 0);
    if (rejoins) log(`${rejoins} joins were refused and tried again`);
    const joinSeconds = (Date.now() - joinStart) / 1000;
    log(`${workers} workers attested and registered in ${joinSeconds.toFixed(1)} s by ${children.length} load processes`);

    // Warm up, then measure.
    await new Promise((r) => setTimeout(r, 5000));
    const times0 = await cpuTimes(pid);
    const cpu0 = times0.user + times0.system;
    const t0 = Date.now();
    for (const c of children) c.send({ type: 'measure' });
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const reports = await Promise.all(
      children.map((c) => {
        const r = nextMessage<LoadReport>(c, 'report');
        c.send({ type: 'report' });
        return r;
      }),
    );
    const elapsed = (Date.now() - t0) / 1000;
    const times1 = await cpuTimes(pid);
    const cpu = times1.user + times1.system - cpu0;
    const systemCpuShare = cpu > 0 ? ((times1.system - times0.system) / cpu) * 100 : 0;
    const loadAverage = os.loadavg()[0]!;
    const ok = reports.reduce((a, r) => a + r.ok, 0);
    const latencies = reports.flatMap((r) => r.latencies).sort((a, b) => a - b);
    const workerCpu = Math.max(...reports.map((r) => (r.cpu.user + r.cpu.system) / 1e6));

    // Mass recovery: all members UNHEALTHY at once; their next heartbeats (within a period) bring them back.
    const marked = await db.query(`UPDATE cluster_nodes SET status = 'UNHEALTHY', updated_at = now() WHERE node_id LIKE 'sim-%' AND status = 'ACTIVE'`);
    const r0 = Date.now();
    await eventually(async () => {
      const res = await db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM cluster_nodes WHERE node_id LIKE 'sim-%' AND status = 'UNHEALTHY'`);
      return res.rows[0]!.n === 0 ? true : undefined;
    }, 300_000, 'every member back from UNHEALTHY');
    const recoverySeconds = (Date.now() - r0) / 1000;
    log(`mass recovery: ${marked.rowCount} members UNHEALTHY at once, all back after ${recoverySeconds.toFixed(2)} s`);

    const busyCpu = Math.max(0, cpu / elapsed - idleCpuPercent / 100);
    return {
      workers,
      seconds: elapsed,
      heartbeatsPerSecond: ok / elapsed,
      offeredPerSecond: reports.reduce((a, r) => a + r.sent, 0) / elapsed,
      errors: reports.reduce((a, r) => a + r.errors, 0),
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      controllerCpuPercent: (cpu / elapsed) * 100,
      idleCpuPercent,
      systemCpuShare,
      cpuMsPerHeartbeat: ok > 0 ? (busyCpu * 1000) / (ok / elapsed) : NaN,
      workersCpuPercent: (workerCpu / ((Date.now() - joinStart) / 1000)) * 100,
      joinSeconds,
      recovered: marked.rowCount ?? 0,
      recoverySeconds,
      loadAverage,
    };
  } catch (err) {
    log(`controller stderr (last 3,000 characters):\n${controller.stderr().slice(-3000)}`);
    throw err;
  } finally {
    for (const c of children) {
      if (c.connected) c.send({ type: 'stop' });
    }
    await new Promise((r) => setTimeout(r, 500));
    for (const c of children) c.kill('SIGKILL');
    // Under --cpu-prof the profile is written at a graceful exit.
    await controller.kill(profDir ? 'SIGTERM' : 'SIGKILL');
    await db.close();
    await database.drop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}
