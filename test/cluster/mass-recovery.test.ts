// Mass recovery on the controller (issue 7): when a partition heals, hundreds of UNHEALTHY members heartbeat at once.
// Their heartbeats are written in batches — one statement changes the status of all of them and appends each one's
// status_changed event — instead of one serializable transaction each. Checked on real PostgreSQL through the real
// Membership: every member is back (DRAINING where a drain was asked), each has exactly one new event with the next
// sequence number of its stream, published on the bus; the statuses were written together (one statement's now()),
// and a member with a command waiting still gets it through the slow path. When the database cannot take a batch at
// all, its heartbeats are refused as UNAVAILABLE instead of becoming one transaction each.
import test from 'ava';
import { randomBytes, randomUUID } from 'node:crypto';
import { MemoryBus } from '../../src/bus/memory.ts';
import type { BusEvent } from '../../src/bus/bus.ts';
import type { EnvelopeStamp, NodeClaims } from '../../src/cluster/authority.ts';
import { Membership } from '../../src/cluster/membership.ts';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { NodePeerStatus } from '../../src/gen/orch/cluster/v1/cluster.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { Errors, isOrchError } from '../../src/errors/catalog.ts';
import { openPg } from '../../src/storage/pg.ts';
import { caps, testDb } from './harness.ts';

/** A fresh envelope stamp, as verifyEnvelopeUnrecorded answers for each heartbeat. */
function stamp(): EnvelopeStamp {
  return { sentAtMs: Date.now(), nonce: randomBytes(16).toString('hex') };
}

function claimsOf(nodeId: string): NodeClaims {
  const key = generateNodeKey();
  return { nodeId, role: 'worker', sessionId: randomUUID(), expiresAtMs: Date.now() + 3_600_000, publicKey: Buffer.from(key.publicKey).toString('base64'), publicKeyRaw: Buffer.from(key.publicKey) };
}

test('UNHEALTHY members coming back at once are written in batches, each with its one status event', async (t) => {
  const db = await testDb(t);
  const bus = new MemoryBus(silentLogger());
  const membership = new Membership({ db, bus, logger: silentLogger() });
  const published: BusEvent[] = [];
  await bus.subscribePrefix('node:', (e) => void published.push(e));
  const n = 200;
  const prefix = `m-${randomBytes(3).toString('hex')}`;
  const members = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const claims = claimsOf(`${prefix}-${String(i).padStart(3, '0')}`);
      const peerId = await membership.register(claims, { capabilities: caps(), grpc_address: '127.0.0.1:1' });
      return { claims, peerId };
    }),
  );
  // All of them went silent (as the NodePeerActors would have recorded), one with a drain asked meanwhile, one with
  // a command waiting for its next heartbeat.
  await db.query(`UPDATE cluster_nodes SET status = 'UNHEALTHY' WHERE node_id LIKE $1`, [`${prefix}-%`]);
  await db.query(`UPDATE cluster_nodes SET drain_requested_at = now(), drain_reason = 'ops' WHERE node_id = $1`, [`${prefix}-001`]);
  const waiting = { command: { $case: 'shutdown' as const, value: { reason: 'bye', grace_period_seconds: 1 } } };
  await membership.queueCommand(`${prefix}-002`, waiting as never);
  const before = published.length;

  const answers = await Promise.all(
    members.map((m) =>
      membership.heartbeat(m.claims, { peer_id: m.peerId, active_execution_count: 1, cpu_utilization_percent: 5, memory_utilization_percent: 6, status: NodePeerStatus.ACTIVE }, stamp()),
    ),
  );
  t.is(answers[2]!.length, 1, 'the waiting command is answered (slow path)');
  t.true(answers.every((a, i) => i === 2 || a.length === 0));

  const rows = await db.query<{ node_id: string; status: string }>(`SELECT node_id, status FROM cluster_nodes WHERE node_id LIKE $1 ORDER BY node_id`, [`${prefix}-%`]);
  t.is(rows.rows.length, n);
  t.deepEqual(
    rows.rows.filter((r) => r.status !== 'ACTIVE').map((r) => [r.node_id, r.status]),
    [[`${prefix}-001`, 'DRAINING']],
  );
  const events = await db.query<{ stream: string; seq: number; payload: { status: string; previous: string }; recorded_at: Date }>(
    `SELECT stream, seq, payload, recorded_at FROM event_log WHERE stream LIKE $1 AND type = 'status_changed' ORDER BY stream`,
    [`node:${prefix}-%`],
  );
  t.is(events.rows.length, n, 'one status event per member');
  t.true(events.rows.every((e) => e.seq === 2 && e.payload.previous === 'UNHEALTHY'), 'each after its registered event');
  t.deepEqual(events.rows.find((e) => e.stream === `node:${prefix}-001`)?.payload.status, 'DRAINING');
  // One statement's rows share its now(); one transaction per member would give each its own.
  const batchedAt = new Set(events.rows.filter((e) => e.stream !== `node:${prefix}-002`).map((e) => e.recorded_at.getTime()));
  t.true(batchedAt.size <= 10, `statuses written by ${batchedAt.size} statements for ${n - 1} members`);
  const announced = published.slice(before).filter((e) => e.type === 'status_changed');
  t.is(announced.length, n, 'every status change published');
  t.deepEqual(new Set(announced.map((e) => e.stream)).size, n);
});

test('a batch the database cannot take is refused as UNAVAILABLE, not retried as one transaction per heartbeat', async (t) => {
  const db = await testDb(t);
  const membership = new Membership({ db, bus: new MemoryBus(silentLogger()), logger: silentLogger() });
  const claims = claimsOf(`m-${randomBytes(3).toString('hex')}`);
  const peerId = await membership.register(claims, { capabilities: caps(), grpc_address: '127.0.0.1:1' });
  // A controller whose only pooled connection is busy: nothing can be written within the connect timeout.
  const url = (await db.query<{ url: string }>(`SELECT current_database() AS url`)).rows[0]!.url;
  const base = new URL(process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres');
  base.pathname = `/${url}`;
  // The connect timeout is also how long a call waits for the pool; 3 s leaves room for opening the pool itself on a
  // loaded machine (300 ms failed the open in a clean-clone run).
  const starved = await openPg(base.toString(), { poolSize: 1, connectTimeoutMs: 3000, logger: silentLogger() });
  t.teardown(() => starved.close());
  const busy = new Membership({ db: starved, bus: new MemoryBus(silentLogger()), logger: silentLogger() });
  let release!: () => void;
  const held = starved.tx(() => new Promise<void>((r) => (release = r)));
  const beat = { peer_id: peerId, active_execution_count: 0, cpu_utilization_percent: 1, memory_utilization_percent: 1, status: NodePeerStatus.ACTIVE };
  const err = await t.throwsAsync(Promise.all([busy.heartbeat(claims, beat, stamp()), busy.heartbeat(claims, beat, stamp()), busy.heartbeat(claims, beat, stamp())]));
  t.true(isOrchError(err) && err.spec === Errors.UNAVAILABLE, String(err));
  release();
  await held;
  // Once the database can take it again, the next heartbeat is written (the fast path).
  t.deepEqual(await busy.heartbeat(claims, beat, stamp()), []);
  t.deepEqual(await membership.heartbeat(claims, beat, stamp()), []);
});
