// Cluster RPC attacks (issue 7 acceptance), each refused over a real gRPC socket on loopback against a controller
// on a real PostgreSQL database: no token, an expired token, another node's token, an envelope signed by the wrong
// key, a replayed challenge — and the neighbours of those: a replayed envelope, a stale stamp, an unstamped payload,
// an expired challenge, a node id pinned to another key, another node's peer id.
import test from 'ava';
import { Metadata, status } from '@grpc/grpc-js';
import { sealPayload } from '../../src/cluster/envelope.ts';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { HeartbeatRequest, NodePeerStatus, NodeRole } from '../../src/gen/orch/cluster/v1/cluster.js';
import { attestNode, client, refused, sleep, startController, statusOf, TEST_JOIN_TOKEN, testDb } from './harness.ts';

/** These members heartbeat rarely or never: a long deadline keeps the watch from marking them UNHEALTHY meanwhile. */
const QUIET = { missedHeartbeats: 1000 };

function beat(peerId: string): Uint8Array {
  return HeartbeatRequest.encode({ peer_id: peerId, active_execution_count: 0, cpu_utilization_percent: 1, memory_utilization_percent: 2, status: NodePeerStatus.ACTIVE }).finish();
}

test('a sealed heartbeat of an attested, registered node is accepted (the baseline the attacks change)', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, QUIET);
  const node = await attestNode(t, ctl.address);
  const res = await node.client.heartbeat({ peer_id: node.peerId!, active_execution_count: 2, cpu_utilization_percent: 10, memory_utilization_percent: 20, status: NodePeerStatus.ACTIVE }, node.creds());
  t.deepEqual(res.commands, []);
  const row = (await db.query<{ status: string; heartbeat_count: number; load: Record<string, number> }>('SELECT status, heartbeat_count, load FROM cluster_nodes WHERE node_id = $1', [node.nodeId])).rows[0];
  t.is(row?.status, 'ACTIVE');
  t.is(row?.heartbeat_count, 1);
  t.is(row?.load.active_execution_count, 2);
  t.true(Date.parse(node.expiresAt) - Date.now() > 3500_000, 'the token lives one hour');
});

test('no token: refused with UNAUTHENTICATED', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, QUIET);
  const node = await attestNode(t, ctl.address);
  const env = sealPayload(beat(node.peerId!), node.creds());
  // Neither in metadata…
  const bare = await refused(node.client.send('heartbeat', env, new Metadata()));
  t.is(bare.code, status.UNAUTHENTICATED);
  t.regex(bare.details, /missing node token/);
  // …nor in the envelope.
  const md = new Metadata();
  md.set('authorization', `Bearer ${node.token}`);
  const noEnvToken = await refused(node.client.send('heartbeat', { ...env, node_security_token: '' }, md));
  t.is(noEnvToken.code, status.UNAUTHENTICATED);
  t.is(await statusOf(db, node.nodeId), 'ACTIVE');
  t.is((await db.query<{ heartbeat_count: number }>('SELECT heartbeat_count FROM cluster_nodes WHERE node_id = $1', [node.nodeId])).rows[0]?.heartbeat_count, 0, 'nothing was recorded');
});

test('expired token: refused with UNAUTHENTICATED', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, QUIET);
  // A second controller of the same database (same cluster key) that issues four-second tokens.
  const shortLived = await startController(t, db, { ...QUIET, tokenLifetimeSeconds: 4 });
  const node = await attestNode(t, ctl.address);
  // The member's key attests again there (a token refresh) and gets a four-second token.
  const short = await attestNode(t, shortLived.address, { nodeId: node.nodeId, key: node.key, register: false });
  t.true(Date.parse(short.expiresAt) - Date.now() < 5000);
  await sleep(Math.max(0, Date.parse(short.expiresAt) - Date.now()) + 1200);
  const err = await refused(client(t, ctl.address).heartbeat({ peer_id: node.peerId!, active_execution_count: 0, cpu_utilization_percent: 0, memory_utilization_percent: 0, status: NodePeerStatus.ACTIVE }, short.creds()));
  t.is(err.code, status.UNAUTHENTICATED);
  t.regex(err.details, /expired/);
  // A forged token (not signed by the cluster key) is refused the same way.
  const [h, p] = node.token.split('.');
  const forged = `${h}.${p}.${Buffer.from('x'.repeat(256)).toString('base64url')}`;
  const err2 = await refused(node.client.heartbeat({ peer_id: node.peerId!, active_execution_count: 0, cpu_utilization_percent: 0, memory_utilization_percent: 0, status: NodePeerStatus.ACTIVE }, { token: forged, key: node.key }));
  t.is(err2.code, status.UNAUTHENTICATED);
  t.regex(err2.details, /invalid node token/);
});

