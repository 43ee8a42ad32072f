// The controller's own CPU per heartbeat, without the network (issue 7): the real Heartbeat handler as the cluster
// server wires it (the guard with its span, token and envelope checks, libsodium verification, decoding, Membership
// with its batched write to PostgreSQL) called in process for `members` registered members, all heartbeating at once
// each round, as many rounds as fit in the window. Measured: this process's CPU (user + system) per heartbeat; every
// heartbeat is really checked, written and answered. Envelopes are sealed outside the measured part (signing is the
// workers' cost). Compare with bench/grpc-floor.ts (what
// the RPC itself costs) and bench/cluster-heartbeats.ts (the whole controller process over real connections).
// Run: `npm run bench -- heartbeat-handler [--workers 1000] [--seconds 10] [--runs 3]`.
import { Metadata } from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { MemoryBus } from '../src/bus/memory.ts';
import { ClusterAuthority } from '../src/cluster/authority.ts';
import { sealPayload } from '../src/cluster/envelope.ts';
import { clusterHandlers } from '../src/cluster/grpc/cluster-handlers.ts';
import { Membership } from '../src/cluster/membership.ts';
import { generateNodeKey } from '../src/cluster/node-key.ts';
import { guardService } from '../src/gateway/grpc/guard.ts';
import { HeartbeatRequest, NodeClusterServiceService, NodePeerStatus, SealNodeEnvelope } from '../src/gen/orch/cluster/v1/cluster.js';
import { silentLogger } from '../src/logging/logger.ts';
import { openDb } from '../src/storage/open.ts';
import { createTestDatabase } from '../test/support/pg.ts';

type Handler = (call: { metadata: Metadata; request: SealNodeEnvelope }, cb: (err: unknown) => void) => void;

export async function benchHeartbeatHandler(members: number, seconds: number): Promise<{ usPerHeartbeat: number; heartbeats: number }> {
  const database = await createTestDatabase();
  const db = await openDb({ url: database.url, dataDir: '/nonexistent-unused' }, silentLogger());
  try {
    const authority = new ClusterAuthority({ db, logger: silentLogger() });
    const membership = new Membership({ db, bus: new MemoryBus(silentLogger()), logger: silentLogger() });
    const handlers = clusterHandlers({ authority, membership, logger: silentLogger() });
    const heartbeat = (
      guardService({ heartbeat: NodeClusterServiceService.heartbeat }, { heartbeat: handlers.heartbeat! }, { logger: silentLogger() }) as unknown as { heartbeat: Handler }
    ).heartbeat;
    const nodes = await Promise.all(
      Array.from({ length: members }, async (_, i) => {
        const key = generateNodeKey();
        const { token } = await authority.issue(`hb-${i}`, 'worker', Buffer.from(key.publicKey).toString('base64'), randomUUID());
        const peerId = await membership.register(await authority.verifyToken(token), {
          capabilities: { gpu_count: 0, vram_gb: 0, cpu_cores: 2, available_memory_gb: 4, supported_runtimes: ['process'], tags: [] },
          grpc_address: '127.0.0.1:1',
        });
        const metadata = new Metadata();
        metadata.set('authorization', `Bearer ${token}`);
        const request = HeartbeatRequest.encode({ peer_id: peerId, active_execution_count: 1, cpu_utilization_percent: 10, memory_utilization_percent: 20, status: NodePeerStatus.ACTIVE }).finish();
        return { key, token, metadata, request };
      }),
    );
    // One round: every member's heartbeat, as it arrives off the wire (encoded envelope, decoded inside the timing).
    const seal = (at: number): Buffer[] => nodes.map((n) => Buffer.from(SealNodeEnvelope.encode(sealPayload(n.request, { token: n.token, key: n.key }, at)).finish()));
    const round = (wire: Buffer[]): Promise<void[]> =>
      Promise.all(
        wire.map(
          (bytes, i) =>
            new Promise<void>((resolve, reject) => heartbeat({ metadata: nodes[i]!.metadata, request: SealNodeEnvelope.decode(bytes) }, (err) => (err ? reject(err as Error) : resolve()))),
        ),
      );
    await round(seal(Date.now()));
    let heartbeats = 0;
    let cpuUs = 0;
    const end = Date.now() + seconds * 1000;
    for (let r = 1; Date.now() < end; r++) {
      const wire = seal(Date.now());
      const c0 = process.cpuUsage();
      await round(wire);
      const c = process.cpuUsage(c0);
      cpuUs += c.user + c.system;
      heartbeats += members;
    }
    return { usPerHeartbeat: cpuUs / heartbeats, heartbeats };
  } finally {
    await db.close();
    await database.drop();
  }
}
