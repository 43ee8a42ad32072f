// The replay refusal of heartbeats (issue 7, docs/CLUSTER.md "Freshness and replay"): a heartbeat is written only when
// its envelope stamp is later than the member's last accepted one, checked by the statement that writes it, so every
// controller of the database refuses a replay without a replay-record write per heartbeat. Checked through the real
// Membership on real PostgreSQL: the same stamp twice, an older stamp, two heartbeats of one member in one batch
// (one written, the replay refused), the slow path (a command waiting) and the recovery path (UNHEALTHY) refuse a
// replay too, and a new registration starts the member's stamps afresh.
import test from 'ava';
import { randomBytes, randomUUID } from 'node:crypto';
import { MemoryBus } from '../../src/bus/memory.ts';
import type { EnvelopeStamp, NodeClaims } from '../../src/cluster/authority.ts';
import { Membership } from '../../src/cluster/membership.ts';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { NodePeerStatus } from '../../src/gen/orch/cluster/v1/cluster.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { Errors, isOrchError } from '../../src/errors/catalog.ts';
import { caps, testDb } from './harness.ts';

function stampAt(sentAtMs: number): EnvelopeStamp {
  return { sentAtMs, nonce: randomBytes(16).toString('hex') };
}

async function member(t: Parameters<typeof testDb>[0]) {
  const db = await testDb(t);
  const membership = new Membership({ db, bus: new MemoryBus(silentLogger()), logger: silentLogger() });
  const key = generateNodeKey();
  const claims: NodeClaims = {
    nodeId: `r-${randomBytes(3).toString('hex')}`,
    role: 'worker',
    sessionId: randomUUID(),
    expiresAtMs: Date.now() + 3_600_000,
    publicKey: Buffer.from(key.publicKey).toString('base64'),
    publicKeyRaw: Buffer.from(key.publicKey),
  };
  const peerId = await membership.register(claims, { capabilities: caps(), grpc_address: '127.0.0.1:1' });
  const beat = { peer_id: peerId, active_execution_count: 0, cpu_utilization_percent: 1, memory_utilization_percent: 1, status: NodePeerStatus.ACTIVE };
  const count = async (): Promise<number> =>
    Number((await db.query<{ n: string }>('SELECT heartbeat_count::TEXT AS n FROM cluster_nodes WHERE node_id = $1', [claims.nodeId])).rows[0]?.n);
  return { db, membership, claims, peerId, beat, count };
}

function isReplay(err: unknown): boolean {
  return isOrchError(err) && err.spec === Errors.UNAUTHENTICATED && /replayed/.test(err.message);
}

test('the same stamp twice, or an older one, is refused as a replay; a later one is written', async (t) => {
  const m = await member(t);
  const now = Date.now();
  const first = stampAt(now);
  t.deepEqual(await m.membership.heartbeat(m.claims, m.beat, first), []);
  t.true(isReplay(await t.throwsAsync(m.membership.heartbeat(m.claims, m.beat, first))), 'same stamp');
  t.true(isReplay(await t.throwsAsync(m.membership.heartbeat(m.claims, m.beat, stampAt(now - 1)))), 'older stamp');
  t.deepEqual(await m.membership.heartbeat(m.claims, m.beat, stampAt(now + 1)), []);
  t.is(await m.count(), 2, 'only the first and the later heartbeat counted');
});

test('a heartbeat and its replay in one batch: one is written, the other refused', async (t) => {
  const m = await member(t);
  const s = stampAt(Date.now());
  const results = await Promise.allSettled([m.membership.heartbeat(m.claims, m.beat, s), m.membership.heartbeat(m.claims, m.beat, s)]);
  t.is(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results));
  const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.true(isReplay(refused?.reason), String(refused?.reason));
  t.is(await m.count(), 1);
  // Two different heartbeats of one member in one batch are both written (the later one by the slow path).
  const now = Date.now() + 10;
  const both = await Promise.allSettled([m.membership.heartbeat(m.claims, m.beat, stampAt(now + 1)), m.membership.heartbeat(m.claims, m.beat, stampAt(now))]);
  t.true(both.every((r) => r.status === 'fulfilled') || both.filter((r) => r.status === 'rejected').every((r) => isReplay((r as PromiseRejectedResult).reason)));
  // Whichever order they were written in, the row holds the later stamp.
  const row = (await m.db.query<{ ms: string }>('SELECT heartbeat_stamp_ms::TEXT AS ms FROM cluster_nodes WHERE node_id = $1', [m.claims.nodeId])).rows[0];
  t.is(Number(row?.ms), now + 1);
});

test('the slow path (a command waiting) and the recovery path (UNHEALTHY) refuse a replay too', async (t) => {
  const m = await member(t);
  const s = stampAt(Date.now());
  t.deepEqual(await m.membership.heartbeat(m.claims, m.beat, s), []);
  await m.membership.queueCommand(m.claims.nodeId, { command: { $case: 'shutdown', value: { reason: 'bye', grace_period_seconds: 1 } } } as never);
  t.true(isReplay(await t.throwsAsync(m.membership.heartbeat(m.claims, m.beat, s))), 'slow path');
  t.is((await m.membership.heartbeat(m.claims, m.beat, stampAt(s.sentAtMs + 1))).length, 1, 'the command goes with the next real heartbeat');
  await m.db.query(`UPDATE cluster_nodes SET status = 'UNHEALTHY' WHERE node_id = $1`, [m.claims.nodeId]);
  const replayed = stampAt(s.sentAtMs + 1);
  replayed.nonce = '';
  t.true(isReplay(await t.throwsAsync(m.membership.heartbeat(m.claims, m.beat, replayed))), 'recovery path, not later');
  t.is((await m.db.query<{ status: string }>('SELECT status FROM cluster_nodes WHERE node_id = $1', [m.claims.nodeId])).rows[0]?.status, 'UNHEALTHY');
  t.deepEqual(await m.membership.heartbeat(m.claims, m.beat, stampAt(s.sentAtMs + 2)), []);
  t.is((await m.db.query<{ status: string }>('SELECT status FROM cluster_nodes WHERE node_id = $1', [m.claims.nodeId])).rows[0]?.status, 'ACTIVE');
  t.is(await m.count(), 3);
});

test('a new registration starts the stamps afresh (a node whose clock went back can rejoin)', async (t) => {
  const m = await member(t);
  const later = stampAt(Date.now() + 20_000);
  t.deepEqual(await m.membership.heartbeat(m.claims, m.beat, later), []);
  const peerId = await m.membership.register(m.claims, { capabilities: caps(), grpc_address: '127.0.0.1:1' });
  t.deepEqual(await m.membership.heartbeat(m.claims, { ...m.beat, peer_id: peerId }, stampAt(Date.now())), []);
});