test("another node's token: refused (its key does not sign, its peer id is not ours)", async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, QUIET);
  const a = await attestNode(t, ctl.address);
  const b = await attestNode(t, ctl.address);
  // B's token (stolen), envelope signed by A's key: the token binds B's key.
  const stolen = await refused(a.client.heartbeat({ peer_id: b.peerId!, active_execution_count: 0, cpu_utilization_percent: 0, memory_utilization_percent: 0, status: NodePeerStatus.ACTIVE }, { token: b.token, key: a.key }));
  t.is(stolen.code, status.UNAUTHENTICATED);
  t.regex(stolen.details, /signature/);
  // A's own token and key, speaking for B's registration.
  const impersonate = await refused(a.client.heartbeat({ peer_id: b.peerId!, active_execution_count: 0, cpu_utilization_percent: 0, memory_utilization_percent: 0, status: NodePeerStatus.ACTIVE }, a.creds()));
  t.is(impersonate.code, status.PERMISSION_DENIED);
  // Metadata token of B, envelope token of A.
  const env = sealPayload(beat(a.peerId!), a.creds());
  const md = new Metadata();
  md.set('authorization', `Bearer ${b.token}`);
  const mixed = await refused(a.client.send('heartbeat', env, md));
  t.is(mixed.code, status.UNAUTHENTICATED);
  const counts = (await db.query<{ heartbeat_count: number }>('SELECT heartbeat_count FROM cluster_nodes WHERE node_id = ANY($1) ORDER BY node_id', [[a.nodeId, b.nodeId]])).rows;
  t.deepEqual(counts.map((r) => r.heartbeat_count), [0, 0]);
});

test('envelope signed by the wrong key: refused with UNAUTHENTICATED', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, QUIET);
  const node = await attestNode(t, ctl.address);
  const err = await refused(node.client.heartbeat({ peer_id: node.peerId!, active_execution_count: 0, cpu_utilization_percent: 0, memory_utilization_percent: 0, status: NodePeerStatus.ACTIVE }, { token: node.token, key: generateNodeKey() }));
  t.is(err.code, status.UNAUTHENTICATED);
  t.regex(err.details, /signature/);
  // A payload changed after signing is refused too.
  const env = sealPayload(beat(node.peerId!), node.creds());
  const tampered = Buffer.from(env.payload);
  tampered[3] = tampered[3]! ^ 1;
  const md = new Metadata();
  md.set('authorization', `Bearer ${node.token}`);
  const err2 = await refused(node.client.send('heartbeat', { ...env, payload: tampered }, md));
  t.is(err2.code, status.UNAUTHENTICATED);
});

