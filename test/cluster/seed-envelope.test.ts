// Issue 15 item 11: a worker that speaks exactly seed 000's SealNodeEnvelope — payload = the serialized request,
// signature = Ed25519 over exactly those bytes, no orch stamp — was refused (`envelope payload carries no freshness
// stamp`). Now it joins, heartbeats, lists peers and leaves; its signature is the nonce, kept for the node token's
// lifetime, so a replayed envelope is refused at once and still after the ±30 s window (the record's own expiry is
// read). On a real PostgreSQL controller with the database record and with the Redis record (127.0.0.1:6379).
import test from 'ava';
import { Metadata, status } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { generateNodeKey, type NodeKey } from '../../src/cluster/node-key.ts';
import type { NonceGuard } from '../../src/cluster/authority.ts';
import { sealPayload } from '../../src/cluster/envelope.ts';
import {
  DeregisterNodeRequest,
  HeartbeatRequest,
  ListPeersRequest,
  NodePeerStatus,
  NodeRole,
  RegisterNodeRequest,
  type SealNodeEnvelope,
} from '../../src/gen/orch/cluster/v1/cluster.js';
import { RedisReplayGuard, REPLAY_KEY_PREFIX } from '../../src/seal/replay.ts';
import { caps, client, refused, startController, statusOf, TEST_JOIN_TOKEN, testDb } from './harness.ts';

const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Exactly the seed's envelope: no stamp, nothing appended. */
function seedEnvelope(bytes: Uint8Array, token: string, key: NodeKey): SealNodeEnvelope {
  return { node_security_token: token, signature: Buffer.from(key.sign(bytes)), payload: Buffer.from(bytes) };
}

function bearer(token: string): Metadata {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}

const beat = (peerId: string, cpu: number) =>
  HeartbeatRequest.encode({ peer_id: peerId, active_execution_count: 0, cpu_utilization_percent: cpu, memory_utilization_percent: 40, status: NodePeerStatus.ACTIVE }).finish();

