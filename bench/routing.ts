// Routing benchmarks (issue 7):
//   decisions — RouteExecution decisions/s on PostgreSQL with W registered ACTIVE workers (rows in cluster_nodes):
//               in-process (ExecutionRouter.route: one membership query + the rotation per decision), and over gRPC
//               (NodeClusterService.RouteExecution on a real server: node token, sealed envelope, Ed25519 signature and
//               replay check per call, 16 calls in flight).
//   worker-loss — real processes: one controller and a worker; each round starts an execution that the scripted
//               model holds, SIGKILLs the worker, and measures until the execution is recorded `failed`
//               (`worker_lost`); a fresh worker joins for the next round.
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../src/logging/logger.ts';
import { openDb } from '../src/storage/open.ts';
import type { Db } from '../src/storage/db.ts';
import { ExecutionRouter } from '../src/cluster/routing.ts';
import { ClusterAuthority, type NonceGuard } from '../src/cluster/authority.ts';
import { RedisReplayGuard } from '../src/seal/replay.ts';
import { NodeClusterClient } from '../src/cluster/client.ts';
import { generateNodeKey } from '../src/cluster/node-key.ts';
import { createClusterServer } from '../src/cluster/grpc/cluster-server.ts';
import { routeExecutionHandler } from '../src/cluster/grpc/routing-handlers.ts';
import { startGrpcServer } from '../src/gateway/grpc/start.ts';
import { RouteExecutionRequest } from '../src/gen/orch/cluster/v1/cluster.js';
import { createTestDatabase } from '../test/support/pg.ts';
import { eventually } from '../test/support/node-process.ts';
import { allActive, Cleanup, llmProviders, nodeStarter, scratch, startHoldingLlm } from '../test/cluster/processes.ts';
import { api } from '../test/cluster/support.ts';

async function addWorkers(db: Db, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const id = `bench-w${String(i).padStart(4, '0')}`;
    const tags = i % 4 === 0 ? ['gpu'] : [];
    await db.query(
      `INSERT INTO cluster_nodes (node_id, role, status, grpc_address, tags, capabilities, registered_at, last_heartbeat_at, heartbeat_count, epoch, updated_at)
       VALUES ($1, 'worker', 'ACTIVE', $2, $3, $4, now(), now(), 0, 0, now())`,
      [id, `10.0.${Math.floor(i / 250)}.${i % 250}:50056`, JSON.stringify(tags), JSON.stringify({ gpu_count: 0, vram_gb: 0, cpu_cores: 8, available_memory_gb: 16, supported_runtimes: ['process'], tags })],
    );
  }
}

export interface DecisionFigures {
  workers: number;
  inProcess: number;
  grpc: number;
  /** Over gRPC with the envelope nonces recorded in Redis (as a node with spec.redis.url does). */
  grpcRedis: number;
  pickOnly: number;
}