test('replayed challenge: refused; an expired challenge too', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, QUIET);
  const key = generateNodeKey();
  const c = client(t, ctl.address);
  const a = await c.attest({ node_id: 'replayer', public_key_pem: key.publicKeyPem, role: NodeRole.WORKER }, TEST_JOIN_TOKEN);
  const answer = { challenge_id: a.challenge_id, signature: Buffer.from(key.sign(Buffer.from(a.challenge_nonce, 'utf8'))) };
  const first = await c.challenge(answer);
  t.truthy(first.node_security_token);
  const again = await refused(c.challenge(answer));
  t.is(again.code, status.UNAUTHENTICATED);
  t.regex(again.details, /already used/);
  // Expired: answered after its 300 ms (a controller of the same database with short challenges).
  const quick = await startController(t, db, { ...QUIET, challengeTtlMs: 300 });
  const b = await client(t, quick.address).attest({ node_id: 'late', public_key_pem: key.publicKeyPem, role: NodeRole.WORKER }, TEST_JOIN_TOKEN);
  await sleep(800);
  const late = await refused(c.challenge({ challenge_id: b.challenge_id, signature: Buffer.from(key.sign(Buffer.from(b.challenge_nonce, 'utf8'))) }));
  t.is(late.code, status.UNAUTHENTICATED);
  t.regex(late.details, /expired/);
  // A signature by another key than the attested one burns the challenge.
  const d = await c.attest({ node_id: 'wrongkey', public_key_pem: key.publicKeyPem, role: NodeRole.WORKER }, TEST_JOIN_TOKEN);
  const wrong = await refused(c.challenge({ challenge_id: d.challenge_id, signature: Buffer.from(generateNodeKey().sign(Buffer.from(d.challenge_nonce, 'utf8'))) }));
  t.is(wrong.code, status.UNAUTHENTICATED);
  t.regex(wrong.details, /signature/);
});

test('replayed envelope and stale stamp refused; an unstamped payload only once', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, QUIET);
  const node = await attestNode(t, ctl.address);
  const md = new Metadata();
  md.set('authorization', `Bearer ${node.token}`);
  const env = sealPayload(beat(node.peerId!), node.creds());
  await node.client.send('heartbeat', env, md);
  const replay = await refused(node.client.send('heartbeat', env, md));
  t.is(replay.code, status.UNAUTHENTICATED);
  t.regex(replay.details, /replayed/);
  const stale = await refused(node.client.send('heartbeat', sealPayload(beat(node.peerId!), node.creds(), Date.now() - 60_000), md));
  t.is(stale.code, status.UNAUTHENTICATED);
  t.regex(stale.details, /stale/);
  // Unstamped (the seed's form, test/cluster/seed-envelope.test.ts): accepted once, its signature being the nonce.
  const raw = beat(node.peerId!);
  const unstamped = { node_security_token: node.token, signature: Buffer.from(node.key.sign(raw)), payload: Buffer.from(raw) };
  await node.client.send('heartbeat', unstamped, md);
  const unstampedAgain = await refused(node.client.send('heartbeat', unstamped, md));
  t.is(unstampedAgain.code, status.UNAUTHENTICATED);
  t.regex(unstampedAgain.details, /replayed/);
  t.is((await db.query<{ heartbeat_count: number }>('SELECT heartbeat_count FROM cluster_nodes WHERE node_id = $1', [node.nodeId])).rows[0]?.heartbeat_count, 2, 'each first heartbeat counted once');
});

test('a live node id is pinned to its key; a superseded token stops working', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, QUIET);
  const node = await attestNode(t, ctl.address);
  const c = client(t, ctl.address);
  const other = generateNodeKey();
  const err = await refused(c.attest({ node_id: node.nodeId, public_key_pem: other.publicKeyPem, role: NodeRole.WORKER }, TEST_JOIN_TOKEN));
  t.is(err.code, status.PERMISSION_DENIED);
  // The same key attests again (token refresh): the old token's session ends at once, the new one works.
  const again = await attestNode(t, ctl.address, { nodeId: node.nodeId, key: node.key, register: false });
  const old = await refused(node.client.heartbeat({ peer_id: node.peerId!, active_execution_count: 0, cpu_utilization_percent: 0, memory_utilization_percent: 0, status: NodePeerStatus.ACTIVE }, node.creds()));
  t.is(old.code, status.UNAUTHENTICATED);
  t.regex(old.details, /superseded/);
  await again.client.heartbeat({ peer_id: node.peerId!, active_execution_count: 0, cpu_utilization_percent: 0, memory_utilization_percent: 0, status: NodePeerStatus.ACTIVE }, again.creds());
  // After DeregisterNode the id is free for a new key.
  await again.client.deregister({ peer_id: node.peerId!, reason: 'test' }, again.creds());
  t.is(await statusOf(db, node.nodeId), 'DEREGISTERED');
  const reborn = await attestNode(t, ctl.address, { nodeId: node.nodeId, key: other });
  t.is(await statusOf(db, reborn.nodeId), 'ACTIVE');
});