for (const store of ['database', 'redis'] as const) {
  test.serial(`${store} record: a seed-conformant worker joins, heartbeats, lists peers and leaves; its replays are refused`, async (t) => {
    const db = await testDb(t);
    let nonces: NonceGuard | undefined;
    let redis: RedisReplayGuard | undefined;
    if (store === 'redis') {
      redis = await RedisReplayGuard.open(REDIS);
      const guard = redis;
      t.teardown(() => guard.close());
      nonces = { firstUse: (nodeId, nonce, keepMs) => guard.firstUse(`cluster:${nodeId}`, nonce, keepMs) };
    }
    const ctl = await startController(t, db, { missedHeartbeats: 1000, ...(nonces ? { nonces } : {}) });
    const c = client(t, ctl.address);
    const key = generateNodeKey();
    const nodeId = `seed-${Math.random().toString(36).slice(2, 8)}`;
    const a = await c.attest({ node_id: nodeId, public_key_pem: key.publicKeyPem, role: NodeRole.WORKER }, TEST_JOIN_TOKEN);
    const ch = await c.challenge({ challenge_id: a.challenge_id, signature: Buffer.from(key.sign(Buffer.from(a.challenge_nonce, 'utf8'))) });
    const token = ch.node_security_token;
    const md = bearer(token);

    const reg = seedEnvelope(RegisterNodeRequest.encode({ capabilities: caps(['seed']), grpc_address: '127.0.0.1:1' }).finish(), token, key);
    const peerId = (await c.send<{ peer_id: string }>('registerNode', reg, md)).peer_id;
    t.truthy(peerId);
    t.is(await statusOf(db, nodeId), 'ACTIVE');
    const again = await refused(c.send('registerNode', reg, md));
    t.is(again.code, status.UNAUTHENTICATED);
    t.regex(again.details, /replayed/);

    const hb = seedEnvelope(beat(peerId, 12.5), token, key);
    t.deepEqual((await c.send<{ commands: unknown[] }>('heartbeat', hb, md)).commands, []);
    const replayed = await refused(c.send('heartbeat', hb, md));
    t.is(replayed.code, status.UNAUTHENTICATED);
    t.regex(replayed.details, /replayed/);
    // The next heartbeat (other figures, so other bytes) is accepted; an orch-stamped one from the same node too.
    await c.send('heartbeat', seedEnvelope(beat(peerId, 13.5), token, key), md);
    await c.send('heartbeat', sealPayload(beat(peerId, 14.5), { token, key }), md);
    t.is((await db.query<{ heartbeat_count: number }>('SELECT heartbeat_count FROM cluster_nodes WHERE node_id = $1', [nodeId])).rows[0]?.heartbeat_count, 3);

    // An empty request serializes to no bytes at all: accepted, and (being deterministic) only once per token.
    const list = seedEnvelope(ListPeersRequest.encode({}).finish(), token, key);
    t.is(list.payload.length, 0);
    const peers = await c.send<{ peers: { node_id: string }[] }>('listPeers', list, md);
    t.true(peers.peers.some((p) => p.node_id === nodeId));
    t.is((await refused(c.send('listPeers', list, md))).code, status.UNAUTHENTICATED);
    const filtered = await c.send<{ peers: { node_id: string }[] }>('listPeers', seedEnvelope(ListPeersRequest.encode({ filter_status: NodePeerStatus.ACTIVE }).finish(), token, key), md);
    t.true(filtered.peers.some((p) => p.node_id === nodeId));

    // The record outlives the ±30 s window: it lasts as long as the token (one hour here).
    const tokenLeftMs = Date.parse(ch.expires_at) - Date.now();
    if (store === 'database') {
      const rows = (await db.query<{ left_ms: string }>(`SELECT (EXTRACT(EPOCH FROM keep_until - now()) * 1000)::BIGINT::TEXT AS left_ms FROM cluster_seen_nonces WHERE node_id = $1`, [nodeId])).rows;
      t.true(rows.length >= 2, 'the registration and the list call are recorded');
      for (const r of rows) t.true(Number(r.left_ms) > tokenLeftMs - 60_000 && Number(r.left_ms) <= tokenLeftMs + 60_000, `kept ${r.left_ms} ms (token ${tokenLeftMs} ms)`);
    } else {
      const r = new Redis(REDIS);
      t.teardown(() => r.disconnect());
      const keys = await r.keys(`${REPLAY_KEY_PREFIX}cluster:${nodeId}:sig:*`);
      t.true(keys.length >= 3, `${keys.length} signature records`);
      for (const k of keys) {
        const ttl = await r.pttl(k);
        t.true(ttl > tokenLeftMs - 60_000 && ttl <= tokenLeftMs + 60_000, `kept ${ttl} ms (token ${tokenLeftMs} ms)`);
      }
    }

    await c.send('deregisterNode', seedEnvelope(DeregisterNodeRequest.encode({ peer_id: peerId, reason: 'done' }).finish(), token, key), md);
    t.is(await statusOf(db, nodeId), 'DEREGISTERED');
  });
}

test.serial('a seed envelope signed by another key, or with bytes changed, is still refused', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, { missedHeartbeats: 1000 });
  const c = client(t, ctl.address);
  const key = generateNodeKey();
  const a = await c.attest({ node_id: 'seed-x', public_key_pem: key.publicKeyPem, role: NodeRole.WORKER }, TEST_JOIN_TOKEN);
  const ch = await c.challenge({ challenge_id: a.challenge_id, signature: Buffer.from(key.sign(Buffer.from(a.challenge_nonce, 'utf8'))) });
  const md = bearer(ch.node_security_token);
  const bytes = RegisterNodeRequest.encode({ capabilities: caps(), grpc_address: '127.0.0.1:1' }).finish();
  const wrongKey = await refused(c.send('registerNode', seedEnvelope(bytes, ch.node_security_token, generateNodeKey()), md));
  t.is(wrongKey.code, status.UNAUTHENTICATED);
  const env = seedEnvelope(bytes, ch.node_security_token, key);
  const tampered = await refused(c.send('registerNode', { ...env, payload: Buffer.concat([env.payload, Buffer.from([0x08, 0x01])]) }, md));
  t.is(tampered.code, status.UNAUTHENTICATED);
  t.is(await statusOf(db, 'seed-x'), undefined);
});