export async function benchRouteDecisions(workers: number, seconds: number): Promise<DecisionFigures> {
  const database = await createTestDatabase();
  const db = await openDb({ url: database.url, dataDir: os.tmpdir() }, silentLogger());
  try {
    await addWorkers(db, workers);
    const router = new ExecutionRouter(db, 'bench-controller');
    // In-process: the query and the rotation, one after another.
    let n = 0;
    const until = Date.now() + seconds * 1000;
    let t0 = performance.now();
    while (Date.now() < until) {
      await router.route(n % 2 ? { tags: ['gpu'] } : undefined);
      n++;
    }
    const inProcess = n / ((performance.now() - t0) / 1000);
    // The rotation alone over the candidate list (what a cached membership view would cost).
    const list = await router.candidates();
    n = 0;
    t0 = performance.now();
    while (n < 1_000_000) {
      router.pick(list);
      n++;
    }
    const pickOnly = n / ((performance.now() - t0) / 1000);
    // Over gRPC with the node-token checks: nonces in the database, then in Redis.
    const overGrpc = async (nonces?: NonceGuard): Promise<number> => {
      const authority = new ClusterAuthority({ db, logger: silentLogger(), ...(nonces ? { nonces } : {}) });
      const server = await startGrpcServer(createClusterServer({ logger: silentLogger(), handlers: routeExecutionHandler({ authority, router, logger: silentLogger() }) }), '127.0.0.1', 0);
      const key = generateNodeKey();
      const issued = await authority.issue('bench-caller', 'worker', Buffer.from(key.publicKey).toString('base64'));
      const client = new NodeClusterClient(`127.0.0.1:${server.port}`);
      try {
        const creds = { token: issued.token, key };
        const call = async (): Promise<void> => {
          const { envelope, metadata } = client.seal(RouteExecutionRequest.encode({ execution_id: randomUUID() }).finish(), creds);
          await client.send('routeExecution', envelope, metadata);
        };
        await call();
        let calls = 0;
        const end = Date.now() + seconds * 1000;
        const start = performance.now();
        await Promise.all(
          Array.from({ length: 16 }, async () => {
            while (Date.now() < end) {
              await call();
              calls++;
            }
          }),
        );
        return calls / ((performance.now() - start) / 1000);
      } finally {
        client.close();
        await server.close();
      }
    };
    const grpc = await overGrpc();
    const redis = await RedisReplayGuard.open(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', silentLogger());
    try {
      const grpcRedis = await overGrpc({ firstUse: (nodeId, nonce) => redis.firstUse(`bench-cluster:${nodeId}`, nonce) });
      return { workers, inProcess, grpc, grpcRedis, pickOnly };
    } finally {
      await redis.close();
    }
  } finally {
    await db.close();
    await database.drop().catch(() => undefined);
  }
}

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: held, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 300, iteration_timeout: 300, validation: [] }
  security: { resources: { timeout: 600 } }
`;

/** ms from SIGKILL of the worker to the execution recorded failed (worker_lost), one sample per round. */
export async function benchWorkerLoss(rounds: number, out: (line: string) => void): Promise<number[]> {
  const cleanup = new Cleanup();
  const samples: number[] = [];
  try {
    const { url: llmUrl, asked } = await startHoldingLlm(cleanup);
    const start = nodeStarter(cleanup, await scratch(cleanup, 'orch-bench-loss-'), { env: { ORCH_LOG_LEVEL: 'warn' } });
    // worker_wait_seconds 0: measures the loss itself (worker_lost at once), not a wait for the worker to return.
    const ctl = await start('ctl', '  node: { id: ctl, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3, worker_wait_seconds: 0 }\n');
    const C = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };
    const dep = await api<{ agent_id: string }>(C, 'POST', '/v1/agents', { manifest_yaml: AGENT });
    if (dep.status !== 201) throw new Error(`deploy: ${JSON.stringify(dep.body)}`);
    for (let r = 0; r < rounds; r++) {
      const id = `w${r}`;
      const worker = await start(
        id,
        `  node: { id: ${id}, role: worker }\n  cluster: { controller: "${ctl.banner.cluster}", heartbeat_interval_seconds: 1, missed_heartbeats: 3 }\n${llmProviders(llmUrl)}`,
      );
      await allActive(C, [id], 30_000, `${id} to join`);
      const ex = await api<{ execution_id: string }>(C, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: `hold:r${r}` });
      await eventually(async () => (asked.has(`r${r}`) ? true : undefined), 30_000, 'the execution to run');
      const killedAt = performance.now();
      await worker.kill('SIGKILL');
      const reason = await eventually(async () => {
        const d = await api<{ status: string; reason: string | null }>(C, 'GET', `/v1/executions/${ex.body.execution_id}`);
        return d.body.status === 'failed' ? d.body.reason ?? '' : undefined;
      }, 30_000, 'the execution to fail');
      const ms = performance.now() - killedAt;
      if (reason !== 'worker_lost') throw new Error(`round ${r}: reason ${reason}`);
      samples.push(ms);
      out(`  round ${r + 1}: worker_lost recorded ${Math.round(ms)} ms after SIGKILL`);
    }
  } finally {
    await cleanup.run();
  }
  return samples;
}
