// In-process cluster fixtures over real parts: a throwaway PostgreSQL database with the migrations, a controller's
// NodeClusterService on a loopback gRPC socket (ClusterAuthority, Membership, NodePeerActors and the PeerWatch), and
// helpers that attest nodes with real Ed25519 keys through the real client.
import { randomBytes } from 'node:crypto';
import type { ServiceError } from '@grpc/grpc-js';
import type { ExecutionContext, TestFn } from 'ava';
import os from 'node:os';
import { ActorRuntime } from '../../src/actors/runtime.ts';
import { nodePeerKind, type NodePeerMessage } from '../../src/actors/node-peer/actor.ts';
import { PeerWatch } from '../../src/actors/node-peer/watch.ts';
import { MemoryBus } from '../../src/bus/memory.ts';
import { ClusterAuthority, type JoinPolicy, type NonceGuard } from '../../src/cluster/authority.ts';
import { NodeClusterClient } from '../../src/cluster/client.ts';
import { clusterHandlers } from '../../src/cluster/grpc/cluster-handlers.ts';
import { createClusterServer } from '../../src/cluster/grpc/cluster-server.ts';
import { Membership } from '../../src/cluster/membership.ts';
import { generateNodeKey, type NodeKey } from '../../src/cluster/node-key.ts';
import { startGrpcServer } from '../../src/gateway/grpc/start.ts';
import { NodeRole, type NodeCapabilityAdvertisement } from '../../src/gen/orch/cluster/v1/cluster.js';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { openDb } from '../../src/storage/open.ts';
import { createTestDatabase, type TestDatabase } from '../support/pg.ts';
import { TEST_JOIN_TOKEN } from '../support/node-process.ts';

export { TEST_JOIN_TOKEN };

export interface Controller {
  address: string;
  authority: ClusterAuthority;
  membership: Membership;
  actors: ActorRuntime;
  watch: PeerWatch;
  close(): Promise<void>;
}

export interface ControllerOptions {
  heartbeatMs?: number;
  missedHeartbeats?: number;
  tokenLifetimeSeconds?: number;
  challengeTtlMs?: number;
  nonces?: NonceGuard;
  selfId?: string;
  /** Join credentials; default the test join token (TEST_JOIN_TOKEN). `{}` admits nobody. */
  join?: JoinPolicy;
}

export async function testDb(t: ExecutionContext): Promise<Db> {
  const database = await createTestDatabase({ migrated: true });
  const db = await openDb({ url: database.url, dataDir: '/nonexistent-unused' }, silentLogger());
  t.teardown(async () => {
    await db.close();
    await database.drop();
  });
  return db;
}

/** One database for every test of a file: opened before the first test (handed to `use`), dropped after the last. */
export function dbForFile(test: TestFn, use: (db: Db) => void): void {
  let database: TestDatabase | undefined;
  let db: Db | undefined;
  test.before(async () => {
    database = await createTestDatabase({ migrated: true });
    db = await openDb({ url: database.url, dataDir: os.tmpdir() }, silentLogger());
    use(db);
  });
  test.after.always(async () => {
    await db?.close();
    await database?.drop();
  });
}

/** A controller serving NodeClusterService on 127.0.0.1 (ephemeral port) over `db`. */
export async function startController(t: ExecutionContext, db: Db, o: ControllerOptions = {}): Promise<Controller> {
  const logger = silentLogger();
  const selfId = o.selfId ?? `ctl-${randomBytes(3).toString('hex')}`;
  const heartbeatMs = o.heartbeatMs ?? 1000;
  const missed = o.missedHeartbeats ?? 3;
  const bus = new MemoryBus(logger);
  const actors = new ActorRuntime(logger, `t-${selfId}`);
  actors.register<NodePeerMessage>(nodePeerKind({ db, bus, selfId, heartbeatMs, missedHeartbeats: missed, logger }));
  const authority = new ClusterAuthority({
    db,
    logger,
    selfId,
    join: o.join ?? { token: TEST_JOIN_TOKEN },
    ...(o.tokenLifetimeSeconds ? { tokenLifetimeSeconds: o.tokenLifetimeSeconds } : {}),
    ...(o.challengeTtlMs ? { challengeTtlMs: o.challengeTtlMs } : {}),
    ...(o.nonces ? { nonces: o.nonces } : {}),
  });
  const membership = new Membership({ db, bus, logger, onRegistered: (id) => actors.spawn('node-peer', id) });
  const server = await startGrpcServer(createClusterServer({ logger, handlers: clusterHandlers({ authority, membership, logger }) }), '127.0.0.1', 0, { shutdownTimeoutMs: 500 });
  const watch = new PeerWatch({ db, actors, selfId, heartbeatMs, missedHeartbeats: missed, logger }).start();
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      await watch.stop();
      await server.close();
      await actors.shutdown();
    })());
  t.teardown(close);
  return { address: `127.0.0.1:${server.port}`, authority, membership, actors, watch, close };
}

export interface TestNode {
  nodeId: string;
  key: NodeKey;
  client: NodeClusterClient;
  token: string;
  expiresAt: string;
  peerId?: string;
  creds(): { token: string; key: NodeKey };
}

export function client(t: ExecutionContext, address: string): NodeClusterClient {
  const c = new NodeClusterClient(address, 30_000);
  t.teardown(() => c.close());
  return c;
}

export function caps(tags: string[] = []): NodeCapabilityAdvertisement {
  return { gpu_count: 0, vram_gb: 0, cpu_cores: 4, available_memory_gb: 8, supported_runtimes: ['process'], tags };
}

/** AttestNode + ChallengeNode with a fresh key; `register` also sends RegisterNode. */
export async function attestNode(
  t: ExecutionContext,
  address: string,
  o: { nodeId?: string; key?: NodeKey; register?: boolean; tags?: string[]; joinToken?: string } = {},
): Promise<TestNode> {
  const nodeId = o.nodeId ?? `w-${randomBytes(4).toString('hex')}`;
  const key = o.key ?? generateNodeKey();
  const c = client(t, address);
  const a = await c.attest({ node_id: nodeId, public_key_pem: key.publicKeyPem, role: NodeRole.WORKER }, 'joinToken' in o ? o.joinToken : TEST_JOIN_TOKEN);
  const ch = await c.challenge({ challenge_id: a.challenge_id, signature: Buffer.from(key.sign(Buffer.from(a.challenge_nonce, 'utf8'))) });
  const node: TestNode = { nodeId, key, client: c, token: ch.node_security_token, expiresAt: ch.expires_at, creds: () => ({ token: node.token, key }) };
  if (o.register !== false) {
    node.peerId = (await c.register({ capabilities: caps(o.tags), grpc_address: '127.0.0.1:1' }, node.creds())).peer_id;
  }
  return node;
}

export async function refused(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('the call was accepted');
}

export async function statusOf(db: Db, nodeId: string): Promise<string | undefined> {
  return (await db.query<{ status: string }>('SELECT status FROM cluster_nodes WHERE node_id = $1', [nodeId])).rows[0]?.status;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
