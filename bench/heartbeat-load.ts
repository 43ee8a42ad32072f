// One load process of the cluster-heartbeats bench (a child of bench/cluster-heartbeats.ts, several run at once so
// that the load is not capped by one process's event loop). Its job comes in the first IPC message: the
// controller's cluster address and which simulated workers are its own. Each worker attests with its own Ed25519
// key, registers, and from then on heartbeats every `periodMs` OPEN-LOOP: a heartbeat is sent on schedule whether
// or not the previous one was answered, as a fleet of independent machines would, so the offered rate stays at
// workers / period even when answers are slow. Messages: {type:'measure'} starts counting, {type:'report'} answers
// the counts and latencies, {type:'stop'} ends it.
import { NodeClusterClient } from '../src/cluster/client.ts';
import { generateNodeKey } from '../src/cluster/node-key.ts';
import { NodePeerStatus, NodeRole } from '../src/gen/orch/cluster/v1/cluster.js';
import { TEST_JOIN_TOKEN } from '../test/support/node-process.ts';

interface Job {
  address: string;
  from: number;
  count: number;
  periodMs: number;
}

let measuring = false;
let sent = 0;
let ok = 0;
let errors = 0;
let latencies: number[] = [];
let running = true;
let rejoins = 0;
const timers: NodeJS.Timeout[] = [];

async function inBatches(n: number, batch: number, fn: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < n; i += batch) await Promise.all(Array.from({ length: Math.min(batch, n - i) }, (_, j) => fn(i + j)));
}

async function main(job: Job): Promise<void> {
  // Each simulated worker has its own connection, as a machine of its own would (grpc-js otherwise shares one
  // connection among clients of the same address).
  const clients = Array.from({ length: job.count }, () => new NodeClusterClient(job.address, 60_000, { 'grpc.use_local_subchannel_pool': 1 }));
  const t0 = Date.now();
  await inBatches(job.count, 10, async (j) => {
    const i = job.from + j;
    const client = clients[j]!;
    const key = generateNodeKey();
    // A join refused as UNAVAILABLE, INTERNAL, DEADLINE_EXCEEDED or an expired challenge (the controller's registration transaction kept conflicting, or
    // failed, under load) is tried again, as the worker's own membership loop does; each retry is reported.
    const join = async (): Promise<{ creds: { token: string; key: typeof key }; peerId: string }> => {
      const a = await client.attest({ node_id: `sim-${i}`, public_key_pem: key.publicKeyPem, role: NodeRole.WORKER }, TEST_JOIN_TOKEN);
      const c = await client.challenge({ challenge_id: a.challenge_id, signature: Buffer.from(key.sign(Buffer.from(a.challenge_nonce, 'utf8'))) });
      const creds = { token: c.node_security_token, key };
      const r = await client.register({ capabilities: { gpu_count: 0, vram_gb: 0, cpu_cores: 2, available_memory_gb: 4, supported_runtimes: ['process'], tags: [] }, grpc_address: '127.0.0.1:1' }, creds);
      return { creds, peerId: r.peer_id };
    };
    let joined: Awaited<ReturnType<typeof join>> | undefined;
    for (let attempt = 1; !joined; attempt++) {
      try {
        joined = await join();
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (attempt >= 8 || ![4, 13, 14, 16].includes(code ?? -1)) throw err;
        process.stderr.write(`sim-${i}: join attempt ${attempt} refused (${(err as Error).message}); trying again\n`);
        rejoins++;
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
    const { creds } = joined;
    const r = { peer_id: joined.peerId };
    const req = { peer_id: r.peer_id, active_execution_count: i % 3, cpu_utilization_percent: 10, memory_utilization_percent: 20, status: NodePeerStatus.ACTIVE };
    // Random phase, then one heartbeat per period on a drift-free schedule.
    let next = Date.now() + Math.random() * job.periodMs;
    const beat = (): void => {
      if (!running) return;
      const started = performance.now();
      const counted = measuring;
      if (counted) sent++;
      client.heartbeat(req, creds).then(
        () => {
          if (counted && measuring) {
            ok++;
            latencies.push(performance.now() - started);
          }
        },
        () => {
          if (counted && measuring) errors++;
        },
      );
      next += job.periodMs;
      timers[j] = setTimeout(beat, Math.max(0, next - Date.now()));
    };
    timers[j] = setTimeout(beat, Math.max(0, next - Date.now()));
  });
  process.send!({ type: 'joined', seconds: (Date.now() - t0) / 1000, rejoins });
  process.on('message', (m: { type: string }) => {
    if (m.type === 'measure') {
      sent = ok = errors = 0;
      latencies = [];
      measuring = true;
    } else if (m.type === 'report') {
      measuring = false;
      process.send!({ type: 'report', sent, ok, errors, latencies, cpu: process.cpuUsage() });
    } else if (m.type === 'stop') {
      running = false;
      for (const t of timers) clearTimeout(t);
      for (const c of clients) c.close();
      process.exit(0);
    }
  });
}

process.once('message', (job: Job) => {
  main(job).catch((err: unknown) => {
    process.send!({ type: 'error', error: String((err as Error)?.stack ?? err) });
    process.exit(1);
  });
});
