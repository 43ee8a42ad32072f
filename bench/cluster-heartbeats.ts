// Heartbeats absorbed by one controller (issue 7): a real `orch up --role controller` process on PostgreSQL (and
// Redis for the envelope replay record, as a cluster deployment has it), N simulated workers in this process — each
// with its own Ed25519 key, its own attested token and its own gRPC channel — heartbeating every second with random
// phases. Measured over the window: heartbeats answered per second, their latency, and the controller process's CPU
// time (utime + stime from /proc/<pid>/stat) as a percentage of one core; an idle controller's CPU is measured
// first as the baseline. Signing is the workers' cost and happens here, not in the controller.
// Run: `npm run bench -- cluster-heartbeats [--workers 1000] [--seconds 20] [--runs 3]`.
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { NodeClusterClient } from '../src/cluster/client.ts';
import { generateNodeKey, type NodeKey } from '../src/cluster/node-key.ts';
import { NodePeerStatus, NodeRole } from '../src/gen/orch/cluster/v1/cluster.js';
import { startOrchNode } from '../test/support/node-process.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { redisUrl } from '../test/support/redis.ts';
import { percentile } from './stats.ts';

export interface HeartbeatFigures {
  workers: number;
  seconds: number;
  heartbeatsPerSecond: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  controllerCpuPercent: number;
  idleCpuPercent: number;
  /** CPU of this process (the simulated workers) over the window, % of one core: when near 100 the load is capped here. */
  workersCpuPercent: number;
  joinSeconds: number;
}

const CLK_TCK = 100;

async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLK_TCK;
}

interface SimWorker {
  key: NodeKey;
  client: NodeClusterClient;
  token: string;
  peerId: string;
}

async function inBatches<T>(n: number, batch: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += batch) out.push(...(await Promise.all(Array.from({ length: Math.min(batch, n - i) }, (_, j) => fn(i + j)))));
  return out;
}

export async function benchClusterHeartbeats(workers: number, seconds: number, o: { redis?: boolean; log?: (l: string) => void } = {}): Promise<HeartbeatFigures> {
  const log = o.log ?? (() => undefined);
  const database = await createTestDatabase();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-hb-'));
  const cfg = path.join(dir, 'ctl.yaml');
  // A long deadline: a simulated worker that is late under load must not flap to UNHEALTHY mid-measurement.
  await writeFile(cfg, 'apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: bench-ctl }\nspec:\n  node: { id: bench-ctl, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 10 }\n');
  const controller = await startOrchNode({ DATABASE_URL: database.url, REDIS_URL: o.redis === false ? undefined : redisUrl(), ORCH_CONFIG: cfg, ORCH_DATA_DIR: path.join(dir, 'data'), ORCH_LOG_LEVEL: 'warn' });
  const pid = controller.child.pid!;
  const sims: SimWorker[] = [];
  try {
    const address = controller.banner.cluster!;
    // Idle baseline: the controller with no members.
    await new Promise((r) => setTimeout(r, 2000));
    const idle0 = await cpuSeconds(pid);
    const idleT0 = Date.now();
    await new Promise((r) => setTimeout(r, 5000));
    const idleCpuPercent = ((await cpuSeconds(pid)) - idle0) / ((Date.now() - idleT0) / 1000) * 100;

    // Each simulated worker heartbeats from the moment it is registered, as a real one does (a member left silent
    // through a long join would turn UNHEALTHY and measure the recovery path instead).
    let measuring = false;
    let ok = 0;
    let errors = 0;
    const latencies: number[] = [];
    let running = true;
    const loops: Promise<void>[] = [];
    const beatLoop = async (w: SimWorker, i: number): Promise<void> => {
      let next = Date.now();
      while (running) {
        const started = performance.now();
        try {
          await w.client.heartbeat({ peer_id: w.peerId, active_execution_count: i % 3, cpu_utilization_percent: 10, memory_utilization_percent: 20, status: NodePeerStatus.ACTIVE }, { token: w.token, key: w.key });
          if (measuring) {
            ok++;
            latencies.push(performance.now() - started);
          }
        } catch {
          if (measuring) errors++;
        }
        next += 1000;
        const wait = next - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        else next = Date.now();
      }
    };
    const joinStart = Date.now();
    sims.push(
      ...(await inBatches(workers, 50, async (i) => {
        const key = generateNodeKey();
        const client = new NodeClusterClient(address, 60_000);
        const nodeId = `sim-${i}`;
        const a = await client.attest({ node_id: nodeId, public_key_pem: key.publicKeyPem, role: NodeRole.WORKER });
        const c = await client.challenge({ challenge_id: a.challenge_id, signature: Buffer.from(key.sign(Buffer.from(a.challenge_nonce, 'utf8'))) });
        const creds = { token: c.node_security_token, key };
        const r = await client.register({ capabilities: { gpu_count: 0, vram_gb: 0, cpu_cores: 2, available_memory_gb: 4, supported_runtimes: ['process'], tags: [] }, grpc_address: '127.0.0.1:1' }, creds);
        const w = { key, client, token: c.node_security_token, peerId: r.peer_id };
        loops.push(beatLoop(w, i));
        return w;
      })),
    );
    const joinSeconds = (Date.now() - joinStart) / 1000;
    log(`${workers} workers attested and registered in ${joinSeconds.toFixed(1)} s`);

    // Warm up, then measure.
    await new Promise((r) => setTimeout(r, 5000));
    const cpu0 = await cpuSeconds(pid);
    const self0 = process.cpuUsage();
    const t0 = Date.now();
    measuring = true;
    await new Promise((r) => setTimeout(r, seconds * 1000));
    measuring = false;
    const elapsed = (Date.now() - t0) / 1000;
    const cpu = (await cpuSeconds(pid)) - cpu0;
    const self = process.cpuUsage(self0);
    running = false;
    await Promise.all(loops);
    latencies.sort((a, b) => a - b);
    return {
      workers,
      seconds: elapsed,
      heartbeatsPerSecond: ok / elapsed,
      errors,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      controllerCpuPercent: (cpu / elapsed) * 100,
      idleCpuPercent,
      workersCpuPercent: ((self.user + self.system) / 1e6 / elapsed) * 100,
      joinSeconds,
    };
  } finally {
    for (const s of sims) s.client.close();
    await controller.kill('SIGKILL');
    await database.drop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}
